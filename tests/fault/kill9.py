#!/usr/bin/env python3
"""kill -9 durability harness for `cortex serve` (Python 3 stdlib only).

Drives a bounded mixed load against one data directory -- action.communicate to
counterparties at trust levels 1, 2 and 3 (each client an agent with a read,act token),
action.approve (some with edits, some twice at once, some retried after a lost reply) and
action.reject (with each client's person's read,approve token), and POST /v1/episodes
batches --
and SIGKILLs the server at random moments, restarting it on the same --data each time.
Delivery goes through the webhook connector to a receiver in this process, which checks
every signature and records every POST with its Idempotency-Key.

After the last restart it lets the server settle (every executed action delivered, every
undo window passed) and checks:

  * every decision_id a client received is inspectable (decision.inspect), its action is
    explainable (meta.why_this_action), and its final status agrees with every answer the
    server gave about it (an approved one is delivered, a rejected one never delivered,
    a level-3 "success" delivered, a level-2 draft nobody rejected delivered);
  * `cortex ledger verify` passes;
  * every action the server reports delivered was accepted by the receiver, and every
    action the receiver accepted is reported delivered: none lost;
  * no action was delivered twice: a redelivery under the same Idempotency-Key with the
    same body is acknowledged by the receiver and counted as redelivered_same_key; the same
    message under two keys, one key with two bodies, or two actions for one decision is a
    duplicate;
  * per action, the ledger (read from the SQLite store) holds at most one approved,
    executed and delivered entry, never executed after rejected/expired/refused, and
    executed actions have an outbox row; every approved and rejected entry names the
    person's token that made it (by: {"channel": "mcp", "token_id": ...});
  * every episode of an acknowledged ingest batch is stored; a batch whose reply was lost
    is stored whole or not at all.

It prints one summary line

  kills=20 acknowledged_decisions=N executed=E delivered=D lost=0 duplicates=0
  redelivered_same_key=R ledger=ok ingest_acknowledged=I ingest_lost=0 ...

and exits 0, or prints every violation (with the server log lines that name the actions
involved) and exits 1. Exit 2: the harness itself failed (setup, the overall deadline).

    CORTEX_BIN=build/cortex python3 tests/fault/kill9.py              # 20 kills
    CORTEX_BIN=build/cortex python3 tests/fault/kill9.py --kills 5    # short form

Where the kills land: after a random 0.2-1.0 s of life; about half of them (--inflight-bias)
wait, at most 1 s more, until a client request is on the wire, so replies get lost; and
kills // 10 of them (--kills-in-delivery) are made by the receiver the moment a webhook
POST arrives, before it answers. A kill between the dispatcher's lease and its record
leaves the row leased until `delivery.lease_seconds` (set to 3 s here; 60 s by default)
runs out; the next incarnation then delivers it again under the same Idempotency-Key.
"""

import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from faultlib import (LEVEL_RE, LEVELS, Book as BaseBook, HarnessError, LoadClient, Receiver,
                      accepted_by_key, episodes_request, http_exchange, now_iso,
                      report_failures, seed_entities, stop_clients, wait_settled)

MODERN = "2026-07-28"
WORKSPACE = "fault"
SECRET = "kill9-webhook-secret"
TONES = (None, "neutral", "direct", "warm", "formal")
NONCE_RE = re.compile(r"k9n=([0-9a-f]{16})")
NOT_PENDING_RE = re.compile(r"is (\w+), not pending")

# Where each decision status may still go (pending -> executed -> delivered | failed).
LATER = {
    "pending": {"pending", "executed", "delivered", "failed", "rejected", "expired"},
    "executed": {"executed", "delivered", "failed"},
    "delivered": {"delivered"},
    "failed": {"failed"},
    "rejected": {"rejected"},
    "expired": {"expired"},
    "refused": {"refused"},
}


# --------------------------------------------------------------------------------------------
# The server under test
# --------------------------------------------------------------------------------------------

class Server:
    def __init__(self, bin_path, data_dir, config_path, log_dir):
        self.bin = bin_path
        self.data = data_dir
        self.config = config_path
        self.log_dir = log_dir
        self.lock = threading.Lock()
        self.proc = None
        self.port = None
        self.incarnation = 0
        self.log_paths = []
        self.unexpected_exits = []  # (incarnation, returncode)

    def start(self, timeout=20):
        with self.lock:
            self.incarnation += 1
            n = self.incarnation
        log_path = os.path.join(self.log_dir, f"serve-{n:03d}.log")
        self.log_paths.append(log_path)
        log = open(log_path, "wb")
        proc = subprocess.Popen(
            [self.bin, "serve", "--data", self.data, "--listen", "127.0.0.1:0", "--config",
             self.config], stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        pattern = re.compile(rb"listening on http://127\.0\.0\.1:(\d+)/mcp")
        deadline = time.monotonic() + timeout
        port = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise HarnessError(f"cortex serve (incarnation {n}) exited {proc.returncode} at "
                                   f"start:\n{tail(log_path)}")
            with open(log_path, "rb") as f:
                m = pattern.search(f.read())
            if m:
                port = int(m.group(1))
                break
            time.sleep(0.02)
        if port is None:
            proc.kill()
            raise HarnessError(f"cortex serve (incarnation {n}) never said where it listens:\n"
                               f"{tail(log_path)}")
        with self.lock:
            self.proc, self.port = proc, port
        while time.monotonic() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/healthz")
                r = c.getresponse()
                r.read()
                c.close()
                if r.status == 200:
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.02)
        raise HarnessError(f"incarnation {n}: GET /healthz never answered 200")

    def current(self):
        with self.lock:
            return self.port, self.incarnation

    def kill9(self):
        """SIGKILL. Returns "killed", "dead" (it had exited by itself) or "none"."""
        with self.lock:
            proc = self.proc
            if proc is None:
                return "none"
            alive = proc.poll() is None
            if alive:
                proc.send_signal(signal.SIGKILL)
            else:
                self.unexpected_exits.append((self.incarnation, proc.returncode))
            self.proc, self.port = None, None
        proc.wait()
        return "killed" if alive else "dead"

    def terminate(self, timeout=12):
        with self.lock:
            proc, self.proc, self.port = self.proc, None, None
        if proc is None:
            return None
        if proc.poll() is not None:
            self.unexpected_exits.append((self.incarnation, proc.returncode))
            return proc.returncode
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return "timeout"

    def force_stop(self):
        with self.lock:
            proc, self.proc, self.port = self.proc, None, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def grep_logs(self, needles, limit=12):
        out = []
        for path in self.log_paths:
            try:
                with open(path, "r", errors="replace") as f:
                    for line in f:
                        if any(n in line for n in needles):
                            out.append(f"{os.path.basename(path)}: {line.rstrip()}")
            except OSError:
                pass
        return out[:limit]


def tail(path, n=3000):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-n:]
    except OSError:
        return ""


def cli(bin_path, *args, stdin=None, timeout=60):
    return subprocess.run([bin_path, *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout)


# --------------------------------------------------------------------------------------------
# Talking to the server
# --------------------------------------------------------------------------------------------

class Unknown(Exception):
    """No answer: the request may or may not have been applied (`sent` False: it never
    reached a server, e.g. the connection was refused while the server was down)."""

    def __init__(self, text, sent=True):
        super().__init__(text)
        self.sent = sent


class InFlight:
    """How many client requests are on the wire right now (for kills aimed at them)."""
    lock = threading.Lock()
    n = 0

    @classmethod
    def add(cls, d):
        with cls.lock:
            cls.n += d

    @classmethod
    def now(cls):
        with cls.lock:
            return cls.n


def http_call(port, method, path, body, headers, timeout=10):
    if port is None:
        raise Unknown("no server", sent=False)
    InFlight.add(1)
    try:
        status, h, data = http_exchange(port, method, path, body, headers, timeout)
        return status, h.get("content-type") or "", data
    except ConnectionRefusedError as e:
        raise Unknown(f"{type(e).__name__}: {e}", sent=False) from None
    except (OSError, http.client.HTTPException) as e:
        raise Unknown(f"{type(e).__name__}: {e}") from None
    finally:
        InFlight.add(-1)


_rid = [0]
_rid_lock = threading.Lock()


def call_tool(port, token, name, args, timeout=10):
    """A stateless (2026-07-28) tools/call. Returns (http_status, tool_body_or_None, raw)."""
    with _rid_lock:
        _rid[0] += 1
        rid = _rid[0]
    msg = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
           "params": {"name": name, "arguments": args, "_meta": {
               "io.modelcontextprotocol/protocolVersion": MODERN,
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "kill9", "version": "1.0.0"}}}}
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "Authorization": "Bearer " + token, "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "tools/call", "Mcp-Name": name}
    status, ctype, data = http_call(port, "POST", "/mcp", json.dumps(msg).encode(), headers,
                                    timeout)
    text = data.decode("utf-8", "replace")
    if "text/event-stream" in ctype:
        payloads = [l[5:].strip() for l in text.splitlines() if l.startswith("data:")]
        text = payloads[-1] if payloads else ""
    try:
        doc = json.loads(text)
    except ValueError:
        return status, None, text[:300]
    res = doc.get("result") if isinstance(doc, dict) else None
    if status != 200 or not isinstance(res, dict):
        return status, None, text[:300]
    body = res.get("structuredContent")
    if body is None:
        try:
            body = json.loads(res["content"][0]["text"])
        except (KeyError, IndexError, ValueError, TypeError):
            return status, None, text[:300]
    return status, body, text[:300]


def post_episodes(port, token, lines, timeout=15):
    body, headers = episodes_request(token, lines)
    status, _, data = http_call(port, "POST", "/v1/episodes", body, headers, timeout)
    try:
        return status, json.loads(data)
    except ValueError:
        return status, {"raw": data[:300].decode("utf-8", "replace")}


# --------------------------------------------------------------------------------------------
# What the clients saw
# --------------------------------------------------------------------------------------------

class Book(BaseBook):
    """Everything the clients sent and every answer they got; shared by all threads."""

    def __init__(self):
        super().__init__()
        self.decisions = {}  # decision_id -> dict (see record_communicate)
        self.pending = []  # decision ids awaiting approve/reject (level 1 and 2)
        self.nonces = {}  # nonce -> decision_id or None (reply lost)
        self.entities = []  # (address, level) known to be stored
        self.batches = []  # dicts: lines, external_ids, outcome ('ack'|'unknown'), report
        self.counts = {"communicate": 0, "communicate_unknown": 0,
                       "communicate_not_sent": 0, "approve": 0, "reject": 0,
                       "retries_after_lost_reply": 0, "double_approvals": 0,
                       "no_decision_answers": 0, "http_errors": 0, "ingest_batches": 0,
                       "ingest_unknown": 0, "ingest_resent": 0}


class Client(LoadClient):
    """An agent (`token`: read,act) that drafts and ingests, and its person (`person`:
    read,approve) who approves and rejects the drafts."""

    def __init__(self, idx, server, token, person, book, stop, rng, pace):
        super().__init__(idx, book, stop, rng, pace)
        self.server = server
        self.token = token
        self.person = person

    def step(self, r):
        if r < 0.45:
            self.communicate()
        elif r < 0.70:
            self.approve()
        elif r < 0.82:
            self.reject()
        else:
            self.ingest()

    # -- helpers

    def port(self):
        return self.server.current()[0]

    def wait_for_server(self, seen_incarnation, until):
        """Until a server is up that is not incarnation `seen_incarnation`."""
        while time.monotonic() < until:
            port, inc = self.server.current()
            if port is not None and inc != seen_incarnation:
                return
            time.sleep(0.05)

    def tool(self, name, args):
        return call_tool(self.port(), self.token, name, args)

    def answer_until_known(self, name, args, budget_s=25):
        """Sends the call, with the person's token, until it gets an answer (retrying across
        restarts, as a real client would after a lost reply). Returns (body_or_None,
        attempts)."""
        until = time.monotonic() + budget_s
        attempts = 0
        while time.monotonic() < until:
            port, inc = self.server.current()
            attempts += 1
            try:
                status, body, raw = call_tool(port, self.person, name, args)
                if body is not None:
                    return body, attempts
                self.book.bump("http_errors")
            except Unknown as e:
                if not e.sent:
                    attempts -= 1  # it never left: not a retry
                    self.wait_for_server(None, until)
                    continue
            self.wait_for_server(inc, until)
        return None, attempts

    # -- operations

    def communicate(self):
        with self.book.lock:
            pool = list(self.book.entities)
        nonce = uuid.uuid4().hex[:16]
        if not pool or self.rng.random() < 0.05:
            to, intended = f"first-{nonce[:10]}@new.k9.example", 1
        else:
            addr, intended = self.rng.choice(pool)
            to = addr
        text = f"k9n={nonce} status update {self.rng.randint(1, 9999)} from client {self.idx}"
        args = {"to": to, "message": text}
        tone = self.rng.choice(TONES)
        if tone:
            args["tone"] = tone
        with self.book.lock:
            self.book.nonces[nonce] = None
            self.book.counts["communicate"] += 1
        try:
            status, body, raw = self.tool("action.communicate", args)
        except Unknown as e:
            self.book.bump("communicate_unknown" if e.sent else "communicate_not_sent")
            if not e.sent:
                self.wait_for_server(None, time.monotonic() + 5)
            return
        if body is None:
            self.book.bump("http_errors")
            return
        did = body.get("decision_id")
        if not did:
            self.book.bump("no_decision_answers")
            return
        st = body.get("status")
        level = None
        m = LEVEL_RE.search(body.get("message", ""))
        if m:
            level = int(m.group(1))
        if st == "error" and body.get("error") == "trust_insufficient":
            seen = "refused"
        elif st == "success":
            seen = "executed"
        elif st == "pending_approval":
            seen = "pending"
        else:
            self.book.problem(f"action.communicate answered an unexpected body with a "
                              f"decision_id: {body}")
            seen = None
        rec = {"decision_id": did, "action_id": body.get("action_id"), "nonce": nonce,
               "to": to, "intended_level": intended, "level": level, "first": st,
               "seen": [seen] if seen else [], "approve_ok": 0, "reject_ok": 0,
               "approve_unknown": 0, "reject_unknown": 0, "edited": None, "answers": [st]}
        with self.book.lock:
            self.book.decisions[did] = rec
            self.book.nonces[nonce] = did
            if seen == "pending":
                self.book.pending.append(did)

    def take_pending(self):
        with self.book.lock:
            if not self.book.pending:
                return None
            i = self.rng.randrange(len(self.book.pending))
            did = self.book.pending.pop(i)
            return self.book.decisions[did]

    def settle_answer(self, rec, verb, body, attempts):
        """Records one approve/reject answer about `rec`."""
        if attempts > 1:
            self.book.bump("retries_after_lost_reply")
        with self.book.lock:
            if body is None:
                rec[verb + "_unknown"] += 1
                return
            rec["answers"].append(f"{verb}:{body.get('status')}:{body.get('error', '')}")
            if body.get("status") == "success":
                rec[verb + "_ok"] += 1
                rec["seen"].append("executed" if verb == "approve" else "rejected")
            elif body.get("error") == "action_engine_error" or "not pending" in body.get(
                    "message", ""):
                m = NOT_PENDING_RE.search(body.get("message", ""))
                if m:
                    rec["seen"].append(m.group(1))
                else:
                    self.book.problems.append(f"{verb} {rec['decision_id']}: unexpected "
                                              f"answer {body}")
            else:
                self.book.problems.append(f"{verb} {rec['decision_id']}: unexpected answer "
                                          f"{body}")

    def approve(self):
        rec = self.take_pending()
        if rec is None:
            return self.communicate()
        # Leave about one draft in six alone: level 1 ones expire, level 2 ones execute.
        if self.rng.random() < 0.17:
            return
        if rec["level"] == 2 and self.rng.random() < 0.3:
            time.sleep(self.rng.uniform(0.7, 1.2))  # race the 1 s undo window
        args = {"decision_id": rec["decision_id"]}
        if self.rng.random() < 0.2:
            args["message"] = f"k9n={rec['nonce']} edited by client {self.idx}"
            with self.book.lock:
                rec["edited"] = args["message"]
        self.book.bump("approve")
        if self.rng.random() < 0.12:
            # Two approvals at once: exactly one may execute.
            self.book.bump("double_approvals")
            results = [None, None]

            def second():
                results[1] = self.answer_until_known("action.approve", args)

            t = threading.Thread(target=second, daemon=True)
            t.start()
            results[0] = self.answer_until_known("action.approve", args)
            t.join(40)
            for r in results:
                if r is not None:
                    self.settle_answer(rec, "approve", *r)
            return
        body, attempts = self.answer_until_known("action.approve", args)
        self.settle_answer(rec, "approve", body, attempts)

    def reject(self):
        rec = self.take_pending()
        if rec is None:
            return self.communicate()
        if rec["level"] == 2 and self.rng.random() < 0.3:
            time.sleep(self.rng.uniform(0.7, 1.2))
        self.book.bump("reject")
        body, attempts = self.answer_until_known(
            "action.reject", {"decision_id": rec["decision_id"], "reason": "kill9 says no"})
        self.settle_answer(rec, "reject", body, attempts)

    def ingest(self):
        bid = uuid.uuid4().hex[:12]
        lines, new_entities = [], []
        if self.rng.random() < 0.5:
            level = self.rng.choice(LEVELS)
            addr = f"p{level}-{bid}@k9.example"
            lines.append({"type": "entity", "name": f"Person {bid}",
                          "identifiers": [addr, f"@k9{bid}"], "tags": [f"l{level}"]})
            new_entities.append((addr, level))
        with self.book.lock:
            pool = list(self.book.entities)
        targets = [a for a, _ in new_entities] + [a for a, _ in pool]
        ext_ids = []
        for i in range(self.rng.randint(1, 6)):
            ext = f"k9-{bid}-{i}"
            ext_ids.append(ext)
            lines.append({"type": "episode", "kind": "message_received",
                          "occurred_at": now_iso(-self.rng.randint(0, 3600)),
                          "counterparty": self.rng.choice(targets[:1] + targets),
                          "subject": f"batch {bid}", "summary": f"Message {i} of batch {bid}",
                          "thread": f"thr-{bid}", "external_id": ext})
        batch = {"id": bid, "lines": lines, "external_ids": ext_ids, "outcome": None,
                 "reports": []}
        self.book.bump("ingest_batches")
        until = time.monotonic() + 25
        first = True
        while time.monotonic() < until:
            port, inc = self.server.current()
            try:
                status, report = post_episodes(port, self.token, lines)
            except Unknown as e:
                if not e.sent:
                    self.wait_for_server(None, until)
                    continue
                if first:
                    self.book.bump("ingest_unknown")
                    first = False
                    # Half the time leave it unknown (checked for all-or-nothing later),
                    # half the time re-send it as a connector would.
                    if self.rng.random() < 0.5:
                        batch["outcome"] = "unknown"
                        break
                self.wait_for_server(inc, until)
                continue
            if status != 200:
                self.book.bump("http_errors")
                batch["reports"].append({"http": status, **report})
                if status >= 500:
                    self.wait_for_server(inc, until)
                    continue
                self.book.problem(f"ingest batch {bid} refused with HTTP {status}: {report}")
                batch["outcome"] = "refused"
                break
            batch["reports"].append(report)
            n = len(ext_ids)
            added, dups = report.get("episodes_added"), report.get("duplicates")
            if first:
                if (added, dups) != (n, 0):
                    self.book.problem(f"ingest batch {bid}: first send stored "
                                      f"{added} of {n} episodes, {dups} duplicates: {report}")
            else:
                self.book.bump("ingest_resent")
                if (added, dups) not in ((n, 0), (0, n)):
                    self.book.problem(f"ingest batch {bid} re-sent after a lost reply: "
                                      f"{added} added and {dups} duplicates of {n}: a batch "
                                      f"was stored in part: {report}")
            batch["outcome"] = "ack"
            break
        with self.book.lock:
            self.book.batches.append(batch)
            if batch["outcome"] == "ack":
                self.book.entities.extend(new_entities)


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------

def write_config(path, receiver_url):
    text = (
        "[actions]\n"
        "draft_expiry_minutes = 1\n"
        "undo_window_seconds = 1\n"
        "\n[delivery]\n"
        'connector = "webhook"\n'
        f'webhook_url = "{receiver_url}"\n'
        f'webhook_secret = "{SECRET}"\n'
        "max_attempts = 8\n"
        "timeout_seconds = 2\n"
        # A delivery cut short by a kill is retried once its lease runs out.
        "lease_seconds = 3\n")
    big = 1_000_000_000
    text += ("\n[quotas]\n"
             f"calls_per_minute = {big}\ncalls_per_day = {big}\n"
             f"token_calls_per_minute = {big}\ntoken_calls_per_day = {big}\n")
    # Every client is 127.0.0.1: the flood guard would count them as one (and since writes
    # stopped blocking the I/O threads they go past its 500 requests/s).
    text += "\n[http]\nflood_requests_per_second = 0\n"
    with open(path, "w") as f:
        f.write(text)


def create_token(bin_path, data, scopes, label):
    p = cli(bin_path, "token", "create", "--data", data, "--workspace", WORKSPACE,
            "--scopes", scopes, "--label", label)
    if p.returncode != 0:
        raise HarnessError(f"token create failed: {p.stderr}")
    return p.stdout.strip().splitlines()[-1].strip()


def setup_store(bin_path, data, n_clients, per_level):
    """The workspace, its tokens (an agent's per client and one more for the checks; a
    person's per client), counterparties at each level, and the trust settings. Returns
    (agent tokens, person tokens, {person token id: label}, entities)."""
    tokens = [create_token(bin_path, data, "read,act", f"kill9-{i}")
              for i in range(n_clients + 1)]
    persons = [create_token(bin_path, data, "read,approve", f"kill9-person-{i}")
               for i in range(n_clients)]
    p = cli(bin_path, "token", "list", "--data", data, "--workspace", WORKSPACE)
    if p.returncode != 0:
        raise HarnessError(f"token list failed: {p.stderr}")
    person_ids = {cols[0]: cols[4] for cols in (l.split("\t") for l in p.stdout.splitlines())
                  if len(cols) >= 5 and cols[4].startswith("kill9-person-")}
    if len(person_ids) != n_clients:
        raise HarnessError(f"token list shows {len(person_ids)} person tokens: {p.stdout}")
    lines, entities = seed_entities("k9.example", per_level, handles=True)
    p = cli(bin_path, "ingest", "--data", data, "--workspace", WORKSPACE, "-",
            stdin="\n".join(json.dumps(l) for l in lines) + "\n")
    if p.returncode != 0:
        raise HarnessError(f"cortex ingest failed: {p.stderr}")
    for level in LEVELS:
        p = cli(bin_path, "trust", "set", "--data", data, "--workspace", WORKSPACE, "--scope",
                f"tag:l{level}", "--level", str(level))
        if p.returncode != 0:
            raise HarnessError(f"cortex trust set failed: {p.stderr}")
    return tokens, persons, person_ids, entities


def open_db(data):
    path = os.path.join(data, "cortex.db")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    db.row_factory = sqlite3.Row
    return db


def workspace_id(db):
    row = db.execute("SELECT id FROM workspaces WHERE name = ?", (WORKSPACE,)).fetchone()
    if row is None:
        raise HarnessError(f"no workspace {WORKSPACE!r} in the store")
    return row["id"]


def settle(data, receiver, timeout):
    """Waits until no outbox row is pending and no supervised action waits for its undo
    window. Returns (settled, seconds, what was left)."""
    def poll():
        try:
            db = open_db(data)
            try:
                ws = workspace_id(db)
                outbox = db.execute("SELECT count(*) FROM outbox WHERE workspace_id = ? AND "
                                    "kind = 'message' AND status = 'pending'",
                                    (ws,)).fetchone()[0]
                supervised = db.execute("SELECT count(*) FROM actions WHERE workspace_id = ? "
                                        "AND status = 'pending' AND level = 2",
                                        (ws,)).fetchone()[0]
                executed = db.execute("SELECT count(*) FROM actions WHERE workspace_id = ? "
                                      "AND status = 'executed'", (ws,)).fetchone()[0]
            finally:
                db.close()
        except sqlite3.Error as e:
            return False, f"store not readable: {e}"
        return (outbox == 0 and supervised == 0 and executed == 0,
                f"{outbox} outbox rows pending, {supervised} supervised actions in their "
                f"undo window, {executed} actions executed but not delivered")

    return wait_settled(poll, timeout, 0.5)


def parallel(items, fn, n=4):
    out = {}
    lock = threading.Lock()
    it = iter(items)

    def work():
        while True:
            with lock:
                try:
                    x = next(it)
                except StopIteration:
                    return
            r = fn(x)
            with lock:
                out[x] = r

    threads = [threading.Thread(target=work, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=20, help="SIGKILLs (default 20)")
    ap.add_argument("--kills-in-delivery", type=int, default=None,
                    help="of those, kills made the moment a webhook POST arrives "
                         "(default kills // 10)")
    ap.add_argument("--clients", type=int, default=4, help="client threads (default 4)")
    ap.add_argument("--inflight-bias", type=float, default=0.5,
                    help="share of random kills that wait (up to 1 s) for a client request "
                         "to be on the wire")
    ap.add_argument("--min-up", type=float, default=0.2, help="shortest life before a kill (s)")
    ap.add_argument("--max-up", type=float, default=1.0, help="longest life before a kill (s)")
    ap.add_argument("--pace", type=float, default=0.01,
                    help="each client sleeps up to this long between calls (s)")
    ap.add_argument("--fail-rate", type=float, default=0.05,
                    help="share of webhook POSTs answered 503 (retried by the server)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    ap.add_argument("--settle-timeout", type=float, default=150.0,
                    help="longest wait for delivery after the last restart (s)")
    ap.add_argument("--deadline", type=float, default=None,
                    help="overall deadline (s); default 200 + 10 * kills")
    ap.add_argument("--data", default=None, help="data directory (default: a new temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the data directory")
    ap.add_argument("--verbose", "-v", action="store_true")
    opts = ap.parse_args()

    bin_path = os.environ.get("CORTEX_BIN") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "cortex")
    if not os.access(bin_path, os.X_OK):
        print(f"kill9: no cortex binary at {bin_path} (set CORTEX_BIN)", file=sys.stderr)
        return 2
    seed = opts.seed if opts.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    in_delivery = opts.kills // 10 if opts.kills_in_delivery is None else opts.kills_in_delivery
    in_delivery = max(0, min(in_delivery, opts.kills))
    deadline_s = opts.deadline if opts.deadline is not None else 200 + 10 * opts.kills
    started = time.monotonic()

    data = opts.data or tempfile.mkdtemp(prefix="cortex-kill9-")
    os.makedirs(data, exist_ok=True)
    log_dir = os.path.join(data, "logs")
    os.makedirs(log_dir, exist_ok=True)
    print(f"kill9: seed={seed} kills={opts.kills} (in delivery: {in_delivery}) "
          f"clients={opts.clients} data={data}", flush=True)

    receiver = Receiver(SECRET, opts.fail_rate, random.Random(rng.random()), quiet_resets=True)
    config = os.path.join(data, "kill9.toml")
    write_config(config, receiver.url)
    server = Server(bin_path, data, config, log_dir)

    # The overall deadline: whatever happens, the server does not outlive us.
    def on_deadline():
        print(f"kill9: FAIL: overall deadline of {deadline_s:.0f}s passed; server logs in "
              f"{log_dir}", file=sys.stderr, flush=True)
        server.force_stop()
        os._exit(2)

    watchdog = threading.Timer(deadline_s, on_deadline)
    watchdog.daemon = True
    watchdog.start()

    def on_signal(signum, _frame):
        server.force_stop()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    ok = False
    try:
        ok = run(opts, bin_path, data, server, receiver, rng, in_delivery, started)
    except HarnessError as e:
        print(f"kill9: HARNESS ERROR: {e}", file=sys.stderr)
        ok = None
    finally:
        server.force_stop()
        receiver.close()
        watchdog.cancel()
    if ok and not opts.keep and opts.data is None:
        shutil.rmtree(data, ignore_errors=True)
    elif not ok:
        print(f"kill9: data directory and server logs kept in {data}", file=sys.stderr)
    return 0 if ok else (2 if ok is None else 1)


def run(opts, bin_path, data, server, receiver, rng, in_delivery, started):
    tokens, persons, person_ids, seed_entities = setup_store(bin_path, data, opts.clients,
                                                            per_level=12)
    check_token = tokens[-1]
    book = Book()
    book.entities.extend(seed_entities)
    server.start()

    stop = threading.Event()
    clients = [Client(i, server, tokens[i], persons[i], book, stop, random.Random(rng.random()),
                      opts.pace) for i in range(opts.clients)]
    for c in clients:
        c.start()

    aimed = set(rng.sample(range(opts.kills), in_delivery))
    kills = 0
    kill_log = []
    for k in range(opts.kills):
        time.sleep(rng.uniform(opts.min_up, opts.max_up))
        how = "random"
        if k not in aimed and rng.random() < opts.inflight_bias:
            # Some kills (--inflight-bias) land while a client request is on the wire, so
            # that replies are lost mid-call; the others land wherever the sleep ended.
            until = time.monotonic() + 1.0
            while InFlight.now() == 0 and time.monotonic() < until:
                time.sleep(0.0005)
            how = "random, request in flight" if InFlight.now() else "random"
        if k in aimed:
            fired = threading.Event()

            def hook():
                server.kill9()
                fired.set()

            with receiver.lock:
                receiver.kill_hook = hook
            fired.wait(5)
            with receiver.lock:
                consumed = receiver.kill_hook is not hook
                receiver.kill_hook = None
            if consumed:
                fired.wait(30)
                how = "in delivery"
            else:
                how = "random (no POST within 5 s)"
        if how != "in delivery" and server.kill9() != "killed":
            # It had exited on its own: a crash (reported at the end), not one of our kills.
            print(f"kill9: cortex serve exited by itself before kill {k + 1}:\n"
                  f"{tail(server.log_paths[-1])}", file=sys.stderr, flush=True)
            how = "none: the server had crashed"
        if not how.startswith("none"):
            kills += 1
        kill_log.append(how)
        if opts.verbose:
            print(f"kill9: kill {kills} ({how}) at +{time.monotonic() - started:.1f}s, "
                  f"{len(book.decisions)} decisions acknowledged so far", flush=True)
        time.sleep(rng.uniform(0, 0.15))
        server.start()

    # A little load on the last incarnation, then the clients stop (finishing any retries).
    time.sleep(rng.uniform(opts.min_up, opts.max_up))
    stop_clients(stop, clients)
    load_s = time.monotonic() - started

    if opts.verbose:
        db = open_db(data)
        leased = db.execute("SELECT count(*) FROM outbox WHERE kind = 'message' AND "
                            "status = 'pending' AND lease_until > ?",
                            (int(time.time() * 1000),)).fetchone()[0]
        db.close()
        print(f"kill9: load done at +{load_s:.1f}s; {leased} outbox rows still leased by a "
              f"killed incarnation (they wait out the 3 s lease); counts "
              f"{json.dumps(book.counts, sort_keys=True)}", flush=True)
    settled, settle_s, left = settle(data, receiver, opts.settle_timeout)
    failures = list(book.problems)
    if not settled:
        failures.append(f"not settled after {settle_s:.0f}s: {left}")

    # What the store holds of the acknowledged episodes, before anything is re-sent.
    db = open_db(data)
    stored_ext = {r[0] for r in db.execute(
        "SELECT external_id FROM episodes WHERE workspace_id = ? AND external_id IS NOT NULL",
        (workspace_id(db),))}
    db.close()

    # ---------------------------------------------------------------- checks over MCP
    port = server.current()[0]
    decisions = dict(book.decisions)

    def inspect(did):
        try:
            _, body, raw = call_tool(port, check_token, "decision.inspect", {"decision_id": did},
                                     timeout=30)
        except Unknown as e:
            return f"no answer: {e}"
        if body is None:
            return f"not a tool result: {raw}"
        if body.get("status") == "error" or body.get("decision_id") != did:
            return f"answered {body}"
        if body.get("decision_class") != "action_proposed":
            return f"decision_class {body.get('decision_class')!r}"
        aid = decisions[did].get("action_id")
        if aid:
            try:
                _, why, raw = call_tool(port, check_token, "meta.why_this_action",
                                        {"action_id": aid}, timeout=30)
            except Unknown as e:
                return f"meta.why_this_action: no answer: {e}"
            if why is None or why.get("action_id") != aid:
                return f"meta.why_this_action({aid}) answered {why or raw}"
        return None

    for did, err in sorted(parallel(list(decisions), inspect).items()):
        if err:
            failures.append(f"acknowledged decision {did} is not inspectable: {err}")

    statuses = {}
    cursor = None
    while True:
        args = {"decision_class": "action_proposed", "limit": 100}
        if cursor:
            args["cursor"] = cursor
        try:
            _, body, raw = call_tool(port, check_token, "decision.list", args, timeout=30)
        except Unknown as e:
            raise HarnessError(f"decision.list: no answer: {e}")
        if body is None or "decisions" not in body:
            raise HarnessError(f"decision.list answered {body or raw}")
        for d in body["decisions"]:
            statuses[d["decision_id"]] = d["status"]
        cursor = body.get("next_cursor")
        if not cursor:
            break

    # Acknowledged ingest: re-sending every acknowledged episode must find each one stored.
    acked = [b for b in book.batches if b["outcome"] == "ack"]
    acked_lines = [l for b in acked for l in b["lines"] if l["type"] == "episode"]
    ingest_lost = 0
    for i in range(0, len(acked_lines), 2000):
        chunk = acked_lines[i:i + 2000]
        try:
            status, report = post_episodes(port, check_token, chunk, timeout=60)
        except Unknown as e:
            raise HarnessError(f"re-ingest: no answer: {e}")
        if status != 200:
            raise HarnessError(f"re-ingest answered HTTP {status}: {report}")
        if report.get("duplicates") != len(chunk) or report.get("episodes_added") != 0:
            ingest_lost += report.get("episodes_added", 0)
            failures.append(f"re-sending {len(chunk)} acknowledged episodes: "
                            f"{report.get('episodes_added')} were missing and added again, "
                            f"{report.get('duplicates')} duplicates: {report}")
    try:
        _, ws_status, raw = call_tool(port, check_token, "workspace.status", {}, timeout=30)
    except Unknown as e:
        raise HarnessError(f"workspace.status: no answer: {e}")

    rc = server.terminate()
    clean_exit = rc == 0
    if not clean_exit:
        failures.append(f"the last incarnation did not exit 0 on SIGTERM: {rc}")
    for inc, code in server.unexpected_exits:
        failures.append(f"incarnation {inc} exited by itself with {code}")

    # ---------------------------------------------------------------- the ledger
    p = cli(bin_path, "ledger", "verify", "--data", data, "--workspace", WORKSPACE)
    ledger_ok = p.returncode == 0
    ledger_line = (p.stdout + p.stderr).strip().replace("\n", " | ")
    if not ledger_ok:
        failures.append(f"cortex ledger verify exited {p.returncode}: {ledger_line}")
    m = re.search(r"ok, (\d+) entries", p.stdout)
    ledger_entries = int(m.group(1)) if m else None

    # ---------------------------------------------------------------- the store
    db = open_db(data)
    ws = workspace_id(db)
    actions = {r["id"]: dict(r) for r in db.execute(
        "SELECT id, decision_id, status, level, draft FROM actions WHERE workspace_id = ?",
        (ws,))}
    outbox = {r["action_id"]: dict(r) for r in db.execute(
        "SELECT id AS action_id, status, attempts, body FROM outbox WHERE workspace_id = ?"
        " AND kind = 'message'", (ws,))}
    ledger = {}
    by_person = {}  # action id -> [(event, detail.by)] of its approved / rejected entries
    for r in db.execute("SELECT action_id, decision_id, event, detail FROM ledger WHERE "
                        "workspace_id = ? ORDER BY seq", (ws,)):
        ledger.setdefault(r["action_id"], []).append(r["event"])
        if r["event"] in ("approved", "rejected"):
            by_person.setdefault(r["action_id"], []).append(
                (r["event"], json.loads(r["detail"]).get("by")))
    db_status = {r["id"]: r["status"] for r in db.execute(
        "SELECT id, status FROM decisions WHERE workspace_id = ? AND class = 'action_proposed'",
        (ws,))}
    db.close()
    by_decision = {}
    for aid, a in actions.items():
        by_decision.setdefault(a["decision_id"], []).append(aid)

    # ---------------------------------------------------------------- the receiver
    posts = receiver.snapshot()
    bad_sig = [p for p in posts if not p["sig_ok"]]
    for p_ in bad_sig[:5]:
        failures.append(f"webhook POST with a bad signature for key {p_['key']}")
    accepted, redelivered = accepted_by_key(posts)
    duplicates = []
    for key, ps in accepted.items():
        if any(p_["action_id"] != key for p_ in ps):
            duplicates.append(f"Idempotency-Key {key} carried action_id "
                              f"{[p_['action_id'] for p_ in ps]}")
        if len({p_["content"] for p_ in ps}) > 1:
            duplicates.append(f"action {key} delivered with {len({p_['content'] for p_ in ps})}"
                              f" different bodies: {[p_['content'] for p_ in ps]}")
    keys_by_nonce = {}
    for key, ps in accepted.items():
        m = NONCE_RE.search(ps[0]["body"])
        if m:
            keys_by_nonce.setdefault(m.group(1), set()).add(key)
        else:
            failures.append(f"delivered action {key} carries no message nonce: {ps[0]['body']!r}")
    for nonce, keys in keys_by_nonce.items():
        if len(keys) > 1:
            duplicates.append(f"message k9n={nonce} (decision {book.nonces.get(nonce)}) "
                              f"delivered under {len(keys)} keys: {sorted(keys)}")
    for did, aids in by_decision.items():
        if len(aids) > 1:
            duplicates.append(f"decision {did} has {len(aids)} actions: {aids}")
        if sum(1 for a in aids if a in accepted) > 1:
            duplicates.append(f"decision {did}: more than one of its actions delivered")

    # ---------------------------------------------------------------- cross-checks
    lost = {}  # action (or decision) id -> what says it was lost; counted once per action

    def lose(key, text):
        lost.setdefault(key, []).append(text)
    delivered_ids = {aid for aid, a in actions.items() if a["status"] == "delivered"}
    for aid in sorted(delivered_ids):
        if aid not in accepted:
            lose(aid, f"action {aid} (decision {actions[aid]['decision_id']}) is delivered "
                        f"in the store but the receiver never accepted it")
    for aid in sorted(accepted):
        a = actions.get(aid)
        if a is None:
            failures.append(f"the receiver accepted {aid}, an action the store does not know")
        elif a["status"] != "delivered":
            failures.append(f"the receiver accepted {aid} but its action is {a['status']} "
                            f"(decision {a['decision_id']})")
        else:
            sent = accepted[aid][0]["body"]
            if sent != a["draft"]:
                failures.append(f"action {aid}: delivered body {sent!r} is not its draft "
                                f"{a['draft']!r}")
    for aid, a in actions.items():
        if a["status"] in ("executed", "failed"):
            lose(aid, f"action {aid} (decision {a['decision_id']}) ended {a['status']}, "
                        f"never delivered (outbox: {outbox.get(aid)})")
    for aid, events in ledger.items():
        counts = {e: events.count(e) for e in set(events)}
        for e in ("proposed", "refused", "approved", "rejected", "expired", "executed",
                  "delivered", "failed"):
            if counts.get(e, 0) > 1:
                duplicates.append(f"action {aid}: {counts[e]} '{e}' ledger entries: {events}")
        ended = [e for e in ("rejected", "expired", "refused") if e in counts]
        if ended and ("executed" in counts or "delivered" in counts):
            failures.append(f"action {aid}: ledger has {ended} and executed/delivered: {events}")
        if "executed" in counts and aid not in outbox:
            lose(aid, f"action {aid}: executed in the ledger but has no outbox row: {events}")
        if ("delivered" in counts) != (aid in delivered_ids):
            failures.append(f"action {aid}: ledger {events} disagrees with status "
                            f"{actions.get(aid, {}).get('status')}")
    for aid in outbox:
        if "executed" not in ledger.get(aid, []):
            failures.append(f"outbox row {aid} without an executed ledger entry")
    # Only the clients' persons approve and reject, and the ledger says which of them did.
    for aid, entries in sorted(by_person.items()):
        for event, by in entries:
            if not (isinstance(by, dict) and set(by) == {"channel", "token_id"} and
                    by["channel"] == "mcp" and by["token_id"] in person_ids):
                failures.append(f"action {aid}: its '{event}' ledger entry names {by!r}, not "
                                f"one of the person tokens {sorted(person_ids)} over mcp")

    executed = sum(1 for aid, ev in ledger.items() if "executed" in ev)
    delivered = len(delivered_ids)

    for did, rec in sorted(decisions.items()):
        final = statuses.get(did)
        if final is None:
            failures.append(f"acknowledged decision {did} is missing from decision.list")
            continue
        if db_status.get(did) not in LATER.get(final, ()):
            # The list was read before the stop; a draft may have expired since.
            failures.append(f"decision {did}: decision.list said {final}, the store says "
                            f"{db_status.get(did)}")
        final = db_status.get(did, final)
        aids = by_decision.get(did, [])
        aid = rec.get("action_id")
        if aid and aids != [aid]:
            failures.append(f"decision {did}: the client was told action {aid}, the store has "
                            f"{aids}")
        for seen in rec["seen"]:
            if final not in LATER.get(seen, ()):
                failures.append(f"decision {did}: the server said '{seen}', it ended '{final}' "
                                f"(answers {rec['answers']})")
        if rec["approve_ok"] > 1:
            duplicates.append(f"decision {did}: {rec['approve_ok']} approvals succeeded")
        if rec["approve_ok"] and rec["reject_ok"]:
            failures.append(f"decision {did}: both an approval and a rejection succeeded")
        must_deliver = (rec["first"] == "success" or rec["approve_ok"] > 0 or
                        (rec["level"] == 2 and rec["first"] == "pending_approval" and
                         not rec["reject_ok"] and not rec["reject_unknown"] and
                         "rejected" not in rec["seen"]))
        if must_deliver and final != "delivered":
            lose(aid or did, f"decision {did} (action {aid}, answers {rec['answers']}) should have "
                        f"been delivered; it is {final}")
        if must_deliver and aid and aid not in accepted:
            lose(aid, f"decision {did}: its action {aid} never reached the receiver")
        if final in ("rejected", "expired", "refused") and aid in accepted:
            failures.append(f"decision {did} is {final} but action {aid} was delivered")
        if rec["edited"] and rec["approve_ok"] and aid in accepted:
            if accepted[aid][0]["body"] != rec["edited"]:
                failures.append(f"decision {did}: approved with an edit, delivered "
                                f"{accepted[aid][0]['body']!r}")

    ing_acked = [e for b in acked for e in b["external_ids"]]
    missing = [e for e in ing_acked if e not in stored_ext]
    ingest_lost = max(ingest_lost, len(missing))
    for e in missing[:10]:
        failures.append(f"acknowledged episode {e} is not in the store")
    unknown = [b for b in book.batches if b["outcome"] == "unknown"]
    partial = 0
    for b in unknown:
        # Re-sent above only if acknowledged, so what is stored is what the lost send stored.
        n = sum(1 for e in b["external_ids"] if e in stored_ext)
        if n not in (0, len(b["external_ids"])):
            partial += 1
            failures.append(f"ingest batch {b['id']} (reply lost) is stored in part: {n} of "
                            f"{len(b['external_ids'])} episodes")

    # ---------------------------------------------------------------- report
    failures.extend(duplicates)
    failures.extend(t for texts in lost.values() for t in texts)
    total_s = time.monotonic() - started
    c = book.counts
    finals = {}
    for did in decisions:
        s = db_status.get(did, "?")
        finals[s] = finals.get(s, 0) + 1
    print(f"kill9: load {load_s:.1f}s, settled in {settle_s:.1f}s; kills: "
          f"{kill_log.count('in delivery')} in delivery, "
          f"{sum(1 for h in kill_log if 'in flight' in h)} with a request in flight, "
          f"{sum(1 for h in kill_log if h.startswith('random') and 'in flight' not in h)} "
          f"random; "
          f"calls: {c['communicate']} communicate ({c['communicate_unknown']} replies lost), "
          f"{c['approve']} approve ({c['double_approvals']} doubled), {c['reject']} reject, "
          f"{c['retries_after_lost_reply']} retried after a lost reply, "
          f"{c['ingest_batches']} ingest batches ({c['ingest_unknown']} replies lost, "
          f"{c['ingest_resent']} re-sent); "
          f"acknowledged decisions end: {json.dumps(finals, sort_keys=True)}; "
          f"webhook POSTs: {len(posts)} ({sum(1 for p_ in posts if not p_['accepted'])} "
          f"answered 503 on purpose); ledger: {ledger_line}, "
          f"{sum(len(e) for e in by_person.values())} approved/rejected entries by "
          f"{len({by.get('token_id') for e in by_person.values() for _, by in e if isinstance(by, dict)})}"
          f" person tokens; "
          f"workspace.status: {json.dumps(ws_status.get('counts', ws_status)) if ws_status else raw}",
          flush=True)
    print(f"kills={kills} acknowledged_decisions={len(decisions)} executed={executed} "
          f"delivered={delivered} lost={len(lost)} duplicates={len(duplicates)} "
          f"redelivered_same_key={redelivered} "
          f"ledger={'ok' if ledger_ok else 'TAMPERED'}"
          f"{'' if ledger_entries is None else f' ledger_entries={ledger_entries}'} "
          f"ingest_acknowledged={len(ing_acked)} ingest_lost={ingest_lost} "
          f"ingest_partial={partial} violations={len(failures)} seconds={total_s:.0f}",
          flush=True)
    def log_lines(f):
        ids = sorted(set(re.findall(r"\b(?:act|dec)_[0-9A-Z]{26}\b", f)))
        return server.grep_logs(ids, limit=6) if ids else []

    if not report_failures("kill9", failures, log_lines):
        return False
    print("kill9: ok", flush=True)
    return True


if __name__ == "__main__":
    sys.exit(main())
