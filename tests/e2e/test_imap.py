"""Mail in from a real Dovecot (Debian's dovecot-imapd, started here on 127.0.0.1 with its
own configuration, TLS certificate and Maildir in a temporary directory): `cortex sync` and
`cortex serve --config` with [[connectors.imap]]. Python 3 stdlib only.

    CORTEX_BIN=$PWD/build/cortex python3 -m unittest discover -s tests/e2e -t tests/e2e \
        -p 'test_imap.py'
"""

import datetime
import imaplib
import os
import pwd
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

from test_http import CORTEX_BIN, Server, create_token, store_rows
from test_smtp import make_cert

DOVECOT = shutil.which("dovecot") or "/usr/sbin/dovecot"
USER, PASSWORD = "me@example.test", "imap pass 1"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Dovecot:
    """A private Dovecot: IMAP with STARTTLS and IMAPS on free loopback ports, one user."""

    def __init__(self, directory, extra_conf="", port=None):
        self.dir = os.path.join(directory, "dovecot")
        os.makedirs(os.path.join(self.dir, "run"))
        os.chmod(directory, 0o755)
        self.cert, key = make_cert(self.dir)
        self.maildir = os.path.join(self.dir, "mail", USER)
        for sub in ("new", "cur", "tmp", ".Sent/new", ".Sent/cur", ".Sent/tmp"):
            os.makedirs(os.path.join(self.maildir, sub))
        # Dovecot never gives mail to uid 0: as root, the mail belongs to nobody.
        self.uid = os.getuid() or pwd.getpwnam("nobody").pw_uid
        self.gid = os.getgid() if os.getuid() else pwd.getpwnam("nobody").pw_gid
        with open(os.path.join(self.dir, "passwd"), "w") as f:
            f.write(f"{USER}:{{PLAIN}}{PASSWORD}\n")
        self.port, self.tls_port = port or free_port(), free_port()
        self.conf = os.path.join(self.dir, "dovecot.conf")
        d = self.dir
        with open(self.conf, "w") as f:
            f.write(f"""base_dir = {d}/run
state_dir = {d}/state
log_path = {d}/dovecot.log
listen = 127.0.0.1
protocols = imap
ssl = yes
ssl_cert = <{self.cert}
ssl_key = <{key}
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:{d}/mail/%u
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {d}/passwd
}}
userdb {{
  driver = static
  args = uid={self.uid} gid={self.gid} home={d}/home/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {self.tls_port}
    ssl = yes
  }}
}}
service anvil {{
  chroot =
}}
{extra_conf}""")
        self.count = 0
        self.proc = None
        self.start()

    def start(self):
        self.chown()
        # A session of its own: stop() ends every process of it, as `systemctl stop` would.
        self.proc = subprocess.Popen([DOVECOT, "-F", "-c", self.conf], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("dovecot did not start: " + self.log())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        # The master leaves its children running (an imap process serving a client, anvil,
        # log...): end them too, so that a client's connection really drops.
        if self.proc:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        pid = os.path.join(self.dir, "run", "master.pid")
        if os.path.exists(pid):
            os.remove(pid)

    def log(self):
        try:
            with open(os.path.join(self.dir, "dovecot.log")) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def chown(self):
        for root, dirs, files in os.walk(os.path.join(self.dir, "mail")):
            for name in dirs + files:
                os.lchown(os.path.join(root, name), self.uid, self.gid)
        os.lchown(os.path.join(self.dir, "mail"), self.uid, self.gid)

    def deliver(self, raw, folder="INBOX"):
        """Puts a message into `folder` as a mail server would (Maildir new/)."""
        self.count += 1
        sub = "new" if folder == "INBOX" else f".{folder}/new"
        name = f"{time.time():.6f}.{self.count}.cortex-test"
        path = os.path.join(self.maildir, sub, name)
        with open(path + ".tmp", "wb") as f:
            f.write(raw if isinstance(raw, bytes) else raw.encode())
        os.lchown(path + ".tmp", self.uid, self.gid)
        os.rename(path + ".tmp", path)

    def new_uidvalidity(self):
        """Stops Dovecot, forgets every UID (a restored or rebuilt mailbox), starts again."""
        self.stop()
        for root, dirs, files in os.walk(self.maildir):
            for name in files:
                if name.startswith("dovecot-uidlist") or name.startswith("dovecot.index") or \
                        name.startswith("dovecot-uidvalidity"):
                    os.remove(os.path.join(root, name))
        time.sleep(1.1)  # UIDVALIDITY is a time in seconds: make sure it moves
        self.start()

    def imap(self):
        context = ssl.create_default_context(cafile=self.cert)
        m = imaplib.IMAP4_SSL("127.0.0.1", self.tls_port, ssl_context=context)
        m.login(USER, PASSWORD)
        return m

    def append(self, raw, folder="INBOX", internaldate=None):
        """Puts a message into `folder` as a mail client would (IMAP APPEND)."""
        m = self.imap()
        try:
            when = imaplib.Time2Internaldate(internaldate or time.time())
            typ, _ = m.append(folder, None, when, raw if isinstance(raw, bytes) else raw.encode())
            if typ != "OK":
                raise RuntimeError("APPEND failed")
        finally:
            m.logout()


def mail(n, subject="Pilot cutover", sender="Marcus Webb <marcus@h.example>",
         to="me@example.test", body="Can you confirm by Tuesday? Thanks.", extra="",
         date="Thu, 03 Dec 2026 10:00:00 +0000"):
    return (f"From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\n"
            f"Message-ID: <m{n}@h.example>\r\nDate: {date}\r\n{extra}"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n")


MULTIPART = """From: Sarah Chen <sarah@acme.example>\r
To: me@example.test\r
Subject: Board deck\r
Message-ID: <multi-1@acme.example>\r
Date: Thu, 03 Dec 2026 09:00:00 +0000\r
MIME-Version: 1.0\r
Content-Type: multipart/mixed; boundary="outer"\r
\r
--outer\r
Content-Type: multipart/alternative; boundary="alt"\r
\r
--alt\r
Content-Type: text/plain; charset=utf-8\r
\r
The deck is attached. Please review before Friday.\r
--alt\r
Content-Type: text/html; charset=utf-8\r
\r
<p>The deck is <b>attached</b>.</p>\r
--alt--\r
--outer\r
Content-Type: application/pdf; name="deck.pdf"\r
Content-Disposition: attachment; filename="deck.pdf"\r
Content-Transfer-Encoding: base64\r
\r
JVBERi0xLjQK\r
--outer--\r
"""

HTML_ONLY = """From: Newsletter <news@letters.example>\r
To: me@example.test\r
Subject: Weekly digest\r
Message-ID: <html-1@letters.example>\r
Date: Thu, 03 Dec 2026 08:00:00 +0000\r
MIME-Version: 1.0\r
Content-Type: text/html; charset=utf-8\r
\r
<html><head><style>p {color: red}</style><script>alert(1)</script></head>\r
<body><h1>This week</h1><p>Rates went up&nbsp;again.</p><p>Read &amp; enjoy!</p></body></html>\r
"""

ENCODED = """From: =?UTF-8?Q?J=C3=BCrgen_M=C3=BCller?= <juergen@firma.example>\r
To: me@example.test\r
Subject: =?UTF-8?B?R3LDvMOfZSBhdXMgTcO8bmNoZW4=?=\r
Message-ID: <enc-1@firma.example>\r
Date: Thu, 03 Dec 2026 07:00:00 +0000\r
MIME-Version: 1.0\r
Content-Type: text/plain; charset=iso-8859-1\r
Content-Transfer-Encoding: quoted-printable\r
\r
Sch=F6ne Gr=FC=DFe. Bis bald.\r
"""


def episodes(data):
    # Bodies on one line: psql (the PostgreSQL runs) prints a row per line.
    nl = "chr(10)" if os.path.exists(os.path.join(data, "postgres-url")) else "char(10)"
    cr = nl.replace("10", "13")
    rows = store_rows(data, f"SELECT kind, subject, summary, replace(replace(body, {nl}, ' '),"
                            f" {cr}, ' '), thread,"
                            " external_id, channel,"
                            " (SELECT name FROM entities WHERE id = entity_id) FROM episodes"
                            " ORDER BY occurred_at, external_id")
    keys = ["kind", "subject", "summary", "body", "thread", "external_id", "channel", "who"]
    return {r[5]: dict(zip(keys, r)) for r in rows}


class ImapCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-imap-")
        self.dovecot = Dovecot(self.tmp.name)
        self.data = os.path.join(self.tmp.name, "data")
        self.config = self.write_config()

    def tearDown(self):
        self.dovecot.stop()
        self.tmp.cleanup()

    def write_config(self, password=PASSWORD, port=None, name="cortex.toml", extra="",
                     received='["INBOX"]'):
        secret = os.path.join(self.tmp.name, name + ".secret")
        with open(secret, "w") as f:
            f.write(password + "\n")
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write("[[connectors.imap]]\n"
                    'workspace = "alpha"\n'
                    f'url = "imap://127.0.0.1:{port or self.dovecot.port}"\n'
                    f'username = "{USER}"\n'
                    f'password_file = "{secret}"\n'
                    f'ca_file = "{self.dovecot.cert}"\n'
                    f'received = {received}\n'
                    'sent = ["Sent"]\n'
                    "backfill_days = 3650\n" + extra)
        return path

    def sync(self, config=None, check=True):
        p = subprocess.run([CORTEX_BIN, "sync", "--data", self.data, "--config",
                            config or self.config], capture_output=True, text=True, timeout=300)
        if check and p.returncode != 0:
            raise AssertionError(f"cortex sync failed ({p.returncode}): {p.stderr}")
        return p


class TestMailIn(ImapCase):
    def test_a_mailbox_becomes_episodes_once(self):
        d = self.dovecot
        d.deliver(MULTIPART)
        d.deliver(HTML_ONLY)
        d.deliver(ENCODED)
        d.deliver(mail(1))
        d.deliver(mail(2, subject="Re: Pilot cutover", body="Also: Wednesday works.",
                       extra="In-Reply-To: <m1@h.example>\r\nReferences: <m1@h.example>\r\n",
                       date="Thu, 03 Dec 2026 11:00:00 +0000"))
        d.deliver(mail(3, sender="Me <me@example.test>", to="Marcus Webb <marcus@h.example>",
                       subject="Re: Pilot cutover", body="Tuesday it is.",
                       extra="In-Reply-To: <m2@h.example>\r\n"
                             "References: <m1@h.example> <m2@h.example>\r\n",
                       date="Thu, 03 Dec 2026 12:00:00 +0000"), folder="Sent")
        first = self.sync()
        self.assertRegex(first.stdout, r"imap me@example\.test@127\.0\.0\.1:\d+ \(alpha\): "
                                       r"added 6 \(INBOX 5, Sent 1\)")
        eps = episodes(self.data)
        self.assertEqual(len(eps), 6, eps)
        multi = eps["multi-1@acme.example"]
        self.assertEqual(multi["kind"], "message_received")
        self.assertEqual(multi["who"], "Sarah Chen")
        self.assertEqual(multi["subject"], "Board deck")
        self.assertEqual(multi["summary"], "Sarah Chen: 'The deck is attached.'")
        self.assertIn("Please review before Friday.", multi["body"])
        self.assertIn("[attachments: deck.pdf]", multi["body"])
        self.assertNotIn("JVBER", multi["body"])
        html = eps["html-1@letters.example"]
        self.assertIn("This week", html["body"])
        self.assertIn("Rates went up again.", html["body"])
        self.assertIn("Read & enjoy!", html["body"])
        self.assertNotIn("<p>", html["body"])
        self.assertNotIn("alert", html["body"])
        self.assertNotIn("color", html["body"])
        enc = eps["enc-1@firma.example"]
        self.assertEqual(enc["subject"], "Grüße aus München")
        self.assertEqual(enc["who"], "Jürgen Müller")
        self.assertEqual(enc["summary"], "Jürgen Müller: 'Schöne Grüße.'")
        self.assertEqual(eps["m1@h.example"]["thread"], "m1@h.example")
        self.assertEqual(eps["m2@h.example"]["thread"], "m1@h.example")
        sent = eps["m3@h.example"]
        self.assertEqual(sent["kind"], "message_sent")
        self.assertEqual(sent["who"], "Marcus Webb")
        self.assertEqual(sent["thread"], "m1@h.example")
        self.assertEqual(sent["summary"], "To Marcus Webb: 'Tuesday it is.'")
        # Inbound mail was triaged: one notification each.
        self.assertEqual(store_rows(self.data, "SELECT count(*) FROM notifications"), [("5",)])
        # Reading mail leaves it unread for the person.
        m = d.imap()
        m.select("INBOX", readonly=True)
        self.assertEqual(len(m.search(None, "UNSEEN")[1][0].split()), 5)
        m.logout()

        again = self.sync()
        self.assertIn("added 0", again.stdout)
        self.assertEqual(len(episodes(self.data)), 6)

        d.deliver(mail(4, body="One more thing."))
        third = self.sync()
        self.assertIn("added 1 (INBOX 1, Sent 0)", third.stdout)

    def test_a_changed_uidvalidity_resyncs_without_duplicates(self):
        for n in range(1, 6):
            self.dovecot.deliver(mail(n))
        self.assertIn("added 5", self.sync().stdout)
        self.dovecot.new_uidvalidity()
        self.dovecot.deliver(mail(6))
        out = self.sync().stdout
        self.assertIn("added 1 (INBOX 1, Sent 0), 5 already stored", out)
        self.assertIn("re-read (UIDVALIDITY)", out)
        self.assertEqual(len(episodes(self.data)), 6)
        self.assertIn("added 0", self.sync().stdout)

    def test_kill_9_mid_sync_neither_loses_nor_duplicates(self):
        n = int(os.environ.get("CORTEX_IMAP_KILL_MESSAGES", "5000"))
        for i in range(n):
            self.dovecot.deliver(mail(i, body=f"Message number {i}. Thanks."))
        errors = open(os.path.join(self.tmp.name, "sync.err"), "w+")
        self.addCleanup(errors.close)
        p = subprocess.Popen([CORTEX_BIN, "sync", "--data", self.data, "--config", self.config],
                             stdout=subprocess.DEVNULL, stderr=errors)
        deadline = time.monotonic() + 120
        stored = 0
        while time.monotonic() < deadline and p.poll() is None:
            try:
                stored = int(store_rows(self.data, "SELECT count(*) FROM episodes")[0][0])
            except Exception:  # no store yet
                stored = 0
            if stored >= n // 3:
                break
            time.sleep(0.05)
        if p.poll() is not None:
            errors.seek(0)
            self.fail(f"sync ended ({p.returncode}) before it could be killed: {errors.read()}")
        p.send_signal(signal.SIGKILL)
        p.wait()
        self.assertLess(stored, n)
        self.sync()
        rows = store_rows(self.data, "SELECT count(*), count(DISTINCT external_id) FROM episodes")
        self.assertEqual(rows, [(str(n), str(n))])

    def test_wrong_password_and_unreachable_host_are_clear_errors(self):
        self.dovecot.deliver(mail(1))
        bad = self.sync(self.write_config(password="not-it-at-all", name="bad.toml"), check=False)
        self.assertEqual(bad.returncode, 1)
        self.assertIn(f"imap {USER}@127.0.0.1:{self.dovecot.port}", bad.stderr)
        self.assertIn("login refused", bad.stderr)
        self.assertNotIn("not-it-at-all", bad.stderr + bad.stdout)
        closed = self.sync(self.write_config(port=free_port(), name="closed.toml"), check=False)
        self.assertEqual(closed.returncode, 1)
        self.assertIn("cannot reach 127.0.0.1", closed.stderr)
        # One failing account does not stop another.
        both = self.write_config(name="both.toml")
        with open(both, "a") as f, open(self.write_config(port=free_port(), name="x.toml")) as g:
            f.write(g.read().replace('workspace = "alpha"', 'workspace = "beta"'))
        mixed = self.sync(both, check=False)
        self.assertEqual(mixed.returncode, 1)
        self.assertIn("(alpha): added 1", mixed.stdout)
        self.assertIn("cannot reach", mixed.stderr)

    def test_the_time_is_the_servers_internaldate_else_the_date_header(self):
        # Date says 2020; the server received it on 1 Dec 2026 09:30 UTC (its INTERNALDATE).
        received = datetime.datetime(2026, 12, 1, 9, 30, tzinfo=datetime.timezone.utc)
        self.dovecot.append(mail(1, date="Wed, 01 Jan 2020 08:00:00 +0100"),
                            internaldate=received)
        self.sync()
        # Stored as milliseconds since 1970.
        self.assertEqual(store_rows(self.data, "SELECT occurred_at FROM episodes"),
                         [(str(int(received.timestamp() * 1000)),)])

    def test_read_and_unread_mail_stay_as_they_were(self):
        for n in (1, 2, 3):
            self.dovecot.deliver(mail(n))
        m = self.dovecot.imap()
        m.select("INBOX")
        self.assertEqual(m.uid("STORE", "2", "+FLAGS", "(\\Seen)")[0], "OK")
        m.logout()
        self.assertIn("added 3", self.sync().stdout)
        m = self.dovecot.imap()
        m.select("INBOX", readonly=True)
        self.assertEqual(m.uid("SEARCH", "UNSEEN")[1][0].split(), [b"1", b"3"])
        self.assertEqual(m.uid("SEARCH", "SEEN")[1][0].split(), [b"2"])
        m.logout()

    def test_a_folder_named_outside_ascii(self):
        m = self.dovecot.imap()
        self.assertEqual(m.create('"B&APw-ro"')[0], "OK")  # "Büro" in modified UTF-7
        m.logout()
        self.dovecot.append(mail(1), folder='"B&APw-ro"')
        self.dovecot.deliver(mail(2))
        config = self.write_config(name="utf7.toml", received='["INBOX", "Büro"]')
        out = self.sync(config).stdout
        self.assertIn("added 2 (INBOX 1, Büro 1, Sent 0)", out)
        self.assertIn("added 0", self.sync(config).stdout)

    def test_a_missing_folder_is_named(self):
        """Dovecot refuses STATUS for a folder it lacks; libcurl says only "Quote command
        returned error". The error names the folder and where it is configured (#48)."""
        self.dovecot.deliver(mail(1))
        config = self.write_config(name="typo.toml", received='["INBOX", "Archiv"]')
        p = self.sync(config, check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f'imap {USER}@127.0.0.1:{self.dovecot.port}: no folder "Archiv" on the '
                      "server", p.stderr)
        self.assertIn("[[connectors.imap]]", p.stderr)
        self.assertNotIn("Quote command", p.stderr)

    def test_a_bad_idle_key_is_refused(self):
        bad = self.sync(self.write_config(name="idle.toml", extra='idle = "yes"\n'), check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("connectors.imap[0].idle must be true or false", bad.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.data, "cortex.db")))

    def test_implicit_tls(self):
        self.dovecot.deliver(mail(1))
        config = self.write_config(name="imaps.toml")
        with open(config) as f:
            text = f.read().replace(f"imap://127.0.0.1:{self.dovecot.port}",
                                    f"imaps://127.0.0.1:{self.dovecot.tls_port}")
        with open(config, "w") as f:
            f.write(text)
        self.assertIn("added 1", self.sync(config).stdout)


def count(data, external_id):
    return int(store_rows(data, "SELECT count(*) FROM episodes WHERE external_id ="
                                f" '{external_id}'")[0][0])


def wait_for(predicate, seconds):
    """Seconds until `predicate()` held, or None if it did not within `seconds`."""
    start = time.monotonic()
    while time.monotonic() < start + seconds:
        if predicate():
            return time.monotonic() - start
        time.sleep(0.05)
    return None


class TestMailWhileServing(ImapCase):
    def serve(self, extra):
        config = self.write_config(name="serve.toml", extra=extra)
        create_token(self.data, "alpha", "read")  # makes the data directory and workspace
        server = Server(self.data, ["--config", config])
        self.addCleanup(server.kill)
        return server

    def test_idle_brings_new_mail_within_seconds_and_survives_a_server_restart(self):
        self.dovecot.deliver(mail(1))
        # A pass every 5 minutes: only IDLE can bring mail in seconds.
        server = self.serve("poll_seconds = 300\n")
        self.assertIsNotNone(wait_for(lambda: count(self.data, "m1@h.example") == 1, 10),
                             server.read_log())
        self.assertIsNotNone(wait_for(lambda: "watching INBOX (IDLE)" in server.read_log(), 10))
        took = []
        for n in (2, 3):
            self.dovecot.append(mail(n, subject="Urgent: server down",
                                     body="The server is down. Call me."))
            took.append(wait_for(lambda: count(self.data, f"m{n}@h.example") == 1, 5))
            self.assertIsNotNone(took[-1], f"m{n} not stored within 5 s: " + server.read_log())
            self.assertLess(took[-1], 2.5, server.read_log())
        # It was triaged as it was stored.
        rows = store_rows(self.data, "SELECT count(*) FROM notifications n JOIN episodes e ON"
                                     " e.id = n.episode_id WHERE e.external_id = 'm3@h.example'")
        self.assertEqual(rows, [("1",)])

        # Dovecot goes away mid-IDLE; mail delivered while it is down, and mail appended
        # after it is back, both arrive.
        self.dovecot.stop()
        self.dovecot.deliver(mail(4, body="Delivered while the server was down."))
        time.sleep(1.5)
        self.dovecot.start()
        self.dovecot.append(mail(5, body="Appended after the restart."))
        self.assertIsNotNone(wait_for(lambda: count(self.data, "m5@h.example") == 1, 15),
                             server.read_log())
        self.assertEqual(count(self.data, "m4@h.example"), 1)
        self.assertIn("IDLE connection lost", server.read_log())
        # Once watching again, mail is back to arriving in seconds.
        self.assertIsNotNone(wait_for(lambda: server.read_log().count("watching INBOX (IDLE)")
                                      >= 2, 10), server.read_log())
        self.dovecot.append(mail(6))
        took.append(wait_for(lambda: count(self.data, "m6@h.example") == 1, 5))
        self.assertIsNotNone(took[-1], "m6 not stored within 5 s: " + server.read_log())
        self.assertLess(took[-1], 2.5)
        self.assertEqual(store_rows(self.data, "SELECT count(*), count(DISTINCT external_id)"
                                               " FROM episodes"), [("6", "6")])
        print(f"\nIDLE: new mail stored in {', '.join(f'{t:.2f}' for t in took)} s",
              file=sys.stderr)
        self.assertEqual(server.terminate(timeout=10), 0)


    def test_idle_false_polls_a_server_that_has_idle(self):
        server = self.serve("poll_seconds = 1\nidle = false\n")
        self.dovecot.append(mail(1))
        took = wait_for(lambda: count(self.data, "m1@h.example") == 1, 5)
        self.assertIsNotNone(took, server.read_log())
        self.assertNotIn("IDLE", server.read_log())
        self.assertEqual(server.terminate(timeout=10), 0)


class TestMailWithoutIdle(ImapCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-imap-")
        # A server that does not offer IDLE (the capability list without it).
        self.dovecot = Dovecot(self.tmp.name, extra_conf="imap_capability = IMAP4rev1 LITERAL+"
                                                         " UIDPLUS\n")
        self.data = os.path.join(self.tmp.name, "data")
        self.config = self.write_config()

    def test_new_mail_is_triaged_within_seconds_by_polling(self):
        self.dovecot.deliver(mail(1))
        config = self.write_config(name="serve.toml", extra="poll_seconds = 1\n")
        create_token(self.data, "alpha", "read")  # makes the data directory and workspace
        server = Server(self.data, ["--config", config])
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and store_rows(
                    self.data, "SELECT count(*) FROM episodes") != [("1",)]:
                time.sleep(0.1)
            self.dovecot.deliver(mail(2, subject="Urgent: server down",
                                      body="The server is down. Call me."))
            arrived = time.monotonic()
            notified = None
            while time.monotonic() < arrived + 5:
                rows = store_rows(self.data, "SELECT count(*) FROM notifications n JOIN episodes"
                                             " e ON e.id = n.episode_id WHERE e.external_id ="
                                             " 'm2@h.example'")
                if rows == [("1",)]:
                    notified = time.monotonic() - arrived
                    break
                time.sleep(0.1)
            self.assertIsNotNone(notified, "new mail not triaged within 5 s: " + server.read_log())
            self.assertIn("the server offers no IDLE; reading every 1 s", server.read_log())
        finally:
            self.assertEqual(server.terminate(timeout=10), 0)
            server.kill()


if __name__ == "__main__":
    unittest.main()
