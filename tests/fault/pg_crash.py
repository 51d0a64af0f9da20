#!/usr/bin/env python3
"""PostgreSQL crash harness: the database server stops as in a crash, under load, and
comes back (Python 3 stdlib and psql only).

Two `cortex serve --database URL` instances share one database on a private cluster of this
harness's own (scripts/pg), whose default `synchronous_commit` the harness sets to `off`, as
a server tuned for throughput may have it: Cortex must commit what it acknowledges with it
on. Client threads drive a mixed load through both --
action.communicate to counterparties at trust levels 1, 2 and 3, action.approve and
action.reject by each client's person, POST /v1/episodes batches -- while deliveries go to a
webhook receiver in this process. Every few seconds the cluster is stopped with
`pg_ctl stop -m immediate` (`scripts/pg crash`: no checkpoint, the backends are killed, the
next start replays the WAL) and started again a moment later. Cortex is never restarted.

Each round checks that Cortex recovers by itself:

  * while PostgreSQL is down, every request through either instance is answered at once
    with a clear "retry" (HTTP 503 with Retry-After, or a tool error saying the store or
    the action engine is unavailable), never a hang, a dropped connection or a 500;
  * once PostgreSQL is back, both instances answer again (the time it takes is reported),
    and from their first answer on, 32 reads through each, 16 at a time, all succeed.

After the last round and the load it waits until the scheduled work is done (every undo
window passed, every executed action delivered, every expiry done: before each crash the
harness brings forward the expiry of a few level-1 drafts nobody will decide, so that they
fall due as the server dies) and checks, reading the database:

  * every acknowledged write is there, once: each acknowledged proposal's decision, its
    single action and its `proposed` ledger entry; each acknowledged approval's and
    rejection's ledger entry and the action's status; every episode of an acknowledged
    ingest batch;
  * a proposal retried with its idempotency_key through "retry" answers made one action;
    a write refused with a "retry" left nothing behind (a refused proposal has no action
    holding its message; a refused batch stored none of its episodes) unless the refusal
    said the commit's outcome was unknown; a batch whose outcome is unknown is stored
    whole or not at all;
  * scheduled work ran exactly once: every executed action has one outbox row, one
    `executed` and one `delivered` ledger entry, and reached the receiver under one
    Idempotency-Key with one body (a delivery repeated after a crash between the POST and
    its record comes again under the same key: counted, allowed); level-3 sends,
    approvals and level-2 drafts nobody rejected are delivered; rejected and expired ones
    never are, and each ends once; every draft whose expiry fell due is expired, once;
  * `cortex ledger verify` passes; both instances are still the processes started at the
    beginning and exit 0 on SIGTERM.

It prints one summary line

  pg_crash: rounds=6 acknowledged_proposals=N ... checked=N lost=0 ... violations=0

and exits 0, or prints every violation and exits 1 (2: the harness itself failed).

    CORTEX_BIN=build/cortex python3 tests/fault/pg_crash.py              # 6 rounds
    CORTEX_BIN=build/cortex python3 tests/fault/pg_crash.py --rounds 20 --seed 7
"""

import argparse
import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid

from faultlib import (LEVEL_RE, LEVELS, Book as BaseBook, HarnessError, LoadClient, Receiver,
                      accepted_by_key, episodes_request, http_exchange, now_iso,
                      report_failures, seed_entities, stop_clients, wait_settled)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "multi"))
import harness  # noqa: E402  (tests/multi/harness.py)
from harness import M, SECRET, Instance, cli, create_token, ledger_verify  # noqa: E402

WORKSPACE = "pgcrash"
NONCE_RE = re.compile(r"pgn=([0-9a-f]{16})")
IN_DOUBT = "outcome unknown"  # PgConn: the connection broke during COMMIT


# --------------------------------------------------------------------------------------------
# The database
# --------------------------------------------------------------------------------------------

def sql(database, query):
    """Rows of `query` (tab-separated text columns) through psql."""
    # The harness's own writes are durable too (the database's default is off, see run()).
    env = dict(os.environ, PGOPTIONS="-c synchronous_commit=on")
    p = subprocess.run(["psql", database, "-X", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                        "-c", query], capture_output=True, text=True, timeout=60, env=env)
    if p.returncode != 0:
        raise HarnessError(f"psql: {query}: {p.stderr.strip()}")
    return [line.split("\t") for line in p.stdout.splitlines() if line]


# --------------------------------------------------------------------------------------------
# Requests, and what their answers mean
# --------------------------------------------------------------------------------------------

class NoAnswer(Exception):
    """The connection failed or timed out: no answer at all."""


def http_call(port, method, path, body, headers, timeout):
    try:
        return http_exchange(port, method, path, body, headers, timeout)
    except (OSError, http.client.HTTPException) as e:
        raise NoAnswer(f"{type(e).__name__}: {e}") from None


def tool_call(inst, token, name, args, timeout=20):
    """Returns ("ok", body) for a tool result without isError, ("error", body) for a tool
    error, ("retry", text) for an HTTP 503 with Retry-After; anything else raises NoAnswer
    (no answer) or returns ("bad", text)."""
    body, headers = harness.tool_request(token, name, args)
    status, h, data = http_call(inst.port, "POST", "/mcp", body, headers, timeout)
    if status == 503 and "retry-after" in h:
        return "retry", data.decode("utf-8", "replace")[:300]
    try:
        doc = harness.rpc_body(data, h.get("content-type"))
        res = doc["result"]
        out = res.get("structuredContent")
        if out is None:
            out = json.loads(res["content"][0]["text"])
    except (ValueError, KeyError, TypeError, IndexError):
        return "bad", f"HTTP {status}: {data[:300]!r}"
    if status != 200:
        return "bad", f"HTTP {status}: {data[:300]!r}"
    return ("error" if res.get("isError") else "ok"), out


def post_episodes(inst, token, lines, timeout=20):
    body, headers = episodes_request(token, lines)
    status, h, data = http_call(inst.port, "POST", "/v1/episodes", body, headers, timeout)
    text = data.decode("utf-8", "replace")
    if status == 200:
        return "ok", json.loads(text)
    if status == 503 and "retry-after" in h:
        return "retry", text[:300]
    if status == 503 and "unavailable" in text:
        return "retry", text[:300]
    return "bad", f"HTTP {status}: {text[:300]}"


def says_retry(body):
    """A tool error that tells the caller to try again (the store cannot answer)."""
    return body.get("error") in ("unavailable", "action_engine_error")


class Book(BaseBook):
    """What the clients were told; shared by all threads."""

    def __init__(self):
        super().__init__()
        self.decisions = {}  # decision_id -> record
        self.pending = []  # decision ids a person may approve or reject
        self.refused_nonces = {}  # nonce -> the refusal: the proposal must not be stored
        self.entities = []  # (address, level) of acknowledged counterparties
        self.batches = []  # {"ext": [...], "outcome": ack|refused|unknown}
        self.unclean = []  # answers that were neither a result nor a clean "retry"
        self.left_alone = []  # level-1 drafts nobody will decide (expired by the harness)


class Client(LoadClient):
    """An agent (read,act) that proposes and ingests through either instance, and its
    person (read,approve) who approves and rejects."""

    def __init__(self, idx, instances, token, person, book, stop, rng):
        super().__init__(idx, book, stop, rng, pace=0.02)
        self.instances, self.token, self.person = instances, token, person

    def step(self, r):
        if r < 0.45:
            self.communicate()
        elif r < 0.65:
            self.decide("approve")
        elif r < 0.75:
            self.decide("reject")
        else:
            self.ingest()

    def inst(self):
        return self.rng.choice(self.instances)

    def unclean(self, what, text):
        self.book.bump("unclean")
        with self.book.lock:
            self.book.unclean.append(f"{what}: {text}")

    def communicate(self):
        """Half the proposals carry an idempotency_key and are retried with it through
        "retry" answers until one says what happened, as docs/actions.md tells clients to;
        the others are sent once."""
        with self.book.lock:
            pool = list(self.book.entities)
        nonce = uuid.uuid4().hex[:16]
        to, _ = self.rng.choice(pool)
        text = f"pgn={nonce} status update {self.rng.randint(1, 9999)} from client {self.idx}"
        args = {"to": to, "message": text}
        keyed = self.rng.random() < 0.5
        if keyed:
            args["idempotency_key"] = f"pgk-{nonce}"
        self.book.bump("communicate")
        until, attempts, doubted = time.monotonic() + 30, 0, False
        while True:
            attempts += 1
            try:
                kind, body = tool_call(self.inst(), self.token, "action.communicate", args)
            except NoAnswer as e:
                self.unclean("action.communicate", str(e))
                return
            if kind == "bad" or (kind == "error" and not says_retry(body)):
                return self.unclean("action.communicate", body)
            if kind == "ok":
                break
            msg = body if isinstance(body, str) else body.get("message", "")
            if IN_DOUBT in msg:
                doubted = True
                self.book.bump("in_doubt")
            if keyed and time.monotonic() < until:
                self.book.bump("retried")
                time.sleep(0.1)
                continue
            self.book.bump("refused")
            if not doubted:
                with self.book.lock:
                    self.book.refused_nonces[nonce] = msg
            return
        if attempts > 1:
            self.book.bump("acknowledged_after_retry")
        st, did = body.get("status"), body.get("decision_id")
        m = LEVEL_RE.search(body.get("message", ""))
        level = int(m.group(1)) if m else None
        if st not in ("success", "pending_approval") or not did or not body.get("action_id"):
            return self.book.problem(f"action.communicate answered {body}")
        rec = {"decision_id": did, "action_id": body["action_id"], "nonce": nonce,
               "level": level, "first": st, "approved": 0, "rejected": 0, "answers": [st],
               "decided_unknown": 0}
        with self.book.lock:
            self.book.decisions[did] = rec
            if st == "pending_approval":
                self.book.pending.append(did)
        self.book.bump("acknowledged_proposals")

    def decide(self, verb):
        """Approves or rejects a pending draft, retrying through "retry" answers (and
        PostgreSQL restarts) until the answer says what happened, as a client would."""
        with self.book.lock:
            if not self.book.pending:
                rec = None
            else:
                rec = self.book.decisions[self.book.pending.pop(
                    self.rng.randrange(len(self.book.pending)))]
        if rec is None:
            return self.communicate()
        if self.rng.random() < 0.25:
            # Left alone: a level-2 draft is sent when its undo window ends; a level-1 one
            # waits for its expiry, which the harness brings forward to a crash.
            if rec["level"] == 1:
                with self.book.lock:
                    self.book.left_alone.append(rec["decision_id"])
            return
        if rec["level"] == 2 and self.rng.random() < 0.5:
            time.sleep(self.rng.uniform(0.6, 1.2))  # race the 1 s undo window
        args = {"decision_id": rec["decision_id"]}
        if verb == "reject":
            args["reason"] = "pg_crash says no"
        self.book.bump(verb)
        until = time.monotonic() + 30
        while time.monotonic() < until:
            try:
                kind, body = tool_call(self.inst(), self.person, "action." + verb, args)
            except NoAnswer as e:
                self.unclean("action." + verb, str(e))
                kind, body = "retry", str(e)
            if kind == "bad" or (kind == "error" and not says_retry(body) and
                                 body.get("error") != "not_pending" and
                                 "not pending" not in body.get("message", "")):
                return self.unclean("action." + verb, body)
            if kind == "retry" or (kind == "error" and says_retry(body) and
                                   "not pending" not in body.get("message", "")):
                msg = body if isinstance(body, str) else body.get("message", "")
                if IN_DOUBT in msg:
                    self.book.bump("in_doubt")
                    with self.book.lock:
                        rec["decided_unknown"] += 1
                self.book.bump("retried")
                time.sleep(0.1)
                continue
            with self.book.lock:
                rec["answers"].append(f"{verb}:{body.get('status')}:{body.get('error', '')}")
                if kind == "ok" and body.get("status") == "success":
                    rec["approved" if verb == "approve" else "rejected"] += 1
            if kind == "ok":
                self.book.bump("acknowledged_" + verb)
            return
        self.book.problem(f"{verb} {rec['decision_id']}: no definite answer in 30 s")

    def ingest(self):
        bid = uuid.uuid4().hex[:12]
        lines, new = [], []
        if self.rng.random() < 0.5:
            level = self.rng.choice(LEVELS)
            addr = f"p{level}-{bid}@pgcrash.example"
            lines.append({"type": "entity", "name": f"Person {bid}",
                          "identifiers": [addr], "tags": [f"l{level}"]})
            new.append((addr, level))
        with self.book.lock:
            pool = [a for a, _ in self.book.entities]
        ext = [f"pgc-{bid}-{i}" for i in range(self.rng.randint(1, 8))]
        for i, e in enumerate(ext):
            lines.append({"type": "episode", "kind": "message_received",
                          "occurred_at": now_iso(-self.rng.randint(0, 3600)),
                          "counterparty": self.rng.choice([a for a, _ in new] + pool),
                          "subject": f"batch {bid}", "summary": f"Message {i} of {bid}",
                          "thread": f"thr-{bid}", "external_id": e})
        batch = {"id": bid, "ext": ext, "outcome": None, "answer": None}
        self.book.bump("ingest_batches")
        try:
            kind, report = post_episodes(self.inst(), self.token, lines)
        except NoAnswer as e:
            self.unclean("ingest", str(e))
            kind, report = "unknown", str(e)
        if kind == "bad":
            self.unclean("ingest", report)
            batch["outcome"] = "unknown"
        elif kind == "retry":
            batch["outcome"] = "unknown" if IN_DOUBT in report else "refused"
            self.book.bump("in_doubt" if IN_DOUBT in report else "refused")
        elif kind == "unknown":
            batch["outcome"] = "unknown"
        else:
            batch["outcome"] = "ack"
            if (report.get("episodes_added"), report.get("duplicates")) != (len(ext), 0):
                self.book.problem(f"ingest batch {bid}: stored {report} of {len(ext)}")
        batch["answer"] = report
        with self.book.lock:
            self.book.batches.append(batch)
            if batch["outcome"] == "ack":
                self.book.entities.extend(new)
                self.book.counts["acknowledged_episodes"] = (
                    self.book.counts.get("acknowledged_episodes", 0) + len(ext))


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------

def probe_down(instances, token, failures):
    """While PostgreSQL is down: a read, a proposal and an ingest through each instance
    must each be answered at once with a clean "retry". Returns the answers' latencies."""
    latencies = []
    for inst in instances:
        for what in ("workspace.status", "action.communicate", "ingest"):
            t0 = time.monotonic()
            try:
                if what == "ingest":
                    kind, out = post_episodes(inst, token, [{
                        "type": "episode", "kind": "message_received",
                        "occurred_at": now_iso(), "counterparty": "seed3-0@pgcrash.example",
                        "summary": "while the database is down",
                        "external_id": f"down-{uuid.uuid4().hex}"}], timeout=15)
                else:
                    args = {} if what == "workspace.status" else {
                        "to": "seed3-0@pgcrash.example", "message": "while down"}
                    kind, out = tool_call(inst, token, what, args, timeout=15)
            except NoAnswer as e:
                failures.append(f"{inst.name}: {what} while PostgreSQL is down: no answer "
                                f"({e})")
                continue
            latencies.append(time.monotonic() - t0)
            clean = kind == "retry" or (kind == "error" and says_retry(out))
            if not clean:
                failures.append(f"{inst.name}: {what} while PostgreSQL is down answered "
                                f"{kind}: {out}")
    return latencies


def wait_up(instances, token, timeout):
    """Seconds until each instance answers workspace.status again (None: never did)."""
    t0 = time.monotonic()
    out = {}
    while time.monotonic() - t0 < timeout and len(out) < len(instances):
        for inst in instances:
            if inst.name in out:
                continue
            try:
                kind, _ = tool_call(inst, token, "workspace.status", {}, timeout=5)
            except NoAnswer:
                kind = None
            if kind == "ok":
                out[inst.name] = time.monotonic() - t0
        time.sleep(0.02)
    return [out.get(i.name) for i in instances]


def burst(inst, token, n=32, width=16):
    """`n` reads through `inst`, `width` at a time (as many as its pool has connections):
    returns the answers that were not results."""
    bad, lock, it = [], threading.Lock(), iter(range(n))

    def work():
        while True:
            with lock:
                if next(it, None) is None:
                    return
            try:
                kind, out = tool_call(inst, token, "workspace.status", {}, timeout=15)
            except NoAnswer as e:
                kind, out = "no answer", str(e)
            if kind != "ok":
                with lock:
                    bad.append(f"{kind}: {out}")

    threads = [threading.Thread(target=work, daemon=True) for _ in range(width)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return bad


def settle(db, ws, timeout):
    def poll():
        (outbox, supervised, executed), = sql(db, (
            f"SELECT (SELECT count(*) FROM outbox WHERE workspace_id = '{ws}' AND kind = "
            f"'message' AND status = 'pending'), (SELECT count(*) FROM actions WHERE "
            f"workspace_id = '{ws}' AND status = 'pending' AND (level = 2 OR due_at <= "
            f"{int(time.time() * 1000)})), (SELECT count(*) "
            f"FROM actions WHERE workspace_id = '{ws}' AND status = 'executed')"))
        return ((outbox, supervised, executed) == ("0", "0", "0"),
                f"{outbox} outbox rows pending, {supervised} actions due or in their undo "
                f"window, {executed} actions executed but not delivered")

    return wait_settled(poll, timeout, 0.3)


def setup(db, n_clients):
    tokens = [create_token(db, WORKSPACE, "read,act", f"pgc-{i}") for i in range(n_clients + 1)]
    persons = [create_token(db, WORKSPACE, "read,approve", f"pgc-person-{i}")
               for i in range(n_clients)]
    lines, entities = seed_entities("pgcrash.example", 12)
    cli(db, "ingest", "--workspace", WORKSPACE, "-",
        stdin="".join(json.dumps(l) + "\n" for l in lines))
    for level in LEVELS:
        cli(db, "trust", "set", "--workspace", WORKSPACE, "--scope", f"tag:l{level}",
            "--level", str(level))
    return tokens, persons, entities


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10, help="PostgreSQL crashes (default 10)")
    ap.add_argument("--clients", type=int, default=4, help="client threads (default 4)")
    ap.add_argument("--min-up", type=float, default=2.0, help="shortest load before a crash (s)")
    ap.add_argument("--max-up", type=float, default=5.0, help="longest load before a crash (s)")
    ap.add_argument("--down", type=float, default=1.0, help="how long PostgreSQL stays down (s)")
    ap.add_argument("--recover-within", type=float, default=15.0,
                    help="longest an instance may take to answer after the restart (s)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--default-commit", action="store_true",
                    help="leave the database's synchronous_commit at PostgreSQL's default "
                         "(by default the harness sets it off, which Cortex must override)")
    ap.add_argument("--keep", action="store_true", help="keep the cluster and the logs")
    opts = ap.parse_args()
    if not os.access(harness.CORTEX_BIN, os.X_OK):
        print(f"pg_crash: no cortex binary at {harness.CORTEX_BIN} (set CORTEX_BIN)",
              file=sys.stderr)
        return 2
    seed = opts.seed if opts.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    # A cluster of its own, even when CORTEX_PG_DIR names a shared one: this one is crashed.
    os.environ.pop("CORTEX_PG_DIR", None)
    harness.start_cluster("cortex-pgcrash-")
    print(f"pg_crash: seed={seed} rounds={opts.rounds} clients={opts.clients} "
          f"cluster={M['pg_dir']} logs={M['log_dir']}", flush=True)
    receiver = Receiver(SECRET)
    ok = None
    try:
        ok = run(opts, rng, receiver)
    except HarnessError as e:
        print(f"pg_crash: HARNESS ERROR: {e}", file=sys.stderr)
    finally:
        receiver.close()
        if ok is not True or opts.keep:
            print(f"pg_crash: logs in {M['log_dir']}", file=sys.stderr)
            for inst in Instance.ALL:
                inst.stop()
            # Keep the logs: stop the cluster but leave the folders.
            try:
                harness.pg("stop", M["pg_dir"])
            except RuntimeError:
                pass
        else:
            harness.stop_cluster()
    return 0 if ok else (2 if ok is None else 1)


def run(opts, rng, receiver):
    started = time.monotonic()
    db = harness.new_database("pgcrash")
    # As a server tuned for throughput may be: Cortex must turn synchronous_commit back on
    # for the writes it acknowledges (PgConn), or the last moment's commits die with the
    # server. --default-commit keeps PostgreSQL's own default (on).
    if not opts.default_commit:
        sql(db, f"ALTER DATABASE {db.rsplit('/', 1)[1]} SET synchronous_commit = off")
    tokens, persons, entities = setup(db, opts.clients)
    check = tokens[-1]
    config = harness.write_config(os.path.join(M["tmp"], "pgcrash.toml"), receiver.url,
                                  undo_window_seconds=1, draft_expiry_minutes=1)
    instances = [Instance("a", db, config), Instance("b", db, config)]
    pids = [i.proc.pid for i in instances]
    book = Book()
    book.entities.extend(entities)
    stop = threading.Event()
    clients = [Client(i, instances, tokens[i], persons[i], book, stop,
                      random.Random(rng.random())) for i in range(opts.clients)]
    for c in clients:
        c.start()

    failures = []
    down_latencies, recoveries = [], []
    expiring = set()  # actions whose expiry fell due just before a crash
    for r in range(opts.rounds):
        time.sleep(rng.uniform(opts.min_up, opts.max_up))
        acked_before = book.counts.get("acknowledged_proposals", 0)
        # Expiries due as the server dies: a few drafts nobody will decide fall due now.
        with book.lock:
            due = [book.decisions[d]["action_id"] for d in book.left_alone[:6]]
            del book.left_alone[:6]
        if due:
            sql(db, f"UPDATE actions SET due_at = {int(time.time() * 1000)} WHERE id IN "
                    f"({', '.join(repr(a) for a in due)}) AND status = 'pending'")
            expiring.update(due)
        harness.pg("crash", M["pg_dir"])
        t_down = time.monotonic()
        down_latencies += probe_down(instances, check, failures)
        time.sleep(max(0.0, opts.down - (time.monotonic() - t_down)))
        harness.pg("start", M["pg_dir"])
        up = wait_up(instances, check, opts.recover_within)
        for inst, s in zip(instances, up):
            if s is None:
                failures.append(f"round {r + 1}: {inst.name} did not answer within "
                                f"{opts.recover_within:.0f} s of PostgreSQL's restart:\n"
                                f"{inst.tail(1500)}")
            else:
                recoveries.append(s)
                # Back means back: no request fails once one has succeeded (each pooled
                # connection died with the server; none may fail a request for it).
                bad = burst(inst, check)
                if bad:
                    failures.append(f"round {r + 1}: {inst.name} answered again, then failed "
                                    f"{len(bad)} of 32 reads: {bad[:3]}")
        print(f"pg_crash: round {r + 1}: crashed at +{t_down - started:.1f}s with "
              f"{acked_before} proposals acknowledged; down {time.monotonic() - t_down:.1f}s; "
              f"instances answered again after "
              f"{', '.join('never' if s is None else f'{s:.2f}s' for s in up)}", flush=True)
    time.sleep(rng.uniform(opts.min_up, opts.max_up))
    stop_clients(stop, clients)
    load_s = time.monotonic() - started

    ws = sql(db, f"SELECT id FROM workspaces WHERE name = '{WORKSPACE}'")[0][0]
    settled, settle_s, left = settle(db, ws, 60)
    failures += book.problems
    failures += [f"an answer that was neither a result nor a clean retry: {u}"
                 for u in book.unclean[:20]]
    if not settled:
        failures.append(f"not settled after {settle_s:.0f}s: {left}")

    # ------------------------------------------------------------------ the database
    actions = {a: {"decision_id": d, "status": s, "level": lv, "draft": dr}
               for a, d, s, lv, dr in sql(db, f"SELECT id, decision_id, status, level, draft "
                                              f"FROM actions WHERE workspace_id = '{ws}'")}
    decisions = {d: s for d, s in sql(db, f"SELECT id, status FROM decisions WHERE "
                                          f"workspace_id = '{ws}' AND class = 'action_proposed'")}
    outbox = {}
    for a, s in sql(db, f"SELECT id, status FROM outbox WHERE workspace_id = '{ws}' AND "
                        f"kind = 'message'"):
        outbox.setdefault(a, []).append(s)
    ledger = {}
    for a, e in sql(db, f"SELECT action_id, event FROM ledger WHERE workspace_id = '{ws}' "
                        f"AND action_id IS NOT NULL ORDER BY seq"):
        ledger.setdefault(a, []).append(e)
    episodes = {}
    for e, n in sql(db, f"SELECT external_id, count(*) FROM episodes WHERE workspace_id = "
                        f"'{ws}' AND external_id LIKE 'pgc-%' GROUP BY external_id"):
        episodes[e] = int(n)
    by_decision = {}
    for aid, a in actions.items():
        by_decision.setdefault(a["decision_id"], []).append(aid)
    stored_nonces = {}
    for aid, a in actions.items():
        for n in NONCE_RE.findall(a["draft"] or ""):
            stored_nonces.setdefault(n, []).append(aid)
    for n, aids in sorted(stored_nonces.items()):
        if len(aids) > 1:
            failures.append(f"one action.communicate (pgn={n}) made {len(aids)} actions: {aids}")

    lost = []  # acknowledged writes not found
    checked = 0
    for did, rec in sorted(book.decisions.items()):
        checked += 1
        aid = rec["action_id"]
        if did not in decisions:
            lost.append(f"acknowledged proposal {did} (action {aid}): no decision row")
            continue
        if by_decision.get(did) != [aid]:
            lost.append(f"acknowledged proposal {did}: told action {aid}, the database has "
                        f"{by_decision.get(did)}")
            continue
        events = ledger.get(aid, [])
        if events.count("proposed") != 1:
            lost.append(f"acknowledged proposal {did}: ledger of {aid} is {events}")
        status = actions[aid]["status"]
        if rec["approved"]:
            checked += 1
            if events.count("approved") != 1 or status != "delivered":
                lost.append(f"acknowledged approval of {did}: action {aid} is {status}, "
                            f"ledger {events}")
        if rec["rejected"]:
            checked += 1
            if events.count("rejected") != 1 or status != "rejected":
                lost.append(f"acknowledged rejection of {did}: action {aid} is {status}, "
                            f"ledger {events}")
        if rec["approved"] and rec["rejected"]:
            failures.append(f"{did}: both an approval and a rejection succeeded")
        must_deliver = (rec["first"] == "success" or rec["approved"] or
                        (rec["level"] == 2 and not rec["rejected"] and
                         not rec["decided_unknown"]))
        if must_deliver and status != "delivered":
            lost.append(f"{did} (action {aid}, answers {rec['answers']}) should have been "
                        f"delivered; it is {status}, ledger {events}")
    for nonce, msg in sorted(book.refused_nonces.items()):
        if nonce in stored_nonces:
            failures.append(f"a proposal refused with '{msg}' was stored anyway: action "
                            f"{stored_nonces[nonce]}")

    acked = [b for b in book.batches if b["outcome"] == "ack"]
    partial = 0
    for b in book.batches:
        counts = [episodes.get(e, 0) for e in b["ext"]]
        if any(n > 1 for n in counts):
            failures.append(f"batch {b['id']}: an episode stored twice: {counts}")
        have = sum(1 for n in counts if n)
        if b["outcome"] == "ack":
            checked += len(b["ext"])
            if have != len(b["ext"]):
                lost.append(f"acknowledged batch {b['id']}: {have} of {len(b['ext'])} episodes "
                            f"stored")
        elif b["outcome"] == "refused" and have:
            failures.append(f"batch {b['id']} refused with {b['answer']!r} but {have} of its "
                            f"episodes are stored")
        elif have not in (0, len(b["ext"])):
            partial += 1
            failures.append(f"batch {b['id']} (outcome unknown) stored in part: {have} of "
                            f"{len(b['ext'])}")

    # ------------------------------------------------------------------ scheduled work
    posts = receiver.snapshot()
    for p in posts:
        if not p["sig_ok"]:
            failures.append(f"a webhook POST with a bad signature (key {p['key']})")
    accepted, redelivered = accepted_by_key(posts)
    duplicates = []
    for key, ps in accepted.items():
        if {p["action_id"] for p in ps} != {key}:
            duplicates.append(f"Idempotency-Key {key} carried {[p['action_id'] for p in ps]}")
        if len({p["body"] for p in ps}) > 1:
            duplicates.append(f"action {key} delivered with different bodies")
    nonce_keys = {}
    for key, ps in accepted.items():
        for n in NONCE_RE.findall(ps[0]["body"]):
            nonce_keys.setdefault(n, set()).add(key)
    duplicates += [f"message pgn={n} delivered under {sorted(k)}"
                   for n, k in nonce_keys.items() if len(k) > 1]
    delivered = expired = 0
    for aid, a in sorted(actions.items()):
        events = ledger.get(aid, [])
        for e in set(events):
            if events.count(e) > 1:
                duplicates.append(f"action {aid}: {events.count(e)} '{e}' ledger entries")
        ended = [e for e in ("rejected", "expired", "refused") if e in events]
        if ended and ("executed" in events or "delivered" in events):
            failures.append(f"action {aid}: ledger {events} both ends it and sends it")
        expired += "expired" in events
        if a["status"] == "delivered":
            delivered += 1
            if aid not in accepted:
                lost.append(f"action {aid} is delivered but the receiver never got it")
            if outbox.get(aid) != ["delivered"] or "executed" not in events:
                failures.append(f"action {aid} is delivered; outbox {outbox.get(aid)}, ledger "
                                f"{events}")
        elif a["status"] in ("executed", "failed"):
            lost.append(f"action {aid} ended {a['status']} (outbox {outbox.get(aid)})")
        elif aid in accepted:
            failures.append(f"the receiver got action {aid}, which is {a['status']}")
    for aid in sorted(expiring):
        checked += 1
        events = ledger.get(aid, [])
        if actions[aid]["status"] != "expired" or events.count("expired") != 1:
            lost.append(f"action {aid}, due to expire before a crash, is "
                        f"{actions[aid]['status']}, ledger {events}")
    failures += duplicates
    failures += lost

    # ------------------------------------------------------------------ the ledger, Cortex
    rc, out, chains = ledger_verify(db, WORKSPACE)
    if rc != 0:
        failures.append(f"cortex ledger verify exited {rc}: {out.strip()}")
    for inst, pid in zip(instances, pids):
        if inst.proc is None or inst.proc.pid != pid or inst.proc.poll() is not None:
            failures.append(f"{inst.name} is not the process started at the beginning "
                            f"(it exited {inst.proc and inst.proc.poll()})")
        else:
            code = inst.stop()
            if code != 0:
                failures.append(f"{inst.name} exited {code} on SIGTERM")

    c = book.counts
    by_status = {}
    for a in actions.values():
        k = f"{a['level']}:{a['status']}"
        by_status[k] = by_status.get(k, 0) + 1
    print(f"pg_crash: load {load_s:.0f}s, settled in {settle_s:.1f}s; calls: "
          f"{c.get('communicate', 0)} communicate, {c.get('approve', 0)} approve, "
          f"{c.get('reject', 0)} reject, {c.get('ingest_batches', 0)} ingest batches; "
          f"acknowledged after a retry with the same idempotency_key: "
          f"{c.get('acknowledged_after_retry', 0)}; "
          f"refused with a retry: {c.get('refused', 0)} (+{c.get('retried', 0)} retries), "
          f"commit outcome unknown: {c.get('in_doubt', 0)}; answers while down: "
          f"{len(down_latencies)}, median {statistics.median(down_latencies or [0]) * 1000:.0f}"
          f" ms; back after a restart: median {statistics.median(recoveries or [0]):.2f}s, max "
          f"{max(recoveries or [0]):.2f}s; webhook POSTs {len(posts)}; actions by level and "
          f"status: {json.dumps(by_status, sort_keys=True)}; ledger: {out.strip()}",
          flush=True)
    print(f"pg_crash: rounds={opts.rounds} acknowledged_proposals={len(book.decisions)} "
          f"acknowledged_approvals={c.get('acknowledged_approve', 0)} "
          f"acknowledged_rejections={c.get('acknowledged_reject', 0)} "
          f"acknowledged_batches={len(acked)} "
          f"acknowledged_episodes={c.get('acknowledged_episodes', 0)} delivered={delivered} "
          f"expired={expired} "
          f"checked={checked} lost={len(lost)} duplicates={len(duplicates)} "
          f"redelivered_same_key={redelivered} partial_batches={partial} "
          f"unclean_answers={c.get('unclean', 0)} ledger={'ok' if rc == 0 else 'FAILED'} "
          f"violations={len(failures)} seconds={time.monotonic() - started:.0f}", flush=True)
    if not report_failures("pg_crash", failures):
        return False
    print("pg_crash: ok", flush=True)
    return True


if __name__ == "__main__":
    sys.exit(main())
