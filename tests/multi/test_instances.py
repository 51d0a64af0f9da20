"""Two `cortex serve` processes on one PostgreSQL database (Python 3 stdlib only).

Cortex on PostgreSQL is meant to run as several stateless instances behind a load
balancer. These tests start two instances, A and B, on different ports over one database
and check what a user of such a deployment relies on:

  * a decision proposed through A is inspected, approved and rejected through B, and both
    instances then tell the same story (the agent's read,act token drafts; approvals and
    rejections come from a person's read,approve token, the agent's being refused);
  * two approvals (or an approval and a rejection) of one draft at the same moment, one
    through each instance: one succeeds, the other answers `not_pending`, and the message
    is delivered exactly once (or never);
  * the call quotas are shared: N calls split across A and B, then the next is refused on
    both; N concurrent calls too many are refused, not let through;
  * undo windows and draft expiries run once in total, whichever instance is up, with
    instances SIGKILLed while sends wait in their undo window, as they fall due, in the
    middle of a webhook delivery, and just before drafts expire; rejections and approvals
    race the window through the other instance; every executed message is delivered once
    (a delivery cut short by SIGKILL is repeated under the same Idempotency-Key) and the
    ledger verifies with exactly the expected entries;
  * the ledger's hash chain stays valid under concurrent writers on both instances, and
    holds exactly the entries the answers imply;
  * concurrent ingest through both gives every acknowledged batch its own world_version,
    and versions never go backwards;
  * a 2025-11-25 session opened on A works on B, and DELETE on B ends it on A as well;
  * a 2026-07-28 `subscriptions/listen` stream on each instance is told, within a second,
    of a draft proposed through the other and of an interrupt_now message ingested through
    the other.
  * a task made through A (a draft, io.modelcontextprotocol/tasks) is read through B at
    once, completed on both when a person approves through B, and not found by another
    workspace's token.

Delivery goes through the webhook connector to a receiver in this process that checks the
signature and records every POST with its Idempotency-Key.

The cluster, the instances and the calls come from harness.py. Each server's stderr goes to
a log file whose tail is printed when a test fails.

    CORTEX_BIN=build/cortex python3 -m unittest discover -s tests/multi -t tests/multi -v
"""

import hashlib
import hmac
import http.client
import http.server
import json
import os
import re
import signal
import sys
import threading
import time
import unittest
from datetime import datetime, timezone

from harness import (LEGACY, M, MODERN, SECRET, Instance, call, cli, create_token,
                     http_request, ledger_verify, new_database, ok, rpc_body, start_cluster,
                     stop_cluster, write_config)

NOT_PENDING_RE = re.compile(r"decision (dec_\w+) is (\w+), not pending")
EXPECTED_TOOLS = ["workspace.status", "entity.lookup", "meta.why_this_notification",
                  "decision.inspect", "decision.list", "notification.list",
                  "action.communicate", "action.approve", "action.reject",
                  "meta.why_this_action", "rule.list", "rule.accept", "rule.reject",
                  "episode.ingest", "rule.learn"]


# --------------------------------------------------------------------------------------------
# PostgreSQL, the CLI and the servers
# --------------------------------------------------------------------------------------------

# --------------------------------------------------------------------------------------------
# The webhook receiver
# --------------------------------------------------------------------------------------------

class Receiver:
    """Records every POST (with a good signature: answered 200; else 401). `hook`, if set,
    is called once, with the POST's action id, by the first POST it returns True for, after
    the POST is recorded and before it is answered (as a receiver that applied a message
    and is about to acknowledge it)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.posts = []
        self.hook = None
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                want = "sha256=" + hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
                sig_ok = hmac.compare_digest(self.headers.get("X-Cortex-Signature", ""), want)
                try:
                    doc = json.loads(raw)
                except ValueError:
                    doc = {}
                with receiver.lock:
                    receiver.posts.append({
                        "key": self.headers.get("Idempotency-Key", ""), "sig_ok": sig_ok,
                        "action_id": doc.get("action_id"), "to": doc.get("to"),
                        "body": doc.get("body"), "workspace_id": doc.get("workspace_id")})
                    hook = receiver.hook
                    if hook is not None and hook(doc.get("action_id")):
                        receiver.hook = None
                self.send_response(200 if sig_ok else 401)
                self.send_header("Content-Length", "0")
                self.end_headers()

        class Quiet(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a sender SIGKILLed mid-request resets the connection

        self.httpd = Quiet(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hooks/cortex"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def posts_for(self, action_ids):
        ids = set(action_ids)
        with self.lock:
            return [p for p in self.posts if p["action_id"] in ids or p["key"] in ids]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


# --------------------------------------------------------------------------------------------
# Module set-up: the cluster, the receiver, and the pair A/B most tests share
# --------------------------------------------------------------------------------------------

def setUpModule():
    start_cluster("cortex-multi-")
    try:
        M["receiver"] = Receiver()
        M["db"] = new_database("shared")
        config = write_config(os.path.join(M["tmp"], "shared.toml"), M["receiver"].url)
        M["A"] = Instance("A", M["db"], config)
        M["B"] = Instance("B", M["db"], config)
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    try:
        stop_cluster()
    finally:
        if "receiver" in M:
            M["receiver"].close()


# --------------------------------------------------------------------------------------------
# Talking to the servers
# --------------------------------------------------------------------------------------------

def decision_statuses(inst, token):
    """{decision_id: status} of every action_proposed decision, read through `inst`."""
    out, cursor = {}, None
    while True:
        args = {"decision_class": "action_proposed", "limit": 100}
        if cursor:
            args["cursor"] = cursor
        body = ok(inst, token, "decision.list", args)
        out.update({d["decision_id"]: d["status"] for d in body["decisions"]})
        cursor = body.get("next_cursor")
        if not cursor:
            return out


def wait_for(what, predicate, timeout):
    """Polls `predicate` until it returns a true value; fails with `what` otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


def run_threads(fns, timeout=60):
    """Runs each callable in its own thread; re-raises the first exception."""
    errors = []

    def wrap(fn):
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(fn,), daemon=True) for fn in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        if t.is_alive():
            raise AssertionError(f"a worker thread did not finish within {timeout}s")
    if errors:
        raise errors[0]


def propose(inst, token, to, message):
    return ok(inst, token, "action.communicate", {"to": to, "message": message})


class MultiTest(unittest.TestCase):
    """Prints the tail of every server log when a test fails or errs."""

    def run(self, result=None):
        result = result if result is not None else self.defaultTestResult()
        before = len(result.failures) + len(result.errors)
        super().run(result)
        if len(result.failures) + len(result.errors) > before:
            for inst in Instance.ALL:
                sys.stderr.write(f"\n===== {self.id()}: log of instance {inst.name} =====\n"
                                 f"{inst.tail()}\n")
        return result

    def assertDeliveredOnce(self, action_ids, posts, allow_same_key_redelivery=False):
        """Each action reached the receiver once: one accepted POST under Idempotency-Key
        = its action id (with `allow_same_key_redelivery`, repeats of that same POST after a
        SIGKILL are tolerated, as at-least-once delivery with an idempotency key allows)."""
        by_key = {}
        for p in posts:
            self.assertTrue(p["sig_ok"], f"a webhook POST with a bad signature: {p}")
            self.assertEqual(p["key"], p["action_id"], f"Idempotency-Key is not the action id: {p}")
            by_key.setdefault(p["key"], []).append(p)
        for aid in action_ids:
            got = by_key.get(aid, [])
            self.assertTrue(got, f"action {aid} was never delivered")
            if allow_same_key_redelivery:
                bodies = {(p["to"], p["body"]) for p in got}
                self.assertEqual(len(bodies), 1,
                                 f"action {aid} was delivered with different contents: {got}")
            else:
                self.assertEqual(len(got), 1, f"action {aid} was delivered {len(got)} times: {got}")
        self.assertEqual(set(by_key) - set(action_ids), set(),
                         "the receiver got actions that must never be delivered")


# --------------------------------------------------------------------------------------------
# 1. One decision, two instances
# --------------------------------------------------------------------------------------------

class TestDecisionAcrossInstances(MultiTest):
    def test_proposed_on_a_inspected_approved_and_rejected_on_b(self):
        A, B = M["A"], M["B"]
        token = create_token(M["db"], "crossover")  # the agent's: drafts
        person = create_token(M["db"], "crossover", "read,approve", label="person")
        rx = M["receiver"]

        # Proposed through A.
        sent = propose(A, token, "pat@crossover.example", "Can we move Thursday's review?")
        self.assertEqual(sent["status"], "pending_approval", sent)
        did, aid = sent["decision_id"], sent["action_id"]

        # Inspected through B: the same decision, the same explanation as on A.
        on_a = ok(A, token, "decision.inspect", {"decision_id": did})
        on_b = ok(B, token, "decision.inspect", {"decision_id": did})
        self.assertEqual(on_b, on_a)
        self.assertEqual(on_b["decision_class"], "action_proposed")
        self.assertEqual(ok(B, token, "meta.why_this_action", {"action_id": aid}),
                         ok(A, token, "meta.why_this_action", {"action_id": aid}))
        self.assertEqual(decision_statuses(B, token)[did], "pending")

        # The agent may not approve or reject it, through either instance.
        for inst in (A, B):
            for verb in ("action.approve", "action.reject"):
                body, is_error = call(inst, token, verb, {"decision_id": did})
                self.assertTrue(is_error, f"{verb} with the agent's token via {inst.name}: {body}")
                self.assertEqual(body["error"], "unauthorized", body)
                self.assertIn("'approve' scope", body["message"])
        self.assertEqual(decision_statuses(A, token)[did], "pending")

        # Approved through B by the person, with an edit; A then refuses a second approval
        # and a rejection.
        edited = "Could we move Thursday's review to Friday 10:00?"
        approved = ok(B, person, "action.approve", {"decision_id": did, "message": edited})
        self.assertEqual((approved["status"], approved["decision_id"]), ("success", did), approved)
        self.assertEqual(approved["draft"], edited, approved)
        for verb in ("action.approve", "action.reject"):
            body, is_error = call(A, person, verb, {"decision_id": did})
            self.assertTrue(is_error, f"{verb} through A after B approved: {body}")
            self.assertEqual(body["error"], "not_pending", body)
            m = NOT_PENDING_RE.search(body["message"])
            self.assertTrue(m and m.group(2) in ("executed", "delivered"), body)
        wait_for(f"{did} delivered, seen through A and B",
                 lambda: decision_statuses(A, token)[did] == "delivered" ==
                 decision_statuses(B, token)[did], 15)
        self.assertDeliveredOnce([aid], rx.posts_for([aid]))
        self.assertEqual(rx.posts_for([aid])[0]["body"], edited)

        # Another proposed through A, rejected through B: A sees it rejected, never sent.
        sent2 = propose(A, token, "quinn@crossover.example", "Shall I book the usual room?")
        did2, aid2 = sent2["decision_id"], sent2["action_id"]
        rejected = ok(B, person, "action.reject", {"decision_id": did2, "reason": "not now"})
        self.assertEqual(rejected["status"], "success", rejected)
        body, is_error = call(A, person, "action.approve", {"decision_id": did2})
        self.assertTrue(is_error, body)
        self.assertEqual(body["error"], "not_pending", body)
        self.assertIn(f"decision {did2} is rejected, not pending", body["message"])
        self.assertEqual(decision_statuses(A, token)[did2], "rejected")
        self.assertEqual(decision_statuses(B, token)[did2], "rejected")
        self.assertEqual(ok(A, token, "decision.inspect", {"decision_id": did2}),
                         ok(B, token, "decision.inspect", {"decision_id": did2}))

        rc, out, entries = ledger_verify(M["db"], "crossover")
        self.assertEqual(rc, 0, out)
        # proposed, approved, executed, delivered + proposed, rejected
        self.assertEqual(entries.get("crossover"), 6, out)
        time.sleep(0.5)  # nothing more may arrive for the rejected one
        self.assertEqual(rx.posts_for([aid2]), [])


# --------------------------------------------------------------------------------------------
# 2. Two approvals of one draft at the same moment, one through each instance
# --------------------------------------------------------------------------------------------

class TestConcurrentApprovals(MultiTest):
    ROUNDS = 20

    def race(self, token, did, verb_a, verb_b):
        """Sends verb_a through A and verb_b through B for `did` at the same moment;
        returns [(body, is_error) from A, (body, is_error) from B]."""
        A, B = M["A"], M["B"]
        conns = [http.client.HTTPConnection("127.0.0.1", inst.port, timeout=15)
                 for inst in (A, B)]
        for c in conns:
            c.connect()  # so that the barrier releases two requests, not two handshakes
        barrier = threading.Barrier(2)
        answers = [None, None]

        def go(i, inst, verb):
            barrier.wait(5)
            answers[i] = call(inst, token, verb, {"decision_id": did}, conn=conns[i])

        try:
            run_threads([lambda: go(0, A, verb_a), lambda: go(1, B, verb_b)], timeout=30)
        finally:
            for c in conns:
                c.close()
        return answers

    def test_concurrent_approvals_execute_once_and_deliver_once(self):
        A, B = M["A"], M["B"]
        token = create_token(M["db"], "race")  # the agent's: drafts
        person = create_token(M["db"], "race", "read,approve", label="person")  # approves
        drafts = []
        for i in range(self.ROUNDS):
            # One counterparty each: three approvals in a row would raise trust to level 2.
            sent = propose((A, B)[i % 2], token, f"racer{i}@race.example", f"race {i}")
            self.assertEqual(sent["status"], "pending_approval", sent)
            drafts.append((sent["decision_id"], sent["action_id"]))

        wins = {"A": 0, "B": 0}
        for did, aid in drafts:
            answers = self.race(person, did, "action.approve", "action.approve")
            winners = [n for n, (body, err) in zip("AB", answers) if not err]
            self.assertEqual(len(winners), 1, f"two approvals of {did} at once: {answers}")
            wins[winners[0]] += 1
            loser = [body for body, err in answers if err][0]
            self.assertEqual(loser["error"], "not_pending", loser)
            m = NOT_PENDING_RE.search(loser["message"])
            self.assertTrue(m and m.group(1) == did and m.group(2) in ("executed", "delivered"),
                            f"the losing approval of {did} said: {loser}")

        ids = [aid for _, aid in drafts]
        rx = M["receiver"]
        wait_for("every approved message at the receiver",
                 lambda: {p["key"] for p in rx.posts_for(ids)} >= set(ids), 20)
        wait_for("every approved decision delivered",
                 lambda: set(decision_statuses(A, token).values()) == {"delivered"}, 15)
        self.assertEqual(set(decision_statuses(B, token).values()), {"delivered"})
        time.sleep(1)  # a second delivery would come within this
        self.assertDeliveredOnce(ids, rx.posts_for(ids))
        rc, out, entries = ledger_verify(M["db"], "race")
        self.assertEqual(rc, 0, out)
        # proposed, approved, executed, delivered: one of each per decision
        self.assertEqual(entries.get("race"), 4 * self.ROUNDS, out)
        sys.stderr.write(f"[race: A won {wins['A']}, B won {wins['B']}] ")

    def test_approve_racing_reject_one_wins(self):
        A, B = M["A"], M["B"]
        token = create_token(M["db"], "race2")  # the agent's: drafts
        person = create_token(M["db"], "race2", "read,approve", label="person")
        outcomes = {}
        for i in range(10):
            sent = propose((A, B)[i % 2], token, f"duel{i}@race.example", f"duel {i}")
            did, aid = sent["decision_id"], sent["action_id"]
            verbs = ("action.approve", "action.reject") if i % 2 else \
                ("action.reject", "action.approve")
            answers = self.race(person, did, *verbs)
            won = [v for v, (body, err) in zip(verbs, answers) if not err]
            self.assertEqual(len(won), 1, f"approve and reject of {did} at once: {answers}")
            lost = [body for body, err in answers if err][0]
            self.assertEqual(lost["error"], "not_pending", lost)
            outcomes[did] = (aid, "delivered" if won[0] == "action.approve" else "rejected")
        approved = [aid for aid, st in outcomes.values() if st == "delivered"]
        rx = M["receiver"]
        wait_for("the decisions reach their final status on A and B",
                 lambda: all(decision_statuses(inst, token).get(d) == st
                             for d, (_, st) in outcomes.items() for inst in (A, B)), 20)
        time.sleep(1)
        self.assertDeliveredOnce(approved, rx.posts_for([a for a, _ in outcomes.values()]))
        rc, out, entries = ledger_verify(M["db"], "race2")
        self.assertEqual(rc, 0, out)
        self.assertEqual(entries.get("race2"),
                         4 * len(approved) + 2 * (len(outcomes) - len(approved)), out)


# --------------------------------------------------------------------------------------------
# 3. Quotas are shared by the instances
# --------------------------------------------------------------------------------------------

def wait_for_fresh_minute(margin=5):
    """Returns at once if at least `margin` s are left in this clock minute, else at the
    start of the next one (the quota windows are clock minutes)."""
    left = 60 - time.time() % 60
    if left < margin:
        time.sleep(left + 0.2)


class TestQuotasAcrossInstances(MultiTest):
    def assertQuotaExceeded(self, inst, token, quota, limit):
        body, is_error = call(inst, token, "workspace.status")
        self.assertTrue(is_error, f"call over {quota}={limit} through {inst.name} answered: {body}")
        self.assertEqual((body.get("error"), body.get("quota"), body.get("limit")),
                         ("quota_exceeded", quota, limit), body)
        self.assertGreater(body.get("retry_after_s", 0), 0, body)

    def test_calls_per_minute_counts_both_instances(self):
        A, B = M["A"], M["B"]
        tokens = [create_token(M["db"], "quota-ws", label=f"q{i}") for i in range(2)]
        n = 10
        cli(M["db"], "quota", "set", "--workspace", "quota-ws", "calls_per_minute", str(n))
        wait_for_fresh_minute()
        for i in range(n):
            inst = (A, B)[i % 2]
            body, is_error = call(inst, tokens[(i // 2) % 2], "workspace.status")
            self.assertFalse(is_error, f"call {i + 1} of {n} through {inst.name}: {body}")
        # The workspace's allowance is spent: refused on both, for both tokens.
        for inst in (A, B):
            for token in tokens:
                self.assertQuotaExceeded(inst, token, "calls_per_minute", n)

    def test_concurrent_calls_on_both_instances_never_exceed_the_quota(self):
        A, B = M["A"], M["B"]
        token = create_token(M["db"], "quota-burst")
        n = 20
        cli(M["db"], "quota", "set", "--workspace", "quota-burst", "calls_per_minute", str(n))
        wait_for_fresh_minute()
        lock = threading.Lock()
        answers = {"A": [], "B": []}
        barrier = threading.Barrier(16)

        def caller(k):
            inst = (A, B)[k % 2]
            barrier.wait(10)
            for _ in range(3):
                body, is_error = call(inst, token, "workspace.status")
                with lock:
                    answers[inst.name].append(body.get("error") if is_error else "ok")

        run_threads([lambda k=k: caller(k) for k in range(16)], timeout=30)
        every = answers["A"] + answers["B"]
        self.assertEqual(set(every) - {"ok", "quota_exceeded"}, set(), answers)
        self.assertEqual(every.count("ok"), n,
                         f"48 calls at once, half through A and half through B, under "
                         f"calls_per_minute={n}: {answers}")

    def test_token_calls_per_minute_counts_both_instances(self):
        A, B = M["A"], M["B"]
        t1, t2 = (create_token(M["db"], "quota-tok", label=f"t{i}") for i in range(2))
        n = 6
        cli(M["db"], "quota", "set", "--workspace", "quota-tok", "token_calls_per_minute", str(n))
        wait_for_fresh_minute()
        for i in range(n):
            body, is_error = call((A, B)[i % 2], t1, "workspace.status")
            self.assertFalse(is_error, f"call {i + 1} of {n} of token 1: {body}")
        self.assertQuotaExceeded(A, t1, "token_calls_per_minute", n)
        self.assertQuotaExceeded(B, t1, "token_calls_per_minute", n)
        # The other token's allowance is its own (and refused calls counted against nothing).
        for i in range(n):
            body, is_error = call((B, A)[i % 2], t2, "workspace.status")
            self.assertFalse(is_error, f"call {i + 1} of {n} of token 2: {body}")
        self.assertQuotaExceeded(B, t2, "token_calls_per_minute", n)
        self.assertQuotaExceeded(A, t2, "token_calls_per_minute", n)


# --------------------------------------------------------------------------------------------
# 4. Undo windows and expiries run once, whichever instance is up
# --------------------------------------------------------------------------------------------

class TestUndoWindowsAndExpiriesOnce(MultiTest):
    UNDO = 3  # seconds: long enough to SIGKILL an instance while sends wait in it

    def setUp(self):
        self.db = new_database("undo")
        config = write_config(os.path.join(M["tmp"], "undo.toml"), M["receiver"].url,
                              undo_window_seconds=self.UNDO, draft_expiry_minutes=1)
        self.A = Instance("undo-A", self.db, config)
        self.addCleanup(self.A.stop)
        self.B = Instance("undo-B", self.db, config)
        self.addCleanup(self.B.stop)
        self.addCleanup(setattr, M["receiver"], "hook", None)

    def test_supervised_sends_and_expiries_with_sigkills(self):
        A, B, db, rx = self.A, self.B, self.db, M["receiver"]
        ws = "undo"
        # 32 counterparties at level 2 (supervised), one per send: a rejection lowers its
        # counterparty's level.
        cli(db, "ingest", "--workspace", ws, "-", stdin="".join(
            json.dumps({"type": "entity", "name": f"Sup {i}", "identifiers": [
                f"sup{i}@undo.example"], "tags": ["supervised"]}) + "\n" for i in range(32)))
        cli(db, "trust", "set", "--workspace", ws, "--scope", "tag:supervised", "--level", "2")
        token = create_token(db, ws)  # the agent's: drafts
        person = create_token(db, ws, "read,approve", label="person")  # approves, rejects
        final, aid_of, by_hand = {}, {}, set()  # decision -> final status; -> action; approved
        counterparties = iter(range(32))

        def send(inst, to, level):
            sent = propose(inst, token, to, f"message to {to}")
            self.assertEqual(sent["status"], "pending_approval", sent)
            self.assertIn("Will be sent at" if level == 2 else "it expires at", sent["message"])
            aid_of[sent["decision_id"]] = sent["action_id"]
            return sent["decision_id"]

        def supervised(n, via=None):
            return [send((via or (A, B)[k % 2]), f"sup{next(counterparties)}@undo.example", 2)
                    for k in range(n)]

        def delivered(dids, timeout, what):
            aids = {aid_of[d] for d in dids}
            wait_for(what, lambda: {p["key"] for p in rx.posts_for(aids)} >= aids, timeout)
            final.update({d: "delivered" for d in dids if d not in final})

        # Four level-1 drafts (first contacts), which expire a minute from now.
        t0 = time.monotonic()
        drafts = [send((A, B)[i % 2], f"draft{i}@undo.example", 1) for i in range(4)]
        final.update({d: "expired" for d in drafts})

        # 1. Eight sends through both, two rejected through the other instance, then A is
        #    SIGKILLed while all of them are in their undo window: B executes A's too.
        p1 = supervised(8)
        for did, inst in ((p1[0], B), (p1[1], A)):  # p1[0] came through A, p1[1] through B
            body = ok(inst, person, "action.reject", {"decision_id": did, "reason": "undo"})
            self.assertEqual(body["status"], "success", body)
            final[did] = "rejected"
        A.kill9()
        delivered([d for d in p1 if d not in final], 20, "B alone to execute and deliver batch 1")
        A.start()

        # 2. Eight more through both; B is SIGKILLed the moment they fall due.
        first = time.monotonic()
        p2 = supervised(8)
        time.sleep(max(0.0, first + self.UNDO - time.monotonic()))
        B.kill9()
        delivered(p2, 25, "A alone to execute and deliver batch 2")
        B.start()

        # 3. A alone executes four; the receiver SIGKILLs A as the first webhook POST
        #    arrives (recorded, not yet acknowledged). B, started afterwards, delivers the
        #    rest, and the cut-short one again once its lease runs out.
        B.kill9()
        p3 = supervised(4, via=A)
        p3_aids, killed = {aid_of[d] for d in p3}, threading.Event()
        a_proc = A.proc

        def kill_a_mid_delivery(aid):
            if aid not in p3_aids:
                return False
            a_proc.send_signal(signal.SIGKILL)
            killed.set()
            return True

        rx.hook = kill_a_mid_delivery
        self.assertTrue(killed.wait(15), "A never delivered batch 3")
        A.kill9()
        B.start()
        delivered(p3, 20, "B to deliver batch 3, including the delivery A was killed in")
        A.start()

        # 4. Rejections and approvals through the other instance racing the undo window.
        offsets = [-0.4, -0.15, -0.05, 0.0, 0.05, 0.15, 0.3, 0.6]
        jobs = []
        for k, off in enumerate(offsets):
            inst, other = ((A, B), (B, A))[k % 2]
            did = send(inst, f"sup{next(counterparties)}@undo.example", 2)
            verb = ("action.reject", "action.approve")[k // 2 % 2]
            jobs.append((time.monotonic() + self.UNDO + off, did, other, verb))
        answers = {}

        def racer(at, did, inst, verb):
            time.sleep(max(0.0, at - time.monotonic()))
            answers[did] = (verb, inst.name) + call(inst, person, verb, {"decision_id": did})

        run_threads([lambda j=j: racer(*j) for j in jobs], timeout=30)
        late = []
        for did, (verb, via, body, is_error) in answers.items():
            if not is_error:
                final[did] = "rejected" if verb == "action.reject" else "delivered"
                if verb == "action.approve":
                    by_hand.add(did)
                    late.append(did)
                continue
            m = NOT_PENDING_RE.search(body.get("message", ""))
            self.assertTrue(body.get("error") == "not_pending" and m and
                            m.group(2) in ("executed", "delivered"),
                            f"{verb} of {did} through {via} racing its undo window: {body}")
            late.append(did)
        delivered(late, 20, "batch 4's executed sends to be delivered")

        # Expiry: A is SIGKILLed just before the drafts fall due; B expires them alone.
        statuses = decision_statuses(A, token)
        self.assertEqual({d: statuses[d] for d in drafts}, {d: "pending" for d in drafts})
        time.sleep(max(0.0, t0 + 58 - time.monotonic()))
        A.kill9()
        wait_for("B to expire the drafts",
                 lambda: all(decision_statuses(B, token)[d] == "expired" for d in drafts), 20)
        A.start()

        # Both instances agree on every outcome, and nothing ran twice.
        wait_for("every decision's final status, read through A and through B",
                 lambda: all(decision_statuses(i, token) == final for i in (A, B)), 10)
        for did in drafts:
            body, is_error = call(A, person, "action.approve", {"decision_id": did})
            self.assertTrue(is_error, body)
            self.assertIn(f"decision {did} is expired, not pending", body["message"])
        time.sleep(1)  # a late second delivery would arrive within this
        sent = [aid_of[d] for d, st in final.items() if st == "delivered"]
        posts = rx.posts_for(aid_of.values())
        self.assertDeliveredOnce(sent, posts, allow_same_key_redelivery=True)
        rc, out, entries = ledger_verify(db, ws)
        self.assertEqual(rc, 0, out)
        # delivered: proposed, [approved,] executed, delivered; rejected or expired: 2
        want = sum(3 + (d in by_hand) if st == "delivered" else 2 for d, st in final.items())
        self.assertEqual(entries.get(ws), want, out)
        rc, out, _ = ledger_verify(db)
        self.assertEqual(rc, 0, out)
        counts = {st: list(final.values()).count(st) for st in set(final.values())}
        sys.stderr.write(f"[undo: {counts}, {len(by_hand)} approved by hand, "
                         f"{len(posts) - len(sent)} same-key redeliveries] ")


# --------------------------------------------------------------------------------------------
# 5. The ledger under concurrent writers on both instances
# --------------------------------------------------------------------------------------------

class TestLedgerUnderConcurrentWriters(MultiTest):
    def test_hash_chain_valid_and_complete(self):
        A, B, db, rx = M["A"], M["B"], M["db"], M["receiver"]
        ws = "ledger-ws"
        token = create_token(db, ws)  # the agent's: drafts
        person = create_token(db, ws, "read,approve", label="person")  # approves, rejects
        lock = threading.Lock()
        outcomes = {}  # decision_id -> (action_id, "delivered" | "rejected")
        verifies = []

        def writer(w):
            for i in range(8):
                here, there = (A, B) if (w + i) % 2 else (B, A)
                sent = propose(here, token, f"w{w}n{i}@ledger.example", f"writer {w} msg {i}")
                did = sent["decision_id"]
                verb = "action.approve" if (w * 8 + i) % 3 else "action.reject"
                body = ok(there, person, verb, {"decision_id": did})
                self.assertEqual(body["status"], "success", body)
                with lock:
                    outcomes[did] = (sent["action_id"],
                                     "delivered" if verb == "action.approve" else "rejected")

        def verifier():
            for _ in range(3):
                time.sleep(0.3)
                verifies.append(ledger_verify(db, ws)[:2])

        run_threads([lambda w=w: writer(w) for w in range(8)] + [verifier], timeout=60)
        for rc, out in verifies:
            self.assertEqual(rc, 0, f"`cortex ledger verify` while both instances wrote: {out}")

        approved = [aid for aid, st in outcomes.values() if st == "delivered"]
        wait_for("every approved message delivered",
                 lambda: {p["key"] for p in rx.posts_for(approved)} >= set(approved), 20)
        want = {d: st for d, (_, st) in outcomes.items()}
        wait_for("final statuses on A and on B",
                 lambda: all(decision_statuses(i, token) == want for i in (A, B)), 15)
        self.assertDeliveredOnce(approved, rx.posts_for([a for a, _ in outcomes.values()]))
        rc, out, entries = ledger_verify(db, ws)
        self.assertEqual(rc, 0, out)
        self.assertEqual(entries.get(ws), 4 * len(approved) + 2 * (len(outcomes) - len(approved)),
                         f"ledger entries for {len(approved)} approved and "
                         f"{len(outcomes) - len(approved)} rejected actions: {out}")
        rc, out, _ = ledger_verify(db)
        self.assertEqual(rc, 0, out)


# --------------------------------------------------------------------------------------------
# 6. Ingest through both: world_version moves forward
# --------------------------------------------------------------------------------------------

def post_episodes(inst, token, lines):
    body = "".join(json.dumps(l) + "\n" for l in lines).encode()
    status, _, data = http_request(inst.port, "POST", "/v1/episodes", body, {
        "Authorization": "Bearer " + token, "Content-Type": "application/x-ndjson"})
    return status, json.loads(data)


class TestIngestWorldVersion(MultiTest):
    def test_concurrent_batches_get_increasing_world_versions(self):
        A, B, db = M["A"], M["B"], M["db"]
        ws = "ingest-ws"
        token = create_token(db, ws)
        lock = threading.Lock()
        acks = []  # (sent_at, acked_at, world_version, instance, batch)
        seen = {}  # poller -> [world_version, ...] in the order read
        done = threading.Event()
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

        def ingester(w):
            for i in range(10):
                inst = (A, B)[(w + i) % 2]
                bid = f"{w}-{i}"
                lines = [{"type": "entity", "name": f"Person {bid}",
                          "identifiers": [f"p{bid}@ingest.example"]}]
                lines += [{"type": "episode", "kind": "message_received", "occurred_at": now,
                           "counterparty": f"p{bid}@ingest.example", "summary": f"msg {k}",
                           "external_id": f"x-{bid}-{k}"} for k in range(2)]
                sent_at = time.monotonic()
                status, report = post_episodes(inst, token, lines)
                acked_at = time.monotonic()
                self.assertEqual(status, 200, f"batch {bid} through {inst.name}: {report}")
                self.assertEqual((report["episodes_added"], report["entities_added"]), (2, 1),
                                 report)
                with lock:
                    acks.append((sent_at, acked_at, report["world_version"], inst.name, bid))

        poll_errors = []

        def poller(p):
            order = (A, B) if p == 0 else (B, A)
            got = seen.setdefault(f"poller {p}", [])
            try:
                while not done.is_set():
                    for inst in order:
                        wv = ok(inst, token, "workspace.status")["world_version"]
                        got.append((inst.name, wv))
            except BaseException as e:  # noqa: BLE001 - asserted below
                poll_errors.append(e)

        pollers = [threading.Thread(target=poller, args=(p,), daemon=True) for p in range(2)]
        for t in pollers:
            t.start()
        try:
            run_threads([lambda w=w: ingester(w) for w in range(6)], timeout=60)
        finally:
            done.set()
            for t in pollers:
                t.join(15)
        self.assertEqual(poll_errors, [], "workspace.status failed during ingest")

        versions = [a[2] for a in acks]
        self.assertEqual(len(set(versions)), len(versions),
                         "two acknowledged batches share a world_version")
        # Real-time order: a batch acknowledged before another was sent has the older version.
        backwards = [(x, y) for x in acks for y in acks if x[1] < y[0] and not x[2] < y[2]]
        self.assertEqual(backwards, [], "world_version went backwards between batches "
                         "acknowledged one after the other ((sent, acked, wv, via, batch))")
        # Readers through either instance never see the version go back.
        for name, got in seen.items():
            for (i1, v1), (i2, v2) in zip(got, got[1:]):
                self.assertLessEqual(v1, v2, f"{name} read {v1} on {i1}, then {v2} on {i2}")
        # At rest both instances show the newest acknowledged version and every episode.
        for inst in (A, B):
            status = ok(inst, token, "workspace.status")
            self.assertEqual(status["world_version"], max(versions),
                             f"workspace.status through {inst.name}")
            self.assertEqual((status["episodes"], status["entities"]),
                             (2 * len(acks), len(acks)), status)


# --------------------------------------------------------------------------------------------
# 7. A session opened on A is usable on B; DELETE on B ends it on A
# --------------------------------------------------------------------------------------------

class TestSessionAcrossInstances(MultiTest):
    def session_rpc(self, inst, token, sid, method, params=None, id=1, http_method="POST"):
        headers = {"Accept": "application/json, text/event-stream",
                   "Authorization": "Bearer " + token, "Mcp-Session-Id": sid,
                   "MCP-Protocol-Version": LEGACY}
        body = None
        if http_method == "POST":
            msg = {"jsonrpc": "2.0", "method": method}
            if id is not None:
                msg["id"] = id
            if params is not None:
                msg["params"] = params
            body = json.dumps(msg).encode()
            headers["Content-Type"] = "application/json"
        status, h, data = http_request(inst.port, http_method, "/mcp", body, headers)
        return status, (rpc_body(data, h.get("content-type")) if data else None)

    def test_session_opened_on_a_is_used_and_deleted_on_b(self):
        A, B = M["A"], M["B"]
        token = create_token(M["db"], "sessions")
        status, h, data = http_request(A.port, "POST", "/mcp", json.dumps({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {},
                       "clientInfo": {"name": "multi", "version": "1.0.0"}}}).encode(), {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "Authorization": "Bearer " + token})
        self.assertEqual(status, 200, data)
        sid = h.get("mcp-session-id")
        self.assertTrue(sid, h)
        self.assertEqual(rpc_body(data, h.get("content-type"))["result"]["protocolVersion"],
                         LEGACY)

        status, _ = self.session_rpc(B, token, sid, "notifications/initialized", id=None)
        self.assertEqual(status, 202)
        status, doc = self.session_rpc(B, token, sid, "tools/list", id=2)
        self.assertEqual(status, 200, doc)
        self.assertEqual([t["name"] for t in doc["result"]["tools"]], EXPECTED_TOOLS)
        for i, inst in enumerate((B, A, B)):
            status, doc = self.session_rpc(inst, token, sid, "tools/call",
                                           {"name": "workspace.status", "arguments": {}}, id=3 + i)
            self.assertEqual(status, 200, doc)
            self.assertEqual(doc["result"]["structuredContent"]["workspace"], "sessions", doc)
        # Another workspace's token cannot use it on either instance.
        other = create_token(M["db"], "sessions-other")
        for inst in (A, B):
            status, doc = self.session_rpc(inst, other, sid, "tools/list", id=9)
            self.assertEqual((status, doc["error"]["code"]), (404, -32001), doc)

        status, _ = self.session_rpc(B, token, sid, None, http_method="DELETE")
        self.assertEqual(status, 200)
        for inst in (A, B):
            status, doc = self.session_rpc(inst, token, sid, "tools/list", id=10)
            self.assertEqual(status, 404, f"{inst.name} after DELETE on B: {doc}")
            self.assertEqual(doc["error"], {"code": -32001, "message": "Session not found"}, doc)
        status, doc = self.session_rpc(A, token, sid, None, http_method="DELETE")
        self.assertEqual(status, 404, doc)


# --------------------------------------------------------------------------------------------
# 8. subscriptions/listen: a listener on either instance hears of changes made on the other
# --------------------------------------------------------------------------------------------

class Listener:
    """A subscriptions/listen stream through `inst`, read by a thread: every SSE message
    with the moment it arrived."""

    def __init__(self, inst, token, uris):
        self.inst, self.events, self.cond = inst, [], threading.Condition()
        msg = {"jsonrpc": "2.0", "id": f"listen-{inst.name}", "method": "subscriptions/listen",
               "params": {"notifications": {"resourceSubscriptions": uris}, "_meta": {
                   "io.modelcontextprotocol/protocolVersion": MODERN,
                   "io.modelcontextprotocol/clientCapabilities": {}}}}
        self.conn = http.client.HTTPConnection("127.0.0.1", inst.port, timeout=30)
        self.conn.request("POST", "/mcp", json.dumps(msg).encode(), {
            "Content-Type": "application/json", "Accept": "text/event-stream",
            "Authorization": "Bearer " + token, "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "subscriptions/listen"})
        self.response = self.conn.getresponse()
        assert self.response.status == 200, (self.response.status, self.response.read())
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        try:
            while True:
                line = self.response.readline()
                if not line:
                    return
                if line.startswith(b"data:"):
                    with self.cond:
                        self.events.append((time.monotonic(), json.loads(line[5:])))
                        self.cond.notify_all()
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            return  # closed (close() leaves the response without its socket)

    def wait(self, predicate, timeout):
        """The first (arrival, message) satisfying predicate, or None after timeout."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for at, m in self.events:
                    if predicate(at, m):
                        return at, m
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def close(self):
        self.conn.close()


class TestListenAcrossInstances(MultiTest):
    DUE, INBOX = "cortex://notifications/due", "cortex://inbox"

    def told(self, listener, uri, since):
        got = listener.wait(lambda at, m: at >= since and m.get("method") ==
                            "notifications/resources/updated" and m["params"]["uri"] == uri, 1.0)
        self.assertIsNotNone(got, f"{listener.inst.name} was not told of {uri} within 1 s: "
                                  f"{listener.events}")
        at, m = got
        self.assertEqual(m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                         f"listen-{listener.inst.name}", m)
        return at - since

    def test_a_listener_on_each_instance_hears_of_changes_made_through_the_other(self):
        A, B, db = M["A"], M["B"], M["db"]
        ws = "listen-ws"
        cli(db, "ingest", "--workspace", ws, "-", stdin=json.dumps(
            {"type": "entity", "name": "Sarah Chen", "identifiers": ["sarah@n.example"]}) + "\n")
        rules = os.path.join(M["tmp"], "listen-rules.yaml")
        with open(rules, "w") as f:
            f.write("settings:\n  utc_offset: \"+00:00\"\nrules:\n  - name: sarah-interrupts\n"
                    "    summary: Interrupt for Sarah.\n"
                    "    when: { counterparty: sarah@n.example }\n"
                    "    then: { triage: interrupt_now }\n")
        cli(db, "rules", "import", "--workspace", ws, rules)
        token = create_token(db, ws)
        listeners = [Listener(A, token, [self.DUE, self.INBOX]),
                     Listener(B, token, [self.DUE, self.INBOX])]
        try:
            for l in listeners:
                ack = l.wait(lambda at, m: True, 5)
                self.assertIsNotNone(ack, f"no acknowledgement from {l.inst.name}")
                self.assertEqual(ack[1]["method"], "notifications/subscriptions/acknowledged")
                self.assertEqual(ack[1]["params"]["notifications"],
                                 {"resourceSubscriptions": [self.DUE, self.INBOX]})
            latencies = []
            for via in (A, B):
                since = time.monotonic()
                propose(via, token, "sarah@n.example", f"Draft through {via.name}")
                latencies += [self.told(l, self.INBOX, since) for l in listeners]
            for via in (B, A):
                now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
                since = time.monotonic()
                status, doc = post_episodes(via, token, [{
                    "type": "episode", "kind": "message_received", "occurred_at": now,
                    "counterparty": "sarah@n.example", "subject": f"Through {via.name}",
                    "summary": "Sarah needs an answer", "external_id": f"listen-{via.name}"}])
                self.assertEqual(status, 200, doc)
                latencies += [self.told(l, self.DUE, since) for l in listeners]
            due, _ = call(A, token, "notification.list", {})
            self.assertEqual(sorted(n["triage_class"] for n in due["due"]),
                             ["interrupt_now", "interrupt_now"], due)
            latencies.sort()
            print(f"\n  listen: told in {latencies[len(latencies) // 2] * 1000:.0f} ms (median), "
                  f"{latencies[-1] * 1000:.0f} ms at most, over {len(latencies)} updates",
                  file=sys.stderr)
        finally:
            for l in listeners:
                l.close()


if __name__ == "__main__":
    unittest.main()


# --------------------------------------------------------------------------------------------
# 8. A task created through A is followed through B (io.modelcontextprotocol/tasks)
# --------------------------------------------------------------------------------------------

class TestTaskAcrossInstances(MultiTest):
    TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}

    def rpc(self, inst, token, method, params, name):
        params = dict(params)
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                           "io.modelcontextprotocol/clientCapabilities": self.TASKS}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                           "params": params}).encode()
        status, h, data = http_request(inst.port, "POST", "/mcp", body, {
            "Content-Type": "application/json", "Accept": "application/json",
            "Authorization": "Bearer " + token, "MCP-Protocol-Version": MODERN,
            "Mcp-Method": method, "Mcp-Name": name})
        return rpc_body(data, h.get("content-type"))

    def test_a_task_made_on_a_is_read_and_completed_through_b(self):
        A, B = M["A"], M["B"]
        token = create_token(M["db"], "tasks")
        person = create_token(M["db"], "tasks", "read,approve", label="person")
        created = self.rpc(A, token, "tools/call", {
            "name": "action.communicate",
            "arguments": {"to": "pat@tasks.example", "message": "Can we meet on Friday?"}},
            "action.communicate")["result"]
        self.assertEqual(created["resultType"], "task", created)
        task_id = created["taskId"]
        # Written before the reply: B reads it at once.
        got = self.rpc(B, token, "tasks/get", {"taskId": task_id}, task_id)["result"]
        self.assertEqual(got["status"], "input_required", got)
        did = next(w.strip("().") for w in got["statusMessage"].split() if w.startswith("dec_"))
        ok(B, person, "action.approve", {"decision_id": did})
        for inst in (A, B):
            got = self.rpc(inst, token, "tasks/get", {"taskId": task_id}, task_id)["result"]
            self.assertEqual(got["status"], "completed", f"through {inst.name}: {got}")
            self.assertEqual(got["result"]["structuredContent"]["decision_id"], did)
        # Another workspace's token finds nothing, through either instance.
        other = create_token(M["db"], "tasks-other")
        for inst in (A, B):
            doc = self.rpc(inst, other, "tasks/get", {"taskId": task_id}, task_id)
            self.assertEqual(doc["error"]["code"], -32602, doc)
