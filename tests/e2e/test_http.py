"""End-to-end tests of `cortex serve` over real HTTP (Python 3 stdlib only).

One server is started for the whole module on a free loopback port with a temporary data
directory; tokens are created with the `cortex token` CLI. Every test asserts the exact HTTP
status a client sees and the JSON-RPC error code (or the tool's error code).

    CORTEX_BIN=/path/to/cortex python3 -m unittest discover -s tests/e2e -v
"""

import base64
import glob
import http.client
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import unittest

# tools/list order, fixed by src/tools/cortex_tools.cc.
EXPECTED_TOOLS = ["workspace.status", "entity.lookup", "meta.why_this_notification",
                  "decision.inspect", "decision.list", "notification.list",
                  "action.communicate", "action.approve", "action.reject",
                  "meta.why_this_action", "rule.list", "rule.accept", "rule.reject",
                  "episode.ingest", "rule.learn"]

CORTEX_BIN = os.environ.get("CORTEX_BIN", "/work/main/build/cortex")

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"

# Filled in by setUpModule.
SRV = None


def cli(data_dir, *args, check=True):
    """Runs `cortex ARGS... --data DIR` style CLI commands; returns CompletedProcess."""
    proc = subprocess.run([CORTEX_BIN, *args], capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise RuntimeError(f"cortex {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def create_token(data_dir, workspace, scopes, label=""):
    args = ["token", "create", "--data", data_dir, "--workspace", workspace, "--scopes", scopes]
    if label:
        args += ["--label", label]
    out = cli(data_dir, *args).stdout
    lines = [l for l in out.splitlines() if l.strip()]
    assert len(lines) == 1, f"token create printed more than the token: {out!r}"
    return lines[0].strip()


def token_id_by_label(data_dir, workspace, label):
    out = cli(data_dir, "token", "list", "--data", data_dir, "--workspace", workspace).stdout
    for line in out.splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) >= 5 and cols[4] == label:
            return cols[0]
    raise AssertionError(f"no token labelled {label!r} in: {out!r}")


ID_ONLY_RE = re.compile(r"^[a-z]+_[0-9A-HJKMNP-TV-Z]{26}$")


def store_rows(data_dir, sql):
    """The rows (tuples of text) of `sql` run on the store behind `data_dir`: its SQLite file,
    or the PostgreSQL database tests/pg/cortex-on-postgres made for it. For what no tool
    shows, such as who approved an action (the ledger's `detail.by`)."""
    url_file = os.path.join(data_dir, "postgres-url")
    if os.path.exists(url_file):
        with open(url_file) as f:
            url = f.read().strip()
        psql = shutil.which("psql") or next(iter(sorted(glob.glob(
            "/usr/lib/postgresql/*/bin/psql"), reverse=True)), "psql")
        p = subprocess.run([psql, url, "-XAtq", "-v", "ON_ERROR_STOP=1", "-F", "\t", "-c", sql],
                           capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            raise RuntimeError(f"psql {sql!r} failed ({p.returncode}): {p.stderr}")
        return [tuple(line.split("\t")) for line in p.stdout.splitlines() if line]
    db = sqlite3.connect(f"file:{os.path.join(data_dir, 'cortex.db')}?mode=ro", uri=True,
                         timeout=10)
    try:
        return [tuple(str(v) for v in row) for row in db.execute(sql)]
    finally:
        db.close()


def ledger_of(data_dir, decision_id):
    """A decision's ledger entries, oldest first: [{"id", "event", "detail"}]."""
    assert ID_ONLY_RE.match(decision_id), decision_id
    return [{"id": i, "event": event, "detail": json.loads(detail)}
            for i, event, detail in store_rows(
                data_dir, "SELECT id, event, detail FROM ledger WHERE decision_id = "
                          f"'{decision_id}' ORDER BY seq")]


def decision_details(data_dir, decision_id):
    """A decision's stored details (a trust_transition's from/to levels and `by`)."""
    assert ID_ONLY_RE.match(decision_id), decision_id
    rows = store_rows(data_dir, f"SELECT details FROM decisions WHERE id = '{decision_id}'")
    assert len(rows) == 1, rows
    return json.loads(rows[0][0])


class Server:
    """A running `cortex serve` whose stderr goes to a file (never a pipe that could fill)."""

    def __init__(self, data_dir, extra_args=(), env=None):
        self.data_dir = data_dir
        self.log_path = os.path.join(data_dir, "serve.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [CORTEX_BIN, "serve", "--data", data_dir, "--listen", "127.0.0.1:0", *extra_args],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            env={**os.environ, **(env or {})})
        self.port = self._wait_port()
        self._wait_healthy()

    def _wait_port(self):
        deadline = time.monotonic() + 15
        pattern = re.compile(rb"listening on http://127\.0\.0\.1:(\d+)/mcp")
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"cortex serve exited {self.proc.returncode}: {self.read_log()}")
            with open(self.log_path, "rb") as f:
                m = pattern.search(f.read())
            if m:
                return int(m.group(1))
            time.sleep(0.05)
        raise RuntimeError("cortex serve did not report its port: " + self.read_log())

    def _wait_healthy(self):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/healthz")
                r = c.getresponse()
                r.read()
                c.close()
                if r.status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("GET /healthz never answered 200")

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-4000:]

    def terminate(self, timeout=5):
        """SIGTERM; returns the exit code, or None if it did not exit within `timeout`."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def setUpModule():
    global SRV
    tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-http-")
    data = tmp.name
    tokens = {
        "alpha_rw": create_token(data, "alpha", "read,act"),  # an agent's
        "alpha_ro": create_token(data, "alpha", "read"),
        # A person's: approves and rejects what the agent drafted, drafts nothing itself.
        "alpha_person": create_token(data, "alpha", "read,approve", label="alpha-person"),
        # A person who also drafts in their own client.
        "alpha_owner": create_token(data, "alpha", "read,act,approve", label="alpha-owner"),
        "beta": create_token(data, "beta", "read,act"),
        "beta_person": create_token(data, "beta", "read,approve"),
        "revoked": create_token(data, "alpha", "read,act", label="to-revoke"),
    }
    server = Server(data)
    SRV = {"tmp": tmp, "data": data, "server": server, "port": server.port, **tokens}


def tearDownModule():
    server = SRV["server"]
    try:
        # SIGTERM with an idle keep-alive connection open: the process must still exit 0 soon.
        conn = http.client.HTTPConnection("127.0.0.1", SRV["port"], timeout=5)
        conn.request("GET", "/healthz")
        conn.getresponse().read()
        started = time.monotonic()
        rc = server.terminate(timeout=5)
        elapsed = time.monotonic() - started
        conn.close()
        if rc != 0:
            raise AssertionError(
                f"cortex serve: SIGTERM gave exit code {rc} after {elapsed:.1f}s "
                f"(want 0 within 5s); log tail:\n{server.read_log()}")
    finally:
        server.kill()
        SRV["tmp"].cleanup()


# --------------------------------------------------------------------------------------------
# HTTP helpers
# --------------------------------------------------------------------------------------------

class Resp:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lowercased name -> value
        self.body = body

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError as e:
            raise AssertionError(f"HTTP {self.status} body is not JSON: {self.body[:300]!r}") from e

    def header(self, name):
        return self.headers.get(name.lower())

    def __repr__(self):
        return f"<HTTP {self.status} {self.headers} {self.body[:400]!r}>"


_DEFAULT = object()


def request(method, path="/mcp", body=None, headers=None, token=_DEFAULT, conn=None):
    """One HTTP request. `body` may be bytes/str or a JSON-able object. Header values of
    None remove a default header. Uses a fresh connection unless `conn` is given."""
    h = {"Accept": "application/json, text/event-stream"}
    if token is _DEFAULT:
        token = SRV["alpha_rw"]
    if token is not None:
        h["Authorization"] = "Bearer " + token
    if body is not None:
        h["Content-Type"] = "application/json"
        if not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
    for k, v in (headers or {}).items():
        for existing in [e for e in h if e.lower() == k.lower()]:
            del h[existing]
        if v is not None:
            h[k] = v
    own = conn is None
    if own:
        conn = http.client.HTTPConnection("127.0.0.1", SRV["port"], timeout=15)
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        return Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    finally:
        if own:
            conn.close()


def rpc(method, params=None, id=1, **kw):
    msg = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        msg["id"] = id
    if params is not None:
        msg["params"] = params
    return request("POST", body=msg, **kw)


def meta(version=MODERN, caps=True):
    m = {META_VERSION: version, META_CLIENT: {"name": "cortex-e2e", "version": "1.0.0"}}
    if caps:
        m[META_CAPS] = {}
    return m


def modern(method, params=None, id=1, token=_DEFAULT, version=MODERN, caps=True, headers=None,
           conn=None):
    """A stateless-era (2026-07-28) request with correct _meta and Mcp-* headers; `headers`
    overrides (None removes) individual headers."""
    p = dict(params or {})
    p["_meta"] = meta(version, caps)
    h = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    if method == "tools/call" and isinstance(p.get("name"), str):
        h["Mcp-Name"] = p["name"]
    h.update(headers or {})
    return rpc(method, p, id=id, token=token, headers=h, conn=conn)


def decisions_of(token, decision_class):
    """Every decision of `decision_class` that `token`'s workspace holds (all pages)."""
    out, cursor = [], None
    while True:
        args = {"decision_class": decision_class, "limit": 100}
        if cursor:
            args["cursor"] = cursor
        r = call_tool("decision.list", args, token=token)
        page = r.json()["result"]["structuredContent"]
        out += page["decisions"]
        cursor = page.get("next_cursor")
        if not cursor:
            return out


def call_tool(name, arguments=None, token=_DEFAULT, id=7):
    params = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return modern("tools/call", params, id=id, token=token)


def tool_result(test, resp, id=7):
    test.assertEqual(resp.status, 200, resp)
    body = resp.json()
    test.assertEqual(body.get("id"), id, body)
    test.assertNotIn("error", body, body)
    return body["result"]


def workspace_status(test, token=_DEFAULT):
    result = tool_result(test, call_tool("workspace.status", {}, token=token))
    test.assertFalse(result.get("isError", False), result)
    return result["structuredContent"]


def initialize(token=_DEFAULT):
    r = rpc("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                           "clientInfo": {"name": "cortex-e2e", "version": "1.0.0"}},
            id=0, token=token)
    return r


def open_session(test, token=_DEFAULT):
    r = initialize(token)
    test.assertEqual(r.status, 200, r)
    sid = r.header("Mcp-Session-Id")
    test.assertTrue(sid, r)
    n = rpc("notifications/initialized", id=None, token=token,
            headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
    test.assertEqual(n.status, 202, n)
    return sid


def in_session(sid, method, params=None, id=1, token=_DEFAULT, headers=None):
    h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
    h.update(headers or {})
    return rpc(method, params, id=id, token=token, headers=h)


def raw_exchange(data, port=None, send_more=None, timeout=10):
    """Sends raw bytes on a new socket and returns everything the server sends back until it
    closes. `send_more` (bytes) is written afterwards, ignoring a peer that hung up."""
    s = socket.create_connection(("127.0.0.1", port or SRV["port"]), timeout=timeout)
    try:
        s.sendall(data)
        if send_more:
            try:
                s.sendall(send_more)
            except (BrokenPipeError, ConnectionResetError):
                pass
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            if b"\r\n\r\n" in b"".join(chunks):
                head, _, rest = b"".join(chunks).partition(b"\r\n\r\n")
                m = re.search(rb"(?i)content-length:\s*(\d+)", head)
                if m and len(rest) >= int(m.group(1)):
                    break
        return b"".join(chunks)
    finally:
        s.close()


def parse_raw(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and lines[0].startswith("HTTP/") else None
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body


class RpcAsserts:
    def assertRpcError(self, resp, http_status, code, id=_DEFAULT):
        self.assertEqual(resp.status, http_status, resp)
        self.assertTrue((resp.header("Content-Type") or "").startswith("application/json"), resp)
        body = resp.json()
        self.assertEqual(body.get("jsonrpc"), "2.0", body)
        self.assertIn("error", body, body)
        self.assertNotIn("result", body, body)
        self.assertEqual(body["error"].get("code"), code, body)
        self.assertIsInstance(body["error"].get("message"), str, body)
        if id is not _DEFAULT:
            if id is None:
                # JSON-RPC 2.0 §5: null when the id could not be read (MCP's schema makes the
                # member optional, so an absent id is equally acceptable).
                self.assertIsNone(body.get("id"), body)
            else:
                self.assertEqual(body.get("id"), id, body)
        return body

    def assertToolError(self, resp, code, id=7):
        result = tool_result(self, resp, id=id)
        self.assertIs(result.get("isError"), True, result)
        sc = result.get("structuredContent")
        self.assertIsInstance(sc, dict, result)
        self.assertEqual(sc.get("status"), "error", result)
        self.assertEqual(sc.get("error"), code, result)
        # The text content carries the same error body for clients that ignore structure.
        texts = [c for c in result.get("content", []) if c.get("type") == "text"]
        self.assertTrue(texts, result)
        self.assertEqual(json.loads(texts[0]["text"]), sc)
        return sc


# --------------------------------------------------------------------------------------------
# JSON-RPC framing
# --------------------------------------------------------------------------------------------

class TestJsonRpcFraming(unittest.TestCase, RpcAsserts):
    def test_malformed_json_is_parse_error(self):
        r = request("POST", body=b'{"jsonrpc": "2.0", "id": 1, "method": ')
        self.assertRpcError(r, 400, -32700, id=None)

    def test_batch_array_is_refused(self):
        r = request("POST", body=[{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                  {"jsonrpc": "2.0", "id": 2, "method": "ping"}])
        self.assertRpcError(r, 400, -32600, id=None)

    def test_missing_jsonrpc(self):
        r = request("POST", body={"id": 1, "method": "ping"})
        self.assertRpcError(r, 400, -32600)

    def test_jsonrpc_1_0(self):
        r = request("POST", body={"jsonrpc": "1.0", "id": 1, "method": "ping"})
        self.assertRpcError(r, 400, -32600)

    def test_id_as_object(self):
        r = request("POST", body={"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"})
        self.assertRpcError(r, 400, -32600)

    def test_params_as_array(self):
        r = request("POST", body={"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                                  "params": [1, 2]})
        self.assertRpcError(r, 400, -32600)

    def test_method_missing(self):
        r = request("POST", body={"jsonrpc": "2.0", "id": 1, "params": {}})
        self.assertRpcError(r, 400, -32600)

    def test_method_not_a_string(self):
        r = request("POST", body={"jsonrpc": "2.0", "id": 1, "method": 42})
        self.assertRpcError(r, 400, -32600)

    def test_json_scalar_is_invalid_request(self):
        r = request("POST", body=b'"hello"')
        self.assertRpcError(r, 400, -32600, id=None)


# --------------------------------------------------------------------------------------------
# HTTP-level limits and negotiation
# --------------------------------------------------------------------------------------------

class TestHttpLimits(unittest.TestCase, RpcAsserts):
    def test_head_answers_headers_only_on_a_kept_alive_connection(self):
        """A HEAD response carries the GET response's Content-Length and no body: a body
        would be read as the start of the next response on the connection."""
        with socket.create_connection(("127.0.0.1", SRV["port"]), timeout=5) as s:
            s.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            raw = b""
            deadline = time.monotonic() + 5
            while raw.count(b"\r\n\r\n") < 2 or not raw.endswith(b"}"):
                if time.monotonic() > deadline:
                    break
                chunk = s.recv(4096)
                if not chunk:
                    break
                raw += chunk
        head_response, rest = raw.split(b"\r\n\r\n", 1)
        self.assertTrue(head_response.startswith(b"HTTP/1.1 200 "), raw)
        self.assertIn(b"\r\nContent-Length: 15", head_response)
        self.assertTrue(rest.startswith(b"HTTP/1.1 200 "), raw)  # no body in between
        self.assertTrue(rest.endswith(b'\r\n\r\n{"status":"ok"}'), raw)

    def _head(self, content_length, extra=""):
        return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{SRV['port']}\r\n"
                f"Authorization: Bearer {SRV['alpha_rw']}\r\n"
                "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                f"Content-Length: {content_length}\r\n{extra}\r\n").encode()

    def test_oversized_body_declared_is_413(self):
        size = (1 << 20) + 1
        raw = raw_exchange(self._head(size), send_more=b"x" * size)
        status, headers, body = parse_raw(raw)
        self.assertEqual(status, 413, raw[:300])
        self.assertEqual(json.loads(body)["error"]["code"], -32600)

    def test_oversized_body_chunked_is_413(self):
        # No Content-Length: the limit must hold while the body streams in.
        head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{SRV['port']}\r\n"
                f"Authorization: Bearer {SRV['alpha_rw']}\r\n"
                "Content-Type: application/json\r\nAccept: application/json\r\n"
                "Transfer-Encoding: chunked\r\n\r\n").encode()
        chunk = b"x" * 65536
        body = b"".join(b"%x\r\n" % len(chunk) + chunk + b"\r\n" for _ in range(17)) + b"0\r\n\r\n"
        raw = raw_exchange(head, send_more=body)
        status, _, _ = parse_raw(raw)
        self.assertEqual(status, 413, raw[:300])

    def test_body_at_limit_is_not_413(self):
        # Exactly 1 MiB is allowed (it is then just malformed JSON-RPC).
        msg = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"'
        pad = b"a" * ((1 << 20) - len(msg) - 3)
        body = msg + pad + b'"}}'
        self.assertEqual(len(body), 1 << 20)
        r = request("POST", body=body)
        self.assertNotEqual(r.status, 413, r)

    def test_oversized_headers_is_431(self):
        head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{SRV['port']}\r\n"
                f"Authorization: Bearer {SRV['alpha_rw']}\r\n"
                f"X-Pad: {'a' * (17 * 1024)}\r\n"
                "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}").encode()
        raw = raw_exchange(head)
        status, _, _ = parse_raw(raw)
        self.assertEqual(status, 431, raw[:300])

    def test_content_type_text_plain_is_415(self):
        r = request("POST", body={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    headers={"Content-Type": "text/plain"})
        self.assertRpcError(r, 415, -32600)

    def test_accept_text_html_only_is_406(self):
        r = request("POST", body={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    headers={"Accept": "text/html"})
        self.assertRpcError(r, 406, -32600)

    def test_unknown_path_is_404(self):
        r = request("GET", "/nope")
        self.assertEqual(r.status, 404, r)

    def test_keep_alive_two_requests_on_one_connection(self):
        conn = http.client.HTTPConnection("127.0.0.1", SRV["port"], timeout=10)
        try:
            r1 = modern("server/discover", id="a", conn=conn)
            sock1 = conn.sock
            r2 = modern("tools/list", id="b", conn=conn)
            self.assertEqual(r1.status, 200, r1)
            self.assertEqual(r2.status, 200, r2)
            self.assertEqual(r1.json()["id"], "a")
            self.assertEqual(r2.json()["id"], "b")
            self.assertIsNotNone(sock1)
            self.assertIs(conn.sock, sock1, "the second request needed a new connection")
        finally:
            conn.close()


# --------------------------------------------------------------------------------------------
# Session era (2025-11-25)
# --------------------------------------------------------------------------------------------

class TestSessionEra(unittest.TestCase, RpcAsserts):
    def test_initialize_returns_session(self):
        r = initialize()
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("Mcp-Session-Id"), r)
        self.assertRegex(r.header("Mcp-Session-Id"), r"^[\x21-\x7e]+$")
        body = r.json()
        self.assertEqual(body["id"], 0)
        self.assertEqual(body["result"]["protocolVersion"], LEGACY)
        self.assertIn("tools", body["result"]["capabilities"])
        self.assertIn("name", body["result"]["serverInfo"])

    def test_initialized_notification_is_202_without_body(self):
        sid = initialize().header("Mcp-Session-Id")
        r = rpc("notifications/initialized", id=None,
                headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
        self.assertEqual(r.status, 202, r)
        self.assertEqual(r.body, b"")

    def test_ping(self):
        sid = open_session(self)
        r = in_session(sid, "ping", id=5)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json(), {"jsonrpc": "2.0", "id": 5, "result": {}})

    def test_tools_list_and_call_in_session(self):
        sid = open_session(self)
        r = in_session(sid, "tools/list", id=2)
        self.assertEqual(r.status, 200, r)
        names = [t["name"] for t in r.json()["result"]["tools"]]
        self.assertEqual(names, EXPECTED_TOOLS)
        r = in_session(sid, "tools/call", {"name": "workspace.status", "arguments": {}}, id=3)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["result"]["structuredContent"]["workspace"], "alpha")

    def test_tools_list_without_session_is_400(self):
        r = rpc("tools/list", id=9, headers={"MCP-Protocol-Version": LEGACY})
        self.assertRpcError(r, 400, -32000, id=9)

    def test_tools_list_without_session_or_version_header_is_400(self):
        r = rpc("tools/list", id=9)
        self.assertEqual(r.status, 400, r)
        self.assertIn(r.json()["error"]["code"], (-32000, -32020, -32602), r)

    def test_unknown_session_is_404(self):
        r = in_session("0123456789abcdef0123456789abcdef", "tools/list", id=4)
        self.assertRpcError(r, 404, -32001, id=4)

    def test_session_of_other_workspace_is_404(self):
        sid = open_session(self)  # alpha
        r = in_session(sid, "tools/list", id=4, token=SRV["beta"])
        self.assertRpcError(r, 404, -32001, id=4)
        # ... and it still works for its owner.
        self.assertEqual(in_session(sid, "ping", id=5).status, 200)

    def test_session_of_other_workspace_cannot_be_deleted(self):
        sid = open_session(self)
        r = request("DELETE", headers={"Mcp-Session-Id": sid}, token=SRV["beta"])
        self.assertRpcError(r, 404, -32001)
        self.assertEqual(in_session(sid, "ping", id=5).status, 200)

    def test_delete_session_then_404(self):
        sid = open_session(self)
        r = request("DELETE", headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
        self.assertEqual(r.status, 200, r)
        r = in_session(sid, "ping", id=6)
        self.assertRpcError(r, 404, -32001, id=6)
        r = request("DELETE", headers={"Mcp-Session-Id": sid})
        self.assertRpcError(r, 404, -32001)

    def test_get_stream_with_session(self):
        sid = open_session(self)
        conn = http.client.HTTPConnection("127.0.0.1", SRV["port"], timeout=10)
        try:
            conn.request("GET", "/mcp", headers={
                "Authorization": "Bearer " + SRV["alpha_rw"], "Accept": "text/event-stream",
                "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
            r = conn.getresponse()  # headers only; the stream stays open
            self.assertEqual(r.status, 200)
            self.assertTrue(r.getheader("Content-Type", "").startswith("text/event-stream"))
        finally:
            conn.close()

    def test_get_stream_unknown_session_is_404(self):
        r = request("GET", headers={"Accept": "text/event-stream",
                                    "Mcp-Session-Id": "ffffffffffffffffffffffffffffffff"})
        self.assertRpcError(r, 404, -32001)

    def test_get_without_session_is_405(self):
        r = request("GET", headers={"Accept": "text/event-stream"})
        self.assertEqual(r.status, 405, r)
        self.assertIn("POST", r.header("Allow") or "")

    def test_mcp_headers_that_contradict_the_body_are_refused_in_session(self):
        # The server routes by Mcp-Method / Mcp-Name (a read runs inline on one snapshot), so
        # a session-era request may omit them but not contradict its body: a write claiming
        # to be a read is refused, and nothing is proposed.
        sid = open_session(self)
        send = {"name": "action.communicate",
                "arguments": {"to": "pat@example.com", "message": "hello"}}
        for headers in ({"Mcp-Method": "tools/list"},
                        {"Mcp-Method": "tools/call", "Mcp-Name": "decision.inspect"}):
            with self.subTest(headers=headers):
                r = in_session(sid, "tools/call", send, id=9, headers=headers)
                self.assertRpcError(r, 400, -32020, id=9)
        r = in_session(sid, "tools/call", {"name": "decision.list", "arguments": {}}, id=10,
                       headers={"Mcp-Method": "tools/call", "Mcp-Name": "decision.list"})
        self.assertEqual(r.status, 200, r)
        listed = r.json()["result"]["structuredContent"]
        self.assertFalse([d for d in listed["decisions"]
                          if "pat@example.com" in d.get("payload_summary", "")], listed)
        # Headers that agree with the body are fine, on a write too.
        r = in_session(sid, "tools/call", send, id=11,
                       headers={"Mcp-Method": "tools/call", "Mcp-Name": "action.communicate"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["result"]["structuredContent"]["status"], "pending_approval", r)

    def test_unknown_method_in_session_is_200_method_not_found(self):
        sid = open_session(self)
        r = in_session(sid, "no/such/method", id=8)
        self.assertRpcError(r, 200, -32601, id=8)


# --------------------------------------------------------------------------------------------
# Stateless era (2026-07-28)
# --------------------------------------------------------------------------------------------

class TestStatelessEra(unittest.TestCase, RpcAsserts):
    def test_server_discover(self):
        r = modern("server/discover", id="d1")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("Content-Type").startswith("application/json"), r)
        self.assertIsNone(r.header("Mcp-Session-Id"), "stateless era must not mint sessions")
        body = r.json()
        self.assertEqual(body["id"], "d1")
        res = body["result"]
        self.assertEqual(res["resultType"], "complete")
        self.assertIn(MODERN, res["supportedVersions"])
        self.assertIsInstance(res["capabilities"].get("tools"), dict)
        self.assertIn("io.modelcontextprotocol/serverInfo", res.get("_meta", {}))

    def test_tools_list(self):
        r = modern("tools/list", id=2)
        self.assertEqual(r.status, 200, r)
        res = r.json()["result"]
        self.assertEqual(res["resultType"], "complete")
        self.assertIsInstance(res["ttlMs"], int)
        self.assertGreaterEqual(res["ttlMs"], 0)
        self.assertIn(res["cacheScope"], ("public", "private"))
        self.assertEqual([t["name"] for t in res["tools"]], EXPECTED_TOOLS)
        for t in res["tools"]:
            self.assertEqual(t["inputSchema"]["type"], "object")

    def test_unsupported_protocol_version(self):
        r = modern("server/discover", id=3, version="1900-01-01")
        body = self.assertRpcError(r, 400, -32022, id=3)
        data = body["error"].get("data", {})
        self.assertIn(MODERN, data.get("supported", []))
        self.assertEqual(data.get("requested"), "1900-01-01")

    def test_method_header_contradicts_body(self):
        r = modern("tools/call", {"name": "workspace.status", "arguments": {}}, id=4,
                   headers={"Mcp-Method": "tools/list"})
        self.assertRpcError(r, 400, -32020, id=4)

    def test_name_header_mismatch(self):
        r = modern("tools/call", {"name": "workspace.status", "arguments": {}}, id=4,
                   headers={"Mcp-Name": "entity.lookup"})
        self.assertRpcError(r, 400, -32020, id=4)

    def test_protocol_version_header_mismatch(self):
        r = modern("tools/list", id=4, headers={"MCP-Protocol-Version": LEGACY})
        self.assertRpcError(r, 400, -32020, id=4)

    def test_missing_protocol_version_header(self):
        r = modern("tools/list", id=4, headers={"MCP-Protocol-Version": None})
        self.assertRpcError(r, 400, -32020, id=4)

    def test_missing_method_header(self):
        r = modern("tools/list", id=4, headers={"Mcp-Method": None})
        self.assertRpcError(r, 400, -32020, id=4)

    def test_missing_name_header_on_tools_call(self):
        r = modern("tools/call", {"name": "workspace.status", "arguments": {}}, id=4,
                   headers={"Mcp-Name": None})
        self.assertRpcError(r, 400, -32020, id=4)

    def test_missing_client_capabilities(self):
        r = modern("tools/list", id=5, caps=False)
        self.assertRpcError(r, 400, -32602, id=5)

    def test_missing_meta_with_modern_header(self):
        r = rpc("tools/list", {}, id=5,
                headers={"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
        self.assertRpcError(r, 400, -32602, id=5)

    def test_unknown_method_is_404(self):
        r = modern("no/such/method", id=6)
        self.assertRpcError(r, 404, -32601, id=6)

    def test_base64_name_header_that_matches(self):
        enc = "=?base64?" + base64.b64encode(b"workspace.status").decode() + "?="
        r = modern("tools/call", {"name": "workspace.status", "arguments": {}}, id=7,
                   headers={"Mcp-Name": enc})
        result = tool_result(self, r)
        self.assertFalse(result.get("isError", False), result)
        self.assertEqual(result["structuredContent"]["workspace"], "alpha")

    def test_base64_name_header_that_differs(self):
        enc = "=?base64?" + base64.b64encode(b"entity.lookup").decode() + "?="
        r = modern("tools/call", {"name": "workspace.status", "arguments": {}}, id=7,
                   headers={"Mcp-Name": enc})
        self.assertRpcError(r, 400, -32020, id=7)

    def test_sse_only_accept(self):
        r = modern("server/discover", id="s1", headers={"Accept": "text/event-stream"})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("Content-Type").startswith("text/event-stream"), r)
        text = r.body.decode()
        self.assertIn("event: message", text)
        data = [l[len("data:"):].strip() for l in text.splitlines() if l.startswith("data:")]
        self.assertEqual(len(data), 1, text)
        msg = json.loads(data[0])
        self.assertEqual(msg["id"], "s1")
        self.assertEqual(msg["result"]["resultType"], "complete")

    def test_session_id_header_is_ignored_in_stateless_era(self):
        # 2026-07-28 §Backward Compatibility: ignore Mcp-Session-Id, do not echo it.
        r = modern("tools/list", id=8, headers={"Mcp-Session-Id": "deadbeef"})
        self.assertEqual(r.status, 200, r)
        self.assertIsNone(r.header("Mcp-Session-Id"), r)


# --------------------------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------------------------

class TestTools(unittest.TestCase, RpcAsserts):
    def test_unknown_tool(self):
        r = call_tool("no.such.tool", {})
        self.assertRpcError(r, 200, -32602, id=7)

    def test_missing_identifier(self):
        sc = self.assertToolError(call_tool("entity.lookup", {}), "invalid_arguments")
        self.assertIn("identifier", sc["message"])

    def test_identifier_not_a_string(self):
        sc = self.assertToolError(call_tool("entity.lookup", {"identifier": 42}),
                                  "invalid_arguments")
        self.assertIn("identifier", sc["message"])

    def test_extra_property(self):
        sc = self.assertToolError(
            call_tool("entity.lookup", {"identifier": "a@example.com", "surprise": 1}),
            "invalid_arguments")
        self.assertIn("surprise", sc["message"])

    def test_workspace_status_extra_property(self):
        sc = self.assertToolError(call_tool("workspace.status", {"verbose": True}),
                                  "invalid_arguments")
        self.assertIn("verbose", sc["message"])

    def test_unknown_entity(self):
        self.assertToolError(call_tool("entity.lookup", {"identifier": "nobody@nowhere.example"}),
                             "not_found")

    def test_other_workspace_entity_is_not_found(self):
        line = {"type": "entity", "name": "Zed Beta", "identifiers": ["zed@beta.example"],
                "tags": ["external"]}
        r = request("POST", "/v1/episodes", body=json.dumps(line) + "\n", token=SRV["beta"],
                    headers={"Content-Type": "application/x-ndjson"})
        self.assertEqual(r.status, 200, r)
        # Beta sees it...
        result = tool_result(self, call_tool("entity.lookup", {"identifier": "zed@beta.example"},
                                             token=SRV["beta"]))
        self.assertFalse(result.get("isError", False), result)
        entity_id = result["structuredContent"]["entity_id"]
        # ... alpha does not, by identifier or by id.
        self.assertToolError(call_tool("entity.lookup", {"identifier": "zed@beta.example"}),
                             "not_found")
        self.assertToolError(call_tool("entity.lookup", {"identifier": entity_id}), "not_found")

    def test_workspace_status_is_per_token(self):
        self.assertEqual(workspace_status(self)["workspace"], "alpha")
        self.assertEqual(workspace_status(self, token=SRV["beta"])["workspace"], "beta")
        self.assertEqual(workspace_status(self, token=SRV["alpha_ro"])["scopes"], ["read"])
        self.assertEqual(workspace_status(self)["scopes"], ["read", "act"])
        self.assertEqual(workspace_status(self, token=SRV["alpha_person"])["scopes"],
                         ["read", "approve"])
        self.assertEqual(workspace_status(self, token=SRV["alpha_owner"])["scopes"],
                         ["read", "act", "approve"])


# --------------------------------------------------------------------------------------------
# Authentication, Origin and Host
# --------------------------------------------------------------------------------------------

class TestAuth(unittest.TestCase, RpcAsserts):
    def assertUnauthorized(self, r):
        self.assertEqual(r.status, 401, r)
        self.assertTrue((r.header("WWW-Authenticate") or "").startswith("Bearer"), r)
        self.assertEqual(r.json().get("error"), "unauthorized", r)

    def test_no_token(self):
        self.assertUnauthorized(modern("tools/list", token=None))

    def test_wrong_token(self):
        self.assertUnauthorized(modern("tools/list", token="ctk_" + "0" * 48))
        self.assertUnauthorized(modern("tools/list", token="garbage"))

    def test_not_bearer_scheme(self):
        r = modern("tools/list", token=None, headers={"Authorization": "Basic dXNlcjpwYXNz"})
        self.assertUnauthorized(r)

    def test_revoked_token(self):
        tok = SRV["revoked"]
        self.assertEqual(modern("tools/list", token=tok).status, 200)
        tid = token_id_by_label(SRV["data"], "alpha", "to-revoke")
        cli(SRV["data"], "token", "revoke", "--data", SRV["data"], "--workspace", "alpha", tid)
        r = modern("tools/list", token=tok)
        self.assertUnauthorized(r)
        # The same answer as for a token that never existed: a prober learns nothing.
        never = modern("tools/list", token="ctk_" + "0" * 48)
        self.assertEqual(r.body, never.body)
        self.assertEqual(r.header("WWW-Authenticate"), never.header("WWW-Authenticate"))
        self.assertNotIn("revoked", r.body.decode())

    def test_read_only_token_cannot_ingest(self):
        line = {"type": "entity", "name": "Ro", "identifiers": ["ro@alpha.example"]}
        r = request("POST", "/v1/episodes", body=json.dumps(line) + "\n", token=SRV["alpha_ro"])
        self.assertEqual(r.status, 403, r)
        self.assertEqual(r.json().get("status"), "error", r)

    def test_read_only_token_can_read(self):
        self.assertEqual(workspace_status(self, token=SRV["alpha_ro"])["workspace"], "alpha")

    def test_wrong_origin(self):
        r = modern("tools/list", headers={"Origin": "http://evil.example.com"})
        self.assertRpcError(r, 403, -32600)

    def test_wrong_host(self):
        r = modern("tools/list", headers={"Host": "evil.example.com"})
        self.assertRpcError(r, 403, -32600)

    def test_wrong_host_with_port(self):
        r = modern("tools/list", headers={"Host": f"evil.example.com:{SRV['port']}"})
        self.assertRpcError(r, 403, -32600)

    def test_localhost_origin_allowed(self):
        r = modern("tools/list", headers={"Origin": f"http://localhost:{SRV['port']}"})
        self.assertEqual(r.status, 200, r)

    def test_lookalike_localhost_origin_refused(self):
        r = modern("tools/list", headers={"Origin": "http://localhost.evil.example.com"})
        self.assertRpcError(r, 403, -32600)


# --------------------------------------------------------------------------------------------
# Ingest
# --------------------------------------------------------------------------------------------

class TestIngest(unittest.TestCase, RpcAsserts):
    def ingest(self, lines, token=_DEFAULT):
        body = "".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines)
        return request("POST", "/v1/episodes", body=body, token=token,
                       headers={"Content-Type": "application/x-ndjson"})

    def test_good_batch(self):
        before = workspace_status(self)
        r = self.ingest([
            {"type": "entity", "name": "Ada Lovelace", "identifiers": ["ada@alpha.example"],
             "tags": ["vip"]},
            {"type": "episode", "kind": "message_received", "occurred_at": "2026-01-05T09:00:00Z",
             "counterparty": "ada@alpha.example", "summary": "Asks for the engine notes"},
        ])
        self.assertEqual(r.status, 200, r)
        rep = r.json()
        self.assertEqual(rep["status"], "ok")
        self.assertEqual(rep["lines"], 2)
        self.assertEqual(rep["episodes_added"], 1)
        self.assertEqual(rep["entities_added"], 1)
        self.assertEqual(rep["duplicates"], 0)
        self.assertNotEqual(rep["world_version"], before["world_version"])
        after = workspace_status(self)
        self.assertEqual(after["world_version"], rep["world_version"])
        self.assertEqual(after["episodes"], before["episodes"] + 1)
        self.assertEqual(after["entities"], before["entities"] + 1)
        found = tool_result(self, call_tool("entity.lookup", {"identifier": "ada@alpha.example"}))
        self.assertEqual(found["structuredContent"]["name"], "Ada Lovelace")
        self.assertEqual(found["structuredContent"]["tags"], ["vip"])

    def test_bad_line_2_writes_nothing(self):
        before = workspace_status(self)
        r = self.ingest([
            {"type": "episode", "kind": "message_received", "occurred_at": "2026-01-06T09:00:00Z",
             "counterparty": "bob@alpha.example", "summary": "Hello"},
            {"type": "episode", "kind": "message_received", "occurred_at": "2026-01-06T10:00:00Z",
             "counterparty": "bob@alpha.example"},  # no summary
        ])
        self.assertEqual(r.status, 400, r)
        body = r.json()
        self.assertEqual(body.get("status"), "error", body)
        self.assertTrue(body["message"].startswith("line 2:"), body)
        self.assertIn("summary", body["message"])
        after = workspace_status(self)
        self.assertEqual(after["episodes"], before["episodes"])
        self.assertEqual(after["entities"], before["entities"])
        self.assertEqual(after["world_version"], before["world_version"])

    def test_line_2_failing_while_applying_rolls_back_line_1(self):
        # Line 2 is well-formed but names an entity id alpha cannot see (beta's): the error
        # comes while writing, after line 1 created an entity and an episode.
        r = request("POST", "/v1/episodes", token=SRV["beta"],
                    body=json.dumps({"type": "entity", "name": "Quinn",
                                     "identifiers": ["quinn@beta.example"]}) + "\n")
        self.assertEqual(r.status, 200, r)
        beta_id = tool_result(self, call_tool("entity.lookup", {"identifier": "quinn@beta.example"},
                                              token=SRV["beta"]))["structuredContent"]["entity_id"]
        before = workspace_status(self)
        r = self.ingest([
            {"type": "episode", "kind": "message_received", "occurred_at": "2026-01-07T09:00:00Z",
             "counterparty": "carol@alpha.example", "summary": "New contact"},
            {"type": "episode", "kind": "message_received", "occurred_at": "2026-01-07T10:00:00Z",
             "counterparty": beta_id, "summary": "Cross-workspace"},
        ])
        self.assertEqual(r.status, 400, r)
        self.assertTrue(r.json()["message"].startswith("line 2:"), r)
        self.assertIn("counterparty", r.json()["message"])
        after = workspace_status(self)
        self.assertEqual(after["episodes"], before["episodes"])
        self.assertEqual(after["entities"], before["entities"])
        self.assertEqual(after["world_version"], before["world_version"])
        self.assertToolError(call_tool("entity.lookup", {"identifier": "carol@alpha.example"}),
                             "not_found")

    def test_bad_json_line(self):
        r = self.ingest([{"type": "entity", "name": "X", "identifiers": ["x@alpha.example"]},
                         "{not json"])
        self.assertEqual(r.status, 400, r)
        self.assertTrue(r.json()["message"].startswith("line 2:"), r)

    def test_get_episodes_is_405(self):
        r = request("GET", "/v1/episodes")
        self.assertEqual(r.status, 405, r)


# --------------------------------------------------------------------------------------------
# Approvals come from a person: the agent drafts, a person approves or rejects
# --------------------------------------------------------------------------------------------

class TestApprovalsComeFromAPerson(unittest.TestCase, RpcAsserts):
    """An agent's token (read,act) drafts but neither approves nor rejects: those need the
    `approve` scope of a person's token (read,approve, or read,act,approve for a person who
    also drafts). The ledger names the token that approved or rejected; a rejection never
    turns a counterparty off; an action that no rule speaks for is explained by its trust."""

    @classmethod
    def tearDownClass(cls):
        # An approved message is delivered in the background, and its delivery records a
        # message_sent episode in alpha: wait for every delivery, so that later classes that
        # count alpha's episodes (TestIngest) are not raced by one.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            executed = [d for d in decisions_of(SRV["alpha_ro"], "action_proposed")
                        if d["status"] == "executed"]
            if not executed:
                return
            time.sleep(0.1)
        raise AssertionError(f"deliveries still pending after 15 s: {executed}")

    def meet(self, name, address, history=()):
        """A counterparty new to alpha (and to this test), with `history` episodes."""
        lines = [{"type": "entity", "name": name, "identifiers": [address]}, *history]
        r = request("POST", "/v1/episodes", body="".join(json.dumps(l) + "\n" for l in lines),
                    headers={"Content-Type": "application/x-ndjson"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["entities_added"], 1, r)

    def call_ok(self, name, args, token):
        result = tool_result(self, call_tool(name, args, token=token))
        self.assertIsNot(result.get("isError"), True, result)
        sc = result["structuredContent"]
        texts = [c for c in result.get("content", []) if c.get("type") == "text"]
        self.assertEqual(json.loads(texts[0]["text"]), sc)
        return sc

    def draft(self, to, message, token=None, **extra):
        """The agent drafts: a pending action carrying the text a person is asked to send."""
        sc = self.call_ok("action.communicate", dict(extra, to=to, message=message),
                          token or SRV["alpha_rw"])
        self.assertEqual(sc["status"], "pending_approval", sc)
        self.assertIsInstance(sc.get("draft"), str, sc)
        self.assertTrue(sc["draft"], sc)
        return sc

    def status(self, decision_id):
        for d in decisions_of(SRV["alpha_ro"], "action_proposed"):
            if d["decision_id"] == decision_id:
                return d["status"]
        self.fail(f"{decision_id} is not among alpha's action_proposed decisions")

    def inspect(self, decision_id):
        return self.call_ok("decision.inspect", {"decision_id": decision_id}, SRV["alpha_ro"])

    def transitions(self, address):
        return self.call_ok("decision.list", {"decision_class": "trust_transition",
                                              "counterparty": address, "limit": 100},
                            SRV["alpha_ro"])["decisions"]

    def by(self, label):
        return {"channel": "mcp", "token_id": token_id_by_label(SRV["data"], "alpha", label)}

    def test_communicate_returns_the_draft_a_person_will_approve(self):
        to = "pia@approve.example"
        self.meet("Pia Draft", to)
        plain = self.draft(to, "Can we meet Tuesday?")
        self.assertEqual(plain["draft"], "Can we meet Tuesday?")  # no tone: as given
        warm = self.draft(to, "Lunch on Friday?", tone="warm")
        self.assertEqual(warm["draft"], "Hi Pia,\n\nLunch on Friday?\n\nThanks so much!")
        # The very text the ledger holds for the proposal, and that an approval sends.
        ledger = ledger_of(SRV["data"], warm["decision_id"])
        self.assertEqual([e["event"] for e in ledger], ["proposed"], ledger)
        self.assertEqual(ledger[0]["detail"]["draft"], warm["draft"], ledger)
        done = self.call_ok("action.approve", {"decision_id": warm["decision_id"]},
                            SRV["alpha_person"])
        self.assertEqual((done["status"], done["draft"]), ("success", warm["draft"]), done)
        # The tool declares it.
        tools = tool_result(self, modern("tools/list", id=7))["tools"]
        schema = next(t for t in tools if t["name"] == "action.communicate")["outputSchema"]
        result = schema["anyOf"][0]  # the other branch is the error body
        self.assertEqual(result["properties"]["draft"]["type"], "string", schema)

    def test_an_agent_token_can_neither_approve_nor_reject(self):
        to = "quinn@approve.example"
        self.meet("Quinn Agent", to)
        d = self.draft(to, "Shall I book the usual room?")
        did = d["decision_id"]
        before = self.inspect(did)
        for tool, args in (("action.approve", {}),
                           ("action.approve", {"message": "edited by the agent"}),
                           ("action.reject", {"reason": "the agent says no"})):
            with self.subTest(tool=tool, args=args):
                sc = self.assertToolError(call_tool(tool, dict(args, decision_id=did)),
                                          "unauthorized")
                self.assertEqual(sc["message"],
                                 f"this token lacks the 'approve' scope that {tool} needs")
                self.assertNotIn("decision_id", sc)
        # Nothing happened: still pending, nothing recorded, trust unmoved.
        self.assertEqual(self.status(did), "pending")
        self.assertEqual(self.inspect(did), before)
        self.assertEqual([e["event"] for e in ledger_of(SRV["data"], did)], ["proposed"])
        self.assertEqual(self.transitions(to), [])
        # The refusal does not depend on the id: the agent cannot probe which exist.
        forged = did[:-4] + ("0000" if not did.endswith("0000") else "0001")
        self.assertEqual(
            tool_result(self, call_tool("action.approve", {"decision_id": forged})),
            tool_result(self, call_tool("action.approve", {"decision_id": did})))
        # A person can: it really was pending.
        done = self.call_ok("action.approve", {"decision_id": did}, SRV["alpha_person"])
        self.assertEqual(done["status"], "success", done)

    def test_a_persons_token_approves_and_the_ledger_names_it(self):
        to = "ray@approve.example"
        self.meet("Ray Approve", to)
        d = self.draft(to, "The report is attached.")
        did = d["decision_id"]
        done = self.call_ok("action.approve", {"decision_id": did}, SRV["alpha_person"])
        self.assertEqual((done["status"], done["decision_id"], done["action_id"], done["draft"]),
                         ("success", did, d["action_id"], d["draft"]), done)
        self.assertIn(self.status(did), ("executed", "delivered"))
        ledger = ledger_of(SRV["data"], did)
        self.assertEqual([e["event"] for e in ledger][:3], ["proposed", "approved", "executed"],
                         ledger)
        self.assertEqual(ledger[1]["detail"], {"edited": False, "by": self.by("alpha-person")},
                         ledger)
        # decision.inspect links the decision to its ledger, and says who moved it.
        inspected = self.inspect(did)
        self.assertIn(inspected["ledger_entry_id"], [e["id"] for e in ledger])
        self.assertIn(inspected["status"], ("executed", "delivered"))
        self.assertEqual([(h["event"], h.get("by")) for h in inspected["history"]][:3],
                         [("proposed", None), ("approved", self.by("alpha-person")),
                          ("executed", self.by("alpha-person"))], inspected)
        self.assertTrue(inspected["level_reason"].startswith("Held for your approval: trust for "
                                                             "communicate with Ray Approve is "
                                                             "level 1"), inspected)
        # Once is enough: the person's second approval finds it no longer pending.
        again = self.assertToolError(call_tool("action.approve", {"decision_id": did},
                                               token=SRV["alpha_person"]), "not_pending")
        self.assertRegex(again["message"], r"is (executed|delivered), not pending")

    def test_a_persons_token_rejects_and_the_ledger_names_it(self):
        to = "sol@approve.example"
        self.meet("Sol Reject", to)
        d = self.draft(to, "Can you send the invoice again?")
        did = d["decision_id"]
        done = self.call_ok("action.reject", {"decision_id": did, "reason": "Not now"},
                            SRV["alpha_person"])
        self.assertEqual((done["status"], done["decision_id"]), ("success", did), done)
        self.assertEqual(done["message"], "Rejected: nothing will be sent.")
        self.assertEqual(self.status(did), "rejected")
        ledger = ledger_of(SRV["data"], did)
        self.assertEqual([(e["event"], e["detail"]) for e in ledger][1:],
                         [("rejected", {"reason": "Not now", "by": self.by("alpha-person")})],
                         ledger)

    def test_a_person_who_also_drafts_edits_and_approves(self):
        to = "tess@approve.example"
        self.meet("Tess Owner", to)
        d = self.draft(to, "Draft one.", token=SRV["alpha_owner"])
        edited = "Draft two, in my own words."
        done = self.call_ok("action.approve", {"decision_id": d["decision_id"],
                                               "message": edited}, SRV["alpha_owner"])
        self.assertEqual((done["status"], done["draft"]), ("success", edited), done)
        approved = [e for e in ledger_of(SRV["data"], d["decision_id"])
                    if e["event"] == "approved"]
        self.assertEqual([e["detail"] for e in approved],
                         [{"edited": True, "draft_before": d["draft"], "draft": edited,
                           "by": self.by("alpha-owner")}])

    def test_a_persons_approve_token_drafts_nothing(self):
        sc = self.assertToolError(call_tool("action.communicate", {
            "to": "uma@approve.example", "message": "hi"}, token=SRV["alpha_person"]),
            "unauthorized")
        self.assertEqual(sc["message"],
                         "this token lacks the 'act' scope that action.communicate needs")
        self.assertToolError(call_tool("entity.lookup", {"identifier": "uma@approve.example"},
                                       token=SRV["alpha_person"]), "not_found")

    def test_a_rejection_never_turns_a_counterparty_off(self):
        to = "rex@approve.example"
        self.meet("Rex Level", to)
        # Level 1 (the built-in default): a rejection leaves it there.
        d1 = self.draft(to, "First try.")
        self.assertIn("trust level 1", d1["message"])
        r = self.call_ok("action.reject", {"decision_id": d1["decision_id"]}, SRV["alpha_person"])
        self.assertEqual(r["message"], "Rejected: nothing will be sent.")
        self.assertEqual(self.transitions(to), [])
        d2 = self.draft(to, "Second try.")  # still a draft, not trust_insufficient
        self.assertIn("trust level 1", d2["message"])
        # A person raises it to 2 with the CLI: a trust_transition naming the channel.
        out = cli(SRV["data"], "trust", "set", "--data", SRV["data"], "--workspace", "alpha",
                  "--scope", to, "--level", "2").stdout
        set_by_person = re.search(r"decision (dec_\w+)", out).group(1)
        self.assertEqual(self.inspect(set_by_person)["payload_summary"],
                         "Raise communicate trust for Rex Level from 1 (draft) to 2 "
                         "(supervised) set by a person (cli).")
        details = decision_details(SRV["data"], set_by_person)
        self.assertEqual((details["from_level"], details["to_level"], details["by"]),
                         (1, 2, {"channel": "cli"}), details)
        d3 = self.draft(to, "Third try.")
        self.assertIn("trust level 2", d3["message"])
        why = self.call_ok("meta.why_this_action", {"action_id": d3["action_id"]},
                           SRV["alpha_ro"])
        self.assertEqual(why["rule_summary"],
                         "Sent after the undo window unless you reject it: trust for "
                         "communicate with Rex Level is level 2 (supervised, from entity).")
        # A rejection at 2 lowers it to 1, and says who.
        r = self.call_ok("action.reject", {"decision_id": d3["decision_id"]}, SRV["alpha_person"])
        self.assertEqual(r["message"], "Rejected: nothing will be sent. Lower communicate trust "
                         "for Rex Level from 2 (supervised) to 1 (draft) after a rejection.")
        lowered = [t for t in self.transitions(to) if t["decision_id"] != set_by_person]
        self.assertEqual(len(lowered), 1, lowered)
        details = decision_details(SRV["data"], lowered[0]["decision_id"])
        self.assertEqual((details["from_level"], details["to_level"], details["by"],
                          details["evidence_decision_ids"]),
                         (2, 1, self.by("alpha-person"), [d3["decision_id"]]), details)
        # Rejections at 1 keep it at 1: the next send is still a draft.
        r = self.call_ok("action.reject", {"decision_id": d2["decision_id"]}, SRV["alpha_person"])
        self.assertEqual(r["message"], "Rejected: nothing will be sent.")
        d4 = self.draft(to, "Fourth try.")
        self.assertIn("trust level 1", d4["message"])
        r = self.call_ok("action.reject", {"decision_id": d4["decision_id"]}, SRV["alpha_person"])
        self.assertEqual(r["message"], "Rejected: nothing will be sent.")
        self.assertEqual(len(self.transitions(to)), 2)
        self.draft(to, "Fifth try.")

    def test_an_action_no_rule_speaks_for_is_explained_by_its_trust(self):
        to = "eve@approve.example"
        # Eve wrote first: the draft answers her message, triaged by the default policy (no
        # rule), whose text says nothing about sending.
        self.meet("Eve Explain", to, history=[{
            "type": "episode", "kind": "message_received", "occurred_at": "2026-11-30T07:00:00Z",
            "counterparty": to, "summary": "Eve: 'Can we talk?'"}])
        d = self.draft(to, "Sure, 3pm?", tone="warm")
        want = ("Held for your approval: trust for communicate with Eve Explain is level 1 "
                "(draft, from built-in default).")
        why = self.call_ok("meta.why_this_action", {"action_id": d["action_id"]}, SRV["alpha_ro"])
        self.assertEqual((why["rule_summary"], why["confidence"]), (want, "just_guessing"), why)
        self.assertEqual([e["summary"] for e in why["contributing_episodes"]],
                         ["Eve: 'Can we talk?'"], why)
        inspected = self.inspect(d["decision_id"])
        self.assertEqual(inspected["reasoning"]["rule_summary"], want, inspected)
        self.assertNotIn("rule_id", inspected["reasoning"], inspected)
        triage = self.inspect(inspected["triage_decision_id"])
        self.assertIn("default policy", triage["reasoning"]["rule_summary"], triage)


# --------------------------------------------------------------------------------------------
# Shutdown (own server, so the module's server is not disturbed)
# --------------------------------------------------------------------------------------------

class TestShutdown(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-stop-")
        self.token = create_token(self.tmp.name, "alpha", "read,act")
        self.server = Server(self.tmp.name)

    def tearDown(self):
        self.server.kill()
        self.tmp.cleanup()

    def _healthz(self, conn):
        conn.request("GET", "/healthz")
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.status, 200)

    def test_sigterm_with_idle_keep_alive_connection(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        self._healthz(conn)  # the connection now sits idle, kept alive
        started = time.monotonic()
        rc = self.server.terminate(timeout=5)
        elapsed = time.monotonic() - started
        self.assertEqual(rc, 0, f"exit {rc} after {elapsed:.1f}s; log:\n{self.server.read_log()}")
        # The idle connection was closed by the server.
        conn.sock.settimeout(2)
        self.assertEqual(conn.sock.recv(1), b"")
        conn.close()

    def test_request_log_lines_are_written_within_a_second_and_at_exit(self):
        """stderr is a file here, so request lines are batched: each still reaches the log
        within about a second, a warning is never held back behind them, and a SIGTERM
        writes out the ones still buffered, in order, before the process exits."""
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)

        def whole_log():
            with open(self.server.log_path, encoding="utf-8", errors="replace") as f:
                return f.read().splitlines()

        def request_lines():
            return [ln for ln in whole_log() if " request route=" in ln]

        self._healthz(conn)  # the second request: Server() waited for one /healthz
        deadline = time.monotonic() + 3
        while len(request_lines()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(len(request_lines()), 2, self.server.read_log())
        for _ in range(20):
            self._healthz(conn)
        conn.close()
        rc = self.server.terminate(timeout=5)
        self.assertEqual(rc, 0, self.server.read_log())
        log = whole_log()
        lines = [ln for ln in log if " request route=" in ln]
        self.assertEqual(len(lines), 22, "\n".join(log))
        self.assertTrue(all('route="GET /healthz"' in ln and "http=200" in ln for ln in lines))
        # The buffered lines come out before the shutdown lines logged after them.
        stopping = next(i for i, ln in enumerate(log) if "shutting down" in ln)
        self.assertLess(log.index(lines[-1]), stopping, "\n".join(log))

    def test_request_log_lines_survive_a_full_non_blocking_stderr(self):
        """stderr is a pipe its reader made non-blocking and reads slowly: when it is full,
        the server waits for room instead of dropping the request lines it had batched."""
        self.server.kill()  # this test runs its own server, logging into a pipe
        r_fd, w_fd = os.pipe()
        os.set_blocking(w_fd, False)  # the flag is shared with the server's stderr
        proc = subprocess.Popen(
            [CORTEX_BIN, "serve", "--data", self.tmp.name, "--listen", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=w_fd, stderr=w_fd)
        os.close(w_fd)
        chunks, port_seen = [], threading.Event()

        def drain():  # ~200 KB/s: slower than the server logs, never stalled for long
            while True:
                chunk = os.read(r_fd, 4096)
                if not chunk:
                    return
                chunks.append(chunk)
                if b"listening on" in chunk or b"listening on" in b"".join(chunks[-2:]):
                    port_seen.set()
                time.sleep(0.02)

        reader = threading.Thread(target=drain)
        reader.start()
        try:
            self.assertTrue(port_seen.wait(15), b"".join(chunks).decode("utf-8", "replace"))
            port = int(re.search(rb"127\.0\.0\.1:(\d+)/mcp", b"".join(chunks)).group(1))
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            sent = 900  # ~150 KB of request lines, over two pipe-fulls (under the flood burst)
            for _ in range(sent):
                self._healthz(conn)
            conn.close()
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=15), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            reader.join(timeout=30)
            os.close(r_fd)
        log = b"".join(chunks).decode("utf-8", "replace").splitlines()
        lines = [ln for ln in log if 'route="GET /healthz"' in ln]
        self.assertEqual(len(lines), sent, "\n".join(log[-20:]))

    def test_sigterm_answers_the_writes_in_flight(self):
        """Ingests run on the write pool; a SIGTERM while they run still answers each one,
        and what was answered is kept."""
        batches, lines_each = 4, 400
        results = [None] * batches

        def send(i):
            lines = [json.dumps({"type": "episode", "kind": "message_received",
                                 "occurred_at": "2026-01-05T09:00:00Z",
                                 "external_id": f"stop-{i}-{k}",
                                 "counterparty": f"p{k % 50}@stop.example",
                                 "summary": f"message {k} of batch {i}"})
                     for k in range(lines_each)]
            c = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
            try:
                c.request("POST", "/v1/episodes", body="\n".join(lines) + "\n",
                          headers={"Authorization": "Bearer " + self.token,
                                   "Content-Type": "application/x-ndjson"})
                r = c.getresponse()
                results[i] = (r.status, json.loads(r.read()))
            except OSError as e:
                results[i] = ("no answer", str(e))
            finally:
                c.close()

        threads = [threading.Thread(target=send, args=(i,)) for i in range(batches)]
        for t in threads:
            t.start()
        time.sleep(0.2)  # the batches are sent and being ingested
        rc = self.server.terminate(timeout=30)
        for t in threads:
            t.join(30)
        self.assertEqual(rc, 0, self.server.read_log())
        for i, (status, body) in enumerate(results):
            self.assertEqual(status, 200, f"batch {i}: {body}")
            self.assertEqual(body["episodes_added"], lines_each, body)
        self.server.kill()
        self.server = Server(self.tmp.name)
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=15)
        r = modern("tools/call", {"name": "workspace.status", "arguments": {}}, id=7,
                   token=self.token, conn=conn)
        conn.close()
        status = tool_result(self, r)["structuredContent"]
        self.assertEqual(status["episodes"], batches * lines_each, status)

    def test_sigterm_with_open_event_stream(self):
        h = {"Authorization": "Bearer " + self.token, "Content-Type": "application/json",
             "Accept": "application/json, text/event-stream"}
        c = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        c.request("POST", "/mcp", body=json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {},
                       "clientInfo": {"name": "e2e", "version": "1"}}}), headers=h)
        r = c.getresponse()
        r.read()
        sid = r.getheader("Mcp-Session-Id")
        c.close()
        stream = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        stream.request("GET", "/mcp", headers={**h, "Accept": "text/event-stream",
                                               "Mcp-Session-Id": sid})
        sr = stream.getresponse()
        self.assertEqual(sr.status, 200)
        rc = self.server.terminate(timeout=5)
        self.assertEqual(rc, 0, self.server.read_log())
        stream.close()


# --------------------------------------------------------------------------------------------
# A write waiting for its commit holds up no one else (own server, one I/O thread)
# --------------------------------------------------------------------------------------------

@unittest.skipIf(os.environ.get("CORTEX_PG_DIR"), "holds SQLite's write lock from outside")
class TestAWaitingWriteHoldsUpNoOne(unittest.TestCase, RpcAsserts):
    """With a single I/O thread, a write that waits for its commit (here: for the database's
    write lock, which another process holds) must leave that thread free: reads on other
    connections are answered meanwhile. The write is answered once the lock is let go, even
    after a SIGTERM, and nothing acknowledged is lost."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-wait-")
        self.token = create_token(self.tmp.name, "alpha", "read,act")
        self.server = Server(self.tmp.name, ["--threads", "1"])

    def tearDown(self):
        self.server.kill()
        self.tmp.cleanup()

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=15)

    def test_reads_are_answered_while_a_write_waits_for_the_lock(self):
        lock = sqlite3.connect(os.path.join(self.tmp.name, "cortex.db"), isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")  # the write lock, until COMMIT
        answer = {}

        def send():
            c = self.conn()
            answer["r"] = modern("tools/call", {
                "name": "action.communicate",
                "arguments": {"to": "pat@example.com", "message": "held up"}},
                id=7, token=self.token, conn=c)
            c.close()

        writer = threading.Thread(target=send)
        writer.start()
        try:
            time.sleep(0.5)
            self.assertTrue(writer.is_alive(), "the write did not wait for the lock")
            # Two reads on other connections, on the one I/O thread the write arrived on.
            started = time.monotonic()
            c = self.conn()
            r = modern("tools/call", {"name": "workspace.status", "arguments": {}}, id=7,
                       token=self.token, conn=c)
            c.close()
            status = tool_result(self, r)["structuredContent"]
            self.assertEqual(status["entities"], 0, status)  # the waiting write's recipient: not yet
            c = self.conn()
            c.request("GET", "/healthz")
            self.assertEqual(c.getresponse().status, 200)
            c.close()
            self.assertLess(time.monotonic() - started, 1.5)
            self.assertTrue(writer.is_alive(), "the write finished while the lock was held")
            self.server.proc.send_signal(signal.SIGTERM)
            time.sleep(0.3)
        finally:
            lock.execute("COMMIT")
            lock.close()
        writer.join(15)
        sent = tool_result(self, answer["r"])["structuredContent"]
        self.assertEqual(sent["status"], "pending_approval", sent)
        self.assertEqual(self.server.proc.wait(timeout=10), 0, self.server.read_log())
        # Acknowledged, so kept: the proposal is there after a restart.
        self.server.kill()
        self.server = Server(self.tmp.name)
        c = self.conn()
        r = modern("tools/call", {"name": "decision.inspect",
                                  "arguments": {"decision_id": sent["decision_id"]}},
                   id=7, token=self.token, conn=c)
        c.close()
        self.assertEqual(tool_result(self, r)["structuredContent"]["decision_id"],
                         sent["decision_id"])

    def test_deeply_nested_write_requests_are_refused_cleanly(self):
        """A write request of up to 16 KiB runs on a fiber's 1 MiB stack. JSON nested past
        128 levels is a parse error (-32700) saying so; at the limit it is read, and these
        arguments are refused by the tool's schema. The server lives on either way."""
        def send(levels):
            # The body, its params and its arguments are three levels; `deep` adds `levels`.
            head = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "action.communicate", "_meta": meta(),
                "arguments": {"to": "pat@example.com", "message": "hi", "deep": 0}}})
            if levels is None:  # as deep as 16 KiB allows
                levels = (16 * 1024 - len(head)) // 2
            body = head.replace('"deep": 0', '"deep": ' + "[" * levels + "]" * levels)
            self.assertLessEqual(len(body), 16 * 1024)
            c = self.conn()
            r = request("POST", body=body, token=self.token, conn=c, headers={
                "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                "Mcp-Name": "action.communicate"})
            c.close()
            return r

        at_limit = send(125)
        self.assertEqual(at_limit.status, 200, at_limit)
        result = at_limit.json()["result"]
        self.assertTrue(result["isError"], result)
        self.assertIn("deep", json.dumps(result))
        for levels in (126, None):
            with self.subTest(levels=levels):
                body = self.assertRpcError(send(levels), 400, -32700, id=None)
                self.assertIn("128", body["error"]["message"])
        c = self.conn()
        c.request("GET", "/healthz")
        self.assertEqual(c.getresponse().status, 200)
        c.close()


# --------------------------------------------------------------------------------------------
# Robustness: bytes that are not UTF-8 (or text cut mid-character) must never kill the server.
# Each test runs its own server, since the failure mode is the process dying.
# --------------------------------------------------------------------------------------------

class TestNonUtf8NeverCrashes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-utf8-")
        self.token = create_token(self.tmp.name, "alpha", "read,act")
        self.server = Server(self.tmp.name)

    def tearDown(self):
        self.server.kill()
        self.tmp.cleanup()

    def send(self, head, body=b""):
        if body:
            head += b"Content-Length: %d\r\n" % len(body)
        raw = raw_exchange(head + b"\r\n" + body, port=self.server.port)
        if not raw:
            time.sleep(0.2)
            self.fail("no HTTP response; server exit code %r; log tail:\n%s"
                      % (self.server.proc.poll(), self.server.read_log()[-600:]))
        return parse_raw(raw)

    def assertAlive(self):
        time.sleep(0.2)
        self.assertIsNone(self.server.proc.poll(),
                          "cortex serve died:\n" + self.server.read_log())
        c = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=5)
        c.request("GET", "/healthz")
        self.assertEqual(c.getresponse().status, 200)
        c.close()

    def mcp_head(self, method, name=None, extra=b""):
        h = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
             self.token.encode() + b"\r\nContent-Type: application/json\r\n"
             b"Accept: application/json\r\nMCP-Protocol-Version: " + MODERN.encode() + b"\r\n")
        if method is not None:
            h += b"Mcp-Method: " + method + b"\r\n"
        if name is not None:
            h += b"Mcp-Name: " + name + b"\r\n"
        return h + extra

    @staticmethod
    def modern_body(method, params=None):
        p = dict(params or {})
        p["_meta"] = meta()
        return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": p}).encode()

    def test_unauthenticated_non_utf8_path(self):
        status, _, _ = self.send(b"GET /\xff HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        self.assertEqual(status, 404)
        self.assertAlive()

    def test_unauthenticated_non_utf8_origin(self):
        status, _, body = self.send(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://\xff.example\r\n"
            b"Content-Type: application/json\r\n", b"{}")
        self.assertEqual(status, 403)
        self.assertEqual(json.loads(body)["error"]["code"], -32600)
        self.assertAlive()

    def test_unauthenticated_non_utf8_host(self):
        status, _, body = self.send(
            b"POST /mcp HTTP/1.1\r\nHost: \xff\r\nContent-Type: application/json\r\n", b"{}")
        self.assertEqual(status, 403)
        self.assertEqual(json.loads(body)["error"]["code"], -32600)
        self.assertAlive()

    def test_non_utf8_mcp_method_header(self):
        status, _, body = self.send(self.mcp_head(b"\xff"), self.modern_body("tools/list"))
        self.assertEqual(status, 400)
        self.assertEqual(json.loads(body)["error"]["code"], -32020)
        self.assertAlive()

    def test_long_non_ascii_unknown_tool_name(self):
        name = "a" + "\u00e9" * 100  # the server truncates names to 128 bytes
        enc = ("=?base64?" + base64.b64encode(name.encode()).decode() + "?=").encode()
        status, _, body = self.send(self.mcp_head(b"tools/call", enc),
                                    self.modern_body("tools/call", {"name": name, "arguments": {}}))
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["error"]["code"], -32602)
        self.assertAlive()

    def test_non_ascii_bad_identifier(self):
        # An address (it holds an @) with a bad domain, echoed back cut to 64 bytes.
        args = {"identifier": "a@" + "\u00e9" * 40}
        status, _, body = self.send(
            self.mcp_head(b"tools/call", b"entity.lookup"),
            self.modern_body("tools/call", {"name": "entity.lookup", "arguments": args}))
        self.assertEqual(status, 200)
        sc = json.loads(body)["result"]["structuredContent"]
        self.assertEqual(sc["error"], "invalid_arguments")
        # Without an @ it is a name, here no one's.
        args = {"identifier": "a" + "\u00e9" * 40}
        status, _, body = self.send(
            self.mcp_head(b"tools/call", b"entity.lookup"),
            self.modern_body("tools/call", {"name": "entity.lookup", "arguments": args}))
        self.assertEqual(status, 200)
        sc = json.loads(body)["result"]["structuredContent"]
        self.assertEqual(sc["error"], "not_found")
        self.assertAlive()

    def test_non_ascii_bad_time_in_ingest(self):
        line = {"type": "episode", "kind": "message_received",
                "occurred_at": "2026-01-01T00:00:00Z" + "x" * 19 + "\u00e9" * 5,  # cut at 40 bytes
                "counterparty": "a@alpha.example", "summary": "s"}
        status, _, body = self.send(
            b"POST /v1/episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
            self.token.encode() + b"\r\n", json.dumps(line).encode() + b"\n")
        self.assertEqual(status, 400)
        self.assertTrue(json.loads(body)["message"].startswith("line 1:"))
        self.assertAlive()


if __name__ == "__main__":
    unittest.main()
