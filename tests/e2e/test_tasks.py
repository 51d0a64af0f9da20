"""Tasks (io.modelcontextprotocol/tasks, 2026-07-28): to a client that declares the
extension, an action.communicate draft waiting for approval is a task, input_required until
a person decides (inbox, CLI, or the form answered with a person's token), then completed
with the action's result, or cancelled when rejected. Persisted, unguessable, one workspace's
only. Python 3 stdlib only."""

import http.client
import json
import os
import tempfile
import unittest

from test_elicitation import workspace_with_marcus
from test_http import Server, cli, create_token

MODERN = "2026-07-28"
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
ARGS = {"to": "marcus@h.example", "message": "Can we move the review to Friday?"}


def rpc(port, token, method, params, capabilities=None, name=None):
    """A 2026-07-28 request; returns (HTTP status, JSON-RPC body)."""
    params = dict(params)
    params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                       "io.modelcontextprotocol/clientCapabilities": capabilities or {}}
    headers = {"Content-Type": "application/json", "Accept": "application/json",
               "Authorization": "Bearer " + token, "MCP-Protocol-Version": MODERN,
               "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                                             "params": params}), headers)
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    return resp.status, body


def send_draft(port, token, capabilities=TASKS):
    _, body = rpc(port, token, "tools/call", {"name": "action.communicate", "arguments": ARGS},
                  capabilities, "action.communicate")
    return body["result"]


def task_call(port, token, method, task_id, extra=None, capabilities=TASKS):
    params = {"taskId": task_id}
    params.update(extra or {})
    return rpc(port, token, method, params, capabilities, task_id)


def inbox_decide(data, port, decision_id, verb):
    """Approves or rejects in the web inbox, as the person signed in by `cortex inbox link`."""
    link = cli(data, "inbox", "link", "--data", data, "--workspace", "alpha", "--base-url",
               f"http://127.0.0.1:{port}").stdout.strip().split()[-1]
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", link.split(f"127.0.0.1:{port}", 1)[1])
    r = c.getresponse()
    r.read()
    cookie = r.getheader("Set-Cookie").split(";")[0]
    c.request("GET", "/inbox/api/state", headers={"Cookie": cookie})
    r = c.getresponse()
    csrf = json.loads(r.read())["csrf_token"]
    c.request("POST", f"/inbox/api/{verb}", json.dumps({"decision_id": decision_id}),
              {"Cookie": cookie, "X-CSRF-Token": csrf, "Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    c.close()
    assert r.status == 200, (r.status, body)


class TestTasks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-tasks-")
        self.data = workspace_with_marcus(self.tmp.name)
        self.agent = create_token(self.data, "alpha", "read,act")
        self.person = create_token(self.data, "alpha", "read,act,approve")
        self.other = create_token(self.data, "beta", "read,act,approve")
        self.server = Server(self.data)
        self.port = self.server.port

    def tearDown(self):
        self.server.terminate()
        self.server.kill()
        self.tmp.cleanup()

    def get(self, task_id, token=None):
        status, body = task_call(self.port, token or self.agent, "tasks/get", task_id)
        self.assertEqual(status, 200, body)
        return body["result"]

    def test_a_draft_is_a_task_until_the_person_approves_in_the_inbox(self):
        created = send_draft(self.port, self.agent)
        self.assertEqual(created["resultType"], "task", created)
        task_id = created["taskId"]
        self.assertRegex(task_id, r"^task_[0-9a-f]{32}$")
        self.assertEqual(created["status"], "input_required")
        self.assertIsInstance(created["ttlMs"], int)
        self.assertIsInstance(created["pollIntervalMs"], int)
        self.assertNotIn("requestState", created)

        waiting = self.get(task_id)
        self.assertEqual(waiting["resultType"], "complete")
        self.assertEqual(waiting["status"], "input_required", waiting)
        form = waiting["inputRequests"]["approval"]
        self.assertEqual(form["method"], "elicitation/create")
        self.assertIn("Marcus Webb", form["params"]["message"])
        self.assertNotIn("result", waiting)

        # The agent's own answer decides nothing: an agent never approves.
        status, refused = task_call(self.port, self.agent, "tasks/update", task_id, {
            "inputResponses": {"approval": {"action": "accept",
                                            "content": {"decision": "approve"}}}})
        self.assertEqual(refused["error"]["code"], -32602, refused)
        self.assertIn("approve", refused["error"]["message"])
        self.assertEqual(self.get(task_id)["status"], "input_required")

        [pending] = [p for p in cli(self.data, "inbox", "list", "--data", self.data,
                                    "--workspace", "alpha").stdout.splitlines()
                     if "dec_" in p]
        decision_id = next(w for w in pending.split() if w.startswith("dec_"))
        inbox_decide(self.data, self.port, decision_id, "approve")

        done = self.get(task_id)
        self.assertEqual(done["status"], "completed", done)
        self.assertNotIn("inputRequests", done)
        result = done["result"]
        self.assertFalse(result.get("isError", False), result)
        self.assertEqual(result["structuredContent"]["status"], "success")
        self.assertEqual(result["structuredContent"]["decision_id"], decision_id)
        # Terminal: it stays so, and a cancel changes nothing.
        status, ack = task_call(self.port, self.agent, "tasks/cancel", task_id)
        self.assertEqual(ack["result"]["resultType"], "complete", ack)
        self.assertEqual(self.get(task_id)["status"], "completed")

    def test_rejected_through_the_cli_the_task_is_cancelled(self):
        task_id = send_draft(self.port, self.agent)["taskId"]
        listed = cli(self.data, "inbox", "list", "--data", self.data, "--workspace", "alpha")
        decision_id = next(w for w in listed.stdout.split() if w.startswith("dec_"))
        cli(self.data, "inbox", "reject", "--data", self.data, "--workspace", "alpha",
            decision_id)
        gone = self.get(task_id)
        self.assertEqual(gone["status"], "cancelled", gone)
        self.assertIn("rejected", gone["statusMessage"])
        self.assertNotIn("result", gone)

    def test_a_persons_token_may_answer_the_form(self):
        task_id = send_draft(self.port, self.person)["taskId"]
        status, ack = task_call(self.port, self.person, "tasks/update", task_id, {
            "inputResponses": {"approval": {"action": "accept", "content": {
                "decision": "approve", "message": "Could Friday work instead?"}}}})
        self.assertEqual(ack["result"], {"resultType": "complete", "_meta": ack["result"]["_meta"]})
        done = self.get(task_id, self.person)
        self.assertEqual(done["status"], "completed", done)
        self.assertEqual(done["result"]["structuredContent"]["draft"],
                         "Could Friday work instead?")

    def test_without_the_extension_there_is_no_task(self):
        plain = send_draft(self.port, self.agent, capabilities={})
        self.assertEqual(plain["resultType"], "complete", plain)
        self.assertEqual(plain["structuredContent"]["status"], "pending_approval")
        task_id = send_draft(self.port, self.agent)["taskId"]
        status, body = task_call(self.port, self.agent, "tasks/get", task_id, capabilities={})
        self.assertEqual(body["error"]["code"], -32021, body)

    def test_another_workspace_and_a_guessed_id_are_not_found(self):
        task_id = send_draft(self.port, self.agent)["taskId"]
        for token, tid in ((self.other, task_id), (self.agent, "task_" + "0" * 32)):
            for method in ("tasks/get", "tasks/update", "tasks/cancel"):
                status, body = task_call(self.port, token, method, tid)
                self.assertEqual(body["error"]["code"], -32602, (method, body))
        self.assertEqual(self.get(task_id)["status"], "input_required")
        # The Mcp-Name header must name the task.
        status, body = rpc(self.port, self.agent, "tasks/get", {"taskId": task_id}, TASKS,
                           "task_other")
        self.assertEqual((status, body["error"]["code"]), (400, -32020), body)

    def test_the_task_outlives_a_restart(self):
        task_id = send_draft(self.port, self.agent)["taskId"]
        self.server.terminate()
        self.server.kill()
        self.server = Server(self.data)
        self.port = self.server.port
        self.assertEqual(self.get(task_id)["status"], "input_required")
        status, ack = task_call(self.port, self.agent, "tasks/cancel", task_id)
        self.assertEqual(ack["result"]["resultType"], "complete", ack)
        cancelled = self.get(task_id)
        self.assertEqual(cancelled["status"], "cancelled")
        self.assertIn("still waits in the inbox", cancelled["statusMessage"])


if __name__ == "__main__":
    unittest.main()
