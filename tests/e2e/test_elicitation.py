"""Approval inside the person's own MCP client (2026-07-28: an input-required result that
asks by elicitation, answered on the retry). Only a person's token is asked; the answer is
recorded with channel `elicitation`; a state counts once. Python 3 stdlib only."""

import http.client
import json
import os
import tempfile
import unittest

from test_http import Server, cli, create_token


def tool(port, token, name, arguments, capabilities=None, extra=None):
    """A 2026-07-28 tools/call; returns its result (a CallToolResult or an input-required
    result). `extra` adds params (inputResponses, requestState)."""
    params = {"name": name, "arguments": arguments,
              "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": capabilities or {}}}
    params.update(extra or {})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                             "params": params}), {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Authorization": "Bearer " + token, "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call", "Mcp-Name": name})
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    return body["result"]


def call(port, token, arguments, capabilities, extra=None):
    return tool(port, token, "action.communicate", arguments, capabilities, extra)


ASK = {"elicitation": {}}
ARGS = {"to": "marcus@h.example", "message": "Can we move the review to Friday?"}


def workspace_with_marcus(tmp):
    """A data directory in `tmp` whose workspace `alpha` knows Marcus Webb; returns it."""
    data = os.path.join(tmp, "data")
    world = os.path.join(tmp, "world.jsonl")
    with open(world, "w") as f:
        f.write(json.dumps({"type": "entity", "name": "Marcus Webb",
                            "identifiers": ["marcus@h.example"]}) + "\n")
    cli(data, "ingest", "--data", data, "--workspace", "alpha", world)
    return data


class TestApproveInClient(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.data = workspace_with_marcus(self.tmp.name)
        self.agent = create_token(self.data, "alpha", "read,act")
        self.person = create_token(self.data, "alpha", "read,act,approve")
        self.server = None

    def tearDown(self):
        if self.server:
            self.server.terminate()
            self.server.kill()
        self.tmp.cleanup()

    def serve(self, config=""):
        path = os.path.join(self.tmp.name, "cortex.toml")
        with open(path, "w") as f:
            f.write(config)
        self.server = Server(self.data, ["--config", path])
        return self.server.port

    def test_the_person_approves_in_their_client_and_the_ledger_says_so(self):
        port = self.serve()
        asked = call(port, self.person, ARGS, ASK)
        self.assertEqual(asked["resultType"], "input_required", asked)
        q = asked["inputRequests"]["approval"]
        self.assertEqual(q["method"], "elicitation/create")
        self.assertEqual(q["params"]["mode"], "form")
        self.assertIn("Marcus Webb", q["params"]["message"])
        state = asked["requestState"]

        answer = {"approval": {"action": "accept",
                               "content": {"decision": "approve",
                                           "message": "Could Friday work instead? Thanks!"}}}
        done = call(port, self.person, ARGS, ASK,
                    {"inputResponses": answer, "requestState": state})
        self.assertEqual(done["resultType"], "complete", done)
        body = done["structuredContent"]
        self.assertEqual(body["status"], "success", body)
        self.assertEqual(body["draft"], "Could Friday work instead? Thanks!")

        inspected = call_inspect(port, self.person, body["decision_id"])
        approved = [h for h in inspected["history"] if h["event"] == "approved"]
        self.assertEqual(len(approved), 1, inspected)
        self.assertEqual(approved[0]["by"]["channel"], "elicitation")

        replay = call(port, self.person, ARGS, ASK,
                      {"inputResponses": answer, "requestState": state})
        self.assertTrue(replay.get("isError"), replay)
        self.assertIn("already answered", replay["structuredContent"]["message"])

    def test_an_agent_is_never_asked_and_cannot_answer(self):
        port = self.serve()
        plain = call(port, self.agent, ARGS, ASK)
        self.assertEqual(plain["resultType"], "complete", plain)
        self.assertEqual(plain["structuredContent"]["status"], "pending_approval")
        # A person's state presented by the agent's token changes nothing.
        asked = call(port, self.person, ARGS, ASK)
        stolen = call(port, self.agent, ARGS, ASK, {
            "requestState": asked["requestState"],
            "inputResponses": {"approval": {"action": "accept",
                                            "content": {"decision": "approve"}}}})
        self.assertTrue(stolen.get("isError"), stolen)
        self.assertEqual(stolen["structuredContent"]["error"], "invalid_arguments")

    def test_without_the_capability_or_with_the_switch_off_the_draft_waits(self):
        port = self.serve()
        self.assertEqual(call(port, self.person, ARGS, {})["structuredContent"]["status"],
                         "pending_approval")
        self.server.terminate()
        self.server.kill()
        port = self.serve("[actions]\napprove_in_client = false\n")
        off = call(port, self.person, ARGS, ASK)
        self.assertEqual(off["resultType"], "complete", off)
        self.assertEqual(off["structuredContent"]["status"], "pending_approval")


def call_inspect(port, token, decision_id):
    return tool(port, token, "decision.inspect", {"decision_id": decision_id})["structuredContent"]


if __name__ == "__main__":
    unittest.main()
