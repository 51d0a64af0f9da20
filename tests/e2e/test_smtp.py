"""Mail out through a real SMTP server (aiosmtpd from Debian, started here on 127.0.0.1 with
STARTTLS or implicit TLS and AUTH): headers, threading, no header injection, permanent and
temporary failures, and the message_sent episode. Python 3 stdlib plus /usr/bin/python3's
aiosmtpd for the server process.

    CORTEX_BIN=$PWD/build/cortex python3 -m unittest discover -s tests/e2e -t tests/e2e \
        -p 'test_smtp.py'
"""

import email
import email.policy
import http.client
import json
import os
import subprocess
import tempfile
import time
import unittest

from test_elicitation import call_inspect, tool, workspace_with_marcus
from test_http import Server, cli, create_token, store_rows

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, with python3-aiosmtpd


def make_cert(directory):
    """A self-signed certificate for 127.0.0.1; returns (cert, key)."""
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1", "-days", "2"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


class SmtpServer:
    """The helper smtp_server.py in its own process; each accepted message is a file."""

    def __init__(self, directory, cert, key, implicit_tls=False):
        self.dir = os.path.join(directory, "implicit" if implicit_tls else "starttls")
        os.makedirs(self.dir)
        args = [SYSTEM_PYTHON, os.path.join(HERE, "smtp_server.py"), "--dir", self.dir,
                "--cert", cert, "--key", key, "--user", "cortex", "--password", "s3cret pass"]
        if implicit_tls:
            args.append("--implicit-tls")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            self.stop()
            raise RuntimeError(f"smtp_server.py did not start: {line!r}")
        self.port = int(line.split()[1])

    def messages(self):
        out = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith(".eml"):
                with open(os.path.join(self.dir, name), "rb") as f:
                    out.append(email.message_from_bytes(f.read(), policy=email.policy.default))
        return out

    def wait_for(self, n, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.messages()
            if len(got) >= n:
                return got
            time.sleep(0.1)
        raise AssertionError(f"{len(self.messages())} messages at the SMTP server, want {n}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def write_config(directory, smtp, cert, password="s3cret pass", scheme="smtp"):
    secret = os.path.join(directory, f"smtp-password-{scheme}-{len(password)}")
    with open(secret, "w") as f:
        f.write(password + "\n")
    path = os.path.join(directory, f"cortex-{scheme}-{len(password)}.toml")
    with open(path, "w") as f:
        f.write("[delivery]\n"
                'connector = "smtp"\n'
                f'smtp_url = "{scheme}://127.0.0.1:{smtp.port}"\n'
                'smtp_from = "me@cortex.example"\n'
                'smtp_user = "cortex"\n'
                f'smtp_password_file = "{secret}"\n'
                f'smtp_ca_file = "{cert}"\n'
                "timeout_seconds = 5\n"
                "lease_seconds = 10\n")
    return path


def decision_status(port, token, decision_id):
    return call_inspect(port, token, decision_id).get("status")


def wait_status(port, token, decision_id, want, timeout=15):
    deadline = time.monotonic() + timeout
    status = None
    while time.monotonic() < deadline:
        status = decision_status(port, token, decision_id)
        if status == want:
            return
        time.sleep(0.1)
    raise AssertionError(f"decision {decision_id} is {status}, want {want}")


def inbox_state(data, port):
    """GET /inbox/api/state as the person signed in through `cortex inbox link`."""
    link = cli(data, "inbox", "link", "--data", data, "--workspace", "alpha", "--base-url",
               f"http://127.0.0.1:{port}").stdout.strip().split()[-1]
    path = link.split(f"127.0.0.1:{port}", 1)[1]
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    cookie = r.getheader("Set-Cookie").split(";")[0]
    c.request("GET", "/inbox/api/state", headers={"Cookie": cookie})
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    return body


class SmtpCase(unittest.TestCase):
    implicit_tls = False

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-smtp-")
        cert, key = make_cert(self.tmp.name)
        self.cert = cert
        self.smtp = SmtpServer(self.tmp.name, cert, key, implicit_tls=self.implicit_tls)
        self.data = workspace_with_marcus(self.tmp.name)
        # Marcus wrote first: a thread whose root Message-ID is known.
        world = os.path.join(self.tmp.name, "mail.jsonl")
        with open(world, "w") as f:
            f.write(json.dumps({
                "type": "episode", "kind": "message_received",
                "occurred_at": "2026-11-03T13:24:00Z", "counterparty": "marcus@h.example",
                "subject": "Pilot cutover date", "summary": "Marcus: 'Can you confirm?'",
                "thread": "root-1@h.example", "external_id": "<m2@h.example>"}) + "\n")
        cli(self.data, "ingest", "--data", self.data, "--workspace", "alpha", world)
        self.received = store_rows(
            self.data, "SELECT id FROM episodes WHERE external_id = '<m2@h.example>'")[0][0]
        cli(self.data, "trust", "set", "--data", self.data, "--workspace", "alpha",
            "--scope", "default", "--level", "3")
        self.agent = create_token(self.data, "alpha", "read,act")
        config = write_config(self.tmp.name, self.smtp, cert,
                              scheme="smtps" if self.implicit_tls else "smtp")
        self.server = Server(self.data, ["--config", config])

    def tearDown(self):
        self.server.terminate()
        self.server.kill()
        self.smtp.stop()
        self.tmp.cleanup()

    def send(self, **args):
        return tool(self.server.port, self.agent, "action.communicate", args)


class TestSmtpStartTls(SmtpCase):
    def test_a_reply_goes_out_threaded_over_tls_with_auth_and_is_remembered(self):
        r = self.send(to="marcus@h.example", message="Friday works for the cutover.\nThanks!",
                      in_reply_to=self.received)["structuredContent"]
        self.assertEqual(r["status"], "success", r)
        [m] = self.smtp.wait_for(1)
        self.assertEqual(m["X-Tls"], "yes")
        self.assertEqual(m["X-Auth"], "cortex")
        self.assertEqual(m["X-Envelope-From"], "me@cortex.example")
        self.assertEqual(m["X-Envelope-To"], "marcus@h.example")
        self.assertEqual(m["Subject"], "Re: Pilot cutover date")
        self.assertEqual(m["Message-ID"], f"<{r['action_id']}@cortex>")
        self.assertEqual(m["In-Reply-To"], "<m2@h.example>")
        self.assertEqual(m["References"], "<root-1@h.example> <m2@h.example>")
        self.assertEqual(m["To"], "marcus@h.example")
        self.assertIn("me@cortex.example", m["From"])
        self.assertIsNotNone(m["Date"].datetime)  # a real RFC 5322 date
        self.assertEqual(m.get_content().replace("\r\n", "\n").rstrip("\n"),
                         "Friday works for the cutover.\nThanks!")
        wait_status(self.server.port, self.agent, r["decision_id"], "delivered")
        # Recorded as the person's answer, in the same thread, once.
        rows = store_rows(self.data,
                          "SELECT kind, thread, subject, summary FROM episodes WHERE external_id"
                          f" = '{r['action_id']}@cortex'")
        self.assertEqual(rows, [("message_sent", "root-1@h.example", "Re: Pilot cutover date",
                                 "To Marcus Webb: 'Friday works for the cutover.'")])

    def test_a_new_message_takes_its_first_line_or_the_subject_given(self):
        a = self.send(to="marcus@h.example",
                      message="Quarterly numbers\nThey are in the shared folder.")
        b = self.send(to="marcus@h.example", message="See attached.",
                      subject="Budget — für Q3 ✓")
        self.assertEqual(a["structuredContent"]["status"], "success", a)
        self.assertEqual(b["structuredContent"]["status"], "success", b)
        got = {m["Message-ID"]: m for m in self.smtp.wait_for(2)}
        ma = got[f"<{a['structuredContent']['action_id']}@cortex>"]
        mb = got[f"<{b['structuredContent']['action_id']}@cortex>"]
        self.assertEqual(ma["Subject"], "Quarterly numbers")
        self.assertIsNone(ma["In-Reply-To"])
        self.assertEqual(mb["Subject"], "Budget — für Q3 ✓")  # RFC 2047 on the wire
        self.assertNotIn("ü", mb.as_string().split("\n\n")[0].split("Subject:")[1][:80])

    def test_no_header_injection(self):
        r = self.send(to="marcus@h.example",
                      message="Hello\rBcc: evil@x.example\r\nX-Injected: 1\n\nbody")
        self.assertEqual(r["structuredContent"]["status"], "success", r)
        [m] = self.smtp.wait_for(1)
        self.assertEqual(m["Subject"], "Hello")  # the first line: a bare CR ends it too
        self.assertIsNone(m["Bcc"])
        self.assertIsNone(m["X-Injected"])
        self.assertEqual(m["X-Envelope-To"], "marcus@h.example")
        for bad in ["Hi\r\nBcc: evil@x.example", "Hi\nthere", "nul\u0000byte"]:
            refused = self.send(to="marcus@h.example", message="x", subject=bad)
            self.assertTrue(refused.get("isError"), refused)
            self.assertEqual(refused["structuredContent"]["error"], "invalid_arguments")
            self.assertIn("subject", refused["structuredContent"]["message"])
        listed = tool(self.server.port, self.agent, "decision.list",
                      {"decision_class": "action_proposed"})["structuredContent"]["decisions"]
        self.assertEqual(len(listed), 1, listed)  # the refusals recorded nothing

    def test_in_reply_to_must_name_a_message_of_this_workspace(self):
        r = self.send(to="marcus@h.example", message="x",
                      in_reply_to="ep_01M8PS06M053VVFGPPNAWWM0AA")
        self.assertTrue(r.get("isError"), r)
        self.assertIn("in_reply_to", r["structuredContent"]["message"])

    def test_a_permanent_refusal_fails_at_once_with_the_reason(self):
        r = self.send(to="reject-1@h.example", message="Are you there?")["structuredContent"]
        self.assertEqual(r["status"], "success", r)
        wait_status(self.server.port, self.agent, r["decision_id"], "failed", timeout=10)
        inspected = call_inspect(self.server.port, self.agent, r["decision_id"])
        failed = [h for h in inspected["history"] if h["event"] == "failed"]
        self.assertEqual(len(failed), 1, inspected)
        self.assertIn("550", failed[0]["error"])
        self.assertEqual(failed[0]["attempts"], 1)
        self.assertEqual(store_rows(
            self.data, f"SELECT count(*) FROM episodes WHERE external_id = "
                       f"'{r['action_id']}@cortex'"), [("0",)])
        # The person's inbox says why it was not sent.
        state = inbox_state(self.data, self.server.port)
        [shown] = [d for d in state["decisions"] if d["decision_id"] == r["decision_id"]]
        self.assertEqual(shown["status"], "failed")
        self.assertIn("550", shown["failure"])

    def test_a_temporary_refusal_is_retried(self):
        r = self.send(to="later-1@h.example", message="Are you there?")["structuredContent"]
        deadline = time.monotonic() + 10
        rows = []
        while time.monotonic() < deadline:
            rows = store_rows(self.data, "SELECT attempts, last_error, status FROM outbox WHERE"
                                         f" id = '{r['action_id']}'")
            if rows and int(rows[0][0]) >= 2:
                break
            time.sleep(0.2)
        self.assertGreaterEqual(int(rows[0][0]), 2, rows)  # retried after its 1 s backoff
        self.assertIn("451", rows[0][1])
        self.assertEqual(rows[0][2], "pending")
        self.assertEqual(decision_status(self.server.port, self.agent, r["decision_id"]),
                         "executed")


class TestSmtpImplicitTls(SmtpCase):
    implicit_tls = True

    def test_smtps_delivers(self):
        r = self.send(to="marcus@h.example", message="Over TLS from the first byte.")
        self.assertEqual(r["structuredContent"]["status"], "success", r)
        [m] = self.smtp.wait_for(1)
        self.assertEqual(m["X-Tls"], "yes")
        self.assertEqual(m["Subject"], "Over TLS from the first byte.")


class TestSmtpWrongPassword(unittest.TestCase):
    def test_a_wrong_password_fails_the_message_and_never_shows_the_password(self):
        tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-smtp-")
        self.addCleanup(tmp.cleanup)
        cert, key = make_cert(tmp.name)
        smtp = SmtpServer(tmp.name, cert, key)
        self.addCleanup(smtp.stop)
        data = workspace_with_marcus(tmp.name)
        cli(data, "trust", "set", "--data", data, "--workspace", "alpha", "--scope", "default",
            "--level", "3")
        agent = create_token(data, "alpha", "read,act")
        config = write_config(tmp.name, smtp, cert, password="wrong-horse-battery")
        server = Server(data, ["--config", config])
        self.addCleanup(server.kill)
        r = tool(server.port, agent, "action.communicate",
                 {"to": "marcus@h.example", "message": "hi"})["structuredContent"]
        wait_status(server.port, agent, r["decision_id"], "failed", timeout=10)
        inspected = call_inspect(server.port, agent, r["decision_id"])
        error = [h for h in inspected["history"] if h["event"] == "failed"][0]["error"]
        self.assertIn("535", error)
        self.assertNotIn("wrong-horse-battery", json.dumps(inspected))
        self.assertNotIn("wrong-horse-battery", server.read_log())
        self.assertEqual(smtp.messages(), [])


if __name__ == "__main__":
    unittest.main()
