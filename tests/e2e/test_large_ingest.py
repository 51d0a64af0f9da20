"""A large ingest batch, end to end (Python 3 stdlib only): it lands in steps on SQLite, so
another workspace's requests go on while it does; the workspace's own requests wait and then
see all of it; a server killed half-way leaves none of it after the restart; and a
`cortex ingest` killed half-way is undone by the server running on the same data.

    CORTEX_BIN=/path/to/cortex python3 -m unittest discover -s tests/e2e -t tests/e2e
"""

import http.client
import json
import os
import sqlite3
import subprocess
import tempfile
import threading
import time
import unittest

import test_http as th
from test_http import Server, create_token
from test_limits import call_tool, ingest, status_of

ON_POSTGRES = bool(os.environ.get("CORTEX_PG_DIR"))
LINES = 20000  # some forty steps here; minutes under the sanitizers, never a timeout


def batch(n, tag):
    return [{"type": "episode", "kind": "message_received",
             "occurred_at": "2026-11-30T09:00:00Z", "counterparty": f"p{i % 300}@{tag}.example",
             "summary": f"{tag} {i}", "external_id": f"{tag}-{i}"} for i in range(n)]


class Ingesting(threading.Thread):
    """POST /v1/episodes of `lines` in a thread of its own; `response` once answered."""

    def __init__(self, port, token, lines):
        super().__init__(daemon=True)
        self.port, self.token, self.lines = port, token, lines
        self.response = None
        self.error = None

    def run(self):
        body = "".join(json.dumps(l) + "\n" for l in self.lines).encode()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            self.response = th.request(
                "POST", "/v1/episodes", body=body, token=self.token,
                headers={"Content-Type": "application/x-ndjson"}, conn=conn)
        except OSError as e:  # the server was killed under it
            self.error = e
        finally:
            conn.close()


class TestLargeIngest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-large-ingest-")
        self.data = self.tmp.name
        self.bulk = create_token(self.data, "bulk", "read,act")
        self.other = create_token(self.data, "other", "read,act")
        self.server = Server(self.data)

    def tearDown(self):
        self.server.kill()
        self.tmp.cleanup()

    def test_other_workspaces_go_on_and_the_workspace_sees_the_whole_batch(self):
        port = self.server.port
        before = status_of(self, port, self.bulk)["episodes"]
        job = Ingesting(port, self.bulk, batch(LINES, "big"))
        job.start()
        # Once the batch is being written, another workspace drafts, reads and ingests.
        deadline = time.monotonic() + 300
        while not self._steps_begun() and job.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        done_while_landing = 0
        for i in range(5):
            r = call_tool(port, self.other, "action.communicate",
                          {"to": f"c{i}@elsewhere.example", "message": "Lunch on Friday?"})
            result = th.tool_result(self, r)
            self.assertFalse(result.get("isError", False), result)
            self.assertEqual(ingest(port, self.other, batch(3, f"small{i}")).status, 200)
            done_while_landing += job.is_alive()
        # The workspace itself: a read goes on and sees the batch so far (all of it or none
        # on PostgreSQL); a write waits for the whole batch, and builds on all of it.
        seen = status_of(self, port, self.bulk)["episodes"]
        self.assertGreaterEqual(seen, before)
        self.assertLessEqual(seen, before + LINES)
        r = call_tool(port, self.bulk, "action.communicate",
                      {"to": "p1@big.example", "message": "Got them all, thanks."})
        result = th.tool_result(self, r)
        self.assertFalse(result.get("isError", False), result)
        if not ON_POSTGRES:
            self.assertFalse(job.is_alive() and self._steps_begun(),
                             "a write in the workspace went in between the batch's steps")
        job.join(600)
        self.assertEqual(job.response.status, 200, job.response.body)
        self.assertEqual(job.response.json()["episodes_added"], LINES)
        self.assertEqual(status_of(self, port, self.bulk)["episodes"], before + LINES)
        if not ON_POSTGRES:  # PostgreSQL's writers never waited for each other anyway
            self.assertGreater(done_while_landing, 0,
                               "no other workspace's request completed while the batch landed")
        self.assertEqual(status_of(self, port, self.other)["episodes"], 15)

    @unittest.skipIf(ON_POSTGRES, "PostgreSQL writes a batch in one transaction")
    def test_a_server_killed_half_way_leaves_none_of_the_batch(self):
        port = self.server.port
        before = status_of(self, port, self.bulk)
        job = Ingesting(port, self.bulk, batch(LINES, "cut"))
        job.start()
        deadline = time.monotonic() + 300
        while not self._steps_begun(min_steps=3):
            self.assertTrue(job.is_alive(), "the batch ended before it could be cut short")
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        self.server.kill()  # kill -9, some steps committed
        job.join(60)
        self.assertIsNone(job.response, "the batch was answered before the kill")

        self.server = Server(self.data)
        self.assertIn("undid an ingest batch", self.server.read_log())
        after = status_of(self, self.server.port, self.bulk)
        self.assertEqual(after["episodes"], before["episodes"])
        self.assertEqual(after["entities"], before["entities"])
        # The client retries: the whole batch lands, once.
        retry = ingest(self.server.port, self.bulk, batch(LINES, "cut"))
        self.assertEqual(retry.status, 200, retry.body)
        self.assertEqual(retry.json()["episodes_added"], LINES)

    @unittest.skipIf(ON_POSTGRES, "PostgreSQL writes a batch in one transaction")
    def test_a_cli_ingest_killed_half_way_is_undone_by_the_running_server(self):
        """`cortex ingest` on the data a server is serving, killed -9 after some steps: the
        server undoes the batch within seconds, with no restart."""
        port = self.server.port
        before = status_of(self, port, self.bulk)
        path = os.path.join(self.data, "cut.jsonl")
        with open(path, "w") as f:
            f.writelines(json.dumps(l) + "\n" for l in batch(LINES, "cli"))
        cli = subprocess.Popen([th.CORTEX_BIN, "ingest", "--data", self.data,
                                "--workspace", "bulk", path],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 300
            while not self._steps_begun(min_steps=3):
                self.assertIsNone(cli.poll(), "the batch ended before it could be cut short")
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.01)
        finally:
            cli.kill()
            cli.wait()
        # The server logs the undo once it has committed: wait for both.
        deadline = time.monotonic() + 30
        while ((self._steps_begun() or "undid an ingest batch" not in self.server.read_log())
               and time.monotonic() < deadline):
            time.sleep(0.2)
        self.assertFalse(self._steps_begun(), "the stranded batch is still in the store")
        self.assertIn("undid an ingest batch", self.server.read_log())
        after = status_of(self, port, self.bulk)
        self.assertEqual(after["episodes"], before["episodes"])
        self.assertEqual(after["entities"], before["entities"])

    def _steps_begun(self, min_steps=1):
        """Whether the batch has committed `min_steps` steps (read from the database)."""
        if ON_POSTGRES:
            return True
        try:
            db = sqlite3.connect(f"file:{self.data}/cortex.db?mode=ro", uri=True, timeout=1)
            try:
                return db.execute("SELECT count(*) FROM staged_undo").fetchone()[0] >= min_steps
            finally:
                db.close()
        except sqlite3.Error:
            return False


if __name__ == "__main__":
    unittest.main()
