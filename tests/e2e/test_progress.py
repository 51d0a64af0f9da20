"""Progress and cancellation of long MCP calls (issue #31): episode.ingest and rule.learn
over HTTP (live SSE progress, cancel by closing the connection or by notifications/cancelled)
and stdio (progress lines, notifications/cancelled). Python 3 stdlib only.

    CORTEX_BIN=/path/to/cortex python3 -m unittest discover -s tests/e2e -t tests/e2e -p test_progress.py
"""

import datetime
import http.client
import json
import os
import queue
import re
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from test_http import CORTEX_BIN, Server, create_token
from test_learning import planted_world

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}

SRV = {}


def setUpModule():
    tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-progress-")
    data = tmp.name
    SRV.update(tmp=tmp, data=data,
               rw=create_token(data, "alpha", "read,act"),
               ro=create_token(data, "alpha", "read"),
               other=create_token(data, "beta", "read,act"),
               learner=create_token(data, "gamma", "read,act"))
    SRV["server"] = Server(data)
    SRV["port"] = SRV["server"].port


def tearDownModule():
    SRV["server"].terminate()
    SRV["server"].kill()
    SRV["tmp"].cleanup()


def episodes(n, tag):
    t0 = datetime.datetime(2026, 1, 5, 9, 0, tzinfo=datetime.timezone.utc)
    return [{"type": "episode", "kind": "message_sent",
             "occurred_at": (t0 + datetime.timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
             "counterparty": f"p{i % 50}@{tag}.example", "summary": f"note {i}",
             "external_id": f"{tag}-{i}"} for i in range(n)]


def call_body(name, arguments, id=1, progress=None, modern=True):
    params = {"name": name, "arguments": arguments}
    meta = dict(META) if modern else {}
    if progress is not None:
        meta["progressToken"] = progress
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


def open_call(token, name, arguments, id=1, progress=None, accept=None, session=None):
    """Sends a tools/call (2026-07-28, or in `session`, 2025-11-25); returns (conn, response)
    with the body unread."""
    conn = http.client.HTTPConnection("127.0.0.1", SRV["port"], timeout=60)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + token,
               "Accept": accept or "application/json, text/event-stream", "Mcp-Name": name}
    if session is None:
        headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"})
    else:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", "/mcp", json.dumps(call_body(name, arguments, id, progress,
                                                      modern=session is None)), headers)
    return conn, conn.getresponse()


def sse_messages(resp):
    """The JSON-RPC messages of an SSE response, as they arrive."""
    while True:
        line = resp.readline()
        if not line:
            return
        line = line.decode().rstrip("\r\n")
        if line.startswith("data: "):
            yield json.loads(line[6:])


def tool(token, name, arguments):
    conn, resp = open_call(token, name, arguments, accept="application/json")
    body = json.loads(resp.read())
    conn.close()
    return body["result"]


def count(token):
    return tool(token, "workspace.status", {})["structuredContent"]["episodes"]


CANCELLED = b"tool=episode.ingest status=cancelled"


def cancelled_so_far():
    with open(SRV["server"].log_path, "rb") as f:
        return f.read().count(CANCELLED)


def wait_cancelled(n, seconds=10):
    """Whether the server has logged `n` cancelled ingests within `seconds` (access lines are
    buffered for up to a second). Logged once the call has ended, its batch undone: a read
    served on an I/O thread may see a batch's steps until then."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cancelled_so_far() >= n:
            return True
        time.sleep(0.05)
    return False


def initialize(token):
    conn = http.client.HTTPConnection("127.0.0.1", SRV["port"], timeout=30)
    conn.request("POST", "/mcp", json.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": LEGACY, "capabilities": {},
                    "clientInfo": {"name": "e2e", "version": "1"}}}),
        {"Content-Type": "application/json", "Authorization": "Bearer " + token,
         "Accept": "application/json, text/event-stream"})
    resp = conn.getresponse()
    sid = resp.getheader("Mcp-Session-Id")
    resp.read()
    conn.close()
    return sid


def notify(token, session, message):
    conn = http.client.HTTPConnection("127.0.0.1", SRV["port"], timeout=30)
    conn.request("POST", "/mcp", json.dumps(message),
                 {"Content-Type": "application/json", "Authorization": "Bearer " + token,
                  "Accept": "application/json, text/event-stream", "Mcp-Session-Id": session})
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return resp.status


class TestIngestOverHttp(unittest.TestCase):

    def test_progress_arrives_before_the_result_and_every_line_lands(self):
        before = count(SRV["rw"])
        conn, resp = open_call(SRV["rw"], "episode.ingest", {"lines": episodes(3000, "grow")},
                               progress="tok-1")
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.getheader("Content-Type"), "text/event-stream")
        messages = list(sse_messages(resp))
        conn.close()
        progress = [m["params"] for m in messages[:-1]]
        self.assertTrue(all(m.get("method") == "notifications/progress" for m in messages[:-1]),
                        messages[:-1])
        self.assertGreaterEqual(len(progress), 3, progress)
        self.assertTrue(all(p["progressToken"] == "tok-1" and p["total"] == 3000
                            for p in progress), progress)
        values = [p["progress"] for p in progress]
        self.assertEqual(values, sorted(set(values)), "progress grows")
        self.assertEqual(values[-1], 3000)
        result = messages[-1]["result"]
        self.assertFalse(result.get("isError"), result)
        self.assertEqual(result["structuredContent"]["episodes_added"], 3000)
        self.assertEqual(result["structuredContent"]["lines"], 3000)
        self.assertEqual(count(SRV["rw"]), before + 3000)
        # The same lines again: all duplicates (external_id), nothing added.
        again = tool(SRV["rw"], "episode.ingest", {"lines": episodes(3000, "grow")})
        self.assertEqual(again["structuredContent"]["duplicates"], 3000)
        self.assertEqual(count(SRV["rw"]), before + 3000)

    def test_a_json_only_client_gets_just_the_result(self):
        conn, resp = open_call(SRV["rw"], "episode.ingest", {"lines": episodes(1200, "json")},
                               progress="tok-2", accept="application/json")
        self.assertEqual(resp.getheader("Content-Type"), "application/json")
        body = json.loads(resp.read())
        conn.close()
        self.assertEqual(body["result"]["structuredContent"]["episodes_added"], 1200)

    def test_a_bad_line_writes_nothing(self):
        before = count(SRV["rw"])
        lines = episodes(800, "bad")
        lines[4] = {"type": "episode", "kind": "message_sent", "summary": "no time"}
        result = tool(SRV["rw"], "episode.ingest", {"lines": lines})
        self.assertTrue(result["isError"], result)
        self.assertEqual(result["structuredContent"]["error"], "invalid_arguments")
        self.assertTrue(result["structuredContent"]["message"].startswith("line 5: "), result)
        self.assertEqual(count(SRV["rw"]), before)

    def test_closing_the_connection_cancels_and_nothing_stays(self):
        before, cancelled = count(SRV["rw"]), cancelled_so_far()
        conn, resp = open_call(SRV["rw"], "episode.ingest", {"lines": episodes(20000, "gone")},
                               progress="tok-3")
        first = next(sse_messages(resp))
        self.assertEqual(first["method"], "notifications/progress")
        self.assertLess(first["params"]["progress"], 20000)
        conn.sock.shutdown(2)
        conn.close()
        self.assertTrue(wait_cancelled(cancelled + 1), SRV["server"].read_log())
        self.assertEqual(count(SRV["rw"]), before)

    def test_notifications_cancelled_stops_a_session_call_unanswered(self):
        before, cancelled = count(SRV["rw"]), cancelled_so_far()
        sid = initialize(SRV["rw"])
        self.assertEqual(notify(SRV["rw"], sid, {"jsonrpc": "2.0",
                                                 "method": "notifications/initialized"}), 202)
        conn, resp = open_call(SRV["rw"], "episode.ingest", {"lines": episodes(20000, "stop")},
                               id=42, progress=7, session=sid)
        stream = sse_messages(resp)
        first = next(stream)
        self.assertEqual(first["params"]["progressToken"], 7)
        self.assertEqual(notify(SRV["rw"], sid, {
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 42, "reason": "test"}}), 202)
        rest = list(stream)  # the stream ends
        conn.close()
        self.assertFalse([m for m in rest if "result" in m or "error" in m], rest)
        self.assertTrue(wait_cancelled(cancelled + 1), SRV["server"].read_log())
        self.assertEqual(count(SRV["rw"]), before)

    def test_a_read_token_cannot_call_them(self):
        for name, args in (("episode.ingest", {"lines": episodes(2, "ro")}), ("rule.learn", {})):
            result = tool(SRV["ro"], name, args)
            self.assertTrue(result["isError"], result)
            self.assertEqual(result["structuredContent"]["error"], "unauthorized")

    def test_another_workspace_sees_nothing(self):
        tool(SRV["rw"], "episode.ingest", {"lines": episodes(600, "mine")})
        self.assertEqual(count(SRV["other"]), 0)
        rules = tool(SRV["other"], "rule.learn", {})["structuredContent"]
        self.assertEqual((rules["proposed"], rules["updated"], rules["retired"]), (0, 0, 0))

    def test_a_large_ingest_gets_the_ingest_body_limit(self):
        # ~1.9 MB: over the 1 MiB of other MCP requests, within POST /v1/episodes's 32 MiB.
        lines = episodes(10000, "big")
        for l in lines:
            l["body"] = "x" * 100
        self.assertGreater(len(json.dumps(lines)), 1 << 20)
        result = tool(SRV["rw"], "episode.ingest", {"lines": lines})
        self.assertEqual(result["structuredContent"]["episodes_added"], 10000)
        # Without the Mcp-Name header (a session-era client): the 1 MiB limit, refused from
        # its Content-Length before the body is read; with it, 32 MiB.
        def head_only(length, name=None):
            s = socket.create_connection(("127.0.0.1", SRV["port"]), timeout=30)
            head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                    f"\r\nAuthorization: Bearer {SRV['rw']}\r\nContent-Length: {length}\r\n")
            if name:
                head += f"Mcp-Name: {name}\r\n"
            s.sendall((head + "\r\n").encode())
            s.settimeout(1)
            try:
                status = s.recv(4096).split(b" ")[1]
            except socket.timeout:
                status = b"waiting for the body"
            s.close()
            return status
        self.assertEqual(head_only(2 << 20), b"413")
        self.assertEqual(head_only(2 << 20, "workspace.status"), b"413")
        self.assertEqual(head_only(2 << 20, "episode.ingest"), b"waiting for the body")
        self.assertEqual(head_only((32 << 20) + 1, "episode.ingest"), b"413")


class TestLearnOverHttp(unittest.TestCase):

    def test_learn_reports_its_phases_and_proposes_what_cortex_learn_would(self):
        now = datetime.datetime.now(datetime.timezone.utc)
        world, _ = planted_world(now)
        lines = [json.loads(l) for l in world.splitlines()]
        ingested = tool(SRV["learner"], "episode.ingest", {"lines": lines})
        self.assertFalse(ingested.get("isError"), ingested)
        conn, resp = open_call(SRV["learner"], "rule.learn", {}, progress="learn")
        messages = list(sse_messages(resp))
        conn.close()
        progress = [m["params"] for m in messages[:-1]]
        self.assertEqual([(p["progress"], p["total"]) for p in progress], [(1, 3), (2, 3), (3, 3)])
        self.assertEqual([p["message"] for p in progress],
                         ["reading the history", "writing the rules", "done"])
        result = messages[-1]["result"]["structuredContent"]
        # test_learning: `cortex learn` proposes these two on the planted world.
        self.assertEqual((result["proposed"], result["updated"], result["retired"]), (2, 0, 0))
        rules = tool(SRV["learner"], "rule.list", {"status": "proposed"})["structuredContent"]
        self.assertEqual({r["name"] for r in rules["rules"]},
                         {"learned-fast-jordan-kim-tue", "learned-silent-weekly-digest"})
        again = tool(SRV["learner"], "rule.learn", {})["structuredContent"]
        self.assertEqual((again["proposed"], again["updated"], again["retired"]), (0, 0, 0))


TASKS_META = {"io.modelcontextprotocol/protocolVersion": MODERN,
              "io.modelcontextprotocol/clientCapabilities":
                  {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


def rpc_tasks(token, method, params, name):
    """A 2026-07-28 request from a client that takes tasks; returns the JSON-RPC body."""
    conn = http.client.HTTPConnection("127.0.0.1", SRV["port"], timeout=60)
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                                             "params": {**params, "_meta": TASKS_META}}),
                 {"Content-Type": "application/json", "Accept": "application/json",
                  "Authorization": "Bearer " + token, "MCP-Protocol-Version": MODERN,
                  "Mcp-Method": method, "Mcp-Name": name})
    body = json.loads(conn.getresponse().read())
    conn.close()
    return body


def wait_task(token, task_id, seconds=60):
    """Polls tasks/get until the task is no longer working; returns it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        task = rpc_tasks(token, "tasks/get", {"taskId": task_id}, task_id)["result"]
        if task["status"] != "working":
            return task
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} still working after {seconds} s")


class TestAsTasks(unittest.TestCase):
    """To a client that declares the tasks extension, episode.ingest and rule.learn answer at
    once with a task that runs in the background (taskSupport optional)."""

    def test_tools_list_offers_both_as_optional_tasks(self):
        listed = rpc_tasks(SRV["rw"], "tools/list", {}, "tools/list")["result"]["tools"]
        support = {t["name"]: t.get("execution", {}).get("taskSupport") for t in listed}
        self.assertEqual(support["episode.ingest"], "optional")
        self.assertEqual(support["rule.learn"], "optional")
        self.assertIsNone(support["action.communicate"])

    def test_an_ingest_task_runs_in_the_background_and_completes(self):
        before = count(SRV["rw"])
        created = rpc_tasks(SRV["rw"], "tools/call",
                            {"name": "episode.ingest", "arguments": {"lines": episodes(3000, "task")}},
                            "episode.ingest")["result"]
        self.assertEqual(created["resultType"], "task", created)
        self.assertTrue(created["taskId"].startswith("task_"), created)
        task = wait_task(SRV["rw"], created["taskId"])
        self.assertEqual(task["status"], "completed", task)
        done = task["result"]["structuredContent"]
        self.assertEqual((done["lines"], done["episodes_added"]), (3000, 3000), done)
        self.assertEqual(count(SRV["rw"]), before + 3000)
        # Another workspace's token does not find the task.
        other = rpc_tasks(SRV["other"], "tasks/get", {"taskId": created["taskId"]},
                          created["taskId"])
        self.assertEqual(other["error"]["code"], -32602, other)

    def test_a_working_ingest_task_says_how_far_it_has_come(self):
        """tasks/get of a long ingest shows its progress as the statusMessage (the runner
        writes the latest every half second), growing, until the task completes."""
        total = 20000
        created = rpc_tasks(SRV["rw"], "tools/call",
                            {"name": "episode.ingest",
                             "arguments": {"lines": episodes(total, "taskfar")}},
                            "episode.ingest")["result"]
        seen = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            task = rpc_tasks(SRV["rw"], "tasks/get", {"taskId": created["taskId"]},
                             created["taskId"])["result"]
            if task["status"] != "working":
                break
            message = task.get("statusMessage", "")
            if message and (not seen or seen[-1] != message):
                seen.append(message)
            time.sleep(0.05)
        self.assertEqual(task["status"], "completed", task)
        self.assertTrue(seen, "no progress seen while the task worked")
        done = []
        for message in seen:
            m = re.fullmatch(r"(\d+) of (\d+) lines", message)
            self.assertIsNotNone(m, seen)
            self.assertEqual(int(m.group(2)), total)
            done.append(int(m.group(1)))
        self.assertEqual(done, sorted(done), seen)
        self.assertLessEqual(done[-1], total)

    def test_a_cancelled_ingest_task_leaves_nothing(self):
        before = count(SRV["rw"])
        created = rpc_tasks(SRV["rw"], "tools/call",
                            {"name": "episode.ingest",
                             "arguments": {"lines": episodes(20000, "taskgone")}},
                            "episode.ingest")["result"]
        cancelled = rpc_tasks(SRV["rw"], "tasks/cancel", {"taskId": created["taskId"]},
                              created["taskId"])
        self.assertNotIn("error", cancelled)
        task = wait_task(SRV["rw"], created["taskId"])
        self.assertEqual(task["status"], "cancelled", task)
        # The runner has stopped the job and its steps are undone once the workspace is free.
        deadline = time.monotonic() + 30
        while count(SRV["rw"]) != before and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(count(SRV["rw"]), before)

    def test_a_bad_line_fails_the_call_before_any_task(self):
        lines = episodes(3, "taskbad")
        lines[1]["kind"] = "telepathy"
        body = rpc_tasks(SRV["rw"], "tools/call",
                         {"name": "episode.ingest", "arguments": {"lines": lines}},
                         "episode.ingest")
        result = body.get("result", {})
        if result.get("resultType") == "task":
            task = wait_task(SRV["rw"], result["taskId"])
            self.assertEqual(task["status"], "completed", task)
            result = task["result"]
        self.assertTrue(result.get("isError"), body)
        self.assertIn("line 2", json.dumps(result))

    def test_a_learning_task_completes_with_the_pass_figures(self):
        created = rpc_tasks(SRV["learner"], "tools/call", {"name": "rule.learn", "arguments": {}},
                            "rule.learn")["result"]
        self.assertEqual(created["resultType"], "task", created)
        task = wait_task(SRV["learner"], created["taskId"])
        self.assertEqual(task["status"], "completed", task)
        self.assertIn("agent_version", task["result"]["structuredContent"])

    def test_a_read_token_gets_no_task(self):
        body = rpc_tasks(SRV["ro"], "tools/call",
                         {"name": "episode.ingest", "arguments": {"lines": episodes(2, "ro")}},
                         "episode.ingest")
        self.assertTrue(body["result"].get("isError"), body)
        self.assertNotEqual(body["result"].get("resultType"), "task")


class Stdio:
    """A `cortex mcp --stdio` child whose stdout lines are read by a thread."""

    def __init__(self, token):
        env = {k: v for k, v in os.environ.items() if k != "CORTEX_TOKEN"}
        env["CORTEX_TOKEN"] = token
        self.proc = subprocess.Popen([CORTEX_BIN, "mcp", "--stdio", "--data", SRV["data"]],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def next(self, timeout=30):
        return self.lines.get(timeout=timeout)

    def close(self):
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=30)
        rest = []
        while (m := self.lines.get(timeout=10)) is not None:
            rest.append(m)
        return rc, rest


class TestStdio(unittest.TestCase):

    def test_progress_lines_then_the_result(self):
        before = count(SRV["rw"])
        s = Stdio(SRV["rw"])
        s.send(call_body("episode.ingest", {"lines": episodes(2500, "stdio")}, id=3,
                         progress="s1"))
        messages = []
        while not messages or "result" not in messages[-1]:
            messages.append(s.next())
        rc, rest = s.close()
        self.assertEqual((rc, rest), (0, []))
        values = [m["params"]["progress"] for m in messages[:-1]]
        self.assertGreaterEqual(len(values), 3)
        self.assertEqual(values, sorted(set(values)))
        self.assertEqual(messages[-1]["id"], 3)
        self.assertEqual(messages[-1]["result"]["structuredContent"]["episodes_added"], 2500)
        self.assertEqual(count(SRV["rw"]), before + 2500)

    def test_one_session_runs_long_calls_one_after_another(self):
        before = count(SRV["rw"])
        s = Stdio(SRV["rw"])
        for k in range(3):
            s.send(call_body("episode.ingest", {"lines": episodes(600, f"seq{k}")}, id=k))
            while "result" not in (m := s.next()):
                self.assertEqual(m["method"], "notifications/progress")
            self.assertEqual((m["id"], m["result"]["structuredContent"]["episodes_added"]),
                             (k, 600))
        s.send(call_body("rule.learn", {}, id="learn"))
        self.assertEqual(s.next()["id"], "learn")
        rc, rest = s.close()
        self.assertEqual((rc, rest), (0, []))
        self.assertEqual(count(SRV["rw"]), before + 1800)

    def test_notifications_cancelled_stops_the_call_and_the_loop_goes_on(self):
        before = count(SRV["rw"])
        s = Stdio(SRV["rw"])
        s.send(call_body("episode.ingest", {"lines": episodes(20000, "stdiocancel")}, id="big",
                         progress="s2"))
        first = s.next()
        self.assertEqual(first["method"], "notifications/progress")
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": "big"}})
        s.send({"jsonrpc": "2.0", "id": "after", "method": "tools/call",
                "params": {"name": "workspace.status", "arguments": {}, "_meta": META}})
        rc, rest = s.close()
        self.assertEqual(rc, 0)
        answered = [m.get("id") for m in rest if "id" in m]
        self.assertEqual(answered, ["after"], rest)
        self.assertEqual(count(SRV["rw"]), before)


if __name__ == "__main__":
    unittest.main()
