"""Retries never duplicate: action.communicate with an idempotency_key, over HTTP. Python 3
stdlib only."""

import tempfile
import unittest

from test_elicitation import ARGS, call, tool, workspace_with_marcus
from test_http import Server, cli, create_token


class TestIdempotencyKey(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.data = workspace_with_marcus(self.tmp.name)
        cli(self.data, "trust", "set", "--data", self.data, "--workspace", "alpha",
            "--scope", "marcus@h.example", "--level", "3")
        self.agent = create_token(self.data, "alpha", "read,act")
        self.server = Server(self.data)

    def tearDown(self):
        self.server.terminate()
        self.server.kill()
        self.tmp.cleanup()

    def test_a_retry_with_the_key_sends_once(self):
        port = self.server.port
        keyed = dict(ARGS, idempotency_key="2f1c6d1e-retry-test")
        first = call(port, self.agent, keyed, {})["structuredContent"]
        self.assertEqual(first["status"], "success", first)
        again = call(port, self.agent, keyed, {})["structuredContent"]
        self.assertEqual(again, first)
        other = call(port, self.agent, dict(keyed, message="Monday then?"), {})
        self.assertTrue(other.get("isError"), other)
        self.assertEqual(other["structuredContent"]["error"], "invalid_arguments")
        self.assertIn("idempotency_key", other["structuredContent"]["message"])
        spaced = call(port, self.agent, dict(ARGS, idempotency_key="has space"), {})
        self.assertTrue(spaced.get("isError"), spaced)
        self.assertEqual(spaced["structuredContent"]["error"], "invalid_arguments")
        listed = call_list(port, self.agent)
        self.assertEqual(len(listed), 1, listed)  # one message, not two


def call_list(port, token):
    listed = tool(port, token, "decision.list", {"decision_class": "action_proposed"})
    return listed["structuredContent"]["decisions"]


if __name__ == "__main__":
    unittest.main()
