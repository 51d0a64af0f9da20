"""What the command line says when a person gets something wrong (issue #48): the
documented exit code for bad usage, a "did you mean" for a mistyped config key, a typo in
--data named as such (and nothing created), and one server per SQLite data directory.

    CORTEX_BIN=/path/to/cortex python3 -m unittest test_cli_messages -v
"""

import os
import subprocess
import tempfile
import unittest

from test_http import CORTEX_BIN, Server, create_token

ON_POSTGRES = bool(os.environ.get("CORTEX_PG_DIR"))


def run(*args):
    return subprocess.run([CORTEX_BIN, *args], capture_output=True, text=True, timeout=30)


class TestCliMessages(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-cli-")
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_missing_config_file_is_bad_usage(self):
        missing = os.path.join(self.root, "nope.toml")
        for args in (["serve", "--data", os.path.join(self.root, "d"), "--config", missing],
                     ["sync", "--data", os.path.join(self.root, "d"), "--config", missing]):
            with self.subTest(args[0]):
                p = run(*args)
                self.assertEqual(p.returncode, 2, p.stderr)  # cli/commands.h: 2 bad usage
                self.assertIn("nope.toml", p.stderr)
        self.assertEqual(run("token", "list", "--workspace", "w").returncode, 2)  # no --data

    def test_a_mistyped_config_key_gets_a_did_you_mean(self):
        config = os.path.join(self.root, "cortex.toml")
        with open(config, "w") as f:
            f.write("[http]\nflood_requests_per_secnd = 5\n")
        p = run("serve", "--data", os.path.join(self.root, "d"), "--config", config)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("unknown key 'http.flood_requests_per_secnd'; did you mean "
                      "'http.flood_requests_per_second'?", p.stderr)
        with open(config, "w") as f:
            f.write("[http]\nsomething_else_entirely = 5\n")
        p = run("serve", "--data", os.path.join(self.root, "d"), "--config", config)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("unknown key 'http.something_else_entirely'", p.stderr)
        self.assertNotIn("did you mean", p.stderr)

    @unittest.skipIf(ON_POSTGRES, "a SQLite data directory")
    def test_a_typo_in_data_is_named_and_creates_nothing(self):
        data = os.path.join(self.root, "data")
        create_token(data, "demo", "read")
        typo = os.path.join(self.root, "dta")
        for args in (["token", "list", "--workspace", "demo"],
                     ["inbox", "list", "--workspace", "demo"],
                     ["trust", "list", "--workspace", "demo"],
                     ["ledger", "verify"]):
            with self.subTest(args[0]):
                p = run(*args, "--data", typo)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn(f"there is no Cortex data in {typo} (no cortex.db): check --data",
                              p.stderr)
                self.assertNotIn("no workspace", p.stderr)
                self.assertFalse(os.path.exists(typo))
        # The real one still answers.
        self.assertEqual(run("token", "list", "--data", data, "--workspace", "demo").returncode,
                         0)

    @unittest.skipIf(ON_POSTGRES, "one server per SQLite data directory")
    def test_a_second_server_on_one_data_directory_is_refused(self):
        data = os.path.join(self.root, "data")
        create_token(data, "w", "read")
        first = Server(data)
        try:
            p = subprocess.run([CORTEX_BIN, "serve", "--data", data, "--listen", "127.0.0.1:0"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(f"another cortex serve (pid {first.proc.pid}) already serves {data}",
                          p.stderr)
            self.assertIn("PostgreSQL", p.stderr)
            # The first one still serves, and the CLI still works beside it.
            create_token(data, "w", "read")
            self.assertIsNone(first.proc.poll())
        finally:
            first.terminate()
        # Once it stopped, a server starts there again.
        again = Server(data)
        again.terminate()


if __name__ == "__main__":
    unittest.main()
