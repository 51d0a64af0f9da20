"""Two `cortex serve` instances on one PostgreSQL database behind nginx, configured with
examples/deploy/nginx.conf exactly as docs/deploy.md tells users to (only its ports are
rewritten). Calls, MCP sessions and approvals work through the balancer whichever
instance answers, and the service keeps answering when one instance is killed.

Uses the cluster in $CORTEX_PG_DIR (scripts/pg) if set, else starts one of its own."""

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORTEX_BIN = os.environ.get("CORTEX_BIN", os.path.join(ROOT, "build", "cortex"))
PG = os.path.join(ROOT, "scripts", "pg")
EXAMPLE = os.path.join(ROOT, "examples", "deploy", "nginx.conf")
MODERN = "2026-07-28"
LEGACY = "2025-11-25"

ENV = {}


def run(*args):
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=True).stdout


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Instance:
    """`cortex serve` on the shared database; stderr goes to a file."""

    def __init__(self, name, url, tmp):
        self.log_path = os.path.join(tmp, f"{name}.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [CORTEX_BIN, "serve", "--database", url, "--listen", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)/mcp", f.read())
            if m:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{name} did not start: {self.read_log()}")

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-3000:]

    def requests_served(self):
        body = request(self.port, "GET", "/metrics")[2].decode()
        return sum(float(m) for m in re.findall(r"^cortex_requests_total\{[^}]*\} (\S+)$",
                                                 body, re.M))

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=10)
        self.log.close()


def request(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def mcp(port, method, params=None, session=None, rid=1):
    """A JSON-RPC request on /mcp: stateless era, or session era when `session` is given
    (None for initialize itself)."""
    p = dict(params or {})
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {ENV['token']}"}
    if session is None and method != "initialize":
        p["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                      "io.modelcontextprotocol/clientCapabilities": {}}
        headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": method})
        if method == "tools/call":
            headers["Mcp-Name"] = p["name"]
    elif session is not None:
        headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY})
    message = {"jsonrpc": "2.0", "method": method, "params": p}
    if not method.startswith("notifications/"):
        message["id"] = rid
    body = json.dumps(message)
    return request(port, "POST", "/mcp", body.encode(), headers)


def tool(test, port, name, arguments, session=None):
    status, _, body = mcp(port, "tools/call", {"name": name, "arguments": arguments}, session)
    test.assertEqual(status, 200, body)
    result = json.loads(body)["result"]
    return result["structuredContent"], result.get("isError", False)


def setUpModule():
    if shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"):
        raise unittest.SkipTest("nginx is not installed (scripts/setup installs it)")
    ENV["tmp"] = tempfile.mkdtemp(prefix="cortex-lb-")
    cluster = os.environ.get("CORTEX_PG_DIR")
    if not cluster:
        cluster = os.path.join(ENV["tmp"], "pg")
        run(PG, "start", cluster)
        ENV["own_cluster"] = cluster
    name = "cortex_lb_%d" % os.getpid()
    url = run(PG, "createdb", cluster, name).strip()
    run(CORTEX_BIN, "demo", "--database", url)
    ENV["token"] = run(CORTEX_BIN, "token", "create", "--database", url, "--workspace", "demo",
                       "--scopes", "read,act,admin", "--label", "lb").split()[-1]
    ENV["a"] = Instance("a", url, ENV["tmp"])
    ENV["b"] = Instance("b", url, ENV["tmp"])
    ENV["port"] = free_port()
    with open(EXAMPLE) as f:
        site = (f.read().replace("127.0.0.1:8787", f"127.0.0.1:{ENV['a'].port}")
                .replace("127.0.0.1:8788", f"127.0.0.1:{ENV['b'].port}")
                .replace("127.0.0.1:8080", f"127.0.0.1:{ENV['port']}"))
    tmp = ENV["tmp"]
    with open(os.path.join(tmp, "site.conf"), "w") as f:
        f.write(site)
    with open(os.path.join(tmp, "nginx.conf"), "w") as f:
        f.write(f"daemon off;\nmaster_process off;\npid {tmp}/nginx.pid;\n"
                f"error_log {tmp}/nginx-error.log warn;\nevents {{ worker_connections 256; }}\n"
                f"http {{\n  access_log off;\n  client_body_temp_path {tmp}/body;\n"
                f"  proxy_temp_path {tmp}/proxy;\n  include {tmp}/site.conf;\n}}\n")
    ENV["nginx"] = subprocess.Popen(["nginx", "-p", tmp, "-c", f"{tmp}/nginx.conf"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            if request(ENV["port"], "GET", "/healthz")[0] == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("nginx did not come up: " + open(f"{tmp}/nginx-error.log").read())
        time.sleep(0.05)


def tearDownModule():
    if "nginx" in ENV:
        ENV["nginx"].terminate()
        ENV["nginx"].wait(timeout=10)
    for k in ("a", "b"):
        if k in ENV:
            ENV[k].stop()
    if "own_cluster" in ENV:
        run(PG, "stop", ENV["own_cluster"])
    shutil.rmtree(ENV["tmp"], ignore_errors=True)


class LoadBalancerTest(unittest.TestCase):
    def setUp(self):
        self.lb = ENV["port"]

    def test_1_calls_are_spread_over_both_instances(self):
        before = (ENV["a"].requests_served(), ENV["b"].requests_served())
        for _ in range(20):
            status, _ = tool(self, self.lb, "workspace.status", {})
            self.assertEqual(status["workspace"], "demo", status)
        after = (ENV["a"].requests_served(), ENV["b"].requests_served())
        # Each instance answered some (its own /metrics scrape counts one more).
        self.assertGreater(after[0] - before[0], 2, (before, after))
        self.assertGreater(after[1] - before[1], 2, (before, after))

    def test_2_a_session_works_whichever_instance_answers(self):
        status, headers, body = mcp(self.lb, "initialize", {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "lb-test", "version": "1"}})
        self.assertEqual(status, 200, body)
        session = headers["mcp-session-id"]
        status, _, _ = mcp(self.lb, "notifications/initialized", session=session)
        self.assertEqual(status, 202)
        for i in range(10):  # round robin: both instances see the session
            status, _, body = mcp(self.lb, "tools/list", session=session, rid=i)
            self.assertEqual(status, 200, body)
            self.assertTrue(json.loads(body)["result"]["tools"])
        status, _, _ = request(self.lb, "DELETE", "/mcp", headers={
            "Authorization": f"Bearer {ENV['token']}", "Mcp-Session-Id": session,
            "MCP-Protocol-Version": LEGACY})
        self.assertIn(status, (200, 204))
        for i in range(2):  # ended for both instances
            status, _, _ = mcp(self.lb, "tools/list", session=session, rid=i)
            self.assertEqual(status, 404)

    def test_3_propose_then_approve_through_the_balancer(self):
        proposed, is_error = tool(self, self.lb, "action.communicate", {
            "to": "dana@external.example", "message": "Can we move our call to Friday?"})
        self.assertFalse(is_error, proposed)
        self.assertEqual(proposed["status"], "pending_approval", proposed)
        decision = proposed["decision_id"]
        approved, is_error = tool(self, self.lb, "action.approve", {"decision_id": decision})
        self.assertFalse(is_error, approved)
        again, is_error = tool(self, self.lb, "action.approve", {"decision_id": decision})
        self.assertTrue(is_error, again)
        seen = [tool(self, self.lb, "decision.inspect", {"decision_id": decision})[0]
                for _ in range(2)]  # round robin: one answer from each instance
        self.assertEqual(seen[0]["decision_id"], decision, seen)
        self.assertEqual(seen[0], seen[1])

    def test_9_one_instance_killed_the_service_keeps_answering(self):
        ENV["a"].stop(signal.SIGKILL)
        for _ in range(20):
            status, _ = tool(self, self.lb, "workspace.status", {})
            self.assertEqual(status["workspace"], "demo", status)


if __name__ == "__main__":
    unittest.main()
