"""Strict on the wire (issue #32), against `cortex serve` (Python 3 stdlib only).

What is not one unambiguous request is refused, never read one way here and another way by
whatever sits in front: a JSON-RPC message naming a key twice (-32700), two Authorization
headers, malformed HTTP framing, a NUL in a header, a Transfer-Encoding other than plain
`chunked`, HTTP/1.1 without Host (400, then the connection is closed). The transport's own
refusals (400, 413, 429, 431, 503) are logged and counted in /metrics, which answers only
allowed Hosts and, once `[http] metrics_token` is set, only that token. Validation errors
say what is expected. docs/security.md lists what each test here defends.

    CORTEX_BIN=/path/to/cortex python3 -m unittest discover -s tests/e2e -t tests/e2e
"""

import json
import re
import tempfile
import time
import unittest

import test_http as th
from test_http import MODERN, RpcAsserts, create_token, parse_raw
from test_limits import call_tool, connect, is_closed, read_response, req, start_server

METRICS_TOKEN = "e2e-metrics-secret"


def status_body(extra_args=b""):
    """A stateless tools/call of workspace.status as raw JSON text; `extra_args` is spliced
    into its arguments object verbatim."""
    meta = json.dumps(th.meta()).encode()
    return (b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"workspace.status",'
            b'"arguments":{' + extra_args + b'},"_meta":' + meta + b'}}')


def mcp_request(port, token, body, extra_headers=b""):
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json\r\nMCP-Protocol-Version: {MODERN}\r\n"
            "Mcp-Method: tools/call\r\nMcp-Name: workspace.status\r\n").encode() + extra_headers + \
        b"Content-Length: %d\r\n\r\n" % len(body) + body


class TestStrictWire(unittest.TestCase, RpcAsserts):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-wire-")
        cls.token = create_token(cls.tmp.name, "alpha", "read,act")
        cls.server = start_server(cls.tmp.name, "[http]\nflood_requests_per_second = 0\n")
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.tmp.cleanup()

    def exchange(self, raw):
        """Sends `raw`, reads one response; returns (status, headers, body, closed after)."""
        s = connect(self.port)
        try:
            try:
                s.sendall(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass
            status, headers, body = read_response(s)
            return status, headers, body, is_closed(s, 2)
        finally:
            s.close()

    def assertRefused400(self, raw, words=None):
        status, headers, body, closed = self.exchange(raw)
        self.assertEqual(status, 400, (raw[:200], headers, body[:300]))
        self.assertTrue(closed, f"connection left open after 400: {raw[:200]!r}")
        problem = json.loads(body)
        self.assertEqual(problem.get("error"), "bad_request", problem)
        if words:
            self.assertIn(words, problem.get("message", ""), problem)
        return problem

    def metrics(self):
        r = req(self.port, "GET", "/metrics")
        self.assertEqual(r.status, 200, r)
        return r.body.decode()

    # --- JSON: each key once ------------------------------------------------------------------

    def test_duplicate_keys_in_tool_arguments_are_a_parse_error(self):
        # Before: read as {"x": 2} (the last value won), and answered.
        raw = mcp_request(self.port, self.token, status_body(b'"x":1,"x":2'))
        status, _, body, _ = self.exchange(raw)
        self.assertEqual(status, 400, body[:300])
        err = json.loads(body)["error"]
        self.assertEqual(err["code"], -32700, err)
        self.assertIn("params.arguments.x", err["message"])

    def test_duplicate_keys_in_the_envelope_are_a_parse_error(self):
        body = (b'{"jsonrpc":"2.0","id":5,"method":"tools/list","method":"tools/call",'
                b'"params":{"_meta":' + json.dumps(th.meta()).encode() + b'}}')
        raw = mcp_request(self.port, self.token, body)
        status, _, rbody, _ = self.exchange(raw)
        self.assertEqual(status, 400, rbody[:300])
        self.assertEqual(json.loads(rbody)["error"]["code"], -32700)

    def test_the_same_key_in_different_objects_is_fine(self):
        raw = mcp_request(self.port, self.token, status_body())
        status, _, body, _ = self.exchange(raw)
        self.assertEqual(status, 200, body[:300])  # "name" at two levels, "_meta" nested

    # --- HTTP framing: 400, then close --------------------------------------------------------

    def test_two_authorization_headers(self):
        raw = mcp_request(self.port, self.token, status_body(),
                          extra_headers=f"Authorization: Bearer {self.token}\r\n".encode())
        self.assertRefused400(raw, "authorization appears more than once")

    def test_two_host_headers(self):
        self.assertRefused400(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil\r\n\r\n",
                              "host appears more than once")

    def test_http11_without_host(self):
        self.assertRefused400(b"GET /healthz HTTP/1.1\r\n\r\n", "Host")
        # HTTP/1.0 has no Host requirement.
        status, _, _, _ = self.exchange(b"GET /healthz HTTP/1.0\r\n\r\n")
        self.assertEqual(status, 200)

    def test_malformed_request_line_and_header(self):
        self.assertRefused400(b"GARBAGE\r\n\r\n")
        self.assertRefused400(b"GET /healthz HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n")
        self.assertRefused400(b"GET /healthz HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n")

    def test_nul_in_a_header(self):
        self.assertRefused400(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\x00b\r\n\r\n")

    def test_transfer_encoding_other_than_chunked(self):
        body = status_body()
        chunked = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
        head = mcp_request(self.port, self.token, b"").split(b"Content-Length")[0]
        for te in (b"gzip", b"gzip, chunked", b"chunked, identity", b"identity"):
            self.assertRefused400(head + b"Transfer-Encoding: " + te + b"\r\n\r\n" + chunked)
        # Both framings at once (request smuggling's favourite).
        self.assertRefused400(head + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
                              + chunked)
        # Plain chunked is served.
        status, _, rbody, _ = self.exchange(head + b"Transfer-Encoding: chunked\r\n\r\n" + chunked)
        self.assertEqual(status, 200, rbody[:300])

    def test_malformed_chunked_body(self):
        head = mcp_request(self.port, self.token, b"").split(b"Content-Length")[0]
        self.assertRefused400(head + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n")

    # --- Refusals are logged and counted ------------------------------------------------------

    def test_refusals_are_counted_and_logged(self):
        self.assertRefused400(b"GARBAGE\r\n\r\n")
        big = mcp_request(self.port, self.token, b"").replace(b"Content-Length: 0",
                                                              b"Content-Length: 2000000")
        status, _, _, closed = self.exchange(big)
        self.assertEqual(status, 413)
        huge = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"p" * 20000 + b"\r\n\r\n"
        status, _, _, closed = self.exchange(huge)
        self.assertEqual(status, 431)
        text = self.metrics()
        for status_name in ("bad_request", "payload_too_large", "headers_too_large"):
            self.assertRegex(text, r'cortex_requests_total\{method="[^"]*",tool="",status="'
                                   + status_name + r'"\} [1-9]')
        deadline = time.monotonic() + 3
        want = ["status=bad_request http=400", "status=payload_too_large http=413",
                "status=headers_too_large http=431"]
        while time.monotonic() < deadline:
            log = self.server.read_log()
            if all(w in log for w in want):
                break
            time.sleep(0.1)
        for w in want:
            self.assertIn(w, self.server.read_log())

    # --- /metrics answers allowed Hosts only --------------------------------------------------

    def test_metrics_refuses_a_foreign_host(self):
        r = req(self.port, "GET", "/metrics", headers={"Host": "evil.example.com"})
        self.assertEqual(r.status, 403, r)
        self.assertEqual(req(self.port, "GET", "/metrics").status, 200)

    # --- Validation errors say what is expected -----------------------------------------------

    def test_enum_error_lists_the_allowed_values(self):
        result = th.tool_result(self, call_tool(self.port, self.token, "decision.list",
                                                {"decision_class": "nonsense"}))
        sc = result["structuredContent"]
        self.assertEqual(sc["error"], "invalid_arguments", sc)
        self.assertIn("must be one of", sc["message"])
        self.assertIn('"triage"', sc["message"])
        self.assertIn('"digest"', sc["message"])

    def test_pattern_error_says_the_expected_form(self):
        result = th.tool_result(self, call_tool(self.port, self.token, "decision.inspect",
                                                {"decision_id": "dec_nope"}))
        sc = result["structuredContent"]
        self.assertEqual(sc["error"], "invalid_arguments", sc)
        self.assertIn("must be dec_ followed by 26 Crockford base-32 characters", sc["message"])


class TestMetricsToken(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-metrics-")
        cls.token = create_token(cls.tmp.name, "alpha", "read,act")
        cls.server = start_server(cls.tmp.name, f'[http]\nmetrics_token = "{METRICS_TOKEN}"\n')
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.tmp.cleanup()

    def test_metrics_need_the_metrics_token(self):
        none = req(self.port, "GET", "/metrics")
        self.assertEqual(none.status, 401, none)
        self.assertTrue((none.header("WWW-Authenticate") or "").startswith("Bearer"), none)
        self.assertNotIn(b"cortex_requests", none.body)
        workspace = req(self.port, "GET", "/metrics", token=self.token)
        self.assertEqual(workspace.status, 401, workspace)
        ok = req(self.port, "GET", "/metrics", token=METRICS_TOKEN)
        self.assertEqual(ok.status, 200, ok)
        self.assertIn(b"cortex_requests_in_flight", ok.body)
        foreign = req(self.port, "GET", "/metrics", token=METRICS_TOKEN,
                      headers={"Host": "evil.example.com"})
        self.assertEqual(foreign.status, 403, foreign)
        # /healthz stays open for probes.
        self.assertEqual(req(self.port, "GET", "/healthz").status, 200)


if __name__ == "__main__":
    unittest.main()
