"""A person is told, not only asked: interrupts and drafts waiting for approval are pushed to
the [push] webhook as signed events, and the daily digest goes out once a day through the
delivery connector, also across restarts. Receivers are HTTP servers in this process; the
server's clock is frozen (CORTEX_FAKE_NOW) so the digest time is known. Python 3 stdlib
only."""

import hashlib
import hmac
import http.client
import http.server
import json
import os
import tempfile
import threading
import time
import unittest

from test_drafter import call_tool
from test_http import Server, cli, create_token

SECRET_PUSH = "push-secret-for-tests"
SECRET_DELIVERY = "delivery-secret-for-tests"


class Receiver(http.server.BaseHTTPRequestHandler):
    posts = []  # {"path", "event", "key", "sig_ok", "body"}
    lock = threading.Lock()

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        secret = SECRET_PUSH if self.path == "/push" else SECRET_DELIVERY
        want = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
        with Receiver.lock:
            Receiver.posts.append({
                "path": self.path, "event": self.headers.get("X-Cortex-Event"),
                "key": self.headers.get("Idempotency-Key"),
                "sig_ok": hmac.compare_digest(want, self.headers.get("X-Cortex-Signature", "")),
                "body": json.loads(raw)})
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def posts(path, event=None):
    with Receiver.lock:
        return [p for p in Receiver.posts
                if p["path"] == path and (event is None or p["event"] == event)]


def wait_for(what, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.05)
    return what()


def ingest_http(port, token, lines):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/v1/episodes", "\n".join(json.dumps(l) for l in lines),
                 {"Authorization": "Bearer " + token})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    if resp.status != 200:
        raise AssertionError(f"ingest answered {resp.status}: {body!r}")


WORLD = [
    {"type": "entity", "name": "Sarah Chen", "identifiers": ["sarah@n.example"], "tags": ["vip"]},
    {"type": "entity", "name": "Marcus Webb", "identifiers": ["marcus@h.example"]},
]
RULES = """
settings:
  utc_offset: "+00:00"
  digest_time: "17:00"
  digest_to: "me@alpha.example"
rules:
  - name: sarah-interrupts
    summary: Interrupt for Sarah; she only writes when it matters.
    when: { counterparty: sarah@n.example }
    then: { triage: interrupt_now }
"""


class TestTellThePerson(unittest.TestCase):
    def setUp(self):
        Receiver.posts = []
        self.receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=self.receiver.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{self.receiver.server_address[1]}"
        self.tmp = tempfile.TemporaryDirectory()
        self.data = os.path.join(self.tmp.name, "data")
        self.config = os.path.join(self.tmp.name, "cortex.toml")
        with open(self.config, "w") as f:
            f.write(f"""
[delivery]
connector = "webhook"
webhook_url = "{url}/deliver"
webhook_secret = "{SECRET_DELIVERY}"

[push]
webhook_url = "{url}/push"
webhook_secret = "{SECRET_PUSH}"
""")
        world = os.path.join(self.tmp.name, "world.jsonl")
        with open(world, "w") as f:
            f.write("\n".join(json.dumps(l) for l in WORLD) + "\n")
        cli(self.data, "ingest", "--data", self.data, "--workspace", "alpha", world)
        rules = os.path.join(self.tmp.name, "rules.yaml")
        with open(rules, "w") as f:
            f.write(RULES)
        cli(self.data, "rules", "import", "--data", self.data, "--workspace", "alpha", rules)
        self.agent = create_token(self.data, "alpha", "read,act")
        self.server = None

    def tearDown(self):
        if self.server:
            self.server.terminate()
            self.server.kill()
        self.receiver.shutdown()
        self.receiver.server_close()
        self.tmp.cleanup()

    def serve(self, now):
        if self.server:
            self.assertEqual(self.server.terminate(), 0)
            self.server.kill()
        self.server = Server(self.data, ["--config", self.config],
                             env={"CORTEX_FAKE_NOW": now})
        return self.server.port

    def digests(self, status=None):
        args = {"decision_class": "digest"}
        if status:
            args["status"] = status
        r = call_tool(self.server.port, self.agent, "decision.list", args)
        return r["structuredContent"]["decisions"]

    def test_pushes_are_signed_fresh_and_once(self):
        port = self.serve("2026-06-10T16:00:00Z")
        ingest_http(port, self.agent, [
            {"type": "episode", "kind": "message_received", "occurred_at": "2026-06-10T15:58:00Z",
             "counterparty": "sarah@n.example", "subject": "Board deck: numbers changed",
             "summary": "Sarah: the board deck numbers changed", "external_id": "s1"},
            # A week old: triaged interrupt_now too, but no one's phone rings for it.
            {"type": "episode", "kind": "message_received", "occurred_at": "2026-06-03T15:58:00Z",
             "counterparty": "sarah@n.example", "subject": "Last week's deck",
             "summary": "Sarah: last week's deck", "external_id": "s0"}])
        pushed = wait_for(lambda: posts("/push", "notification.created"))
        self.assertEqual(len(pushed), 1, Receiver.posts)
        p = pushed[0]
        self.assertTrue(p["sig_ok"], p)
        self.assertEqual(p["key"], p["body"]["id"])
        self.assertEqual(p["body"]["type"], "notification.created")
        self.assertEqual(p["body"]["data"]["counterparty"]["name"], "Sarah Chen")
        self.assertIn("Board deck: numbers changed", p["body"]["data"]["summary"])
        self.assertEqual(p["body"]["data"]["why"]["rule_summary"],
                         "Interrupt for Sarah; she only writes when it matters.")

        draft = call_tool(port, self.agent, "action.communicate",
                          {"to": "marcus@h.example", "message": "Can we move the review?"})
        self.assertEqual(draft["structuredContent"]["status"], "pending_approval", draft)
        asked = wait_for(lambda: posts("/push", "approval.requested"))
        self.assertEqual(len(asked), 1, Receiver.posts)
        a = asked[0]
        self.assertTrue(a["sig_ok"], a)
        self.assertEqual(a["body"]["data"]["decision_id"], draft["structuredContent"]["decision_id"])
        self.assertEqual(a["body"]["data"]["draft"], draft["structuredContent"]["draft"])
        self.assertEqual(a["body"]["data"]["recipient"], "marcus@h.example")
        self.assertEqual(len(posts("/push", "notification.created")), 1)  # the old one: never
        self.assertEqual(posts("/deliver"), [])  # a pending draft is not sent

    def test_the_digest_goes_out_once_a_day_with_why_and_waiting_drafts(self):
        port = self.serve("2026-06-10T16:00:00Z")
        call_tool(port, self.agent, "action.communicate",
                  {"to": "marcus@h.example", "message": "Can we move the review?"})
        ingest_http(port, self.agent, [
            {"type": "episode", "kind": "message_received", "occurred_at": "2026-06-10T10:00:00Z",
             "counterparty": "dana@new.example", "subject": "Partnership idea",
             "summary": "Dana: a partnership idea", "external_id": "d1"}])
        self.assertEqual(self.digests(), [])  # 16:00: not yet

        self.serve("2026-06-10T17:00:30Z")  # a restart just after the digest time
        sent = wait_for(lambda: posts("/deliver", "digest"))
        self.assertEqual(len(sent), 1, Receiver.posts)
        d = sent[0]
        self.assertTrue(d["sig_ok"], d)
        body = d["body"]
        self.assertEqual(body["type"], "digest")
        self.assertEqual(body["to"], "me@alpha.example")
        self.assertEqual(d["key"], body["digest_id"])
        text = body["body"]
        self.assertTrue(text.startswith(
            "Your Cortex digest for 2026-06-10: 1 message, 1 draft waits for your approval"), text)
        self.assertIn("dana@new.example (email): Partnership idea", text)
        self.assertIn("Why: ", text)
        self.assertIn("To Marcus Webb (marcus@h.example)", text)
        delivered = wait_for(lambda: self.digests("delivered"))
        self.assertEqual([x["decision_id"] for x in delivered], [body["digest_id"]])
        inspected = call_tool(self.server.port, self.agent, "decision.inspect",
                              {"decision_id": body["digest_id"]})["structuredContent"]
        self.assertEqual(inspected["status"], "delivered")
        self.assertEqual(inspected["digest"]["items"][0]["subject"], "Partnership idea")

        # Restarted again the same evening: the day's digest is not sent twice.
        self.serve("2026-06-10T17:05:00Z")
        time.sleep(1.0)  # the first background tick composes due digests at once
        self.assertEqual(len(posts("/deliver", "digest")), 1, Receiver.posts)
        self.assertEqual(len(self.digests()), 1)


if __name__ == "__main__":
    unittest.main()
