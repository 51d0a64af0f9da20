"""scripts/test-mailbox and scripts/test-calendar (issue #48, point 4): a port of one's
choosing, their files under the project's .cortex/ (gone when they stop), and a workspace
of their own, so a sync of their data leaves the demo's people as `cortex demo` made them.

    CORTEX_BIN=/path/to/cortex python3 -m unittest test_trial_servers -v
"""

import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

from test_http import CORTEX_BIN, store_rows
from test_imap import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class TestTrialServers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-trial-")
        self.data = os.path.join(self.tmp.name, "data")
        p = subprocess.run([CORTEX_BIN, "demo", "--data", self.data], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)

    def tearDown(self):
        self.tmp.cleanup()

    def start(self, script, port):
        log = open(os.path.join(self.tmp.name, script + ".log"), "w+")
        self.addCleanup(log.close)
        proc = subprocess.Popen([os.path.join(ROOT, "scripts", script), "--port", str(port)],
                                stdout=log, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            log.seek(0)
            out = log.read()
            if "Ctrl-C stops it." in out:
                return proc, out
            if proc.poll() is not None:
                self.fail(f"{script} exited {proc.returncode}: {out}")
            time.sleep(0.1)
        proc.kill()
        self.fail(f"{script} did not start: {out}")

    def stop(self, proc):
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=30), 0)

    def demo_people(self):
        return store_rows(self.data, "SELECT e.name FROM entities e JOIN workspaces w ON "
                                     "w.id = e.workspace_id WHERE w.name = 'demo' ORDER BY 1")

    def check(self, script, port, workspace, added):
        before = self.demo_people()
        proc, out = self.start(script, port)
        try:
            config = re.search(r"^config: (\S+)$", out, re.M).group(1)
            self.assertTrue(config.startswith(os.path.join(ROOT, ".cortex", script + "-")),
                            config)
            with open(config) as f:
                text = f.read()
            self.assertIn(f'workspace = "{workspace}"', text)
            self.assertIn(f"127.0.0.1:{port}", text)
            self.assertNotIn('"demo"', text)
            sync = subprocess.run([CORTEX_BIN, "sync", "--data", self.data, "--config", config],
                                  capture_output=True, text=True, timeout=120)
            self.assertEqual(sync.returncode, 0, sync.stderr)
            self.assertRegex(sync.stdout, rf"\({workspace}\): .*{added}")
        finally:
            self.stop(proc)
        self.assertFalse(os.path.exists(os.path.dirname(config)), "left its files behind")
        self.assertEqual(self.demo_people(), before)

    def test_the_mailbox(self):
        self.check("test-mailbox", free_port(), "mailbox-trial", "added 4")

    def test_the_calendar(self):
        # A weekday block (its occurrences) and a meeting: two events fetched.
        self.check("test-calendar", free_port(), "calendar-trial", "fetched 2")


if __name__ == "__main__":
    unittest.main()
