"""Every documented bound, tested at its edge (Python 3 stdlib only).

docs/limits.md and docs/quotas.md list the bounds; for each, the largest allowed value must
pass and one more must be refused with the documented status and error. TestHttpLimits in
test_http.py already covers "well over" cases (1 MiB + 1 declared, chunked far over, a 17 KiB
header); this module pins the exact edges and the operator-settable bounds ([http] and
[quotas] in the config), each class on its own server and data directory:

    CORTEX_BIN=/path/to/cortex python3 -m unittest discover -s tests/e2e -t tests/e2e
"""

import http.client
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import unittest

import test_http as th
from test_http import MODERN, LEGACY, RpcAsserts, Server, cli, create_token, parse_raw, raw_exchange

MIB = 1 << 20
HEADER_LIMIT = 16 << 10


# --------------------------------------------------------------------------------------------
# Helpers shared with test_hostile.py
# --------------------------------------------------------------------------------------------

def start_server(data_dir, config=None, env=None):
    """`cortex serve` on a free loopback port; `config` is TOML text written next to the data,
    `env` extra environment variables for the server process only."""
    args = []
    if config is not None:
        path = os.path.join(data_dir, "cortex.toml")
        with open(path, "w") as f:
            f.write(config)
        args = ["--config", path]
    saved = {k: os.environ.get(k) for k in (env or {})}
    try:
        os.environ.update(env or {})
        return Server(data_dir, extra_args=args)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def connect(port, timeout=10, source=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                 source_address=(source, 0) if source else None)
    return s


def http_conn(port, timeout=15):
    return http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)


def req(port, method, path="/mcp", body=None, headers=None, token=None, timeout=15):
    """test_http.request on its own connection to `port` (never the module server of
    test_http). `token` None sends no Authorization header."""
    conn = http_conn(port, timeout)
    try:
        return th.request(method, path, body=body, headers=headers, token=token, conn=conn)
    finally:
        conn.close()


def modern(port, method, params=None, token=None, id=1, headers=None, timeout=15):
    conn = http_conn(port, timeout)
    try:
        return th.modern(method, params, id=id, token=token, headers=headers, conn=conn)
    finally:
        conn.close()


def call_tool(port, token, name, arguments=None, id=7):
    params = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return modern(port, "tools/call", params, token=token, id=id)


def status_of(test, port, token):
    result = th.tool_result(test, call_tool(port, token, "workspace.status", {}))
    test.assertFalse(result.get("isError", False), result)
    return result["structuredContent"]


def ingest(port, token, lines):
    body = "".join((l if isinstance(l, str) else json.dumps(l, ensure_ascii=False)) + "\n"
                   for l in lines)
    return req(port, "POST", "/v1/episodes", body=body.encode(), token=token,
               headers={"Content-Type": "application/x-ndjson"})


def read_response(sock):
    """Reads one HTTP/1.1 response (Content-Length framed) from `sock`. Returns
    (status, headers, body) or (None, {}, partial bytes) if the peer closed first."""
    data = b""
    while True:
        if b"\r\n\r\n" in data:
            head, _, rest = data.partition(b"\r\n\r\n")
            m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
            if m is None or len(rest) >= int(m.group(1)):
                break
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return None, {}, data
        data += chunk
    status, headers, body = parse_raw(data)
    return status, headers, body


def wait_closed(sock, limit):
    """Waits up to `limit` seconds for the peer to close; returns (seconds, bytes received)
    or (None, bytes) if it was still open."""
    start = time.monotonic()
    got = b""
    while True:
        left = limit - (time.monotonic() - start)
        if left <= 0:
            return None, got
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return None, got
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return time.monotonic() - start, got
        got += chunk


def is_closed(sock, wait=1.0):
    seconds, _ = wait_closed(sock, wait)
    return seconds is not None


def tool_schema(test, port, token, name):
    r = modern(port, "tools/list", token=token)
    test.assertEqual(r.status, 200, r)
    for t in r.json()["result"]["tools"]:
        if t["name"] == name:
            return t["inputSchema"]
    test.fail(f"no tool {name}")


def mcp_head(port, token, content_length, target="/mcp", extra=b"", chunked=False):
    h = (f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
         f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\n"
         f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\n"
         "Mcp-Name: workspace.status\r\n").encode() + extra
    if chunked:
        h += b"Transfer-Encoding: chunked\r\n"
    else:
        h += b"Content-Length: %d\r\n" % content_length
    return h + b"\r\n"


def status_call_body(size=None):
    """A valid stateless tools/call of workspace.status, padded with JSON whitespace to exactly
    `size` bytes (whitespace after the value is insignificant JSON)."""
    msg = json.dumps({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                      "params": {"name": "workspace.status", "arguments": {},
                                 "_meta": th.meta()}}).encode()
    if size is None:
        return msg
    assert size >= len(msg)
    return msg + b" " * (size - len(msg))


# --------------------------------------------------------------------------------------------
# Body, header, ingest, argument and page-size edges (defaults; flood guard off so the many
# requests here never meet it)
# --------------------------------------------------------------------------------------------

class TestEdges(unittest.TestCase, RpcAsserts):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-limits-")
        d = cls.tmp.name
        cls.token = create_token(d, "alpha", "read,act")
        cls.server = start_server(d, "[http]\nflood_requests_per_second = 0\n")
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.tmp.cleanup()

    # --- MCP body: 1 MiB --------------------------------------------------------------------

    def test_mcp_body_exactly_1mib_is_served(self):
        body = status_call_body(MIB)
        self.assertEqual(len(body), 1048576)
        r = req(self.port, "POST", body=body, token=self.token,
                headers={"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                         "Mcp-Name": "workspace.status"})
        result = th.tool_result(self, r, id=77)
        self.assertFalse(result.get("isError", False), result)
        self.assertEqual(result["structuredContent"]["workspace"], "alpha")

    def test_mcp_body_1mib_plus_1_is_413_and_closed(self):
        body = status_call_body(MIB + 1)
        s = connect(self.port)
        try:
            s.sendall(mcp_head(self.port, self.token, len(body)))
            try:
                s.sendall(body)  # the server may answer and hang up before reading it
            except (BrokenPipeError, ConnectionResetError):
                pass
            status, headers, rbody = read_response(s)
            self.assertEqual(status, 413, rbody[:300])
            err = json.loads(rbody)["error"]
            self.assertEqual(err["code"], -32600)
            self.assertIn("1048576", err["message"])
            self.assertEqual(headers.get("connection", "").lower(), "close", headers)
            self.assertTrue(is_closed(s, 3), "connection left open after 413")
        finally:
            s.close()

    def _chunked(self, body):
        chunk = 65536
        out = b""
        for i in range(0, len(body), chunk):
            part = body[i:i + chunk]
            out += b"%x\r\n" % len(part) + part + b"\r\n"
        return out + b"0\r\n\r\n"

    def test_chunked_mcp_body_exactly_1mib_is_served(self):
        raw = raw_exchange(mcp_head(self.port, self.token, 0, chunked=True),
                           port=self.port, send_more=self._chunked(status_call_body(MIB)))
        status, _, body = parse_raw(raw)
        self.assertEqual(status, 200, raw[:300])
        self.assertEqual(json.loads(body)["result"]["structuredContent"]["workspace"], "alpha")

    def test_chunked_mcp_body_1mib_plus_1_is_413(self):
        raw = raw_exchange(mcp_head(self.port, self.token, 0, chunked=True),
                           port=self.port, send_more=self._chunked(status_call_body(MIB + 1)))
        status, _, body = parse_raw(raw)
        self.assertEqual(status, 413, raw[:300])
        self.assertEqual(json.loads(body)["error"]["code"], -32600)

    # --- Headers: 16 KiB ---------------------------------------------------------------------
    #
    # What counts: every byte from the request line through the blank line ending the
    # header, CRLFs included, however the bytes arrive. (Beast's own limit leaves uncounted
    # the lines it completed within its first read; the server checks the exact size of the
    # header it parsed on top of it.) 16,384 bytes pass, 16,385 are 431.

    def _mcp_with_header_total(self, total, target):
        """A tools/call whose header block (request line .. blank line) is `total` bytes."""
        body = status_call_body()
        base = mcp_head(self.port, self.token, len(body), target=target)
        pad = total - len(base) - len(b"X-Pad: \r\n")
        self.assertGreaterEqual(pad, 0)
        head = mcp_head(self.port, self.token, len(body), target=target,
                        extra=b"X-Pad: " + b"p" * pad + b"\r\n")
        self.assertEqual(len(head), total)
        return head, body

    def test_headers_exactly_16kib_counting_request_line_pass(self):
        target = "/mcp?" + "q" * 600  # the query is ignored; it makes the request line > 512
        head, body = self._mcp_with_header_total(HEADER_LIMIT, target)
        status, _, rbody = parse_raw(raw_exchange(head + body, port=self.port))
        self.assertEqual(status, 200, rbody[:300])
        self.assertEqual(json.loads(rbody)["result"]["structuredContent"]["workspace"], "alpha")

    def test_headers_16kib_plus_1_counting_request_line_is_431(self):
        target = "/mcp?" + "q" * 600
        head, body = self._mcp_with_header_total(HEADER_LIMIT + 1, target)
        s = connect(self.port)
        try:
            try:
                s.sendall(head + body)
            except (BrokenPipeError, ConnectionResetError):
                pass
            status, headers, rbody = read_response(s)
            self.assertEqual(status, 431, rbody[:300])
            self.assertEqual(json.loads(rbody).get("status"), "error", rbody)
            self.assertTrue(is_closed(s, 3), "connection left open after 431")
        finally:
            s.close()

    def test_headers_16kib_plus_1_short_request_line_is_431(self):
        # Also on a connection that already carried a request (its read buffer has grown).
        head, body = self._mcp_with_header_total(HEADER_LIMIT + 1, "/mcp")
        ok_head, ok_body = self._mcp_with_header_total(1024, "/mcp")
        for warm in (False, True):
            s = connect(self.port)
            try:
                if warm:
                    s.sendall(ok_head + ok_body)
                    self.assertEqual(read_response(s)[0], 200)
                try:
                    s.sendall(head + body)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                status, _, rbody = read_response(s)
                self.assertEqual(status, 431, f"warm={warm}: {rbody[:300]}")
            finally:
                s.close()

    def test_headers_exactly_16kib_short_request_line_pass(self):
        head, body = self._mcp_with_header_total(HEADER_LIMIT, "/mcp")
        status, _, rbody = parse_raw(raw_exchange(head + body, port=self.port))
        self.assertEqual(status, 200, rbody[:300])

    def test_headers_over_16kib_plus_512_always_431(self):
        # However the bytes are laid out (one big field, many small ones, sent at once or
        # trickled), a header block of 16 KiB + 512 bytes is refused.
        total = HEADER_LIMIT + 512
        start = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        layouts = []
        for nfields in (0, 4, 150):
            fields = b"".join(b"X-F%04d: %s\r\n" % (i, b"b" * 90) for i in range(nfields))
            pad = total - len(start) - len(fields) - len(b"X-Pad: \r\n\r\n")
            layouts.append(start + fields + b"X-Pad: " + b"a" * pad + b"\r\n\r\n")
        for head in layouts:
            self.assertEqual(len(head), total)
            for trickle in (False, True):
                s = connect(self.port)
                try:
                    try:
                        if trickle:
                            for i in range(0, len(head), 1024):
                                s.sendall(head[i:i + 1024])
                                time.sleep(0.002)
                        else:
                            s.sendall(head)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    status, _, _ = read_response(s)
                    self.assertEqual(status, 431, (len(head), trickle))
                finally:
                    s.close()

    # --- Ingest: 64 KiB per line; field lengths ----------------------------------------------

    def _episode(self, n, **fields):
        line = {"type": "episode", "kind": "message_received",
                "occurred_at": "2026-02-01T09:%02d:%02dZ" % (n // 60 % 60, n % 60),
                "counterparty": "edge@alpha.example", "summary": f"edge episode {n}"}
        line.update(fields)
        return line

    @staticmethod
    def _padded(obj, size):
        text = json.dumps(obj).encode()
        assert len(text) <= size
        return text[:-1] + b" " * (size - len(text)) + b"}"

    def _post_raw_ingest(self, body):
        # Batches of up to 32 MiB / 100,000 lines: minutes, not seconds, under the sanitizers.
        return req(self.port, "POST", "/v1/episodes", body=body, token=self.token,
                   headers={"Content-Type": "application/x-ndjson"}, timeout=300)

    def test_ingest_line_exactly_64kib_is_accepted(self):
        before = status_of(self, self.port, self.token)
        first = json.dumps(self._episode(1)).encode()
        line = self._padded(self._episode(2, body="x" * 1000), 64 << 10)
        self.assertEqual(len(line), 65536)
        crlf = self._padded(self._episode(3), 64 << 10)  # CR before LF is not part of the line
        r = self._post_raw_ingest(first + b"\n" + line + b"\n" + crlf + b"\r\n")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["episodes_added"], 3, r)
        after = status_of(self, self.port, self.token)
        self.assertEqual(after["episodes"], before["episodes"] + 3)

    def test_ingest_line_64kib_plus_1_is_400_naming_the_line(self):
        before = status_of(self, self.port, self.token)
        first = json.dumps(self._episode(4)).encode()
        line = self._padded(self._episode(5), (64 << 10) + 1)
        r = self._post_raw_ingest(first + b"\n" + line + b"\n")
        self.assertEqual(r.status, 400, r)
        body = r.json()
        self.assertEqual(body["status"], "error", body)
        self.assertTrue(body["message"].startswith("line 2:"), body)
        self.assertIn("65536", body["message"])
        after = status_of(self, self.port, self.token)
        self.assertEqual(after["episodes"], before["episodes"])
        self.assertEqual(after["world_version"], before["world_version"])

    def test_ingest_body_exactly_32mib_is_accepted(self):
        # One episode and then whitespace-only lines (skipped, of any length) up to 32 MiB.
        size = 32 << 20
        line = (json.dumps(self._episode(300)) + "\n").encode()
        filler = b" " * 65535 + b"\n"
        n, rest = divmod(size - len(line), len(filler))
        body = line + filler * n + (b" " * (rest - 1) + b"\n" if rest else b"")
        self.assertEqual(len(body), size)
        r = self._post_raw_ingest(body)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["episodes_added"], 1, r)

    def test_ingest_body_32mib_plus_1_is_413_and_closed(self):
        size = (32 << 20) + 1
        head = (f"POST /v1/episodes HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {self.token}\r\nContent-Type: application/x-ndjson\r\n"
                f"Content-Length: {size}\r\n\r\n").encode()
        s = connect(self.port)
        try:
            s.sendall(head)  # refused on the declared length: no need to send the body
            status, headers, body = read_response(s)
            self.assertEqual(status, 413, body[:300])
            self.assertIn("33554432", body.decode())
            # The ingest route's own error shape, like its other refusals.
            self.assertEqual(json.loads(body)["error"], "payload_too_large", body[:300])
            self.assertTrue(is_closed(s, 3), "connection left open after 413")
        finally:
            s.close()

    def test_ingest_100000_lines_pass_and_100001_are_refused(self):
        # Duplicates of one episode keep the accepted batch cheap to apply; every line counts.
        line = (json.dumps(self._episode(400, external_id="batch-edge-1")) + "\n").encode()
        before = status_of(self, self.port, self.token)
        r = self._post_raw_ingest(line * 100001)
        self.assertEqual(r.status, 400, r)
        self.assertTrue(r.json()["message"].startswith("line 100001:"), r)
        self.assertEqual(status_of(self, self.port, self.token)["episodes"], before["episodes"])
        r = self._post_raw_ingest(line * 100000)
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json()["lines"], r.json()["episodes_added"]), (100000, 1), r)

    # (kind, field, largest allowed value, one too many). Strings are counted in characters:
    # the edge values use a two-byte character where the schema allows any text.
    FIELD_EDGES = [
        ("episode", "summary", "\u00e9" * 2000, "\u00e9" * 2001),
        ("episode", "subject", "\u00e9" * 500, "\u00e9" * 501),
        ("episode", "body", "\u00e9" * 20000, "\u00e9" * 20001),
        ("entity", "name", "\u00e9" * 200, "\u00e9" * 201),
        ("entity", "identifiers", ["i" * 308 + "@example.com"], ["i" * 309 + "@example.com"]),
        ("entity", "tags", ["t%02d" % i for i in range(32)], ["t%02d" % i for i in range(33)]),
        ("entity", "tags", ["t" * 64], ["t" * 65]),
    ]

    def _line(self, n, kind, field, value):
        if kind == "episode":
            return self._episode(100 + n, **{field: value})
        ent = {"type": "entity", "name": f"Edge {n}", "identifiers": [f"edge{n}@alpha.example"]}
        ent[field] = value
        return ent

    def test_ingest_fields_at_their_limits_are_accepted(self):
        lines = [self._line(i, kind, field, ok) for i, (kind, field, ok, _) in
                 enumerate(self.FIELD_EDGES)]
        r = ingest(self.port, self.token, lines)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["lines"], len(lines), r)
        # The 320-character identifier is found again, by a 320-character lookup.
        ident = "i" * 308 + "@example.com"
        self.assertEqual(len(ident), 320)
        result = th.tool_result(self, call_tool(self.port, self.token, "entity.lookup",
                                                {"identifier": ident}))
        self.assertFalse(result.get("isError", False), result)
        self.assertEqual(result["structuredContent"]["identifiers"], [ident])

    def test_ingest_fields_one_over_are_400_naming_line_and_field(self):
        for i, (kind, field, _, over) in enumerate(self.FIELD_EDGES):
            with self.subTest(field=field, size=len(over)):
                good = self._episode(200 + i)
                r = ingest(self.port, self.token, [good, self._line(50 + i, kind, field, over)])
                self.assertEqual(r.status, 400, r)
                msg = r.json()["message"]
                self.assertTrue(msg.startswith("line 2:"), msg)
                self.assertIn(f"field '{field}", msg)

    def test_tool_identifier_321_chars_is_invalid_arguments(self):
        ident = "i" * 309 + "@example.com"
        self.assertEqual(len(ident), 321)
        sc = self.assertToolError(call_tool(self.port, self.token, "entity.lookup",
                                            {"identifier": ident}), "invalid_arguments")
        self.assertIn("identifier", sc["message"])

    # --- Page sizes -------------------------------------------------------------------------

    def _page_edge(self, tool, documented=None):
        schema = tool_schema(self, self.port, self.token, tool)["properties"]["limit"]
        top = schema["maximum"]
        if documented is not None:
            self.assertEqual(top, documented, f"{tool}: published maximum differs from docs")
        ok = th.tool_result(self, call_tool(self.port, self.token, tool, {"limit": top}))
        self.assertFalse(ok.get("isError", False), ok)
        for bad in (top + 1, 0):
            sc = self.assertToolError(call_tool(self.port, self.token, tool, {"limit": bad}),
                                      "invalid_arguments")
            self.assertIn("limit", sc["message"])

    def test_decision_list_limit_100_vs_101(self):
        self._page_edge("decision.list", documented=100)  # docs/mcp.md: limit <= 100

    def test_notification_list_limit_edge(self):
        # docs/mcp.md gives no number for notification.list; the published schema is the bound.
        self._page_edge("notification.list")

    # --- GET /mcp streams per session: 8 ----------------------------------------------------

    def test_eight_streams_per_session_then_429(self):
        r = modern(self.port, "tools/list", token=self.token)  # warm-up, proves the token
        self.assertEqual(r.status, 200, r)
        conn = http_conn(self.port)
        try:
            init = th.rpc("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                         "clientInfo": {"name": "e2e", "version": "1"}},
                          id=0, token=self.token, conn=conn)
        finally:
            conn.close()
        sid = init.header("Mcp-Session-Id")
        self.assertTrue(sid, init)
        head = (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {self.token}\r\n"
                f"Accept: text/event-stream\r\nMcp-Session-Id: {sid}\r\n"
                f"MCP-Protocol-Version: {LEGACY}\r\n\r\n").encode()

        def open_stream():
            s = connect(self.port)
            s.sendall(head)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            return s, data

        streams = []
        try:
            for i in range(8):
                s, data = open_stream()
                streams.append(s)
                self.assertTrue(data.startswith(b"HTTP/1.1 200"), (i, data[:200]))
            s, data = open_stream()
            streams.append(s)
            self.assertTrue(data.startswith(b"HTTP/1.1 429"), data[:300])
            status, headers, body = read_response_from(data, s)
            self.assertEqual(headers.get("retry-after"), "15", headers)
            self.assertEqual(json.loads(body)["error"]["code"], -32600)
            # Closing one stream frees its place.
            streams.pop(0).close()
            deadline = time.monotonic() + 3
            while True:
                s, data = open_stream()
                streams.append(s)
                if data.startswith(b"HTTP/1.1 200") or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            self.assertTrue(data.startswith(b"HTTP/1.1 200"), data[:200])
        finally:
            for s in streams:
                s.close()


def read_response_from(prefix, sock):
    """read_response for a socket whose first bytes were already read into `prefix`."""
    data = prefix
    while True:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
            if m is None or len(rest) >= int(m.group(1)):
                return parse_raw(data)
        chunk = sock.recv(65536)
        if not chunk:
            return parse_raw(data)
        data += chunk


# --------------------------------------------------------------------------------------------
# http.max_connections and http.max_connections_per_address
# --------------------------------------------------------------------------------------------

def busy_head(port):
    """The start of a request that never ends (within the read timeout): a busy connection,
    which the server never closes to make room."""
    return f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode()


class TestMaxConnections(unittest.TestCase):
    MAX = 8
    PER_ADDRESS = 4

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-conns-")
        cls.server = start_server(cls.tmp.name, f"[http]\nmax_connections = {cls.MAX}\n"
                                                f"max_connections_per_address = {cls.PER_ADDRESS}\n"
                                                "flood_requests_per_second = 0\n")
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.tmp.cleanup()

    def tearDown(self):
        time.sleep(0.3)  # let the server see this test's connections go

    def healthz_on(self, s):
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        return read_response(s)

    def served(self, source, within=3.0):
        """A connection from `source` that the server serves (it may need a moment to notice
        a close)."""
        deadline = time.monotonic() + within
        while True:
            s = connect(self.port, source=source)
            try:
                status, headers, _ = self.healthz_on(s)
            except OSError:  # refused and closed before our request went out
                status, headers = None, {}
            if status == 200:
                return s
            s.close()
            self.assertIn(status, (503, None), headers)
            if time.monotonic() > deadline:
                self.fail(f"no connection served within {within}s after one was closed")
            time.sleep(0.05)

    def busy(self, source):
        s = connect(self.port, source=source)
        s.sendall(busy_head(self.port))
        time.sleep(0.05)  # the server has read the first bytes: the connection is busy
        return s

    def assertBusy(self, s):
        # The server answers at once, without waiting for a request, then hangs up.
        status, headers, body = read_response(s)
        self.assertEqual(status, 503, (headers, body))
        self.assertEqual(headers.get("retry-after"), "1", headers)
        self.assertTrue(is_closed(s, 3), "connection left open after 503")

    def test_idle_connections_make_room_for_new_ones(self):
        open_ = []
        try:
            # The server full of idle keep-alive connections, from two addresses.
            for i in range(self.MAX):
                open_.append(self.served("127.0.0.2" if i < self.PER_ADDRESS else "127.0.0.3"))
                time.sleep(0.01)  # each idle a little longer than the next
            # A newcomer from a third address is served: the longest-idle connection closed.
            newcomer = self.served("127.0.0.4", within=1.0)
            open_.append(newcomer)
            self.assertTrue(is_closed(open_[0], 2), "the longest-idle connection was kept")
            for s in open_[1:]:
                self.assertFalse(is_closed(s, 0.05), "a connection other than the longest-idle "
                                                     "one was closed")
        finally:
            for s in open_:
                s.close()

    def test_an_address_makes_room_among_its_own(self):
        open_ = []
        try:
            others = [self.served("127.0.0.3")]
            open_ += others
            mine = []
            for _ in range(self.PER_ADDRESS):
                mine.append(self.served("127.0.0.2"))
                time.sleep(0.01)
            open_ += mine
            # At its bound with the server not full, an address's newcomer closes its own
            # longest-idle connection, and never another address's (older) one.
            open_.append(self.served("127.0.0.2", within=1.0))
            self.assertTrue(is_closed(mine[0], 2))
            self.assertFalse(is_closed(others[0], 0.2), "another address's connection was shed")
            self.assertEqual(self.healthz_on(others[0])[0], 200)
        finally:
            for s in open_:
                s.close()

    def test_busy_connections_are_never_shed_503_then(self):
        held = []
        try:
            # One address's share of busy connections: its next is refused, while another
            # address is served.
            held += [self.busy("127.0.0.2") for _ in range(self.PER_ADDRESS)]
            extra = connect(self.port, source="127.0.0.2")
            try:
                self.assertBusy(extra)
            finally:
                extra.close()
            other = self.served("127.0.0.3")
            held.append(other)
            # The server full (one idle among them): a newcomer takes the idle one's place;
            # once all are busy, newcomers are refused.
            held += [self.busy("127.0.0.4") for _ in range(self.MAX - self.PER_ADDRESS - 1)]
            held.append(self.served("127.0.0.5", within=1.0))
            self.assertTrue(is_closed(other, 2))
            held[-1].sendall(busy_head(self.port))
            time.sleep(0.05)
            extra = connect(self.port, source="127.0.0.6")
            try:
                self.assertBusy(extra)
            finally:
                extra.close()
            # The busy ones were all kept.
            for s in held:
                if s is not other:
                    self.assertFalse(is_closed(s, 0.01), "a busy connection was closed")
        finally:
            for s in held:
                s.close()
        # Refusals at the bounds are counted. The server notices the closes above as its I/O
        # threads get to them: until then it may still be full, and refuse this one too.
        deadline = time.monotonic() + 5
        while True:
            try:
                r = req(self.port, "GET", "/metrics")
                if r.status == 200:
                    break
            except (OSError, http.client.HTTPException):  # refused by a full server
                pass
            self.assertLess(time.monotonic(), deadline, "GET /metrics never answered 200")
            time.sleep(0.05)
        self.assertRegex(r.body.decode(), r'cortex_requests_total\{method="connection",tool="",'
                                          r'status="too_many_connections"\} [1-9]')


class TestManyIdleConnectionsFromOneAddress(unittest.TestCase):
    """Issue #32: 1,030 idle connections from one address (default bounds) made /healthz and
    every other request answer 503 until the idle timeout."""

    def test_healthz_still_answers(self):
        with tempfile.TemporaryDirectory(prefix="cortex-e2e-idle-") as d:
            server = start_server(d)
            socks = []
            try:
                for _ in range(1030):
                    try:
                        socks.append(connect(server.port))
                    except OSError:
                        break  # refused: also not holding the server
                time.sleep(0.3)
                for source in ("127.0.0.1", "127.0.0.2"):
                    started = time.monotonic()
                    s = connect(server.port, source=source)
                    try:
                        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                        status, headers, _ = read_response(s)
                    finally:
                        s.close()
                    self.assertEqual(status, 200, (source, headers))
                    self.assertLess(time.monotonic() - started, 2.0)
                # The address holds at most its share of the server (256 by default), the
                # newest: each newcomer past it closed the longest-idle of its own.
                still_open = [not is_closed(s, 0.01) for s in socks]
                self.assertLessEqual(sum(still_open), 256)
                self.assertTrue(all(still_open[-200:]), "a newer connection was closed first")
            finally:
                for s in socks:
                    s.close()
                server.kill()


# --------------------------------------------------------------------------------------------
# Open MCP sessions: per token, per workspace, in all; stdio under none
# --------------------------------------------------------------------------------------------

def initialize_on(conn, token):
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {},
                       "clientInfo": {"name": "cortex-e2e", "version": "1.0.0"}}}
    return th.request("POST", body=body, token=token, conn=conn)


def stdio_initialize(data_dir, token):
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": LEGACY, "capabilities": {},
                         "clientInfo": {"name": "cortex-e2e", "version": "1.0.0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    env = {k: v for k, v in os.environ.items() if k != "CORTEX_TOKEN"}
    env["CORTEX_TOKEN"] = token
    proc = subprocess.run([th.CORTEX_BIN, "mcp", "--stdio", "--data", data_dir],
                          input="".join(json.dumps(l) + "\n" for l in lines).encode(),
                          capture_output=True, timeout=60, env=env)
    return [json.loads(l) for l in proc.stdout.decode().splitlines() if l.strip()]


class TestSessionCapsByDefault(unittest.TestCase, RpcAsserts):
    """Issue #32: one workspace's read-only token opened every session the server had."""

    def test_a_token_opens_250_and_others_still_open_theirs(self):
        with tempfile.TemporaryDirectory(prefix="cortex-e2e-sessions-") as d:
            ro = create_token(d, "alpha", "read")
            other = create_token(d, "alpha", "read")
            beta = create_token(d, "beta", "read")
            server = start_server(d, "[http]\nflood_requests_per_second = 0\n")
            try:
                conn = http_conn(server.port, timeout=60)
                try:
                    for i in range(250):
                        r = initialize_on(conn, ro)
                        self.assertEqual(r.status, 200, (i, r))
                    r = initialize_on(conn, ro)
                finally:
                    conn.close()
                self.assertRpcError(r, 429, -32603)
                self.assertIn("for this token (at most 250)", r.json()["error"]["message"])
                self.assertIsNotNone(r.header("Retry-After"))
                for tok in (other, beta):
                    conn = http_conn(server.port)
                    try:
                        self.assertEqual(initialize_on(conn, tok).status, 200)
                    finally:
                        conn.close()
                replies = stdio_initialize(d, ro)
                self.assertEqual(replies[0]["result"]["protocolVersion"], LEGACY, replies)
                self.assertTrue(replies[1]["result"]["tools"], replies)
            finally:
                server.kill()


class TestSessionCaps(unittest.TestCase, RpcAsserts):
    """The three caps, set low in [http], each at its edge."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-session-caps-")
        d = cls.tmp.name
        cls.a1 = create_token(d, "alpha", "read")
        cls.a2 = create_token(d, "alpha", "read")
        cls.b = create_token(d, "beta", "read")
        cls.c = create_token(d, "gamma", "read")
        cls.server = start_server(d, "[http]\nmax_sessions = 5\nmax_sessions_per_workspace = 3\n"
                                     "max_sessions_per_token = 2\n")
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.tmp.cleanup()

    def open(self, token):
        conn = http_conn(self.port)
        try:
            return initialize_on(conn, token)
        finally:
            conn.close()

    def test_each_cap_at_its_edge(self):
        first = self.open(self.a1)
        self.assertEqual(first.status, 200)
        self.assertEqual(self.open(self.a1).status, 200)
        r = self.open(self.a1)
        self.assertRpcError(r, 429, -32603)
        self.assertIn("this token (at most 2)", r.json()["error"]["message"])
        self.assertEqual(self.open(self.a2).status, 200)
        r = self.open(self.a2)
        self.assertRpcError(r, 429, -32603)
        self.assertIn("this workspace (at most 3)", r.json()["error"]["message"])
        self.assertEqual(self.open(self.b).status, 200)
        self.assertEqual(self.open(self.b).status, 200)
        r = self.open(self.c)
        self.assertRpcError(r, 503, -32603)
        self.assertIn("the server (at most 5)", r.json()["error"]["message"])
        # stdio is under none of them.
        replies = stdio_initialize(self.tmp.name, self.a1)
        self.assertEqual(replies[0]["result"]["protocolVersion"], LEGACY, replies)
        # Ending a session makes room for its token again.
        sid = first.header("Mcp-Session-Id")
        conn = http_conn(self.port)
        try:
            ended = th.request("DELETE", headers={"Mcp-Session-Id": sid,
                                                  "MCP-Protocol-Version": LEGACY},
                               token=self.a1, conn=conn)
        finally:
            conn.close()
        self.assertEqual(ended.status, 200, ended)
        self.assertEqual(self.open(self.a1).status, 200)


# --------------------------------------------------------------------------------------------
# http.read_timeout_seconds and http.idle_timeout_seconds (different, so that each is
# attributable)
# --------------------------------------------------------------------------------------------

class TestTimeouts(unittest.TestCase):
    READ = 2
    IDLE = 4

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-timeouts-")
        cls.token = create_token(cls.tmp.name, "alpha", "read,act")
        cls.server = start_server(
            cls.tmp.name, f"[http]\nread_timeout_seconds = {cls.READ}\n"
                          f"idle_timeout_seconds = {cls.IDLE}\nflood_requests_per_second = 0\n")
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.tmp.cleanup()

    def assertClosedAround(self, sock, expected, what):
        seconds, got = wait_closed(sock, expected + 3)
        self.assertIsNotNone(seconds, f"{what}: still open {expected + 3}s later")
        self.assertGreaterEqual(seconds, expected - 0.5, f"{what}: closed after {seconds:.2f}s")
        self.assertLessEqual(seconds, expected + 0.9, f"{what}: closed after {seconds:.2f}s")
        return got

    def test_half_headers_closed_at_read_timeout(self):
        # docs/limits.md: the read timeout bounds receiving one request "once it started".
        s = connect(self.port)
        try:
            s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                      f"{self.token}\r\nContent-Ty".encode())
            got = self.assertClosedAround(s, self.READ, "request with half its headers")
            self.assertEqual(got, b"")
        finally:
            s.close()

    def test_half_body_closed_at_read_timeout(self):
        body = status_call_body(400)
        s = connect(self.port)
        try:
            s.sendall(mcp_head(self.port, self.token, len(body)) + body[:200])
            got = self.assertClosedAround(s, self.READ, "request with half its body")
            self.assertEqual(got, b"")
        finally:
            s.close()

    def test_request_trickled_within_read_timeout_is_served(self):
        body = status_call_body(400)
        raw = mcp_head(self.port, self.token, len(body)) + body
        s = connect(self.port)
        try:
            pieces = 8
            step = len(raw) // pieces + 1
            started = time.monotonic()
            for i in range(0, len(raw), step):  # spread over ~1.2 s, under the 2 s timeout
                s.sendall(raw[i:i + step])
                time.sleep(1.2 / pieces)
            status, _, rbody = read_response(s)
            self.assertLess(time.monotonic() - started, self.READ)
            self.assertEqual(status, 200, rbody[:300])
        finally:
            s.close()

    def test_fresh_connection_closed_at_idle_timeout(self):
        s = connect(self.port)
        try:
            self.assertClosedAround(s, self.IDLE, "connection that never sent a byte")
        finally:
            s.close()

    def test_keep_alive_idle_edge(self):
        s = connect(self.port)
        try:
            ask = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            s.sendall(ask)
            self.assertEqual(read_response(s)[0], 200)
            time.sleep(self.IDLE - 1)  # just inside the idle timeout: still served
            s.sendall(ask)
            self.assertEqual(read_response(s)[0], 200)
            self.assertClosedAround(s, self.IDLE, "idle keep-alive connection")
        finally:
            s.close()


# --------------------------------------------------------------------------------------------
# Quotas. The server clock is frozen (CORTEX_FAKE_NOW) one second before a minute ends, so
# every count stays in one window whatever the test's pace, and retry_after_s is exact.
# --------------------------------------------------------------------------------------------

FAKE_NOW = "2026-03-10T12:00:59Z"
SECONDS_TO_UTC_MIDNIGHT = 11 * 3600 + 59 * 60 + 1  # from 12:00:59 to 24:00:00


class TestQuotas(unittest.TestCase, RpcAsserts):
    CONFIG = ("[quotas]\ntoken_calls_per_minute = 5\ncalls_per_minute = 8\n"
              "[http]\nflood_requests_per_second = 0\n")

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-quotas-")
        d = cls.data = cls.tmp.name
        cls.tok = {}
        for ws, names in [("q-edge", ["a", "b"]), ("q-split", ["a", "b"]), ("q-frozen", ["a"]),
                          ("q-cli", ["a"]), ("q-day", ["a"]), ("q-free", ["a"]),
                          ("q-401", ["a", "b"]), ("q-list", ["a"]), ("q-tz", ["a"]),
                          ("q-zero", ["a"])]:
            for n in names:
                cls.tok[ws, n] = create_token(d, ws, "read,act", label=f"{ws}-{n}")
        cls.tok["q-401", "revoked"] = create_token(d, "q-401", "read,act", label="revoked")
        tid = th.token_id_by_label(d, "q-401", "revoked")
        cli(d, "token", "revoke", "--data", d, "--workspace", "q-401", tid)
        cls.server = start_server(d, cls.CONFIG, env={"CORTEX_FAKE_NOW": FAKE_NOW})
        cls.port = cls.server.port
        cls.config_path = os.path.join(d, "cortex.toml")

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.tmp.cleanup()

    def call(self, ws, who="a", id=7):
        return call_tool(self.port, self.tok[ws, who], "workspace.status", {}, id=id)

    def assertAdmitted(self, ws, who="a", times=1):
        for i in range(times):
            r = self.call(ws, who)
            result = th.tool_result(self, r)
            self.assertFalse(result.get("isError", False), (ws, who, i, result))

    def assertQuota(self, r, quota, limit, retry_after):
        sc = self.assertToolError(r, "quota_exceeded")
        self.assertEqual(sc.get("quota"), quota, sc)
        self.assertEqual(sc.get("limit"), limit, sc)
        self.assertEqual(sc.get("retry_after_s"), retry_after, sc)
        self.assertIsInstance(sc.get("message"), str, sc)
        return sc

    def quota_set(self, ws, name, value, check=True):
        return cli(self.data, "quota", "set", "--data", self.data, "--workspace", ws, name,
                   str(value), check=check)

    def quota_list(self, ws):
        out = cli(self.data, "quota", "list", "--data", self.data, "--workspace", ws,
                  "--config", self.config_path).stdout
        rows = {}
        for line in out.splitlines()[1:]:
            name, limit, source = line.split("\t")
            rows[name] = (int(limit), source)
        return rows

    def test_token_calls_per_minute_edge(self):
        self.assertAdmitted("q-edge", "a", times=5)
        self.assertQuota(self.call("q-edge", "a"), "token_calls_per_minute", 5, 1)
        # Calling on over the limit is refused every time and counts against nothing: the
        # workspace (8 a minute) still has 3 calls for the other token.
        for _ in range(4):
            self.assertQuota(self.call("q-edge", "a"), "token_calls_per_minute", 5, 1)
        self.assertAdmitted("q-edge", "b", times=3)
        self.assertQuota(self.call("q-edge", "b"), "calls_per_minute", 8, 1)

    def test_workspace_calls_per_minute_split_across_two_tokens(self):
        for _ in range(4):
            self.assertAdmitted("q-split", "a")
            self.assertAdmitted("q-split", "b")
        # 8 together: each token is under its own 5, the workspace is at its 8.
        self.assertQuota(self.call("q-split", "a"), "calls_per_minute", 8, 1)
        self.assertQuota(self.call("q-split", "b"), "calls_per_minute", 8, 1)

    def test_frozen_clock_never_resets_the_minute(self):
        self.assertAdmitted("q-frozen", times=5)
        self.assertQuota(self.call("q-frozen"), "token_calls_per_minute", 5, 1)
        time.sleep(1.5)  # past retry_after_s by the wall clock, but the server's clock is fixed
        self.assertQuota(self.call("q-frozen"), "token_calls_per_minute", 5, 1)

    def test_cli_override_applies_on_next_call_and_default_restores(self):
        self.quota_set("q-cli", "token_calls_per_minute", 2)
        self.assertEqual(self.quota_list("q-cli")["token_calls_per_minute"], (2, "workspace"))
        self.assertAdmitted("q-cli", times=2)
        self.assertQuota(self.call("q-cli"), "token_calls_per_minute", 2, 1)
        self.quota_set("q-cli", "token_calls_per_minute", "default")
        self.assertEqual(self.quota_list("q-cli")["token_calls_per_minute"], (5, "config"))
        self.assertAdmitted("q-cli", times=3)  # 2 + 3 = the configured 5
        self.assertQuota(self.call("q-cli"), "token_calls_per_minute", 5, 1)

    def test_zero_override_admits_nothing(self):
        self.quota_set("q-zero", "calls_per_minute", 0)
        self.assertQuota(self.call("q-zero"), "calls_per_minute", 0, 1)
        self.quota_set("q-zero", "calls_per_minute", "default")
        self.assertAdmitted("q-zero")

    def test_cli_refuses_bad_names_and_values(self):
        for name, value in [("calls_per_hour", "5"), ("calls_per_minute", "-1"),
                            ("calls_per_minute", "abc"), ("calls_per_minute", "5x"),
                            ("calls_per_minute", "1000000001")]:
            with self.subTest(name=name, value=value):
                p = self.quota_set("q-list", name, value, check=False)
                self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertEqual(self.quota_list("q-list")["calls_per_minute"], (8, "config"))
        p = self.quota_set("q-list", "calls_per_minute", 1000000000, check=False)  # the max
        self.assertEqual(p.returncode, 0, p.stderr)
        self.quota_set("q-list", "calls_per_minute", "default")

    def test_quota_list_names_each_source(self):
        # docs/quotas.md: "shows what is in force and where each value comes from". The config
        # sets only token_calls_per_minute and calls_per_minute; calls_per_day comes from the
        # built-in default.
        self.quota_set("q-list", "calls_per_day", 40000)
        rows = self.quota_list("q-list")
        self.assertEqual(set(rows), {"calls_per_minute", "calls_per_day",
                                     "inference_units_per_day", "token_calls_per_minute",
                                     "token_calls_per_day", "token_inference_units_per_day"})
        self.assertEqual(rows["calls_per_day"], (40000, "workspace"))
        self.assertEqual(rows["token_calls_per_minute"], (5, "config"))
        self.assertEqual(rows["calls_per_minute"], (8, "config"))
        self.quota_set("q-list", "calls_per_day", "default")
        self.assertEqual(self.quota_list("q-list")["token_calls_per_day"], (20000, "default"))

    def test_day_named_when_minute_and_day_are_both_spent(self):
        self.quota_set("q-day", "token_calls_per_day", 3)
        self.quota_set("q-day", "token_calls_per_minute", 3)
        self.assertAdmitted("q-day", times=3)
        self.assertQuota(self.call("q-day"), "token_calls_per_day", 3, SECONDS_TO_UTC_MIDNIGHT)

    def test_day_window_follows_the_workspace_utc_offset(self):
        rules = os.path.join(self.data, "tz-rules.yaml")
        with open(rules, "w") as f:
            f.write('settings:\n  utc_offset: "+05:00"\nrules: []\n')
        cli(self.data, "rules", "import", "--data", self.data, "--workspace", "q-tz", rules)
        self.quota_set("q-tz", "calls_per_day", 1)
        self.assertAdmitted("q-tz")
        # 12:00:59Z is 17:00:59 at +05:00: 6 h 59 min 1 s to local midnight.
        self.assertQuota(self.call("q-tz"), "calls_per_day", 1, 6 * 3600 + 59 * 60 + 1)

    def test_tools_list_and_other_requests_do_not_count(self):
        tok = self.tok["q-free", "a"]
        for i in range(12):
            self.assertEqual(modern(self.port, "tools/list", token=tok, id=i).status, 200)
            self.assertEqual(modern(self.port, "server/discover", token=tok, id=i).status, 200)
        conn = http_conn(self.port)
        try:
            init = th.rpc("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                         "clientInfo": {"name": "e2e", "version": "1"}},
                          id=0, token=tok, conn=conn)
            sid = init.header("Mcp-Session-Id")
            h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
            r = th.rpc("notifications/initialized", id=None, token=tok, headers=h, conn=conn)
            self.assertEqual(r.status, 202, r)
            for i in range(6):
                self.assertEqual(th.rpc("ping", id=i, token=tok, headers=h, conn=conn).status, 200)
                self.assertEqual(th.rpc("tools/list", id=i, token=tok, headers=h,
                                        conn=conn).status, 200)
            r = ingest(self.port, tok, [{"type": "entity", "name": "Free",
                                         "identifiers": ["free@q.example"]}])
            self.assertEqual(r.status, 200, r)
            for path in ("/healthz", "/metrics"):
                self.assertEqual(req(self.port, "GET", path).status, 200)
            # Now the 5 tool calls: two in the session, three stateless; the 6th is refused
            # whichever era it comes in.
            for i in range(2):
                r = th.rpc("tools/call", {"name": "workspace.status", "arguments": {}}, id=50 + i,
                           token=tok, headers=h, conn=conn)
                self.assertFalse(r.json()["result"].get("isError", False), r)
            self.assertAdmitted("q-free", times=3)
            r = th.rpc("tools/call", {"name": "workspace.status", "arguments": {}}, id=7,
                       token=tok, headers=h, conn=conn)
            self.assertQuota(r, "token_calls_per_minute", 5, 1)
            self.assertQuota(self.call("q-free"), "token_calls_per_minute", 5, 1)
        finally:
            conn.close()

    def test_unauthenticated_flood_consumes_nothing(self):
        bad = ["ctk_" + "0" * 48, "garbage", self.tok["q-401", "revoked"]]
        for i in range(30):  # well over every quota in force (5 and 8)
            r = call_tool(self.port, bad[i % len(bad)], "workspace.status", {})
            self.assertEqual(r.status, 401, r)
        for i in range(3):
            r = req(self.port, "POST", body=b"{}", token=None)
            self.assertEqual(r.status, 401, r)
        # Token a still has its 5, and the workspace its 8 (5 + 3).
        self.assertAdmitted("q-401", "a", times=5)
        self.assertQuota(self.call("q-401", "a"), "token_calls_per_minute", 5, 1)
        self.assertAdmitted("q-401", "b", times=3)
        self.assertQuota(self.call("q-401", "b"), "calls_per_minute", 8, 1)


class TestQuotaRealClock(unittest.TestCase, RpcAsserts):
    """The same minute quota on the real clock: retry_after_s is within 1..60."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-quota-clock-")
        cls.token = create_token(cls.tmp.name, "alpha", "read")
        cls.server = start_server(cls.tmp.name, "[quotas]\ntoken_calls_per_minute = 3\n")
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.tmp.cleanup()

    def test_minute_quota_on_the_real_clock(self):
        # Keep the four calls inside one clock minute.
        while time.gmtime().tm_sec >= 55:
            time.sleep(0.5)
        started = time.time()
        for _ in range(3):
            r = th.tool_result(self, call_tool(self.port, self.token, "workspace.status", {}))
            self.assertFalse(r.get("isError", False), r)
        sc = self.assertToolError(call_tool(self.port, self.token, "workspace.status", {}),
                                  "quota_exceeded")
        self.assertEqual(sc["quota"], "token_calls_per_minute")
        self.assertEqual(sc["limit"], 3)
        left = 60 - int(started) % 60
        self.assertGreaterEqual(sc["retry_after_s"], 1)
        self.assertLessEqual(sc["retry_after_s"], 60)
        self.assertLessEqual(abs(sc["retry_after_s"] - left), 2, (sc, left))


# --------------------------------------------------------------------------------------------
# The flood guard: per client address, before auth. Rate 1/s so the refusals are not racing
# the refill on a busy machine; a burst of 10.
# --------------------------------------------------------------------------------------------

class TestFloodGuard(unittest.TestCase):
    RATE = 1
    BURST = 10

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-flood-")
        cls.token = create_token(cls.tmp.name, "alpha", "read,act")
        cls.server = start_server(cls.tmp.name, f"[http]\nflood_requests_per_second = {cls.RATE}\n"
                                                f"flood_burst = {cls.BURST}\n")
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.tmp.cleanup()

    def raw(self, kind, token=None):
        host = f"Host: 127.0.0.1:{self.port}\r\n"
        if kind == "healthz":
            return f"GET /healthz HTTP/1.1\r\n{host}\r\n".encode()
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                           "params": {"_meta": th.meta()}})
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        if kind == "no_body":  # declares a body it never sends
            return (f"POST /mcp HTTP/1.1\r\n{host}{auth}Content-Type: application/json\r\n"
                    f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/list\r\n"
                    "Content-Length: 100000\r\n\r\n").encode()
        return (f"POST /mcp HTTP/1.1\r\n{host}{auth}Content-Type: application/json\r\n"
                f"Accept: application/json\r\nMCP-Protocol-Version: {MODERN}\r\n"
                f"Mcp-Method: tools/list\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode()

    def parallel(self, requests, source=None):
        """Opens one connection per request first (opening costs no token), then sends them
        all at once and reads every answer. Returns [(status, headers, body, closed)], secs."""
        socks = [connect(self.port, source=source) for _ in requests]
        try:
            started = time.monotonic()
            for s, r in zip(socks, requests):
                s.sendall(r)
            out = [read_response(s) for s in socks]
            elapsed = time.monotonic() - started
            closed = [is_closed(s, 1.0) if st == 429 else None for s, (st, _, _) in zip(socks, out)]
            return [o + (c,) for o, c in zip(out, closed)], elapsed
        finally:
            for s in socks:
                s.close()

    def assertRateLimited(self, res):
        status, headers, body, closed = res
        self.assertEqual(status, 429, res)
        self.assertGreaterEqual(int(headers.get("retry-after", "0")), 1, headers)
        self.assertTrue(headers.get("content-type", "").startswith("application/json"), headers)
        b = json.loads(body)
        self.assertEqual((b.get("status"), b.get("error")), ("error", "rate_limited"), b)
        self.assertTrue(closed, "connection left open after 429")
        return int(headers["retry-after"])

    def test_burst_then_429_before_auth_then_recovery(self):
        time.sleep(2.2)  # refill the token startup's /healthz took (1 a second)
        # Over the burst with requests that would be 200 (healthz) or 401 (no or bad token).
        kinds = [("healthz", None), ("mcp", None), ("mcp", "ctk_" + "1" * 48)] * 5
        results, elapsed = self.parallel([self.raw(k, t) for k, t in kinds])
        passed = [r for r in results if r[0] != 429]
        limited = [r for r in results if r[0] == 429]
        allowed = self.BURST + int(elapsed * self.RATE)
        self.assertGreaterEqual(len(passed), self.BURST, [r[0] for r in results])
        self.assertLessEqual(len(passed), allowed, (elapsed, [r[0] for r in results]))
        for r in passed:
            self.assertIn(r[0], (200, 401), r)
        self.assertTrue(limited, [r[0] for r in results])
        for r in limited:
            self.assertRateLimited(r)

        # With the bucket empty, every kind is refused: /healthz, no token, a bad token, a
        # good token, and a request whose declared body never comes (answered without it).
        later = [("healthz", None), ("mcp", None), ("mcp", "garbage"), ("mcp", self.token),
                 ("no_body", self.token)]
        results, elapsed = self.parallel([self.raw(k, t) for k, t in later])
        self.assertLess(elapsed, 1.0, "a refusal waited for the request body")
        waits = [self.assertRateLimited(r) for r in results]

        # Another client address has its own bucket.
        other, _ = self.parallel([self.raw("healthz")], source="127.0.0.2")
        self.assertEqual(other[0][0], 200, other)

        # After Retry-After, requests pass again.
        time.sleep(max(waits))
        results, _ = self.parallel([self.raw("mcp", self.token)])
        self.assertEqual(results[0][0], 200, results)
        self.assertEqual(json.loads(results[0][2])["id"], 1)

        # The refusals were counted in /metrics.
        time.sleep(1.0 / self.RATE + 0.1)
        metrics = req(self.port, "GET", "/metrics")
        self.assertEqual(metrics.status, 200, metrics)
        self.assertRegex(metrics.body.decode(),
                         r'cortex_requests_total\{method="GET /healthz",tool="",'
                         r'status="rate_limited"\} [1-9]')


if __name__ == "__main__":
    unittest.main()
