"""The model drafter against a local server that speaks the chat-completions shape, and the
daily inference budget it spends. Python 3 stdlib only."""

import base64
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
    delay = 0.0  # seconds before answering

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeModel.requests.append({"auth": self.headers.get("Authorization"), "body": body})
        time.sleep(FakeModel.delay)
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


def call_tool(port, token, name, arguments, name_header=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments,
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}
    conn.request("POST", "/mcp", json.dumps(body), {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Authorization": "Bearer " + token, "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call", "Mcp-Name": name_header or name})
    resp = conn.getresponse()
    result = json.loads(resp.read())["result"]
    conn.close()
    return result


class WithModel:
    """A fake model, a `demo` workspace where Sarah Chen is trusted at level 3, a budget of
    two inference units a day, and a server drafting with the model."""
    server_args = []

    def setUp(self):
        FakeModel.requests = []
        FakeModel.fail = False
        FakeModel.delay = 0.0
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
        self.token = create_token(self.data, "demo", "read,act")  # the agent's
        self.person = create_token(self.data, "demo", "read,approve")  # approves, rejects
        self.server = Server(self.data, ["--config", config, *self.server_args])

    def tearDown(self):
        code = self.server.terminate()
        self.server.kill()  # closes its log
        self.model.shutdown()
        self.model.server_close()
        self.tmp.cleanup()
        self.assertEqual(code, 0)

    def delivered(self):
        if not os.path.exists(self.outbox):
            return []
        with open(self.outbox) as f:
            return [json.loads(line) for line in f if line.strip()]


class TestModelDrafter(WithModel, unittest.TestCase):
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


class TestAModelCallHoldsUpNoOne(WithModel, unittest.TestCase):
    """With a single I/O thread and a model that takes seconds to answer: the
    action.communicate calls waiting for the model (their tool named plainly or
    base64-encoded in Mcp-Name) hold up no other request, writes included. Writes that
    cannot call the model run on the I/O thread (as fibers, waiting for their commit without
    blocking it); only a call that may wait on the model goes to the write pool, whose
    threads are named cortex-write once they have run something."""
    server_args = ["--threads", "1"]
    # On PostgreSQL every write goes to the pool (nothing there can suspend).
    fibers = not os.environ.get("CORTEX_PG_DIR")

    def pool_threads(self):
        tasks = f"/proc/{self.server.proc.pid}/task"
        names = []
        for t in os.listdir(tasks):
            try:
                with open(os.path.join(tasks, t, "comm")) as f:
                    names.append(f.read().strip())
            except OSError:
                pass  # the thread ended
        return names.count("cortex-write")

    def ingest(self, external_id):
        line = {"type": "episode", "kind": "message_received",
                "occurred_at": "2026-11-30T09:00:00Z", "counterparty": "pat@example.com",
                "subject": "Hello", "summary": "Pat says hello.", "external_id": external_id}
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        conn.request("POST", "/v1/episodes", json.dumps(line) + "\n", {
            "Content-Type": "application/x-ndjson", "Authorization": "Bearer " + self.token})
        resp = conn.getresponse()
        body = json.loads(resp.read())
        conn.close()
        self.assertEqual(resp.status, 200, body)
        self.assertEqual(body["episodes_added"], 1, body)

    def test_only_a_call_that_may_wait_on_the_model_leaves_the_io_thread(self):
        port, token = self.server.port, self.token
        self.ingest("hello-1")
        reject = call_tool(port, self.person, "action.reject",
                           {"decision_id": "dec_01M8PS06M053VVFGPPNAWWM0AA", "reason": "no"})
        self.assertEqual(reject["structuredContent"]["error"], "not_found", reject)
        if self.fibers:
            self.assertEqual(self.pool_threads(), 0, "a write that calls no model used the pool")

        before = call_tool(port, token, "workspace.status", {})["structuredContent"]["episodes"]
        FakeModel.delay = 4.0
        # Two calls waiting on the model: one names its tool plainly, one base64-encoded
        # (2026-07-28 §Value Encoding), which must not slip past as an unknown name.
        answers = {}

        def send(key, name_header):
            answers[key] = call_tool(port, token, "action.communicate",
                                     {"to": "sarah.chen@northwind.example", "message": key},
                                     name_header=name_header)

        encoded = "=?base64?" + base64.b64encode(b"action.communicate").decode() + "?="
        senders = [threading.Thread(target=send, args=("plain", None)),
                   threading.Thread(target=send, args=("encoded", encoded))]
        for t in senders:
            t.start()
        try:
            for _ in range(200):
                if len(FakeModel.requests) == 2:
                    break
                time.sleep(0.02)
            self.assertEqual(len(FakeModel.requests), 2, "the model was not asked twice")
            started = time.monotonic()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/healthz")
            self.assertEqual(conn.getresponse().status, 200)
            conn.close()
            self.ingest("hello-2")  # a write, on the one I/O thread
            status = call_tool(port, token, "workspace.status", {})["structuredContent"]
            self.assertEqual(status["episodes"], before + 1, status)
            self.assertLess(time.monotonic() - started, 2.5)
            self.assertTrue(all(t.is_alive() for t in senders),
                            "the model answered before the other requests")
        finally:
            for t in senders:
                t.join(30)
        for key in ("plain", "encoded"):
            self.assertIn(key, answers, "the call raised")
            self.assertEqual(answers[key]["structuredContent"]["status"], "success", answers)
        if self.fibers:
            self.assertEqual(self.pool_threads(), 2)

if __name__ == "__main__":
    unittest.main()
