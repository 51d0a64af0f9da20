"""End-to-end tests of `cortex mcp --stdio` (Python 3 stdlib only).

stdout must carry only JSON-RPC messages, one per line; logs go to stderr.

    CORTEX_BIN=/path/to/cortex python3 -m unittest discover -s tests/e2e -v
"""

import json
import os
import queue
import subprocess
import tempfile
import threading
import unittest

from test_http import EXPECTED_TOOLS  # tools/list order, one list for both

CORTEX_BIN = os.environ.get("CORTEX_BIN", "/work/main/build/cortex")
MODERN = "2026-07-28"
LEGACY = "2025-11-25"

ENV = None  # filled in by setUpModule


def setUpModule():
    global ENV
    tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-stdio-")
    proc = subprocess.run([CORTEX_BIN, "token", "create", "--data", tmp.name, "--workspace",
                           "alpha", "--scopes", "read,act"], capture_output=True, text=True,
                          timeout=30)
    if proc.returncode != 0:
        raise RuntimeError("token create failed: " + proc.stderr)
    ENV = {"tmp": tmp, "data": tmp.name, "token": proc.stdout.strip()}


def tearDownModule():
    ENV["tmp"].cleanup()


def child_env(token):
    env = {k: v for k, v in os.environ.items() if k != "CORTEX_TOKEN"}
    if token is not None:
        env["CORTEX_TOKEN"] = token
    return env


def run_batch(lines, token=None, timeout=30):
    """Feeds `lines` (then EOF) to a fresh `cortex mcp --stdio`; returns (rc, stdout, stderr)."""
    data = "".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines)
    proc = subprocess.run([CORTEX_BIN, "mcp", "--stdio", "--data", ENV["data"]],
                          input=data.encode(), capture_output=True, timeout=timeout,
                          env=child_env(ENV["token"] if token is None else token))
    # stdout must be UTF-8 JSON (strict); stderr is free-form logging.
    return (proc.returncode, proc.stdout.decode("utf-8"),
            proc.stderr.decode("utf-8", "replace"))


def modern_meta(version=MODERN, caps=True):
    m = {"io.modelcontextprotocol/protocolVersion": version,
         "io.modelcontextprotocol/clientInfo": {"name": "cortex-e2e", "version": "1.0.0"}}
    if caps:
        m["io.modelcontextprotocol/clientCapabilities"] = {}
    return m


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": LEGACY, "capabilities": {},
                         "clientInfo": {"name": "cortex-e2e", "version": "1.0.0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class Interactive:
    """A live `cortex mcp --stdio`: send a line, read the reply line (with a timeout)."""

    def __init__(self, token):
        self.proc = subprocess.Popen([CORTEX_BIN, "mcp", "--stdio", "--data", ENV["data"]],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=child_env(token))
        self.lines = queue.Queue()
        self.stderr = []
        self.threads = [threading.Thread(target=self._pump_out, daemon=True),
                        threading.Thread(target=self._pump_err, daemon=True)]
        for t in self.threads:
            t.start()

    def _pump_out(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _pump_err(self):
        for line in self.proc.stderr:
            self.stderr.append(line)

    def send(self, msg):
        data = msg if isinstance(msg, (str, bytes)) else json.dumps(msg)
        if isinstance(data, str):
            data = data.encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def read(self, timeout=10):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no line on stdout within %ss" % timeout)
        if line is None:
            raise AssertionError("stdout closed; stderr:\n" + b"".join(self.stderr).decode())
        return line

    def no_output(self, timeout=0.5):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        return line

    def close(self, timeout=10):
        self.proc.stdin.close()  # EOF
        rc = self.proc.wait(timeout=timeout)
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for t in self.threads:
            t.join(timeout=5)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f and not f.closed:
                f.close()


class StdioAsserts:
    def parse_line(self, line):
        """One stdout line must be exactly one JSON-RPC 2.0 message."""
        if isinstance(line, bytes):
            line = line.decode("utf-8")
        self.assertTrue(line.endswith("\n"), repr(line))
        self.assertNotIn("\n", line[:-1])
        try:
            msg = json.loads(line)
        except ValueError:
            self.fail("stdout line is not JSON: %r" % line[:300])
        self.assertIsInstance(msg, dict, line)
        self.assertEqual(msg.get("jsonrpc"), "2.0", line)
        return msg


class TestStdioSession(unittest.TestCase, StdioAsserts):
    def test_session_conversation_batch(self):
        rc, out, err = run_batch([
            INITIALIZE,
            INITIALIZED,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": "three", "method": "tools/call",
             "params": {"name": "workspace.status", "arguments": {}}},
            '{"jsonrpc": "2.0", "id": 4, "method": ',  # malformed
            {"jsonrpc": "2.0", "id": 5, "method": "ping"},
        ])
        self.assertEqual(rc, 0, err)
        lines = out.splitlines(keepends=True)
        msgs = [self.parse_line(l) for l in lines]
        # One reply per request plus one for the malformed line; none for the notification.
        self.assertEqual([m.get("id", "<absent>") for m in msgs], [1, 2, "three", None, 5], out)

        init = msgs[0]["result"]
        self.assertEqual(init["protocolVersion"], LEGACY)
        self.assertIn("tools", init["capabilities"])
        self.assertEqual([t["name"] for t in msgs[1]["result"]["tools"]],
                         EXPECTED_TOOLS)
        call = msgs[2]["result"]
        self.assertFalse(call.get("isError", False), call)
        self.assertEqual(call["structuredContent"]["workspace"], "alpha")
        self.assertEqual(msgs[3]["error"]["code"], -32700)
        self.assertIsNone(msgs[3].get("id"))
        self.assertEqual(msgs[4]["result"], {})
        # Logs went to stderr, one line per request; stderr is a pipe, so those lines were
        # batched and written out at exit.
        self.assertIn("serving MCP on stdio", err)
        methods = [ln.split(" method=")[1].split()[0] for ln in err.splitlines()
                   if " request route=stdio " in ln]
        self.assertEqual(methods[:3], ["initialize", "notifications/initialized", "tools/list"],
                         err)
        self.assertIn("method=tools/call tool=workspace.status status=ok", err)

    def test_interactive_replies_are_flushed_per_line(self):
        p = Interactive(ENV["token"])
        try:
            p.send(INITIALIZE)
            self.assertEqual(self.parse_line(p.read())["id"], 1)
            p.send(INITIALIZED)
            self.assertIsNone(p.no_output(), "a notification got a reply")
            p.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "entity.lookup", "arguments": {}}})
            res = self.parse_line(p.read())
            self.assertEqual(res["id"], 2)
            self.assertTrue(res["result"]["isError"])
            self.assertEqual(res["result"]["structuredContent"]["error"], "invalid_arguments")
            self.assertIn("identifier", res["result"]["structuredContent"]["message"])
            p.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "no.such.tool", "arguments": {}}})
            err = self.parse_line(p.read())
            self.assertEqual(err["id"], 3)
            self.assertEqual(err["error"]["code"], -32602)
            p.send({"jsonrpc": "2.0", "id": 4, "method": "no/such/method"})
            err = self.parse_line(p.read())
            self.assertEqual(err["id"], 4)
            self.assertEqual(err["error"]["code"], -32601)
            self.assertEqual(p.close(), 0)  # EOF on stdin: clean exit
        finally:
            p.kill()

    def test_request_before_initialize(self):
        rc, out, err = run_batch([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}])
        self.assertEqual(rc, 0, err)
        msgs = [self.parse_line(l) for l in out.splitlines(keepends=True)]
        self.assertEqual(len(msgs), 1, out)
        self.assertEqual(msgs[0]["id"], 1)
        self.assertEqual(msgs[0]["error"]["code"], -32000)

    def test_invalid_requests(self):
        rc, out, err = run_batch([
            '[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]',
            {"id": 2, "method": "ping"},
            {"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"},
            {"jsonrpc": "2.0", "id": 4, "method": "ping", "params": [1]},
        ])
        self.assertEqual(rc, 0, err)
        msgs = [self.parse_line(l) for l in out.splitlines(keepends=True)]
        self.assertEqual(len(msgs), 4, out)
        for m in msgs:
            self.assertEqual(m["error"]["code"], -32600, m)

    def test_blank_lines_are_ignored(self):
        rc, out, err = run_batch(["", "   ", INITIALIZE, ""])
        self.assertEqual(rc, 0, err)
        msgs = [self.parse_line(l) for l in out.splitlines(keepends=True)]
        self.assertEqual([m["id"] for m in msgs], [1])

    def test_oversized_line(self):
        big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping",
                          "params": {"pad": "a" * ((1 << 20) + 10)}})
        rc, out, err = run_batch([big, INITIALIZE])
        self.assertEqual(rc, 0, err)
        msgs = [self.parse_line(l) for l in out.splitlines(keepends=True)]
        self.assertEqual(len(msgs), 2, out[:300])
        self.assertEqual(msgs[0]["error"]["code"], -32600)
        self.assertIsNone(msgs[0].get("id"))
        self.assertEqual(msgs[1]["id"], 1)

    def test_eof_on_empty_input_exits_0(self):
        rc, out, err = run_batch([])
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "")


class TestStdioStateless(unittest.TestCase, StdioAsserts):
    def test_server_discover_without_headers(self):
        rc, out, err = run_batch([
            {"jsonrpc": "2.0", "id": "d", "method": "server/discover",
             "params": {"_meta": modern_meta()}},
            {"jsonrpc": "2.0", "id": "l", "method": "tools/list",
             "params": {"_meta": modern_meta()}},
            {"jsonrpc": "2.0", "id": "c", "method": "tools/call",
             "params": {"name": "workspace.status", "arguments": {}, "_meta": modern_meta()}},
            {"jsonrpc": "2.0", "id": "v", "method": "server/discover",
             "params": {"_meta": modern_meta(version="1900-01-01")}},
            {"jsonrpc": "2.0", "id": "k", "method": "tools/list",
             "params": {"_meta": modern_meta(caps=False)}},
            {"jsonrpc": "2.0", "id": "u", "method": "no/such/method",
             "params": {"_meta": modern_meta()}},
        ])
        self.assertEqual(rc, 0, err)
        msgs = [self.parse_line(l) for l in out.splitlines(keepends=True)]
        self.assertEqual([m["id"] for m in msgs], ["d", "l", "c", "v", "k", "u"], out)
        d = msgs[0]["result"]
        self.assertEqual(d["resultType"], "complete")
        self.assertIn(MODERN, d["supportedVersions"])
        self.assertIsInstance(d["capabilities"]["tools"], dict)
        lst = msgs[1]["result"]
        self.assertEqual([t["name"] for t in lst["tools"]], EXPECTED_TOOLS)
        self.assertIn("ttlMs", lst)
        self.assertIn("cacheScope", lst)
        self.assertEqual(msgs[2]["result"]["structuredContent"]["workspace"], "alpha")
        self.assertEqual(msgs[2]["result"]["resultType"], "complete")
        self.assertEqual(msgs[3]["error"]["code"], -32022)
        self.assertEqual(msgs[3]["error"]["data"]["requested"], "1900-01-01")
        self.assertIn(MODERN, msgs[3]["error"]["data"]["supported"])
        self.assertEqual(msgs[4]["error"]["code"], -32602)
        self.assertEqual(msgs[5]["error"]["code"], -32601)

    def test_long_non_ascii_unknown_tool_name_does_not_crash(self):
        # The server truncates tool names to 128 bytes for its logs; cutting "é" in half must
        # not make the reply unserialisable.
        name = "a" + "\u00e9" * 100
        rc, out, err = run_batch([
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
             "params": {"name": name, "arguments": {}, "_meta": modern_meta()}},
            {"jsonrpc": "2.0", "id": 2, "method": "server/discover",
             "params": {"_meta": modern_meta()}},
        ])
        self.assertEqual(rc, 0, err[-600:])
        msgs = [self.parse_line(l) for l in out.splitlines(keepends=True)]
        self.assertEqual([m["id"] for m in msgs], [1, 2], out)
        self.assertEqual(msgs[0]["error"]["code"], -32602)


class TestStdioStartup(unittest.TestCase):
    def test_without_token(self):
        rc, out, err = run_batch([INITIALIZE], token="")
        self.assertNotEqual(rc, 0)
        self.assertEqual(out, "")
        self.assertIn("CORTEX_TOKEN", err)

    def test_token_unset(self):
        proc = subprocess.run([CORTEX_BIN, "mcp", "--stdio", "--data", ENV["data"]],
                              input=json.dumps(INITIALIZE) + "\n", capture_output=True,
                              text=True, timeout=30, env=child_env(None))
        self.assertNotEqual(proc.returncode, 0)
        self.assertEqual(proc.stdout, "")
        self.assertIn("CORTEX_TOKEN", proc.stderr)

    def test_bad_token(self):
        rc, out, err = run_batch([INITIALIZE], token="ctk_" + "0" * 48)
        self.assertNotEqual(rc, 0)
        self.assertEqual(out, "")
        self.assertTrue(err.strip(), "no message on stderr")
        self.assertIn("CORTEX_TOKEN", err)


if __name__ == "__main__":
    unittest.main()
