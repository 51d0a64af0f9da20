"""Calendars in: an ICS feed served over http by the test, and a real Radicale (Debian's
radicale, started here on 127.0.0.1 with a throwaway config, users file and storage) read
over CalDAV, by `cortex sync` and `cortex serve --config` with [[connectors.calendar]].
The process clock is frozen (CORTEX_FAKE_NOW) so the window is known. Python 3 stdlib only.

    CORTEX_BIN=$PWD/build/cortex python3 -m unittest discover -s tests/e2e -t tests/e2e \\
        -p 'test_calendar.py'
"""

import datetime
import functools
import http.client
import http.server
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
import time
import unittest
import base64

from test_http import CORTEX_BIN, Server, store_rows
from test_smtp import make_cert

RADICALE = shutil.which("radicale") or "/usr/bin/radicale"
USER, PASSWORD = "me", "cal pass 1"
NOW = "2026-10-20T12:00:00Z"  # a Tuesday; summer time in Berlin ends on Sunday 25 October
ENV = {"CORTEX_FAKE_NOW": NOW}

BERLIN = (
    "BEGIN:VTIMEZONE\r\nTZID:Europe/Berlin\r\n"
    "BEGIN:DAYLIGHT\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\nTZNAME:CEST\r\n"
    "DTSTART:19700329T020000\r\nRRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU\r\nEND:DAYLIGHT\r\n"
    "BEGIN:STANDARD\r\nTZOFFSETFROM:+0200\r\nTZOFFSETTO:+0100\r\nTZNAME:CET\r\n"
    "DTSTART:19701025T030000\r\nRRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU\r\nEND:STANDARD\r\n"
    "END:VTIMEZONE\r\n")


def vevent(uid, start, end, summary, extra=""):
    return (f"BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20261001T000000Z\r\nDTSTART{start}\r\n"
            f"DTEND{end}\r\nSUMMARY:{summary}\r\n{extra}END:VEVENT\r\n")


def vcalendar(*events):
    return ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//cortex tests//EN\r\n" + BERLIN +
            "".join(events) + "END:VCALENDAR\r\n")


# Every Monday 09:00-11:00 in Berlin, 12 October to 16 November, but not 19 October.
WEEKLY_FOCUS = vevent("weekly-focus", ";TZID=Europe/Berlin:20261012T090000",
                      ";TZID=Europe/Berlin:20261012T110000", "Deep work",
                      "RRULE:FREQ=WEEKLY;COUNT=6\r\nEXDATE;TZID=Europe/Berlin:20261019T090000\r\n")
MEETING = vevent("harborline", ":20261022T150000Z", ":20261022T154500Z", "Harborline sync",
                 "ORGANIZER;CN=Me:mailto:me@example.test\r\n"
                 "ATTENDEE;CN=Marcus Webb:mailto:marcus@harborline.example\r\n")
REVIEW = vevent("review", ":20261023T090000Z", ":20261023T110000Z", "Focus: review")
FRIDAY = vevent("friday", ":20261030T090000Z", ":20261030T110000Z", "Focus Friday")


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def ms(text):
    return int(datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def iso(millis):
    return datetime.datetime.fromtimestamp(int(millis) / 1000, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def standing_blocks(data):
    """The focus blocks triage counts: (start, end, subject), by start."""
    rows = store_rows(data, "SELECT occurred_at, ends_at, subject FROM episodes e"
                            " WHERE kind = 'calendar_block' AND NOT EXISTS (SELECT 1 FROM"
                            " episode_retractions r WHERE r.episode_id = e.id)"
                            " ORDER BY occurred_at")
    return [(iso(a), iso(b), s) for a, b, s in rows]


class Radicale:
    """A private Radicale with one user and one calendar collection, /me/cal/."""

    def __init__(self, directory, port=None):
        self.dir = os.path.join(directory, "radicale")
        os.makedirs(self.dir)
        users = os.path.join(self.dir, "users")
        with open(users, "w") as f:
            f.write(f"{USER}:{PASSWORD}\n")
        self.port = port or free_port()
        conf = os.path.join(self.dir, "config")
        with open(conf, "w") as f:
            f.write(f"[server]\nhosts = 127.0.0.1:{self.port}\n"
                    f"[auth]\ntype = htpasswd\nhtpasswd_filename = {users}\n"
                    "htpasswd_encryption = plain\n"
                    f"[storage]\nfilesystem_folder = {self.dir}/collections\n"
                    "[rights]\ntype = owner_only\n[logging]\nlevel = warning\n")
        self.log = open(os.path.join(self.dir, "log"), "wb")
        self.proc = subprocess.Popen([RADICALE, "--config", conf], stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 15
        while True:
            try:
                self.request("PROPFIND", "/", headers={"Depth": "0"})
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("radicale did not start: " + self.read_log())
                time.sleep(0.1)
        status = self.request(
            "MKCOL", "/me/cal/",
            '<?xml version="1.0"?><D:mkcol xmlns:D="DAV:" '
            'xmlns:C="urn:ietf:params:xml:ns:caldav"><D:set><D:prop><D:resourcetype>'
            "<D:collection/><C:calendar/></D:resourcetype></D:prop></D:set></D:mkcol>",
            {"Content-Type": "application/xml"})
        assert status == 201, status
        self.url = f"http://127.0.0.1:{self.port}/me/cal/"

    def read_log(self):
        with open(os.path.join(self.dir, "log"), "rb") as f:
            return f.read().decode("utf-8", "replace")[-3000:]

    def request(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        c.request(method, path, body=body.encode() if body else None,
                  headers={"Authorization": "Basic " + auth, **(headers or {})})
        r = c.getresponse()
        r.read()
        c.close()
        return r.status

    def put(self, name, ics):
        status = self.request("PUT", f"/me/cal/{name}.ics", ics,
                              {"Content-Type": "text/calendar; charset=utf-8"})
        assert status in (201, 204), status

    def delete(self, name):
        assert self.request("DELETE", f"/me/cal/{name}.ics") in (200, 204)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class FeedServer:
    """An ICS feed over plain http: the files of a directory, from a thread."""

    def __init__(self, directory, cert=None, key=None):
        self.dir = directory
        handler = functools.partial(Quiet, directory=directory)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        if cert:  # https, with a certificate of a CA only the test knows
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def write(self, name, ics):
        with open(os.path.join(self.dir, name), "w", newline="") as f:
            f.write(ics)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class CalendarCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-calendar-")
        self.data = os.path.join(self.tmp.name, "data")
        feed_dir = os.path.join(self.tmp.name, "feed")
        os.makedirs(feed_dir)
        self.feed = FeedServer(feed_dir)
        self.radicale = Radicale(self.tmp.name)

    def tearDown(self):
        self.feed.stop()
        self.radicale.stop()
        self.tmp.cleanup()

    def config(self, feed=True, caldav=True, password=PASSWORD, name="cortex.toml", extra=""):
        secret = os.path.join(self.tmp.name, name + ".secret")
        with open(secret, "w") as f:
            f.write(password + "\n")
        text = ""
        if feed:
            text += ("[[connectors.calendar]]\n"
                     'workspace = "alpha"\n'
                     f'url = "http://127.0.0.1:{self.feed.port}/me.ics"\n'
                     'self = ["me@example.test"]\n'
                     "past_days = 30\nfuture_days = 60\n" + extra)
        if caldav:
            text += ("[[connectors.calendar]]\n"
                     'workspace = "alpha"\n'
                     f'url = "{self.radicale.url}"\n'
                     f'username = "{USER}"\n'
                     f'password_file = "{secret}"\n'
                     'focus = ["focus", "deep work"]\n'
                     'self = ["me@example.test"]\n'
                     "past_days = 30\nfuture_days = 60\n" + extra)
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def sync(self, config, check=True):
        p = subprocess.run([CORTEX_BIN, "sync", "--data", self.data, "--config", config],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, **ENV})
        if check and p.returncode != 0:
            raise AssertionError(f"cortex sync failed ({p.returncode}): {p.stderr}")
        return p


class TestIcsFeed(CalendarCase):
    def test_a_recurring_block_across_dst_once(self):
        self.feed.write("me.ics", vcalendar(WEEKLY_FOCUS, MEETING))
        config = self.config(caldav=False)
        first = self.sync(config)
        self.assertIn(f"calendar 127.0.0.1:{self.feed.port}/me.ics (alpha): added 6, "
                      "0 unchanged", first.stdout)
        # 09:00 in Berlin: 07:00Z in summer time, 08:00Z from 26 October on; 19 October is
        # an exception (EXDATE).
        self.assertEqual(standing_blocks(self.data), [
            ("2026-10-12T07:00:00Z", "2026-10-12T09:00:00Z", "Deep work"),
            ("2026-10-26T08:00:00Z", "2026-10-26T10:00:00Z", "Deep work"),
            ("2026-11-02T08:00:00Z", "2026-11-02T10:00:00Z", "Deep work"),
            ("2026-11-09T08:00:00Z", "2026-11-09T10:00:00Z", "Deep work"),
            ("2026-11-16T08:00:00Z", "2026-11-16T10:00:00Z", "Deep work"),
        ])
        meeting = store_rows(self.data, "SELECT e.summary, n.name, e.channel FROM episodes e"
                                        " JOIN entities n ON n.id = e.entity_id"
                                        " WHERE e.kind = 'meeting'")
        self.assertEqual(meeting, [("Harborline sync with Marcus Webb", "Marcus Webb",
                                    "calendar")])
        second = self.sync(config)
        self.assertIn("added 0, 6 unchanged", second.stdout)
        self.assertEqual(store_rows(self.data, "SELECT count(*) FROM episodes"), [("6",)])


    def test_an_https_feed_with_a_private_ca(self):
        tls_dir = os.path.join(self.tmp.name, "tls")
        os.makedirs(tls_dir)
        cert, key = make_cert(tls_dir)
        feed = FeedServer(tls_dir, cert, key)
        try:
            feed.write("me.ics", vcalendar(REVIEW))
            url = f"https://127.0.0.1:{feed.port}/me.ics"
            trusted = os.path.join(self.tmp.name, "https.toml")
            with open(trusted, "w") as f:
                f.write(f'[[connectors.calendar]]\nworkspace = "alpha"\nurl = "{url}"\n'
                        f'ca_file = "{cert}"\n')
            self.assertIn("added 1, 0 unchanged", self.sync(trusted).stdout)
            untrusted = os.path.join(self.tmp.name, "untrusted.toml")
            with open(untrusted, "w") as f:
                f.write(f'[[connectors.calendar]]\nworkspace = "beta"\nurl = "{url}"\n')
            p = self.sync(untrusted, check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn(f"error: calendar 127.0.0.1:{feed.port}/me.ics:", p.stderr)
            self.assertIn("(TLS failed)", p.stderr)
        finally:
            feed.stop()


class TestCalDav(CalendarCase):
    def test_changes_are_picked_up_and_triage_uses_the_calendar_as_it_stands(self):
        r = self.radicale
        r.put("weekly", vcalendar(WEEKLY_FOCUS))
        r.put("harborline", vcalendar(MEETING))
        r.put("review", vcalendar(REVIEW))
        r.put("friday", vcalendar(FRIDAY))
        config = self.config(feed=False)
        first = self.sync(config)
        self.assertIn(f"calendar {USER}@127.0.0.1:{r.port}/me/cal/ (alpha): added 8, "
                      "0 unchanged, fetched 4", first.stdout)
        again = self.sync(config)
        self.assertIn("added 0, 8 unchanged", again.stdout)
        self.assertNotIn("fetched", again.stdout)  # no ETag changed: nothing fetched

        # One instance of the weekly series moves (a RECURRENCE-ID override: 2 November,
        # 14:00-16:00 in Berlin); the review moves to the afternoon; Friday's block is
        # cancelled (STATUS); the Harborline meeting is deleted.
        r.put("weekly", vcalendar(WEEKLY_FOCUS, vevent(
            "weekly-focus", ";TZID=Europe/Berlin:20261102T140000",
            ";TZID=Europe/Berlin:20261102T160000", "Deep work",
            "RECURRENCE-ID;TZID=Europe/Berlin:20261102T090000\r\n")))
        r.put("review", vcalendar(REVIEW.replace("20261023T090000Z", "20261023T130000Z")
                                  .replace("20261023T110000Z", "20261023T150000Z")))
        r.put("friday", vcalendar(FRIDAY.replace("SUMMARY", "STATUS:CANCELLED\r\nSUMMARY")))
        r.delete("harborline")
        changed = self.sync(config)
        self.assertIn("added 0, 2 moved or changed, 2 cancelled or removed, 4 unchanged",
                      changed.stdout)
        self.assertIn("fetched 3", changed.stdout)
        blocks = standing_blocks(self.data)
        self.assertEqual([b for b in blocks if b[2] == "Deep work"], [
            ("2026-10-12T07:00:00Z", "2026-10-12T09:00:00Z", "Deep work"),
            ("2026-10-26T08:00:00Z", "2026-10-26T10:00:00Z", "Deep work"),
            ("2026-11-02T13:00:00Z", "2026-11-02T15:00:00Z", "Deep work"),
            ("2026-11-09T08:00:00Z", "2026-11-09T10:00:00Z", "Deep work"),
            ("2026-11-16T08:00:00Z", "2026-11-16T10:00:00Z", "Deep work"),
        ])
        self.assertIn(("2026-10-23T13:00:00Z", "2026-10-23T15:00:00Z", "Focus: review"), blocks)
        self.assertNotIn(("2026-10-23T09:00:00Z", "2026-10-23T11:00:00Z", "Focus: review"),
                         blocks)
        self.assertFalse([b for b in blocks if b[2] == "Focus Friday"], blocks)
        # Nothing stored was edited or deleted: four episodes retracted, ten in all.
        self.assertEqual(store_rows(self.data, "SELECT count(*) FROM episode_retractions"),
                         [("4",)])
        self.assertEqual(store_rows(self.data, "SELECT count(*) FROM episodes"), [("10",)])
        self.assertIn("added 0, 6 unchanged", self.sync(config).stdout)

        # Triage: a message during Monday's block (after the DST change) is held until it
        # ends; one at the review's old time is not held for a block that moved away.
        batch = os.path.join(self.tmp.name, "mail.jsonl")
        with open(batch, "w") as f:
            for ext, at in (("m-monday", "2026-10-26T08:30:00Z"),
                            ("m-review", "2026-10-23T10:00:00Z")):
                f.write(json.dumps({
                    "type": "episode", "kind": "message_received", "occurred_at": at,
                    "counterparty": "sarah@northwind.example", "summary": "Sarah: 'a question'",
                    "external_id": ext}) + "\n")
        subprocess.run([CORTEX_BIN, "ingest", "--data", self.data, "--workspace", "alpha", batch],
                       check=True, capture_output=True, env={**os.environ, **ENV})
        rows = dict(store_rows(self.data, "SELECT e.external_id, d.details FROM decisions d"
                                          " JOIN notifications n ON n.decision_id = d.id"
                                          " JOIN episodes e ON e.id = n.episode_id"))
        monday = json.loads(rows["m-monday"])
        signals = {s["kind"]: s["summary"] for s in monday["signals"]}
        self.assertIn("active_focus_block", signals, monday)
        self.assertIn("Calendar block 'Deep work' active until", signals["active_focus_block"])
        review = json.loads(rows["m-review"])
        self.assertNotIn("active_focus_block", {s["kind"] for s in review["signals"]}, review)

    def test_bad_credentials_name_the_calendar_and_do_not_stop_the_others(self):
        self.feed.write("me.ics", vcalendar(REVIEW))
        self.radicale.put("review", vcalendar(REVIEW))
        config = self.config(password="wrong password")
        p = self.sync(config, check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"error: calendar {USER}@127.0.0.1:{self.radicale.port}/me/cal/: HTTP 401"
                      " (login refused: check username and password)", p.stderr)
        self.assertNotIn("wrong password", p.stderr + p.stdout)
        # The feed of the same workspace was read all the same.
        self.assertIn(f"calendar 127.0.0.1:{self.feed.port}/me.ics (alpha): added 1", p.stdout)

    def test_a_bad_calendar_table_is_refused_naming_the_key(self):
        cases = [
            ('url = "ftp://127.0.0.1/me.ics"\n', "connectors.calendar[0].url must start with "
                                                  "https://, http:// or file://"),
            ('url = "http://127.0.0.1/me.ics"\ncolour = "red"\n',
             "unknown key 'connectors.calendar[0].colour'"),
            ('url = "http://127.0.0.1/me.ics"\npassword = "x"\n',
             "connectors.calendar[0]. has a password but no username"),
            ('url = "http://127.0.0.1/me.ics"\nfuture_days = 0\n',
             "connectors.calendar[0].future_days must be between 1 and 3650"),
            ('url = "file:///tmp/x"\nprotocol = "caldav"\n',
             "a CalDAV url is https:// or http://"),
        ]
        for i, (keys, message) in enumerate(cases):
            path = os.path.join(self.tmp.name, f"bad{i}.toml")
            with open(path, "w") as f:
                f.write('[[connectors.calendar]]\nworkspace = "alpha"\n' + keys)
            p = self.sync(path, check=False)
            self.assertNotEqual(p.returncode, 0, keys)
            self.assertIn(message, p.stderr, keys)
        self.assertFalse(os.path.exists(os.path.join(self.data, "cortex.db")))

    def test_an_unreachable_server_is_a_clear_error(self):
        dead = free_port()
        path = os.path.join(self.tmp.name, "dead.toml")
        with open(path, "w") as f:
            f.write("[[connectors.calendar]]\nworkspace = \"alpha\"\n"
                    f'url = "http://127.0.0.1:{dead}/me/cal/"\n')
        p = self.sync(path, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"error: calendar 127.0.0.1:{dead}/me/cal/:", p.stderr)
        self.assertIn(f"(cannot reach 127.0.0.1:{dead})", p.stderr)

    def test_serve_polls_the_calendar(self):
        config = self.config(feed=False, extra="poll_seconds = 1\n")
        os.makedirs(self.data)
        server = Server(self.data, ["--config", config], env=ENV)
        try:
            self.radicale.put("friday", vcalendar(FRIDAY))
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                if [b for b in standing_blocks(self.data) if b[2] == "Focus Friday"]:
                    break
                time.sleep(0.2)
            else:
                self.fail("serve never read the new event: " + server.read_log())
            self.radicale.delete("friday")
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                if not [b for b in standing_blocks(self.data) if b[2] == "Focus Friday"]:
                    break
                time.sleep(0.2)
            else:
                self.fail("serve never saw the event go: " + server.read_log())
        finally:
            self.assertEqual(server.terminate(), 0)
            server.kill()


if __name__ == "__main__":
    unittest.main()
