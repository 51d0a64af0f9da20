"""What the fault harnesses share (Python 3 stdlib only): kill9.py (`cortex serve` SIGKILLed
under load) and pg_crash.py (PostgreSQL crashed under load) both drive action.communicate,
approve, reject and ingest from client threads, record what the clients were told, take the
deliveries at a webhook receiver of their own, wait for the scheduled work to be done and then
check the store and the receiver against what was acknowledged.
"""

import hashlib
import hmac
import http.client
import http.server
import json
import re
import sys
import threading
import time
import traceback
from datetime import datetime, timedelta, timezone

LEVELS = (1, 2, 3)
LEVEL_RE = re.compile(r"trust level (\d)")


class HarnessError(Exception):
    pass


def now_iso(offset_s=0):
    t = datetime.now(timezone.utc) + timedelta(seconds=offset_s)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------------------------
# The webhook receiver
# --------------------------------------------------------------------------------------------

class Receiver:
    """Records every POST. An accepted POST (the receiver acted on it) is one whose
    signature (HMAC-SHA256 with `secret`) checked out and that was not answered 503 on
    purpose (a share `fail_rate` of them, drawn from `rng`); it is recorded before the
    answer is written, as a real receiver would apply it before acknowledging.
    `quiet_resets`: a sender that resets the connection mid-request (SIGKILLed) is expected,
    not reported."""

    def __init__(self, secret, fail_rate=0.0, rng=None, quiet_resets=False):
        self.lock = threading.Lock()
        self.posts = []  # dicts: key, action_id, sig_ok, accepted, content, body, to, at
        self.secret = secret
        self.fail_rate = fail_rate
        self.rng = rng
        self.kill_hook = None  # set by the main thread: called (once) on the next POST
        self.last_post_at = 0.0
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                receiver.handle(self, raw)

        class Quiet(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                if not quiet_resets:
                    super().handle_error(request, client_address)

        self.httpd = Quiet(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hooks/cortex"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def handle(self, h, raw):
        key = h.headers.get("Idempotency-Key", "")
        sig = h.headers.get("X-Cortex-Signature", "")
        want = "sha256=" + hmac.new(self.secret.encode(), raw, hashlib.sha256).hexdigest()
        sig_ok = hmac.compare_digest(sig, want)
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = {}
        content = (doc.get("workspace_id"), doc.get("to"), doc.get("body"), doc.get("queued_at"))
        with self.lock:
            hook, self.kill_hook = self.kill_hook, None
            fail = (hook is None and sig_ok and self.fail_rate > 0 and
                    self.rng.random() < self.fail_rate)
            accepted = sig_ok and not fail
            self.posts.append({"key": key, "action_id": doc.get("action_id"), "sig_ok": sig_ok,
                               "accepted": accepted, "content": content,
                               "body": doc.get("body") or "", "to": doc.get("to"),
                               "at": time.time(), "killed_here": hook is not None})
            self.last_post_at = time.monotonic()
        if hook is not None:
            hook()  # SIGKILL the server before it can hear the answer
        status = 200 if accepted else (401 if not sig_ok else 503)
        try:
            h.send_response(status)
            h.send_header("Content-Length", "0")
            h.end_headers()
        except OSError:
            pass

    def snapshot(self):
        with self.lock:
            return list(self.posts)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def accepted_by_key(posts):
    """The accepted POSTs by Idempotency-Key, and how many came again under a key already
    accepted (a redelivery after a crash between the POST and its record: allowed)."""
    accepted = {}
    for p in posts:
        if p["accepted"]:
            accepted.setdefault(p["key"], []).append(p)
    return accepted, sum(len(v) - 1 for v in accepted.values())


# --------------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------------

def http_exchange(port, method, path, body, headers, timeout):
    """One request on a connection of its own: (status, {lowercased header: value}, body
    bytes). OSError and http.client.HTTPException go to the caller."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        c.close()


def episodes_request(token, lines):
    """The body and headers of a POST /v1/episodes of `lines` (JSONL)."""
    body = ("\n".join(json.dumps(l) for l in lines) + "\n").encode()
    return body, {"Authorization": "Bearer " + token, "Content-Type": "application/x-ndjson"}


def seed_entities(domain, per_level, handles=False):
    """JSONL lines of `per_level` counterparties tagged l1, l2 and l3 at `domain` (with an
    @handle each when `handles`), and their (address, level)."""
    lines, entities = [], []
    for level in LEVELS:
        for i in range(per_level):
            addr = f"seed{level}-{i}@{domain}"
            ids = [addr, f"@seed{level}x{i}"] if handles else [addr]
            lines.append({"type": "entity", "name": f"Seed {level}-{i}", "identifiers": ids,
                          "tags": [f"l{level}"]})
            entities.append((addr, level))
    return lines, entities


# --------------------------------------------------------------------------------------------
# The load
# --------------------------------------------------------------------------------------------

class Book:
    """What the clients were told; shared by all threads. Each harness adds its own records
    to `counts` (bump) and the violations seen while running to `problems`."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.problems = []

    def bump(self, key, n=1):
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + n

    def problem(self, text):
        with self.lock:
            self.problems.append(text)


class LoadClient(threading.Thread):
    """A client thread: until `stop` is set, `step(r)` with r drawn from `rng` in [0, 1)
    (the subclass picks its operation by it), then a sleep of up to `pace` seconds. An
    exception is a harness bug: it ends the thread and is kept in `error`."""

    def __init__(self, idx, book, stop, rng, pace):
        super().__init__(name=f"client-{idx}", daemon=True)
        self.idx = idx
        self.book = book
        self.stop = stop
        self.rng = rng
        self.pace = pace
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                self.step(self.rng.random())
                time.sleep(self.rng.uniform(0, self.pace))
        except Exception:  # a harness bug: report it, do not hide it
            self.error = traceback.format_exc()

    def step(self, r):
        raise NotImplementedError


def stop_clients(stop, clients):
    """Stops the load and waits for every client (finishing its retries)."""
    stop.set()
    for c in clients:
        c.join(60)
        if c.is_alive():
            raise HarnessError(f"{c.name} did not stop")
        if c.error:
            raise HarnessError(f"{c.name} failed:\n{c.error}")


def wait_settled(poll, timeout, interval):
    """Calls `poll()` -> (done, what is left) every `interval` s until done. Returns
    (settled, seconds, what was left)."""
    t0 = time.monotonic()
    left = None
    while time.monotonic() - t0 < timeout:
        done, left = poll()
        if done:
            return True, time.monotonic() - t0, left
        time.sleep(interval)
    return False, time.monotonic() - t0, left


def report_failures(prog, failures, context=None, shown=60):
    """Prints the violations (the first `shown`, each followed by the lines `context(f)`
    gives) on stderr. Returns True when there were none."""
    if not failures:
        return True
    print(f"{prog}: FAIL: {len(failures)} violation(s):", file=sys.stderr)
    for f in failures[:shown]:
        print("  - " + f, file=sys.stderr)
        for line in context(f) if context else []:
            print("      " + line, file=sys.stderr)
    if len(failures) > shown:
        print(f"  ... and {len(failures) - shown} more", file=sys.stderr)
    return False
