"""The first ten minutes (issue #32): the demo placed in the present, what was held for a
break in one call, and `scripts/run` run twice. Python 3 stdlib only.

    CORTEX_BIN=/path/to/cortex python3 -m unittest test_first_minutes -v
"""

import json
import os
import re
import signal
import socket
import stat
import subprocess
import tempfile
import time
import unittest

from test_drafter import call_tool
from test_http import CORTEX_BIN, Server, cli, create_token

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A Friday, 15 weeks after the demo files' week (Mon 23 - Fri 27 Nov 2026), during that
# day's 09:00-11:00 "deep work" block.
FRIDAY = "2027-03-12T10:30:00Z"


def demo(data, now, *args):
    proc = subprocess.run([CORTEX_BIN, "demo", "--data", data, *args], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "CORTEX_FAKE_NOW": now})
    if proc.returncode != 0:
        raise RuntimeError(f"cortex demo failed: {proc.stderr}")
    return proc.stdout


def is_test_build():
    """A test build obeys CORTEX_FAKE_NOW (scripts/test builds one)."""
    with tempfile.TemporaryDirectory() as d:
        proc = subprocess.run([CORTEX_BIN, "token", "create", "--data", d, "--workspace", "w"],
                              capture_output=True, text=True, timeout=30,
                              env={**os.environ, "CORTEX_FAKE_NOW": FRIDAY})
        return "ignoring CORTEX_FAKE_NOW" not in proc.stderr


class TestDemoLivesInThePresent(unittest.TestCase):
    """`cortex demo` moves its files' dates by whole weeks, so that the demo week's last day
    is the latest day on or before today with its weekday."""

    @classmethod
    def setUpClass(cls):
        if not is_test_build():
            raise unittest.SkipTest("needs a test build (CORTEX_FAKE_NOW)")
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-demo-")
        cls.data = os.path.join(cls.tmp.name, "data")
        cls.placed = demo(cls.data, FRIDAY)
        cls.token = create_token(cls.data, "demo", "read")
        cls.server = Server(cls.data, env={"CORTEX_FAKE_NOW": FRIDAY})

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.kill()
        cls.tmp.cleanup()

    def call(self, name, arguments):
        result = call_tool(self.server.port, self.token, name, arguments)
        self.assertFalse(result.get("isError"), result)
        return result["structuredContent"]

    def test_the_week_ends_today(self):
        self.assertIn("placed +105 days from its files' dates (its history starts 2027-02-15)",
                      self.placed)
        # Sarah's email of the demo's Tuesday 10:15, during deep work: now Tuesday 9 March.
        held = self.call("decision.list", {"triage_class": "surface_at_transition",
                                           "counterparty": "sarah.chen@northwind.example"})
        ids = {d["notification_id"] for d in held["decisions"]}
        self.assertTrue(ids, held)
        tuesday = self.call("notification.list", {"as_of": "2027-03-09T10:20:00Z"})
        self.assertEqual(tuesday["next_transition"]["at"], "2027-03-09T11:00:00Z", tuesday)
        waiting = {n["notification_id"] for n in tuesday["next_transition"]["notifications"]}
        self.assertTrue(waiting & ids, (waiting, ids))

    def test_notification_list_without_as_of_has_due_transition_and_digest(self):
        now = self.call("notification.list", {})
        self.assertEqual(now["as_of"], FRIDAY)
        self.assertTrue(now["due"], now)  # what surfaced in the last 24 hours
        self.assertIsNotNone(now["next_transition"], now)
        self.assertEqual(now["next_transition"]["at"], "2027-03-12T11:00:00Z")
        self.assertTrue(now["next_transition"]["notifications"], now)
        self.assertEqual(now["digest"]["at"], "2027-03-12T17:00:00Z")
        self.assertTrue(now["digest"]["notifications"], now)

    def test_loading_again_keeps_the_days(self):
        # A week later the demo stays where it was placed: nothing is added twice.
        out = demo(self.data, "2027-03-19T10:30:00Z")
        self.assertIn("placed +105 days", out)
        self.assertIn("this week: ingested 0 episodes", out)
        self.assertIn("history: ingested 0 episodes", out)

    def test_today_can_be_given(self):
        with tempfile.TemporaryDirectory() as d:
            out = cli(d, "demo", "--data", d, "--today", "2026-11-27").stdout
            self.assertIn("placed +0 days", out)
            bad = cli(d, "demo", "--data", d, "--today", "27/11/2026", check=False)
            self.assertNotEqual(bad.returncode, 0)
            self.assertIn("--today: expected YYYY-MM-DD", bad.stderr)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TestScriptsRun(unittest.TestCase):
    """scripts/run, with CORTEX_BIN (no setup, no build) and its own data and port."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-run-")
        self.data = os.path.join(self.tmp.name, "data")
        self.port = free_port()
        self.env = {**os.environ, "CORTEX_BIN": CORTEX_BIN, "CORTEX_DATA": self.data,
                    "CORTEX_PORT": str(self.port),
                    "CORTEX_CONFIG": os.path.join(self.tmp.name, "cortex.toml")}
        self.env.pop("CORTEX_FAKE_NOW", None)
        self.procs = []

    def tearDown(self):
        for proc, log in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=10)
            log.close()
        self.tmp.cleanup()

    def start(self):
        """scripts/run in the background until Cortex answers; returns (proc, output)."""
        log_path = os.path.join(self.tmp.name, f"run-{len(self.procs)}.log")
        log = open(log_path, "w+")
        proc = subprocess.Popen([os.path.join(ROOT, "scripts", "run")], env=self.env,
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.procs.append((proc, log))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(log_path) as f:
                out = f.read()
            self.assertIsNone(proc.poll(), out)
            if "listening on" in out:
                return proc, out
            time.sleep(0.05)
        self.fail("scripts/run did not start Cortex: " + out)

    def stop(self, proc):
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=10), 0)

    def run_again(self):
        return subprocess.run([os.path.join(ROOT, "scripts", "run")], env=self.env,
                              capture_output=True, text=True, timeout=30)

    def run_tokens(self):
        out = cli(self.data, "token", "list", "--data", self.data, "--workspace", "demo").stdout
        return [l for l in out.splitlines()[1:] if "scripts/run" in l]

    def token_of(self, out):
        m = re.search(r"Token:\s+(ctk_[0-9a-f]+)", out)
        self.assertIsNotNone(m, out)
        return m.group(1)

    def test_second_run_says_it_is_running_and_mints_nothing(self):
        first, out = self.start()
        token = self.token_of(out)
        self.assertIn(f"npx -y mcp-remote http://127.0.0.1:{self.port}/mcp", out)
        self.assertIn('"Authorization:${AUTH_HEADER}"', out)
        self.assertIn(f'"AUTH_HEADER": "Bearer {token}"', out)
        self.assertEqual(len(self.run_tokens()), 1)
        token_file = os.path.join(self.data, "scripts-run.token")
        self.assertEqual(stat.S_IMODE(os.stat(token_file).st_mode), 0o600)
        with open(token_file) as f:
            self.assertEqual(f.read().strip(), token)
        again = self.run_again()
        self.assertEqual(again.returncode, 1, again)
        self.assertIn(f"Cortex is already running on 127.0.0.1:{self.port}", again.stdout)
        self.assertNotIn("ctk_", again.stdout + again.stderr)
        self.assertEqual(len(self.run_tokens()), 1)
        self.assertIsNone(first.poll())
        # Stopped and run again: the same token, still one.
        self.stop(first)
        _, out = self.start()
        self.assertEqual(self.token_of(out), token)
        self.assertEqual(len(self.run_tokens()), 1)

    def test_a_revoked_token_is_replaced(self):
        first, out = self.start()
        token = self.token_of(out)
        self.stop(first)
        token_id = self.run_tokens()[0].split()[0]
        cli(self.data, "token", "revoke", "--data", self.data, "--workspace", "demo", token_id)
        _, out = self.start()
        fresh = self.token_of(out)
        self.assertNotEqual(fresh, token)
        with open(os.path.join(self.data, "scripts-run.token")) as f:
            self.assertEqual(f.read().strip(), fresh)
        self.assertEqual(len(self.run_tokens()), 2)  # the revoked one and the new one

    def test_another_program_on_the_port(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", self.port))
            s.listen()
            # It accepts and closes: not a Cortex.
            proc = subprocess.Popen([os.path.join(ROOT, "scripts", "run")], env=self.env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            conn, _ = s.accept()
            conn.close()
            out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 1, out + err)
        self.assertIn(f"Port {self.port} on 127.0.0.1 is taken by another program", err)
        self.assertFalse(os.path.exists(self.data))  # nothing made


if __name__ == "__main__":
    unittest.main()
