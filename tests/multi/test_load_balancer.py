"""Two `cortex serve` instances on one PostgreSQL database behind nginx, configured with
examples/deploy/nginx.conf exactly as docs/deploy.md tells users to (only its ports are
rewritten). Calls, MCP sessions and approvals work through the balancer whichever
instance answers, and the service keeps answering when one instance is killed.

Uses the cluster in $CORTEX_PG_DIR (scripts/pg) if set, else starts one of its own."""

import json
import os
import re
import shutil
import subprocess
import time
import types
import unittest

from harness import (LEGACY, M, REPO, Instance, call, cli, create_token, http_request,
                     new_database, start_cluster, stop_cluster, write_config)

EXAMPLE = os.path.join(REPO, "examples", "deploy", "nginx.conf")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def requests_served(inst):
    body = http_request(inst.port, "GET", "/metrics")[2].decode()
    return sum(float(m) for m in re.findall(r"^cortex_requests_total\{[^}]*\} (\S+)$", body, re.M))


def session_rpc(port, method, params=None, session=None, rid=1):
    """A 2025-11-25 era message (initialize opens the session)."""
    message = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if not method.startswith("notifications/"):
        message["id"] = rid
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {M['token']}"}
    if session is not None:
        headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY})
    return http_request(port, "POST", "/mcp", json.dumps(message).encode(), headers)


def setUpModule():
    if shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"):
        raise unittest.SkipTest("nginx is not installed (scripts/setup installs it)")
    start_cluster("cortex-lb-")
    try:
        db = new_database("lb")
        cli(db, "demo")
        M["token"] = create_token(db, "demo", "read,act,admin", "lb")  # the agent's
        M["person"] = create_token(db, "demo", "read,approve", "lb-person")  # approves
        config = write_config(os.path.join(M["tmp"], "lb.toml"))
        M["A"] = Instance("A", db, config)
        M["B"] = Instance("B", db, config)
        # nginx, addressed like an instance by harness.call.
        M["lb"] = lb = types.SimpleNamespace(name="nginx", port=free_port())
        tmp = M["tmp"]
        with open(EXAMPLE) as f:
            site = (f.read().replace("127.0.0.1:8787", f"127.0.0.1:{M['A'].port}")
                    .replace("127.0.0.1:8788", f"127.0.0.1:{M['B'].port}")
                    .replace("127.0.0.1:8080", f"127.0.0.1:{lb.port}"))
        with open(os.path.join(tmp, "site.conf"), "w") as f:
            f.write(site)
        with open(os.path.join(tmp, "nginx.conf"), "w") as f:
            f.write(f"daemon off;\nmaster_process off;\npid {tmp}/nginx.pid;\n"
                    f"error_log {tmp}/nginx-error.log warn;\n"
                    "events { worker_connections 256; }\n"
                    f"http {{\n  access_log off;\n  client_body_temp_path {tmp}/body;\n"
                    f"  proxy_temp_path {tmp}/proxy;\n  include {tmp}/site.conf;\n}}\n")
        M["nginx"] = subprocess.Popen(["nginx", "-p", tmp, "-c", f"{tmp}/nginx.conf"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                if http_request(lb.port, "GET", "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                with open(f"{tmp}/nginx-error.log") as f:
                    raise RuntimeError("nginx did not come up: " + f.read())
            time.sleep(0.05)
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    if "nginx" in M:
        M["nginx"].terminate()
        M["nginx"].wait(timeout=10)
    stop_cluster()


class LoadBalancerTest(unittest.TestCase):
    def tool(self, name, arguments, token="token"):
        return call(M["lb"], M[token], name, arguments)

    def test_1_calls_are_spread_over_both_instances(self):
        before = (requests_served(M["A"]), requests_served(M["B"]))
        for _ in range(20):
            status, is_error = self.tool("workspace.status", {})
            self.assertFalse(is_error, status)
            self.assertEqual(status["workspace"], "demo", status)
        after = (requests_served(M["A"]), requests_served(M["B"]))
        # Each instance answered some (its own /metrics scrape counts one more).
        self.assertGreater(after[0] - before[0], 2, (before, after))
        self.assertGreater(after[1] - before[1], 2, (before, after))

    def test_2_a_session_works_whichever_instance_answers(self):
        lb = M["lb"].port
        status, headers, body = session_rpc(lb, "initialize", {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "lb-test", "version": "1"}})
        self.assertEqual(status, 200, body)
        session = headers["mcp-session-id"]
        status, _, _ = session_rpc(lb, "notifications/initialized", session=session)
        self.assertEqual(status, 202)
        for i in range(10):  # round robin: both instances see the session
            status, _, body = session_rpc(lb, "tools/list", session=session, rid=i)
            self.assertEqual(status, 200, body)
            self.assertTrue(json.loads(body)["result"]["tools"])
        status, _, _ = http_request(lb, "DELETE", "/mcp", headers={
            "Authorization": f"Bearer {M['token']}", "Mcp-Session-Id": session,
            "MCP-Protocol-Version": LEGACY})
        self.assertIn(status, (200, 204))
        for i in range(2):  # ended for both instances
            status, _, _ = session_rpc(lb, "tools/list", session=session, rid=i)
            self.assertEqual(status, 404)

    def test_3_propose_then_approve_through_the_balancer(self):
        proposed, is_error = self.tool("action.communicate", {
            "to": "dana@external.example", "message": "Can we move our call to Friday?"})
        self.assertFalse(is_error, proposed)
        self.assertEqual(proposed["status"], "pending_approval", proposed)
        decision = proposed["decision_id"]
        for _ in range(2):  # round robin: refused by each instance alike
            refused, is_error = self.tool("action.approve", {"decision_id": decision})
            self.assertTrue(is_error, refused)
            self.assertEqual(refused["error"], "unauthorized", refused)
        approved, is_error = self.tool("action.approve", {"decision_id": decision}, "person")
        self.assertFalse(is_error, approved)
        again, is_error = self.tool("action.approve", {"decision_id": decision}, "person")
        self.assertTrue(is_error, again)
        self.assertEqual(again["error"], "not_pending", again)
        seen = [self.tool("decision.inspect", {"decision_id": decision})[0]
                for _ in range(2)]  # round robin: one answer from each instance
        self.assertEqual(seen[0]["decision_id"], decision, seen)
        self.assertEqual(seen[0], seen[1])

    def test_9_one_instance_killed_the_service_keeps_answering(self):
        M["A"].kill9()
        for _ in range(20):
            status, is_error = self.tool("workspace.status", {})
            self.assertFalse(is_error, status)
            self.assertEqual(status["workspace"], "demo", status)


if __name__ == "__main__":
    unittest.main()
