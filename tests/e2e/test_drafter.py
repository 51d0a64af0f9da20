"""The model drafter against a local server that speaks the chat-completions shape, and the
daily inference budget it spends. Python 3 stdlib only."""

import http.client
import http.server
import json
import os
import tempfile
import threading
import time
import unittest

from test_http import Server, cli, create_token


class FakeModel(http.server.BaseHTTPRequestHandler):
    """Answers POST /v1/chat/completions with a fixed rewrite; records what it was asked."""
    requests = []
    fail = False

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeModel.requests.append({"auth": self.headers.get("Authorization"), "body": body})
        if FakeModel.fail:
            self.send_response(500)
            self.end_headers()
            return
        user = body["messages"][-1]["content"]
        answer = {"id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
                  "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant",
                                           "content": "MODEL DRAFT: " + user.split("\n")[0]}}],
                  "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def call_tool(port, token, name, arguments):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments,
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}
    conn.request("POST", "/mcp", json.dumps(body), {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Authorization": "Bearer " + token, "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call", "Mcp-Name": name})
    resp = conn.getresponse()
    result = json.loads(resp.read())["result"]
    conn.close()
    return result


class TestModelDrafter(unittest.TestCase):
    def setUp(self):
        FakeModel.requests = []
        FakeModel.fail = False
        self.model = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
        threading.Thread(target=self.model.serve_forever, daemon=True).start()
        self.tmp = tempfile.TemporaryDirectory()
        self.data = os.path.join(self.tmp.name, "data")
        self.outbox = os.path.join(self.tmp.name, "outbox.jsonl")
        config = os.path.join(self.tmp.name, "cortex.toml")
        with open(config, "w") as f:
            f.write(f"""
[drafter]
kind = "openai"
url = "http://127.0.0.1:{self.model.server_address[1]}/v1/chat/completions"
model = "test-model"
api_key = "sk-test"

[quotas]
inference_units_per_day = 2

[delivery]
jsonl_path = "{self.outbox}"
""")
        cli(self.data, "demo", "--data", self.data)
        cli(self.data, "trust", "set", "--data", self.data, "--workspace", "demo",
            "--scope", "sarah.chen@northwind.example", "--level", "3")
        self.token = create_token(self.data, "demo", "read,act")
        self.server = Server(self.data, ["--config", config])

    def tearDown(self):
        self.assertEqual(self.server.terminate(), 0)
        self.model.shutdown()
        self.tmp.cleanup()

    def delivered(self):
        if not os.path.exists(self.outbox):
            return []
        with open(self.outbox) as f:
            return [json.loads(line) for line in f if line.strip()]

    def test_model_drafts_and_each_call_spends_the_budget(self):
        port, token = self.server.port, self.token
        first = call_tool(port, token, "action.communicate",
                          {"to": "sarah.chen@northwind.example", "message": "Lunch Tuesday?",
                           "tone": "warm"})
        self.assertEqual(first["structuredContent"]["status"], "success", first)
        self.assertEqual(len(FakeModel.requests), 1)
        asked = FakeModel.requests[0]
        self.assertEqual(asked["auth"], "Bearer sk-test")
        self.assertEqual(asked["body"]["model"], "test-model")
        self.assertIn("warm", asked["body"]["messages"][0]["content"])
        self.assertIn("Sarah Chen", asked["body"]["messages"][0]["content"])
        for _ in range(50):
            if self.delivered():
                break
            time.sleep(0.1)
        self.assertEqual([m["body"] for m in self.delivered()], ["MODEL DRAFT: Lunch Tuesday?"])

        # The model failing falls back to the built-in drafter, and still spends a unit.
        FakeModel.fail = True
        second = call_tool(port, token, "action.communicate",
                           {"to": "sarah.chen@northwind.example", "message": "Fallback?",
                            "tone": "direct"})
        self.assertEqual(second["structuredContent"]["status"], "success", second)
        # Budget of 2 spent: the third call is refused before any model call.
        third = call_tool(port, token, "action.communicate",
                          {"to": "sarah.chen@northwind.example", "message": "One more"})
        body = third["structuredContent"]
        self.assertTrue(third.get("isError"))
        self.assertEqual(body["error"], "quota_exceeded")
        self.assertEqual(body["quota"], "inference_units_per_day")
        self.assertGreater(body["retry_after_s"], 0)
        self.assertLessEqual(body["retry_after_s"], 86400)
        self.assertEqual(len(FakeModel.requests), 2)


if __name__ == "__main__":
    unittest.main()
