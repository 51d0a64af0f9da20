"""Data at rest, end to end (Python 3 stdlib only): the modes `cortex serve` and the CLI give
the data directory and the database files whatever the umask, the warning for files an older
version left wider, MCP session ids kept only as their SHA-256, and CORTEX_FAKE_NOW, which
only a test build (-DCORTEX_TEST_HOOKS=ON, as scripts/test builds) honours.

    CORTEX_BIN=/path/to/cortex python3 -m unittest discover -s tests/e2e -t tests/e2e
"""

import hashlib
import os
import stat
import subprocess
import tempfile
import time
import unittest

from test_http import CORTEX_BIN, LEGACY, Server, cli, create_token, store_rows
from test_limits import req

ON_POSTGRES = bool(os.environ.get("CORTEX_PG_DIR"))
DB_FILES = ["cortex.db", "cortex.db-wal", "cortex.db-shm"]


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


class Serve:
    """`cortex serve --data DATA` with its log outside DATA (so that the server creates DATA
    itself), under `umask` and with `env` added; stopped by stop(), which returns the log."""

    def __init__(self, data, log_path, umask=None, env=None):
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            [CORTEX_BIN, "serve", "--data", data, "--listen", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            env={**os.environ, **(env or {})},
            preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)
        deadline = time.monotonic() + 15
        while b"listening on http://" not in self.read().encode():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"cortex serve did not start: {self.read()}")
            time.sleep(0.05)

    def read(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.read()


def warnings_naming(log, path):
    return [l for l in log.splitlines() if " warning " in f" {l} " and f" {path} " in l]


@unittest.skipIf(ON_POSTGRES, "file modes of the SQLite data directory")
class TestFileModes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-at-rest-")
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def assertPrivate(self, data):
        self.assertEqual(oct(mode_of(data)), oct(0o700), data)
        for name in DB_FILES:
            path = os.path.join(data, name)
            self.assertEqual(oct(mode_of(path)), oct(0o600), path)

    def test_serve_makes_the_directory_and_the_files_private_whatever_the_umask(self):
        for umask in (0o000, 0o022):
            with self.subTest(umask=oct(umask)):
                data = os.path.join(self.root, f"data-{umask:o}", "nested")
                server = Serve(data, os.path.join(self.root, f"serve-{umask:o}.log"), umask=umask)
                try:
                    self.assertPrivate(data)
                finally:
                    log = server.stop()
                self.assertNotIn("has mode", log)

    def test_the_cli_makes_them_private_too(self):
        data = os.path.join(self.root, "data")
        old = os.umask(0)
        try:
            cli(data, "token", "create", "--data", data, "--workspace", "w", "--scopes", "read")
        finally:
            os.umask(old)
        self.assertEqual(oct(mode_of(data)), oct(0o700))
        self.assertEqual(oct(mode_of(os.path.join(data, "cortex.db"))), oct(0o600))

    def test_serve_makes_wider_files_private_and_says_so_once(self):
        """Files of an older version (umask 022), or a directory made with mkdir: Cortex's
        user owns them, so Cortex makes them private and names each once (issue #48)."""
        data = os.path.join(self.root, "data")
        cli(data, "token", "create", "--data", data, "--workspace", "w", "--scopes", "read")
        db = os.path.join(data, "cortex.db")
        os.chmod(data, 0o755)
        os.chmod(db, 0o644)
        server = Serve(data, os.path.join(self.root, "serve.log"))
        try:
            self.assertPrivate(data)
        finally:
            log = server.stop()
        for path, was, now in [(data, "0755", "0700"), (db, "0644", "0600")]:
            lines = warnings_naming(log, path)
            self.assertEqual(len(lines), 1, (path, log))
            self.assertIn(f"made data ", lines[0])
            self.assertIn(f"{path} private to its owner: mode {was} is now {now}", lines[0])
        server = Serve(data, os.path.join(self.root, "serve2.log"))
        try:
            self.assertPrivate(data)
        finally:
            log = server.stop()
        self.assertNotIn("private to its owner", log)
        self.assertNotIn("has mode", log)

    def test_a_directory_made_with_mkdir_is_fixed_by_the_first_command(self):
        data = os.path.join(self.root, "mkdir-data")
        os.mkdir(data, 0o755)
        os.chmod(data, 0o755)
        first = subprocess.run([CORTEX_BIN, "token", "create", "--data", data, "--workspace",
                                "w", "--scopes", "read"], capture_output=True, text=True,
                               timeout=30)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertIn(f"made data directory {data} private to its owner: mode 0755 is now 0700",
                      first.stderr)
        self.assertEqual(oct(mode_of(data)), oct(0o700))
        again = subprocess.run([CORTEX_BIN, "token", "list", "--data", data, "--workspace", "w"],
                               capture_output=True, text=True, timeout=30)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertNotIn("private", again.stderr)
        self.assertNotIn("has mode", again.stderr)


class TestSessionIdsAtRest(unittest.TestCase):
    """The store keeps a session's SHA-256, never the Mcp-Session-Id itself (on PostgreSQL
    too), and the id the client holds still names its session."""

    def test_a_session_id_is_stored_hashed(self):
        with tempfile.TemporaryDirectory(prefix="cortex-e2e-sessions-") as data:
            token = create_token(data, "w", "read")
            server = Server(data)
            try:
                def post(body, sid=None):
                    headers = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY} if sid else {}
                    return req(server.port, "POST", body=body, headers=headers, token=token)

                r = post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                          "params": {"protocolVersion": LEGACY, "capabilities": {},
                                     "clientInfo": {"name": "cortex-e2e", "version": "1"}}})
                self.assertEqual(r.status, 200, r)
                sid = r.header("Mcp-Session-Id")
                self.assertTrue(sid, r)
                stored = [row[0] for row in store_rows(data, "SELECT id FROM mcp_sessions")]
                self.assertEqual(stored, [hashlib.sha256(sid.encode()).hexdigest()])
                self.assertNotIn(sid, stored)
                r = post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid)
                self.assertEqual((r.status, r.json().get("result")), (200, {}), r)
                r = post({"jsonrpc": "2.0", "id": 2, "method": "ping"}, stored[0])
                self.assertEqual(r.status, 404, r)  # the stored form opens nothing
                r = req(server.port, "DELETE", token=token,
                        headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
                self.assertEqual(r.status, 200, r)
                self.assertEqual(store_rows(data, "SELECT id FROM mcp_sessions"), [])
            finally:
                server.kill()


FAKE_NOW = "2001-02-03T04:05:06"


class TestFakeNow(unittest.TestCase):
    """A test build freezes its clock at CORTEX_FAKE_NOW and says nothing; any other build
    runs on the system clock and says once that it ignores the variable. Which build this is
    shows in the time a token is created at (`cortex token list`)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-fake-now-")
        self.data = os.path.join(self.tmp.name, "data")

    def tearDown(self):
        self.tmp.cleanup()

    def test_only_a_test_build_freezes_the_clock(self):
        env = {**os.environ, "CORTEX_FAKE_NOW": FAKE_NOW + "Z"}
        made = subprocess.run(
            [CORTEX_BIN, "token", "create", "--data", self.data, "--workspace", "w", "--scopes",
             "read"], capture_output=True, text=True, timeout=30, env=env)
        self.assertEqual(made.returncode, 0, made.stderr)
        listed = cli(self.data, "token", "list", "--data", self.data, "--workspace", "w").stdout
        created = listed.splitlines()[1].split("\t")[2]
        test_build = created.startswith(FAKE_NOW)
        if not test_build:
            self.assertRegex(created, r"^\d{4}-\d\d-\d\dT")
            self.assertNotEqual(created[:4], "2001", listed)
        said = made.stderr.count("ignoring CORTEX_FAKE_NOW")
        self.assertEqual(said, 0 if test_build else 1, made.stderr)

        server = Serve(self.data, os.path.join(self.tmp.name, "serve.log"),
                       env={"CORTEX_FAKE_NOW": FAKE_NOW + "Z"})
        log = server.stop()
        self.assertEqual(log.count("ignoring CORTEX_FAKE_NOW"), 0 if test_build else 1, log)
        if not test_build:
            self.assertRegex(log, r"(?m) warning ignoring CORTEX_FAKE_NOW: .*not a test build")


if __name__ == "__main__":
    unittest.main()
