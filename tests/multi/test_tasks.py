"""Tasks run in the background (engines/tasks/task_runner.h) by two instances on one PostgreSQL
database (Python 3 stdlib only).

The instances are the conformance fixture server (tests/conformance/fixture_server.cc,
$CONFORMANCE_SERVER_BIN, default build/cortex-conformance-server), whose `slow_compute`
works for `seconds` seconds unless cancelled. Each instance runs two tasks at a time. What a
user of such a deployment relies on:

  * a task started through A is read through B at once;
  * a tasks/cancel sent to B stops the task running on A: A's two task threads, busy with
    two 60 s tasks, are free again, so a task queued behind them completes; how long that
    takes after the cancel is printed (and, for comparison, with the cancel sent to A);
  * a stopping instance (SIGTERM) fails the tasks it ran, with a statusMessage saying why;
  * the working tasks of an instance killed outright (SIGKILL) are failed by the other
    within 30 s of its last heartbeat (plus one heartbeat period);
  * a trivial task's create -> completed latency (the runner's overhead) is printed.

    CONFORMANCE_SERVER_BIN=build/cortex-conformance-server \\
      python3 -m unittest discover -s tests/multi -t tests/multi -p test_tasks.py -v
"""

import json
import os
import signal
import socket
import statistics
import subprocess
import time
import unittest

from harness import M, MODERN, REPO, http_request, new_database, rpc_body, start_cluster, stop_cluster

FIXTURE_BIN = os.environ.get("CONFORMANCE_SERVER_BIN",
                             os.path.join(REPO, "build", "cortex-conformance-server"))
TASKS = "io.modelcontextprotocol/tasks"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Fixture:
    """One fixture server on `database`."""

    def __init__(self, name, database):
        self.name, self.database, self.proc, self.port = name, database, None, None
        self.log = os.path.join(M["log_dir"], f"{name}.log")
        self.start()

    def start(self):
        self.port = free_port()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [FIXTURE_BIN, "--listen", f"127.0.0.1:{self.port}", "--data", self.database],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited {self.proc.returncode}:\n{self.tail()}")
            try:
                if http_request(self.port, "GET", "/healthz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} never answered /healthz:\n{self.tail()}")

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        return rc

    def tail(self, n=3000):
        try:
            with open(self.log, "rb") as f:
                return f.read().decode("utf-8", "replace")[-n:]
        except OSError:
            return ""

    def rpc(self, method, params, name=None):
        """A 2026-07-28 request declaring the tasks extension; returns the result (or raises
        AssertionError with the JSON-RPC error)."""
        params = dict(params)
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "multi-tasks", "version": "1.0.0"}}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if name is not None:
            headers["Mcp-Name"] = name
        status, h, data = http_request(self.port, "POST", "/mcp", body.encode(), headers)
        doc = rpc_body(data, h.get("content-type"))
        if "error" in doc:
            raise AssertionError(f"{method} through {self.name}: HTTP {status}: {doc['error']}")
        return doc["result"]

    def start_task(self, seconds, label):
        r = self.rpc("tools/call", {"name": "slow_compute",
                                    "arguments": {"seconds": seconds, "label": label}},
                     name="slow_compute")
        assert r.get("resultType") == "task" and r.get("taskId"), r
        return r["taskId"]

    def get(self, task_id):
        return self.rpc("tasks/get", {"taskId": task_id}, name=task_id)

    def cancel(self, task_id):
        return self.rpc("tasks/cancel", {"taskId": task_id}, name=task_id)


def wait_status(inst, task_id, statuses, timeout=20, step=0.005):
    deadline = time.monotonic() + timeout
    while True:
        t = inst.get(task_id)
        if t["status"] in statuses:
            return t
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} still {t['status']} after {timeout} s: {t}")
        time.sleep(step)


@unittest.skipUnless(os.access(FIXTURE_BIN, os.X_OK), f"no fixture server at {FIXTURE_BIN}")
class TasksAcrossInstances(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_cluster("cortex-multi-tasks-")
        cls.database = new_database("tasks")
        cls.a = Fixture("A", cls.database)
        cls.b = Fixture("B", cls.database)

    @classmethod
    def tearDownClass(cls):
        for inst in (cls.a, cls.b):
            inst.stop()
        stop_cluster()

    def cancel_frees_a(self, through):
        """Fills A's two task threads with 60 s tasks, queues a quick one behind them,
        cancels both through `through`; returns the seconds from the cancels to the quick
        task's completion (A's threads were freed: the jobs stopped)."""
        a = self.a
        slow = [a.start_task(60, f"slow-{i}") for i in range(2)]
        for t in slow:
            wait_status(a, t, {"working"})
        time.sleep(0.3)  # both running, not just queued
        quick = a.start_task(0, "queued")
        time.sleep(0.3)
        self.assertEqual(a.get(quick)["status"], "working", "queued behind the two slow ones")
        # Read through B at once: the store is shared.
        self.assertEqual(self.b.get(slow[0])["status"], "working")
        t0 = time.monotonic()
        for t in slow:
            self.assertEqual(through.cancel(t).get("resultType"), "complete")
        done = wait_status(a, quick, {"completed", "failed", "cancelled"})
        latency = time.monotonic() - t0
        self.assertEqual(done["status"], "completed", done)
        self.assertIn("Computed queued", done["result"]["content"][0]["text"])
        for t in slow:
            self.assertEqual(a.get(t)["status"], "cancelled")
            self.assertEqual(self.b.get(t)["status"], "cancelled")
        return latency

    def test_1_cancel_through_the_other_instance_stops_the_task(self):
        same = [self.cancel_frees_a(self.a) for _ in range(3)]
        other = [self.cancel_frees_a(self.b) for _ in range(3)]
        ms = lambda xs: ", ".join(f"{x * 1000:.0f}" for x in xs)
        print(f"\n  tasks/cancel -> the job stopped (its thread ran the next task), ms: "
              f"through the same instance {ms(same)} (median {statistics.median(same) * 1000:.0f}); "
              f"through the other {ms(other)} (median {statistics.median(other) * 1000:.0f}; "
              f"it looks every 500 ms)", flush=True)
        self.assertLess(max(other), 5.0)

    def test_2_trivial_task_latency(self):
        samples = []
        for i in range(20):
            t0 = time.monotonic()
            t = self.a.start_task(0, f"trivial-{i}")
            wait_status(self.a, t, {"completed"}, step=0.002)
            samples.append(time.monotonic() - t0)
        print(f"\n  trivial task, tools/call -> tasks/get says completed (polled every 2 ms): "
              f"median {statistics.median(samples) * 1000:.1f} ms, "
              f"max {max(samples) * 1000:.1f} ms (n={len(samples)})", flush=True)

    def test_3_a_stopping_instance_fails_its_tasks(self):
        t = self.a.start_task(60, "at-stop")
        wait_status(self.b, t, {"working"})
        self.assertEqual(self.a.stop(), 0)
        got = self.b.get(t)
        self.assertEqual(got["status"], "failed", got)
        self.assertIn("stopped", got.get("statusMessage", ""))
        self.assertEqual(got["error"]["code"], -32603)
        self.a.start()

    def test_4_a_killed_instance_tasks_are_failed_by_the_other(self):
        t = self.a.start_task(120, "at-kill")
        wait_status(self.b, t, {"working"})
        t0 = time.monotonic()
        self.a.stop(signal.SIGKILL)
        # Dead after 30 s of silence; B looks every 5 s.
        got = wait_status(self.b, t, {"failed", "completed", "cancelled"}, timeout=50, step=0.5)
        took = time.monotonic() - t0
        self.assertEqual(got["status"], "failed", got)
        self.assertIn("stopped answering", got.get("statusMessage", ""))
        print(f"\n  SIGKILLed instance: its task failed by the other after {took:.1f} s",
              flush=True)
        self.assertGreater(took, 24)  # its last heartbeat was at most 5 s before the kill
        self.a.start()


if __name__ == "__main__":
    unittest.main()
