"""Workspace isolation and token access rules, end to end (Python 3 stdlib only).

"Two workspaces: no tool, list, cursor or ingest of one ever reveals, approves or counts
against the other (an id from another workspace is `not_found`, the same answer as an id
that never existed). A `read` token cannot act; a revoked token stops working at once."
Approvals come from a person: an agent's `read,act` token drafts but cannot approve or
reject (that needs the `approve` scope of a person's token), and a person's token of one
workspace cannot approve or reject the drafts of another.

Every test class starts its own `cortex serve` on a fresh data directory holding two
workspaces:

- A = `demo` (`cortex demo`: four weeks of history, the example rules, triage decisions),
  plus one pending action proposed in setUpClass;
- B = `beta`, a small world of its own that deliberately reuses A's identifiers
  (sarah.chen@northwind.example, @sarahc, @jkim), A's external_ids (demo-0001 ...) and one of
  A's thread names, with triage decisions minted both before and after A's.

The assertions compare real values (whole error bodies, counts, versions, ids), so they fail
if isolation breaks, not only if a status code changes. "Never existed" ids are forged from
a real id by changing its last character (still well formed) and are checked to be unknown
in their own workspace too.

    CORTEX_BIN=/path/to/cortex python3 -m unittest discover -s tests/e2e -t tests/e2e \
        -p test_isolation.py -v
"""

import http.client
import json
import os
import re
import subprocess
import tempfile
import time
import unittest

import test_http as th
from test_http import (CORTEX_BIN, LEGACY, RpcAsserts, Server, cli, create_token,
                       token_id_by_label, tool_result)

# Every prefixed id the server mints (seeds/README.md), as it appears in JSON text.
ID_RE = re.compile(r"\b(?:entity|dec|ntf|act|ep|rul|trc|led|av|wv|ws|tok)_"
                   r"[0-7][0-9A-HJKMNP-TV-Z]{25}\b")

A, B = "demo", "beta"

# B's first batch, ingested with the CLI before `cortex demo`, so its triage decisions are
# older than all of A's. It reuses A's identifiers, external_ids and a thread name.
B_WORLD_1 = [
    {"type": "entity", "name": "Sarah Beta", "identifiers": ["sarah.chen@northwind.example",
                                                             "@sarahc"], "tags": ["vip"]},
    {"type": "entity", "name": "Bo Berg", "identifiers": ["bo@beta.example"],
     "tags": ["external"]},
    {"type": "episode", "kind": "message_received", "occurred_at": "2026-11-23T10:00:00Z",
     "counterparty": "bo@beta.example", "summary": "Bo: 'Invoice attached.'",
     "external_id": "demo-0001"},
    {"type": "episode", "kind": "message_received", "occurred_at": "2026-11-23T14:00:00Z",
     "counterparty": "bo@beta.example", "summary": "Bo: 'Any news on the invoice?'",
     "external_id": "demo-0003"},
    # A has a 09:00-11:00 deep work block that day and a rule holding VIP mail during it;
    # B has neither, so B's VIP message interrupts.
    {"type": "episode", "kind": "message_received", "occurred_at": "2026-11-24T10:15:00Z",
     "counterparty": "sarah.chen@northwind.example", "subject": "Lunch",
     "summary": "Sarah (beta): 'Lunch on Friday?'", "external_id": "demo-0110"},
    # A's thread thr-staging-certs has 3 messages in the 24 hours before this one; B has none.
    {"type": "episode", "kind": "message_received", "occurred_at": "2026-11-25T21:30:00Z",
     "counterparty": "@jkim", "summary": "Jordan (beta): 'Certs renewed?'",
     "thread": "thr-staging-certs", "external_id": "demo-0126"},
]
# B's second batch, over HTTP after the server started: decisions newer than A's.
B_WORLD_2 = [
    {"type": "episode", "kind": "message_received", "occurred_at": "2026-11-26T09:30:00Z",
     "counterparty": "bo@beta.example", "summary": "Bo: 'Following up on the invoice.'",
     "external_id": "demo-0002"},
    {"type": "episode", "kind": "message_received", "occurred_at": "2026-11-26T12:00:00Z",
     "counterparty": "sarah.chen@northwind.example", "summary": "Sarah (beta): 'Friday works.'",
     "external_id": "b-0006"},
]

# The summaries of A's rules (examples/rules.yaml); none may ever explain a decision in B.
A_RULE_SUMMARIES = {
    "Interrupt for urgent messages from VIPs, even during deep work.",
    "Reply to Marcus quickly on Tuesdays \u2014 he expects same-day for project updates.",
    "Surface emails from VIP counterparties at the next focus-block break.",
    "Record newsletters silently; they are never opened or answered.",
    "Put messages from people you have never dealt with in the daily digest.",
    "Non-urgent messages after hours wait for the daily digest.",
    "Never send to external counterparties without approval.",
}


def ndjson(lines):
    return "".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines)


def forge(real_id):
    """A well-formed id of the same kind and millisecond that was never minted. (Ids minted
    in one millisecond are consecutive, so changing only the last character can hit a real
    one; the whole random part is replaced instead.)"""
    prefix, _, ulid = real_id.partition("_")
    rand = "0000000000000000" if ulid[10:] != "0000000000000000" else "0000000000000001"
    return f"{prefix}_{ulid[:10]}{rand}"


def ids_in(resp):
    return set(ID_RE.findall(resp.body.decode("utf-8", "replace")))


def normalized(resp, ident):
    """The whole response (HTTP status + JSON body) with `ident` replaced by a placeholder,
    so that two answers can be compared "modulo the id itself"."""
    text = resp.body.decode("utf-8")
    if ident:
        text = text.replace(ident, "<ID>")
    return resp.status, json.loads(text)


class Api:
    """HTTP client bound to one server's port (test_http's helpers, given a connection)."""

    def __init__(self, port):
        self.port = port

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)

    def _with(self, conn, fn):
        own = conn is None
        c = conn or self.conn()
        try:
            return fn(c)
        finally:
            if own:
                c.close()

    def request(self, method, path="/mcp", body=None, headers=None, token=None, conn=None):
        return self._with(conn, lambda c: th.request(method, path, body=body, headers=headers,
                                                     token=token, conn=c))

    def call(self, token, name, args=None, id=7, conn=None):
        params = {"name": name, "arguments": {} if args is None else args}
        return self._with(conn, lambda c: th.modern("tools/call", params, id=id, token=token,
                                                    conn=c))

    def tools_list(self, token):
        return self._with(None, lambda c: th.modern("tools/list", id=2, token=token, conn=c))

    def ingest(self, token, lines, conn=None):
        return self.request("POST", "/v1/episodes", body=ndjson(lines), token=token,
                            headers={"Content-Type": "application/x-ndjson"}, conn=conn)

    # Session era (2025-11-25).
    def open_session(self, token):
        r = self._with(None, lambda c: th.rpc(
            "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                           "clientInfo": {"name": "cortex-e2e-iso", "version": "1.0.0"}},
            id=0, token=token, conn=c))
        assert r.status == 200, r
        sid = r.header("Mcp-Session-Id")
        assert sid, r
        n = self.in_session(token, sid, "notifications/initialized", id=None)
        assert n.status == 202, n
        return sid

    def in_session(self, token, sid, method, params=None, id=1, conn=None):
        h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
        return self._with(conn, lambda c: th.rpc(method, params, id=id, token=token, headers=h,
                                                 conn=c))

    def session_call(self, token, sid, name, args=None, id=7):
        return self.in_session(token, sid, "tools/call",
                               {"name": name, "arguments": {} if args is None else args}, id=id)


def stdio_calls(data_dir, token, calls):
    """Runs one `cortex mcp --stdio` session; `calls` are (tool, args). Returns the parsed
    replies to the calls, by position."""
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": LEGACY, "capabilities": {},
                         "clientInfo": {"name": "cortex-e2e-iso", "version": "1.0.0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    for i, (name, args) in enumerate(calls):
        lines.append({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                      "params": {"name": name, "arguments": args}})
    env = {k: v for k, v in os.environ.items() if k != "CORTEX_TOKEN"}
    env["CORTEX_TOKEN"] = token
    proc = subprocess.run([CORTEX_BIN, "mcp", "--stdio", "--data", data_dir],
                          input=ndjson(lines).encode(), capture_output=True, timeout=30, env=env)
    replies = {}
    for line in proc.stdout.decode("utf-8").splitlines():
        if line.strip():
            msg = json.loads(line)
            replies[msg.get("id")] = msg
    return [replies.get(100 + i) for i in range(len(calls))], proc


# --------------------------------------------------------------------------------------------
# The fixture: two workspaces on one server
# --------------------------------------------------------------------------------------------

class TwoWorkspaces(unittest.TestCase, RpcAsserts):
    """Base class (no tests of its own): builds A and B and starts a server per subclass."""

    config = None  # TOML text for --config, if any

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-iso-")
        cls.data = cls.tmp.name
        try:
            cls._prepare()
        except BaseException:
            cls.tmp.cleanup()
            raise
        cls.server = Server(cls.data, cls.extra_args)
        try:
            cls.api = Api(cls.server.port)
            cls._build()
        except BaseException:
            cls._stop()
            raise

    @classmethod
    def _prepare(cls):
        data = cls.data
        world1 = os.path.join(data, "beta-1.jsonl")
        with open(world1, "w") as f:
            f.write(ndjson(B_WORLD_1))
        out = cli(data, "ingest", "--data", data, "--workspace", B, world1).stdout
        # Same external_ids as A's episodes, yet none is a duplicate (A does not exist yet,
        # and later A's demo must not dedupe against B either).
        assert re.search(r"^ingested 4 episodes, .* \b0 duplicates skipped", out), out
        # Placed on the files' own dates (their week ends Fri 27 Nov 2026): the as_of
        # moments below are in that week.
        out = cli(data, "demo", "--data", data, "--today", "2026-11-27").stdout
        # B's copies of demo-0001... are not A's: both demo batches skip nothing.
        assert len(re.findall(r"\b0 duplicates skipped", out)) == 2, out
        # A rule of B's own (A has the demo's, and what the learner proposed from its history).
        rules = os.path.join(cls.tmp.name, "b-rules.yaml")
        with open(rules, "w") as f:
            f.write("rules:\n  - name: beta-quiet\n    summary: Nothing matches this.\n"
                    "    when: { tags: no-such-tag }\n    then: { triage: daily_digest }\n")
        cli(data, "rules", "import", "--data", data, "--workspace", B, rules)
        # *_rw: an agent's token (drafts); *_person: a person's (approves and rejects).
        cls.tok = {
            "a_rw": create_token(data, A, "read,act", label="a-rw"),
            "a_ro": create_token(data, A, "read", label="a-ro"),
            "a_person": create_token(data, A, "read,approve", label="a-person"),
            "b_rw": create_token(data, B, "read,act", label="b-rw"),
            "b_ro": create_token(data, B, "read", label="b-ro"),
            "b_person": create_token(data, B, "read,approve", label="b-person"),
        }
        cls.extra_args = []
        if cls.config is not None:
            path = os.path.join(data, "cortex.toml")
            with open(path, "w") as f:
                f.write(cls.config)
            cls.extra_args = ["--config", path]

    @classmethod
    def _build(cls):
        api, tok = cls.api, cls.tok
        r = api.ingest(tok["b_rw"], B_WORLD_2)
        assert r.status == 200, r
        rep = r.json()
        assert (rep["episodes_added"], rep["duplicates"]) == (2, 0), rep
        # A pending action in A (the demo has none) and one in B.
        cls.a_pending = cls.sc(api.call(tok["a_rw"], "action.communicate", {
            "to": "sarah.chen@northwind.example", "message": "Does Tuesday 2pm still work?"}))
        assert cls.a_pending["status"] == "pending_approval", cls.a_pending
        cls.b_pending = cls.sc(api.call(tok["b_rw"], "action.communicate", {
            "to": "bo@beta.example", "message": "Invoice received, thanks."}))
        assert cls.b_pending["status"] == "pending_approval", cls.b_pending
        cls.a_ids, cls.a_view = cls.collect(tok["a_rw"], cls.a_pending)
        cls.b_ids, cls.b_view = cls.collect(tok["b_rw"], cls.b_pending)
        both = cls.a_ids & cls.b_ids
        assert not both, f"ids minted in both workspaces?! {sorted(both)[:5]}"

    @classmethod
    def collect(cls, token, pending):
        """Every id a workspace's own token can see, and a few handy ones by name."""
        api = cls.api
        ids = set()
        decisions = []
        cursor = None
        while True:
            args = {"limit": 100}
            if cursor:
                args["cursor"] = cursor
            r = api.call(token, "decision.list", args)
            ids |= ids_in(r)
            page = cls.sc(r)
            decisions += page["decisions"]
            cursor = page.get("next_cursor")
            if not cursor:
                break
        notifications = []
        for as_of in ("2026-11-24T10:20:00Z", "2026-11-26T00:00:00Z", "2026-11-30T00:00:00Z"):
            r = api.call(token, "notification.list", {"as_of": as_of,
                                                      "since": "2026-10-01T00:00:00Z",
                                                      "limit": 200})
            ids |= ids_in(r)
            nl = cls.sc(r)
            notifications += nl["due"]
        status_r = api.call(token, "workspace.status")
        ids |= ids_in(status_r)
        rules_r = api.call(token, "rule.list", {"limit": 100})
        ids |= ids_in(rules_r)
        view = {"decisions": decisions, "notifications": notifications,
                "status": cls.sc(status_r), "rules": cls.sc(rules_r)["rules"]}
        # Inspect a few decisions and actions too (traces, ledger entries, episodes).
        for d in decisions[:5] + [d for d in decisions if d["status"] == "pending"]:
            ids |= ids_in(api.call(token, "decision.inspect", {"decision_id": d["decision_id"]}))
        ids |= ids_in(api.call(token, "meta.why_this_action",
                               {"action_id": pending["action_id"]}))
        ids.add(view["status"]["workspace_id"])
        return ids, view

    @staticmethod
    def sc(resp, id=7):
        assert resp.status == 200, resp
        body = resp.json()
        assert body.get("id") == id and "result" in body, body
        result = body["result"]
        assert result.get("isError") is not True, result
        return result["structuredContent"]

    @classmethod
    def _stop(cls):
        try:
            cls.server.terminate(timeout=5)
        finally:
            cls.server.kill()
            cls.tmp.cleanup()

    @classmethod
    def tearDownClass(cls):
        cls._stop()

    # Helpers ----------------------------------------------------------------------------

    def ok(self, resp, id=7):
        result = tool_result(self, resp, id=id)
        self.assertNotEqual(result.get("isError"), True, result)
        return result["structuredContent"]

    def status_of(self, token):
        return self.ok(self.api.call(token, "workspace.status"))

    def decision_ids(self, token, **filters):
        out, cursor = [], None
        while True:
            args = dict(filters, limit=100)
            if cursor:
                args["cursor"] = cursor
            page = self.ok(self.api.call(token, "decision.list", args))
            out += [d["decision_id"] for d in page["decisions"]]
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    def decision(self, token, decision_id):
        return self.ok(self.api.call(token, "decision.inspect", {"decision_id": decision_id}))

    def decision_status(self, token, decision_id):
        for d in self.ok(self.api.call(token, "decision.list", {"status": "pending"}))["decisions"]:
            if d["decision_id"] == decision_id:
                return "pending"
        for d in self.ok(self.api.call(token, "decision.list",
                                       {"decision_class": "action_proposed", "limit": 100}))[
                "decisions"]:
            if d["decision_id"] == decision_id:
                return d["status"]
        return None

    def assertNoIdsOf(self, resp, foreign, allowed=(), what=""):
        leaked = (ids_in(resp) - set(allowed)) & foreign
        self.assertFalse(leaked, f"{what}: ids of the other workspace leaked: {sorted(leaked)} "
                                 f"in {resp.body[:600]!r}")

    def assertSameAnswer(self, foreign_resp, foreign_id, missing_resp, missing_id, what):
        """`foreign_resp` (for another workspace's id) must be exactly `missing_resp` (for an
        id that never existed), modulo the id itself."""
        self.assertEqual(normalized(foreign_resp, foreign_id),
                         normalized(missing_resp, missing_id), what)


# --------------------------------------------------------------------------------------------
# Ids of one workspace in the tools of the other
# --------------------------------------------------------------------------------------------

class TestCrossWorkspaceIds(TwoWorkspaces):
    def id_cases(self, owner):
        """(tool, field, id) for every tool argument that names a thing of `owner`."""
        v = self.a_view if owner == A else self.b_view
        pending = self.a_pending if owner == A else self.b_pending
        triage = next(d for d in v["decisions"] if d["decision_class"] == "triage"
                      and d.get("notification_id"))
        return [
            ("decision.inspect", "decision_id", triage["decision_id"]),
            ("decision.inspect", "decision_id", pending["decision_id"]),
            ("meta.why_this_notification", "notification_id", triage["notification_id"]),
            ("meta.why_this_action", "action_id", pending["action_id"]),
            ("action.approve", "decision_id", pending["decision_id"]),
            ("action.reject", "decision_id", pending["decision_id"]),
            ("action.approve", "decision_id", triage["decision_id"]),  # not pending, not ours
            ("entity.lookup", "identifier", triage["counterparty_id"]),
            ("decision.list", "counterparty", triage["counterparty_id"]),
            ("action.communicate", "to", triage["counterparty_id"]),
            ("action.communicate", "in_reply_to", v["notifications"][0]["episode_id"]),
            ("rule.accept", "rule_id", v["rules"][0]["rule_id"]),
            ("rule.reject", "rule_id", v["rules"][0]["rule_id"]),
        ]

    def call_case(self, token, tool, field, value):
        args = {field: value}
        if tool == "action.communicate":
            args["message"] = "hello"
            args.setdefault("to", "someone.new@example.test")
        return self.api.call(token, tool, args)

    def test_cases_cover_every_tool_that_takes_an_id(self):
        # tools/list: every argument with an id pattern (^dec_..., ^ntf_..., ^act_...) and
        # every argument that accepts an entity id must be exercised below.
        tools = self.api.tools_list(self.tok["b_rw"]).json()["result"]["tools"]
        takes_id = set()
        for t in tools:
            for field, schema in t["inputSchema"].get("properties", {}).items():
                pattern = schema.get("pattern", "")
                desc = schema.get("description", "").lower()
                if re.match(r"^\^[a-z]+_", pattern) or "entity id" in desc:
                    takes_id.add((t["name"], field))
        covered = {(tool, field) for tool, field, _ in self.id_cases(A)}
        self.assertEqual(takes_id - covered, set(), "tools taking an id not covered here")

    def _check_direction(self, owner, caller, owner_token):
        """`caller` ("a" or "b") calls with its agent's token, and approves and rejects with
        its person's token (the agent's is refused for want of the scope, whatever the id)."""
        for tool, field, real in self.id_cases(owner):
            missing = forge(real)
            with self.subTest(owner=owner, tool=tool, field=field, id=real):
                # The forged id really never existed, even for its owner's workspace.
                if tool not in ("action.approve", "action.reject", "action.communicate",
                                "rule.accept", "rule.reject"):
                    r = self.call_case(owner_token, tool, field, missing)
                    self.assertToolError(r, "not_found")
                caller_token = self.tok[caller + "_rw"]
                if tool in ("action.approve", "action.reject", "rule.accept", "rule.reject"):
                    agent = self.call_case(caller_token, tool, field, real)
                    self.assertToolError(agent, "unauthorized")
                    self.assertSameAnswer(agent, real, self.call_case(caller_token, tool, field,
                                                                      missing), missing,
                                          f"{tool} with the agent's token")
                    caller_token = self.tok[caller + "_person"]
                foreign = self.call_case(caller_token, tool, field, real)
                never = self.call_case(caller_token, tool, field, missing)
                want = "invalid_arguments" if tool == "action.communicate" else "not_found"
                self.assertToolError(foreign, want)
                self.assertSameAnswer(foreign, real, never, missing, f"{tool} {field}")
                foreign_ids = self.a_ids if owner == A else self.b_ids
                self.assertNoIdsOf(foreign, foreign_ids, allowed={real}, what=tool)

    def test_a_ids_from_b_are_not_found_like_ids_that_never_existed(self):
        self._check_direction(A, "b", self.tok["a_rw"])

    def test_b_ids_from_a_are_not_found_like_ids_that_never_existed(self):
        self._check_direction(B, "a", self.tok["b_rw"])

    def test_b_cannot_approve_or_reject_a_pending_decision(self):
        a, b = self.tok["a_rw"], self.tok["b_rw"]
        prop = self.ok(self.api.call(a, "action.communicate", {
            "to": "jordan.kim@northwind.example", "message": "Can you review the rollout doc?"}))
        self.assertEqual(prop["status"], "pending_approval", prop)
        dec = prop["decision_id"]
        a_before = self.status_of(a)
        a_decision_before = self.decision(a, dec)
        b_before = self.status_of(b)
        for tool, extra in (("action.approve", {"message": "sent by beta"}),
                            ("action.approve", {}),
                            ("action.reject", {"reason": "beta says no"})):
            with self.subTest(tool=tool, extra=extra):
                # B's person: the decision is not theirs to know of.
                self.assertToolError(self.api.call(self.tok["b_person"], tool,
                                                   dict(extra, decision_id=dec)), "not_found")
                # B's agent: may not approve at all.
                self.assertToolError(self.api.call(b, tool, dict(extra, decision_id=dec)),
                                     "unauthorized")
        # From A: untouched, still pending, nothing executed or recorded.
        self.assertEqual(self.decision_status(a, dec), "pending")
        self.assertEqual(self.decision(a, dec), a_decision_before)
        self.assertEqual(self.status_of(a), a_before)
        self.assertEqual(self.status_of(b), b_before)
        self.assertNotIn(dec, self.decision_ids(b))
        # ... and A's person can still act on it: it really was pending all along.
        res = self.ok(self.api.call(self.tok["a_person"], "action.reject", {"decision_id": dec}))
        self.assertNotEqual(res.get("status"), "error", res)
        self.assertEqual(self.decision_status(a, dec), "rejected")

    def test_shared_identifiers_resolve_to_each_workspaces_own_entity(self):
        a, b = self.tok["a_rw"], self.tok["b_rw"]
        for ident in ("sarah.chen@northwind.example", "@sarahc", "@SarahC"):
            with self.subTest(identifier=ident):
                ea = self.ok(self.api.call(a, "entity.lookup", {"identifier": ident}))
                eb = self.ok(self.api.call(b, "entity.lookup", {"identifier": ident}))
                self.assertEqual(ea["name"], "Sarah Chen")
                self.assertEqual(eb["name"], "Sarah Beta")
                self.assertEqual(eb["tags"], ["vip"])
                self.assertNotEqual(ea["entity_id"], eb["entity_id"])
                self.assertIn(ea["entity_id"], self.a_ids)
                self.assertIn(eb["entity_id"], self.b_ids)
        # An identifier only A knows is unknown to B, like one nobody knows.
        foreign = self.api.call(b, "entity.lookup",
                                {"identifier": "marcus.webb@harborline.example"})
        never = self.api.call(b, "entity.lookup", {"identifier": "marcus.webb@nowhere.example"})
        self.assertToolError(foreign, "not_found")
        self.assertSameAnswer(foreign, "marcus.webb@harborline.example", never,
                              "marcus.webb@nowhere.example", "entity.lookup by email")

    def test_acting_in_b_on_a_shared_address_links_only_b(self):
        b = self.tok["b_rw"]
        res = self.ok(self.api.call(b, "action.communicate", {
            "to": "@sarahc", "message": "Friday lunch is on.", "tone": "warm"}))
        self.assertEqual(res["status"], "pending_approval", res)
        r = self.api.call(b, "decision.inspect", {"decision_id": res["decision_id"]})
        d = self.ok(r)
        self.assertNoIdsOf(r, self.a_ids, what="B's action_proposed decision")
        self.assertIn("Sarah Beta", d["payload_summary"])
        # The notification it answers is B's own triage of Sarah Beta's message, if any.
        if "triage_decision_id" in d:
            self.assertIn(d["triage_decision_id"], self.decision_ids(b, decision_class="triage"))
        for ep in d["reasoning"].get("source_episode_ids", []):
            self.assertNotIn(ep, self.a_ids)
        r = self.api.call(b, "meta.why_this_action", {"action_id": res["action_id"]})
        self.assertNoIdsOf(r, self.a_ids, what="B's meta.why_this_action")
        self.assertNotIn(self.ok(r)["rule_summary"], A_RULE_SUMMARIES)

    def test_stdio_b_token_gets_not_found_for_a_ids(self):
        a_dec = self.a_pending["decision_id"]
        a_act = self.a_pending["action_id"]
        calls = [("decision.inspect", {"decision_id": a_dec}),
                 ("decision.inspect", {"decision_id": forge(a_dec)}),
                 ("action.approve", {"decision_id": a_dec}),
                 ("action.approve", {"decision_id": forge(a_dec)}),
                 ("meta.why_this_action", {"action_id": a_act}),
                 ("meta.why_this_action", {"action_id": forge(a_act)})]
        # B's person (read,approve): A's ids are unknown, like ids that never existed.
        replies, proc = stdio_calls(self.data, self.tok["b_person"], calls)
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        for i in range(0, len(calls), 2):
            real, fake = replies[i], replies[i + 1]
            self.assertIsNotNone(real, proc.stdout)
            self.assertIs(real["result"].get("isError"), True, real)
            self.assertEqual(real["result"]["structuredContent"]["error"], "not_found", real)
            real_id = list(calls[i][1].values())[0]
            fake_id = list(calls[i + 1][1].values())[0]
            norm = lambda m, ident: json.loads(json.dumps(m["result"]).replace(ident, "<ID>"))
            self.assertEqual(norm(real, real_id), norm(fake, fake_id), calls[i][0])
        # B's agent (read,act): refused for want of the scope, whatever the id.
        replies, proc = stdio_calls(self.data, self.tok["b_rw"], calls[2:4])
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        for reply in replies:
            self.assertIsNotNone(reply, proc.stdout)
            self.assertEqual(reply["result"]["structuredContent"],
                             {"status": "error", "error": "unauthorized", "message":
                              "this token lacks the 'approve' scope that action.approve needs"})
        self.assertEqual(self.decision_status(self.tok["a_rw"], a_dec), "pending")


# --------------------------------------------------------------------------------------------
# Lists and cursors
# --------------------------------------------------------------------------------------------

class TestListsAndCursors(TwoWorkspaces):
    FILTERS = [{}, {"decision_class": "triage"}, {"decision_class": "action_proposed"},
               {"status": "pending"}, {"status": "recorded"},
               {"counterparty": "sarah.chen@northwind.example"}, {"counterparty": "@jkim"},
               {"since": "2026-01-01T00:00:00Z"}, {"until": "2030-01-01T00:00:00Z"}]

    def test_decision_list_in_b_never_shows_a(self):
        b = self.tok["b_rw"]
        b_decisions = set(d["decision_id"] for d in self.b_view["decisions"])
        # 6 triaged messages + 1 proposed action, all B's own.
        self.assertEqual(len(b_decisions), 7, self.b_view["decisions"])
        for filters in self.FILTERS:
            with self.subTest(filters=filters):
                seen, cursor = [], None
                for _ in range(20):
                    args = dict(filters, limit=2)
                    if cursor:
                        args["cursor"] = cursor
                    r = self.api.call(b, "decision.list", args)
                    self.assertNoIdsOf(r, self.a_ids, what=f"decision.list {args}")
                    page = self.ok(r)
                    seen += [d["decision_id"] for d in page["decisions"]]
                    cursor = page.get("next_cursor")
                    if not cursor:
                        break
                self.assertTrue(set(seen) <= b_decisions, seen)
                if not filters or "since" in filters or "until" in filters:
                    self.assertEqual(set(seen), b_decisions)
        # The pending inbox of B is exactly B's one pending action.
        self.assertEqual(self.decision_ids(b, status="pending"), [self.b_pending["decision_id"]])

    def test_b_sees_the_same_decisions_through_every_token(self):
        ro = self.decision_ids(self.tok["b_ro"])
        self.assertEqual(ro, self.decision_ids(self.tok["b_rw"]))
        a_ro = self.decision_ids(self.tok["a_ro"])
        self.assertEqual(a_ro, self.decision_ids(self.tok["a_rw"]))
        self.assertTrue(set(ro).isdisjoint(a_ro))

    def test_notification_list_in_b_never_shows_a(self):
        b = self.tok["b_rw"]
        nonempty = 0
        for as_of in ("2026-11-23T12:00:00Z", "2026-11-24T10:20:00Z", "2026-11-25T23:00:00Z",
                      "2026-11-26T13:00:00Z", "2026-11-27T18:00:00Z"):
            for extra in ({}, {"since": "2026-10-01T00:00:00Z"}):
                args = dict(extra, as_of=as_of, limit=200)
                with self.subTest(args=args):
                    r = self.api.call(b, "notification.list", args)
                    self.assertNoIdsOf(r, self.a_ids, what=f"notification.list {args}")
                    nl = self.ok(r)
                    items = list(nl["due"])
                    for section in ("next_transition", "digest"):
                        if nl.get(section):
                            items += nl[section]["notifications"]
                    nonempty += bool(items)
                    for item in items:
                        self.assertIn(item["decision_id"], self.b_ids)
                        self.assertIn(item["counterparty"]["name"],
                                      ("Sarah Beta", "Bo Berg", "@jkim"))
                    # A has a deep-work block at 10:20 on the 24th: B has no transition.
                    if as_of == "2026-11-24T10:20:00Z":
                        self.assertIsNone(nl["next_transition"], nl)
        self.assertGreater(nonempty, 0, "B's notification lists were all empty: vacuous test")

    def _a_cursor(self, filters):
        page = self.ok(self.api.call(self.tok["a_rw"], "decision.list", dict(filters, limit=2)))
        self.assertIn("next_cursor", page, page)
        return page["next_cursor"]

    def test_a_cursor_in_b_reveals_nothing_of_a(self):
        b = self.tok["b_rw"]
        b_all = sorted((d["decision_id"] for d in self.b_view["decisions"]), reverse=True)
        for filters in ({}, {"decision_class": "triage"}, {"status": "recorded"}):
            with self.subTest(filters=filters):
                cursor = self._a_cursor(filters)
                last, _, _ = cursor.partition(".")
                self.assertIn(last, self.a_ids)
                r = self.api.call(b, "decision.list", dict(filters, limit=2, cursor=cursor))
                self.assertNoIdsOf(r, self.a_ids, allowed={last}, what="A's cursor in B")
                # Same answer as a cursor naming a decision that never existed.
                fake = forge(last) + cursor[len(last):]
                r_fake = self.api.call(b, "decision.list", dict(filters, limit=2, cursor=fake))
                self.assertSameAnswer(r, last, r_fake, forge(last), "A's cursor vs a forged one")
                # What the server does: the cursor is only an id bound, so B gets B's own
                # decisions older than it (the ones ingested before `cortex demo`).
                body = r.json()["result"]
                if body.get("isError"):
                    self.assertIn(body["structuredContent"]["error"],
                                  ("invalid_arguments", "not_found"), body)
                    continue
                got = [d["decision_id"] for d in body["structuredContent"]["decisions"]]
                b_matching = set(self.decision_ids(b, **filters))
                want = [d for d in b_all if d < last and d in b_matching][:2]
                self.assertEqual(got, want)
                self.assertTrue(got, "expected B's older decisions (vacuous otherwise)")

    def test_a_cursor_with_other_filters_in_b_is_refused_as_in_a(self):
        cursor = self._a_cursor({"decision_class": "triage"})
        in_a = self.api.call(self.tok["a_rw"], "decision.list",
                             {"status": "recorded", "cursor": cursor})
        in_b = self.api.call(self.tok["b_rw"], "decision.list",
                             {"status": "recorded", "cursor": cursor})
        self.assertToolError(in_b, "invalid_arguments")
        self.assertEqual(normalized(in_b, cursor), normalized(in_a, cursor))

    def test_triage_in_b_uses_only_b_world_and_rules(self):
        b = self.tok["b_rw"]
        by_summary = {}
        for d in self.b_view["decisions"]:
            if d["decision_class"] == "triage":
                self.assertNotIn(d.get("rule_summary"), A_RULE_SUMMARIES, d)
                self.assertEqual(d["confidence"], "just_guessing", d)  # B has no rules
                by_summary[d["payload_summary"]] = d
        # Sarah Beta at 10:15 on the 24th: A had deep work then; B did not.
        sarah = next(d for s, d in by_summary.items() if "'Lunch'" in s)
        why = self.ok(self.api.call(b, "meta.why_this_notification",
                                    {"notification_id": sarah["notification_id"]}))
        kinds = [s["kind"] for s in why["contributing_signals"]]
        self.assertEqual(why["triage_class"], "interrupt_now", why)
        self.assertNotIn("active_focus_block", kinds)
        self.assertIn("first_contact", kinds)  # A's Sarah has weeks of history; B's none
        self.assertIn("vip_counterparty", kinds)
        # Jordan in A's busy thread: B sees no thread activity, no pending reply.
        jordan = next(d for s, d in by_summary.items() if "Certs renewed" in s
                      or "@jkim" in s)
        why = self.ok(self.api.call(b, "meta.why_this_notification",
                                    {"notification_id": jordan["notification_id"]}))
        kinds = [s["kind"] for s in why["contributing_signals"]]
        self.assertNotIn("thread_active", kinds, why)
        self.assertNotIn("awaiting_your_reply", kinds, why)
        self.assertIn("first_contact", kinds, why)

    def test_triage_in_a_does_not_count_b_messages(self):
        a = self.tok["a_rw"]
        r = self.api.ingest(a, [{"type": "episode", "kind": "message_received",
                                 "occurred_at": "2026-11-25T21:31:00Z", "counterparty": "@jkim",
                                 "summary": "Jordan: 'Also the staging DNS.'",
                                 "thread": "thr-staging-certs"}])
        self.assertEqual(r.status, 200, r)
        d = self.ok(self.api.call(a, "decision.list", {"decision_class": "triage", "limit": 1}))[
            "decisions"][0]
        why = self.ok(self.api.call(a, "meta.why_this_notification",
                                    {"notification_id": d["notification_id"]}))
        thread = [s["summary"] for s in why["contributing_signals"] if s["kind"] == "thread_active"]
        # A's own 19:30, 19:45 and 21:05 messages (examples/demo-week.jsonl); B's 21:30 message
        # in a thread of the same name is not A's.
        self.assertEqual(thread, ["Thread 'thr-staging-certs' has 3 other messages in the last "
                                  "24 hours."], why)


# --------------------------------------------------------------------------------------------
# Counts, versions and ingest
# --------------------------------------------------------------------------------------------

class TestCountsAndIngest(TwoWorkspaces):
    def snapshot(self, token):
        status = self.status_of(token)
        decisions = self.ok(self.api.call(token, "decision.list", {"limit": 100}))
        nl = self.ok(self.api.call(token, "notification.list",
                                   {"as_of": "2026-11-30T00:00:00Z",
                                    "since": "2026-10-01T00:00:00Z", "limit": 200}))
        pending = self.ok(self.api.call(token, "decision.list", {"status": "pending"}))
        return {"status": status, "decisions": decisions, "notifications": nl,
                "pending": pending}

    def test_a_ingesting_and_acting_leaves_b_unchanged(self):
        a, b = self.tok["a_rw"], self.tok["b_rw"]
        b_before = self.snapshot(b)
        a_before = self.status_of(a)
        r = self.api.ingest(a, [
            {"type": "entity", "name": "Nia Alpha", "identifiers": ["nia@alpha.example"],
             "tags": ["vip"]},
            {"type": "episode", "kind": "message_received", "occurred_at": "2026-11-27T10:00:00Z",
             "counterparty": "nia@alpha.example", "summary": "Nia: 'ASAP please.'"},
            {"type": "episode", "kind": "message_received", "occurred_at": "2026-11-27T10:05:00Z",
             "counterparty": "bo@beta.example", "summary": "Bo writes to A too"},
        ])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["entities_added"], 2, r)  # Bo is a first contact in A
        prop = self.ok(self.api.call(a, "action.communicate", {
            "to": "brand.new@alpha.example", "message": "Hello there"}))
        self.assertEqual(prop["status"], "pending_approval", prop)
        self.ok(self.api.call(self.tok["a_person"], "action.approve",
                              {"decision_id": prop["decision_id"]}))
        # Let A's delivery finish, so no later snapshot of A sees executed -> delivered.
        deadline = time.monotonic() + 10
        while (self.decision_status(a, prop["decision_id"]) != "delivered"
               and time.monotonic() < deadline):
            time.sleep(0.1)
        self.assertEqual(self.decision_status(a, prop["decision_id"]), "delivered")
        a_after = self.status_of(a)
        self.assertEqual(a_after["entities"], a_before["entities"] + 3)
        # The two ingested, and the delivered message as A's message_sent (docs/actions.md).
        self.assertEqual(a_after["episodes"], a_before["episodes"] + 3)
        self.assertNotEqual(a_after["world_version"], a_before["world_version"])
        self.assertEqual(self.snapshot(b), b_before)
        # B still does not know the address A just wrote to.
        self.assertToolError(self.api.call(b, "entity.lookup",
                                           {"identifier": "brand.new@alpha.example"}), "not_found")

    def test_b_ingest_over_http_leaves_a_unchanged(self):
        a, b = self.tok["a_rw"], self.tok["b_rw"]
        a_before = self.snapshot(a)
        b_before = self.status_of(b)
        r = self.api.ingest(b, [
            {"type": "entity", "name": "Marcus Beta",
             "identifiers": ["marcus.webb@harborline.example"], "tags": ["external"]},
            {"type": "episode", "kind": "message_received", "occurred_at": "2026-11-24T13:00:00Z",
             "counterparty": "marcus.webb@harborline.example",
             "summary": "Marcus (beta): 'Confirm by EOD?'", "external_id": "demo-0105"},
            {"type": "episode", "kind": "message_sent", "occurred_at": "2026-11-24T13:30:00Z",
             "counterparty": "marcus.webb@harborline.example", "summary": "Confirmed."},
        ])
        self.assertEqual(r.status, 200, r)
        rep = r.json()
        # Marcus's address is A's, yet in B it is a new entity, not a merge with A's Marcus.
        self.assertEqual((rep["entities_added"], rep["entities_updated"], rep["episodes_added"],
                          rep["duplicates"]), (1, 0, 2, 0), rep)
        b_after = self.status_of(b)
        self.assertEqual(b_after["world_version"], rep["world_version"])
        self.assertEqual(b_after["entities"], b_before["entities"] + 1)
        self.assertEqual(b_after["episodes"], b_before["episodes"] + 2)
        self.assertEqual(self.snapshot(a), a_before)
        ea = self.ok(self.api.call(a, "entity.lookup",
                                   {"identifier": "marcus.webb@harborline.example"}))
        self.assertEqual(ea["name"], "Marcus Webb")
        self.assertNotIn("Marcus Beta", json.dumps(ea))

    def test_same_external_id_does_not_dedupe_across_workspaces(self):
        a, b = self.tok["a_rw"], self.tok["b_rw"]

        def episode(ext, who, when):
            return {"type": "episode", "kind": "message_received", "occurred_at": when,
                    "counterparty": who, "summary": f"shared id {ext}", "external_id": ext}

        r = self.api.ingest(a, [episode("shared-7", "nia2@alpha.example", "2026-11-27T11:00:00Z")])
        self.assertEqual((r.json()["episodes_added"], r.json()["duplicates"]), (1, 0), r)
        # The same id in B (and A's demo ids demo-0004/demo-0005): stored, not duplicates.
        r = self.api.ingest(b, [episode("shared-7", "bo@beta.example", "2026-11-27T11:00:00Z"),
                                episode("demo-0004", "bo@beta.example", "2026-11-27T11:01:00Z"),
                                episode("demo-0005", "bo@beta.example", "2026-11-27T11:02:00Z")])
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json()["episodes_added"], r.json()["duplicates"]), (3, 0), r)
        # Within each workspace dedupe still works, and counts only that workspace's copies.
        a_before, b_before = self.status_of(a), self.status_of(b)
        r = self.api.ingest(a, [episode("shared-7", "nia2@alpha.example", "2026-11-27T11:00:00Z")])
        self.assertEqual((r.json()["episodes_added"], r.json()["duplicates"]), (0, 1), r)
        self.assertEqual(r.json()["world_version"], a_before["world_version"])
        r = self.api.ingest(b, [episode("shared-7", "bo@beta.example", "2026-11-27T11:00:00Z"),
                                episode("demo-0004", "bo@beta.example", "2026-11-27T11:01:00Z"),
                                episode("b-new-1", "bo@beta.example", "2026-11-27T11:03:00Z")])
        self.assertEqual((r.json()["episodes_added"], r.json()["duplicates"]), (1, 2), r)
        self.assertEqual(self.status_of(a), a_before)
        self.assertEqual(self.status_of(b)["episodes"], b_before["episodes"] + 1)

    def test_cli_demo_rerun_does_not_touch_b(self):
        b_before = self.snapshot(self.tok["b_rw"])
        out = cli(self.data, "demo", "--data", self.data).stdout
        self.assertIn("ingested 0 episodes", out)
        self.assertEqual(self.snapshot(self.tok["b_rw"]), b_before)

    def test_ingest_naming_a_entity_id_is_refused_like_an_unknown_id(self):
        a, b = self.tok["a_rw"], self.tok["b_rw"]
        a_entity = self.ok(self.api.call(a, "entity.lookup", {"identifier": "@sarahc"}))[
            "entity_id"]
        a_before, b_before = self.status_of(a), self.status_of(b)

        def batch(who):
            return [{"type": "episode", "kind": "message_received",
                     "occurred_at": "2026-11-27T12:00:00Z", "counterparty": "ok@beta.example",
                     "summary": "line 1 is fine"},
                    {"type": "episode", "kind": "message_received",
                     "occurred_at": "2026-11-27T12:01:00Z", "counterparty": who,
                     "summary": "line 2 names an entity id"}]

        foreign = self.api.ingest(b, batch(a_entity))
        never = self.api.ingest(b, batch(forge(a_entity)))
        self.assertEqual(foreign.status, 400, foreign)
        self.assertTrue(foreign.json()["message"].startswith("line 2:"), foreign)
        self.assertSameAnswer(foreign, a_entity, never, forge(a_entity), "ingest counterparty")
        self.assertEqual(self.status_of(a), a_before)
        self.assertEqual(self.status_of(b), b_before)

    def test_rules_evidence_from_a_is_unknown_to_b(self):
        # `cortex rules import` into B naming A's episode (by ep_ id or by an external_id only
        # A has) is refused exactly like an episode that never existed; nothing changes.
        a_ep = next(n["episode_id"] for n in self.a_view["notifications"])
        b_before = self.status_of(self.tok["b_rw"])
        results = {}
        for ev in (a_ep, forge(a_ep), "demo-0050", "nonexist-0050"):
            path = os.path.join(self.data, "rules-b.yaml")
            with open(path, "w") as f:
                f.write("rules:\n  - name: r1\n    summary: S\n    when: { tags: vip }\n"
                        f"    then: {{ triage: interrupt_now }}\n    evidence: [{ev}]\n")
            p = cli(self.data, "rules", "import", "--data", self.data, "--workspace", B, path,
                    check=False)
            results[ev] = (p.returncode, p.stdout, p.stderr.replace(ev, "<EV>"))
        self.assertEqual(results[a_ep][0], 2, results)
        self.assertEqual(results[a_ep], results[forge(a_ep)])
        self.assertEqual(results["demo-0050"][0], 2, results)
        self.assertEqual(results["demo-0050"], results["nonexist-0050"])
        self.assertEqual(self.status_of(self.tok["b_rw"]), b_before)


# --------------------------------------------------------------------------------------------
# Trust and rules stay in their workspace
# --------------------------------------------------------------------------------------------

class TestTrustAndRules(TwoWorkspaces):
    def test_trust_earned_in_b_does_not_move_a(self):
        a, b = self.tok["a_rw"], self.tok["b_rw"]
        a_before = self.status_of(a)
        b_av = self.status_of(b)["agent_version"]
        for i in range(3):  # trust.approvals_to_raise, default 3
            p = self.ok(self.api.call(b, "action.communicate", {
                "to": "sarah.chen@northwind.example", "message": f"Update {i}"}))
            self.assertIn("trust level 1", p["message"], p)
            done = self.ok(self.api.call(self.tok["b_person"], "action.approve",
                                         {"decision_id": p["decision_id"]}))
            self.assertEqual(done["status"], "success", done)
        p = self.ok(self.api.call(b, "action.communicate", {
            "to": "sarah.chen@northwind.example", "message": "Update 4"}))
        self.assertIn("trust level 2", p["message"], p)  # B's Sarah earned level 2
        self.assertNotEqual(self.status_of(b)["agent_version"], b_av)
        self.assertTrue(self.decision_ids(b, decision_class="trust_transition"))
        # A: same agent_version, no trust transition, Sarah Chen still at level 1.
        self.assertEqual(self.status_of(a)["agent_version"], a_before["agent_version"])
        self.assertEqual(self.decision_ids(a, decision_class="trust_transition"), [])
        p = self.ok(self.api.call(a, "action.communicate", {
            "to": "sarah.chen@northwind.example", "message": "Same address, other workspace"}))
        self.assertIn("trust level 1", p["message"], p)
        b_trust = cli(self.data, "trust", "list", "--data", self.data, "--workspace", B).stdout
        a_trust = cli(self.data, "trust", "list", "--data", self.data, "--workspace", A).stdout
        self.assertIn("2 (supervised)", b_trust)
        self.assertNotIn("2 (supervised)", a_trust)

    def test_trust_set_in_a_does_not_apply_to_b(self):
        a, b = self.tok["a_rw"], self.tok["b_rw"]
        r = self.api.ingest(b, [{"type": "entity", "name": "Vic Beta",
                                 "identifiers": ["vic@beta.example"], "tags": ["vip"]}])
        self.assertEqual(r.status, 200, r)
        b_av = self.status_of(b)["agent_version"]
        cli(self.data, "trust", "set", "--data", self.data, "--workspace", A,
            "--scope", "default", "--level", "3")
        self.addCleanup(cli, self.data, "trust", "set", "--data", self.data, "--workspace", A,
                        "--scope", "default", "--level", "1")
        cli(self.data, "trust", "set", "--data", self.data, "--workspace", A,
            "--scope", "tag:vip", "--level", "0")
        self.addCleanup(cli, self.data, "trust", "set", "--data", self.data, "--workspace", A,
                        "--scope", "tag:vip", "--level", "1")
        self.assertEqual(self.status_of(b)["agent_version"], b_av)
        # In A the new levels apply at once...
        p = self.ok(self.api.call(a, "action.communicate", {"to": "fresh@alpha.example",
                                                            "message": "hi"}))
        self.assertEqual(p["status"], "success", p)
        # ... in B neither does: default stays 1, the vip tag has no level.
        for who in ("fresh@beta.example", "vic@beta.example"):
            with self.subTest(to=who):
                p = self.ok(self.api.call(b, "action.communicate", {"to": who, "message": "hi"}))
                self.assertEqual(p["status"], "pending_approval", p)
                self.assertIn("trust level 1", p["message"], p)

    def test_rules_imported_in_a_do_not_triage_b(self):
        a, b = self.tok["a_rw"], self.tok["b_rw"]
        path = os.path.join(self.data, "rules-a.yaml")
        with open(path, "w") as f:
            f.write("rules:\n"
                    "  - name: silence-external\n"
                    "    summary: A silences every external sender.\n"
                    "    when: { tags: external }\n"
                    "    then: { triage: handle_silently }\n"
                    "    priority: 100\n"
                    "  - name: block-external\n"
                    "    summary: A never writes to external people.\n"
                    "    action: communicate\n"
                    "    when: { tags: external }\n"
                    "    then: { block: true }\n")
        b_av = self.status_of(b)["agent_version"]
        a_av = self.status_of(a)["agent_version"]
        cli(self.data, "rules", "import", "--data", self.data, "--workspace", A, path)
        self.assertNotEqual(self.status_of(a)["agent_version"], a_av)
        self.assertEqual(self.status_of(b)["agent_version"], b_av)
        r = self.api.ingest(b, [{"type": "episode", "kind": "message_received",
                                 "occurred_at": "2026-11-27T11:00:00Z",
                                 "counterparty": "bo@beta.example", "summary": "Bo: 'Paid?'"}])
        self.assertEqual(r.status, 200, r)
        d = self.ok(self.api.call(b, "decision.list", {"decision_class": "triage", "limit": 1}))[
            "decisions"][0]
        self.assertIn("Paid?", d["payload_summary"])
        self.assertNotIn("silently", d["payload_summary"])
        self.assertNotEqual(d.get("rule_summary"), "A silences every external sender.")
        self.assertEqual(d["confidence"], "just_guessing")
        # A's action rule does not block B's message to Bo (external) either.
        p = self.ok(self.api.call(b, "action.communicate", {"to": "bo@beta.example",
                                                            "message": "Thanks, Bo."}))
        self.assertEqual(p["status"], "pending_approval", p)
        self.assertEqual(self.decision_ids(b, decision_class="rule_fired"), [])
        # ... while in A it does.
        r = self.api.call(a, "action.communicate", {"to": "marcus.webb@harborline.example",
                                                    "message": "Thanks, Marcus."})
        self.assertToolError(r, "trust_insufficient")


# --------------------------------------------------------------------------------------------
# Sessions
# --------------------------------------------------------------------------------------------

class TestSessions(TwoWorkspaces):
    NONEXISTENT = "0123456789abcdef0123456789abcdef"

    def _probe(self, token, sid):
        """What a token gets for a session id, by every route that takes one."""
        out = {}
        out["ping"] = self.api.in_session(token, sid, "ping", id=4)
        out["tools/list"] = self.api.in_session(token, sid, "tools/list", id=5)
        out["tools/call"] = self.api.session_call(token, sid, "workspace.status", id=6)
        out["GET"] = self.api.request("GET", headers={"Accept": "text/event-stream",
                                                      "Mcp-Session-Id": sid,
                                                      "MCP-Protocol-Version": LEGACY},
                                      token=token)
        out["DELETE"] = self.api.request("DELETE", headers={"Mcp-Session-Id": sid,
                                                            "MCP-Protocol-Version": LEGACY},
                                         token=token)
        return out

    def _check(self, owner_token, other_token):
        sid = self.api.open_session(owner_token)
        owner_ws = self.ok(self.api.session_call(owner_token, sid, "workspace.status"))
        foreign = self._probe(other_token, sid)
        missing = self._probe(other_token, self.NONEXISTENT)
        for route in foreign:
            with self.subTest(route=route):
                self.assertRpcError(foreign[route], 404, -32001)
                self.assertEqual(normalized(foreign[route], sid),
                                 normalized(missing[route], self.NONEXISTENT))
                self.assertNotIn(owner_ws["workspace_id"], foreign[route].body.decode())
        # The session survived the other workspace's DELETE and still answers its owner.
        r = self.api.in_session(owner_token, sid, "ping", id=9)
        self.assertEqual((r.status, r.json()), (200, {"jsonrpc": "2.0", "id": 9, "result": {}}))
        self.assertEqual(self.ok(self.api.session_call(owner_token, sid, "workspace.status")),
                         owner_ws)

    def test_a_session_is_unknown_to_b(self):
        self._check(self.tok["a_rw"], self.tok["b_rw"])

    def test_b_session_is_unknown_to_a(self):
        self._check(self.tok["b_rw"], self.tok["a_rw"])

    def test_b_session_tools_see_only_b(self):
        a_dec = self.a_pending["decision_id"]
        # B's agent reads; B's person (in a session of their own) approves and rejects.
        for who, tools in (("b_rw", ("decision.inspect",)),
                           ("b_person", ("decision.inspect", "action.approve", "action.reject"))):
            b = self.tok[who]
            sid = self.api.open_session(b)
            st = self.ok(self.api.session_call(b, sid, "workspace.status"))
            self.assertEqual(st["workspace"], B)
            for tool in tools:
                with self.subTest(token=who, tool=tool):
                    real = self.api.session_call(b, sid, tool, {"decision_id": a_dec})
                    fake = self.api.session_call(b, sid, tool, {"decision_id": forge(a_dec)})
                    self.assertToolError(real, "not_found")
                    self.assertSameAnswer(real, a_dec, fake, forge(a_dec), tool)
            r = self.api.session_call(b, sid, "decision.list", {"limit": 100})
            self.assertNoIdsOf(r, self.a_ids, what=f"decision.list in B's session ({who})")
        self.assertEqual(self.decision_status(self.tok["a_rw"], a_dec), "pending")

    def test_same_workspace_tokens_share_sessions_other_workspace_does_not(self):
        # Sessions belong to the workspace: A's read token may use A's session, B's may not.
        sid = self.api.open_session(self.tok["a_rw"])
        r = self.api.session_call(self.tok["a_ro"], sid, "workspace.status")
        if r.status == 200:
            self.assertEqual(self.ok(r)["workspace"], A)
        else:  # a server may also pin sessions to the token; never to another workspace
            self.assertRpcError(r, 404, -32001, id=7)
        self.assertRpcError(self.api.session_call(self.tok["b_ro"], sid, "workspace.status"),
                            404, -32001, id=7)


# --------------------------------------------------------------------------------------------
# A read token cannot act
# --------------------------------------------------------------------------------------------

class TestReadScope(TwoWorkspaces):
    ACT_TOOLS = ("action.communicate", "action.approve", "action.reject")
    # The scope each needs: an agent's `act` drafts, a person's `approve` approves.
    SCOPE = {"action.communicate": "act", "action.approve": "approve",
             "action.reject": "approve"}

    def world(self):
        a = self.tok["a_rw"]
        return (self.status_of(a), self.decision_ids(a),
                self.ok(self.api.call(a, "decision.list", {"status": "pending"})),
                self.decision(a, self.a_pending["decision_id"]))

    def act_calls(self):
        dec = self.a_pending["decision_id"]
        return [("action.communicate", {"to": "never.seen@alpha.example", "message": "hi"}),
                ("action.communicate", {"to": "sarah.chen@northwind.example",
                                        "message": "hi", "tone": "warm"}),
                ("action.approve", {"decision_id": dec}),
                ("action.approve", {"decision_id": dec, "message": "edited"}),
                ("action.reject", {"decision_id": dec, "reason": "no"})]

    def assertRefused(self, resp, tool, id=7):
        sc = self.assertToolError(resp, "unauthorized", id=id)
        self.assertEqual(sc["message"],
                         f"this token lacks the '{self.SCOPE[tool]}' scope that {tool} needs")

    def test_read_token_cannot_act_and_nothing_changes(self):
        ro = self.tok["a_ro"]
        before = self.world()
        for tool, args in self.act_calls():
            with self.subTest(tool=tool, args=args):
                self.assertRefused(self.api.call(ro, tool, args), tool)
        self.assertEqual(self.world(), before)
        self.assertEqual(self.decision_status(self.tok["a_rw"], self.a_pending["decision_id"]),
                         "pending")
        # The first-contact address was not created either.
        self.assertToolError(self.api.call(ro, "entity.lookup",
                                           {"identifier": "never.seen@alpha.example"}),
                             "not_found")

    def test_read_token_cannot_act_in_a_session(self):
        ro = self.tok["a_ro"]
        sid = self.api.open_session(ro)
        before = self.world()
        for tool, args in self.act_calls():
            with self.subTest(tool=tool):
                self.assertRefused(self.api.session_call(ro, sid, tool, args), tool)
        self.assertEqual(self.world(), before)

    def test_agent_token_cannot_approve_or_reject_and_nothing_changes(self):
        rw = self.tok["a_rw"]
        sid = self.api.open_session(rw)
        before = self.world()
        for tool, args in self.act_calls():
            if tool == "action.communicate":
                continue
            with self.subTest(tool=tool, args=args):
                self.assertRefused(self.api.call(rw, tool, args), tool)
                self.assertRefused(self.api.session_call(rw, sid, tool, args), tool)
        self.assertEqual(self.world(), before)
        self.assertEqual(self.decision_status(rw, self.a_pending["decision_id"]), "pending")
        st = self.status_of(rw)
        self.assertEqual(st["scopes"], ["read", "act"])

    def test_person_token_cannot_draft_and_nothing_changes(self):
        person = self.tok["a_person"]
        self.assertEqual(self.status_of(person)["scopes"], ["read", "approve"])
        before = self.world()
        for tool, args in self.act_calls():
            if tool != "action.communicate":
                continue
            with self.subTest(args=args):
                self.assertRefused(self.api.call(person, tool, args), tool)
        self.assertEqual(self.world(), before)
        self.assertToolError(self.api.call(person, "entity.lookup",
                                           {"identifier": "never.seen@alpha.example"}),
                             "not_found")

    def test_read_token_cannot_ingest(self):
        ro = self.tok["a_ro"]
        before = self.world()
        r = self.api.ingest(ro, [{"type": "entity", "name": "Ro", "identifiers":
                                  ["ro@alpha.example"]}])
        self.assertEqual(r.status, 403, r)
        self.assertEqual(r.json().get("error"), "unauthorized", r)
        self.assertEqual(self.world(), before)

    def test_read_token_refusal_does_not_depend_on_the_id(self):
        # The scope check answers the same for A's id, B's id and a made-up one: a read token
        # cannot probe which decisions exist.
        # So does an agent's read,act token, which lacks `approve`.
        dec_a, dec_b = self.a_pending["decision_id"], self.b_pending["decision_id"]
        for who in ("a_ro", "a_rw"):
            for tool in ("action.approve", "action.reject"):
                with self.subTest(token=who, tool=tool):
                    answers = [normalized(self.api.call(self.tok[who], tool,
                                                        {"decision_id": d}), d)
                               for d in (dec_a, dec_b, forge(dec_a))]
                    self.assertEqual(answers[0], answers[1], tool)
                    self.assertEqual(answers[0], answers[2], tool)

    def test_read_tools_work_with_a_read_token(self):
        ro, rw = self.tok["a_ro"], self.tok["a_rw"]
        st = self.status_of(ro)
        self.assertEqual(st["scopes"], ["read"])
        self.assertEqual({k: v for k, v in st.items() if k != "scopes"},
                         {k: v for k, v in self.status_of(rw).items() if k != "scopes"})
        triage = next(d for d in self.a_view["decisions"] if d.get("notification_id"))
        for tool, args in (
                ("decision.list", {"limit": 50}),
                ("decision.list", {"status": "pending"}),
                ("decision.inspect", {"decision_id": self.a_pending["decision_id"]}),
                ("meta.why_this_action", {"action_id": self.a_pending["action_id"]}),
                ("meta.why_this_notification", {"notification_id": triage["notification_id"]}),
                ("notification.list", {"as_of": "2026-11-24T10:20:00Z"}),
                ("entity.lookup", {"identifier": "@sarahc"})):
            with self.subTest(tool=tool):
                self.assertEqual(self.ok(self.api.call(ro, tool, args)),
                                 self.ok(self.api.call(rw, tool, args)))
                self.assertEqual(self.ok(self.api.call(self.tok["a_person"], tool, args)),
                                 self.ok(self.api.call(rw, tool, args)))


# --------------------------------------------------------------------------------------------
# A revoked token stops working at once
# --------------------------------------------------------------------------------------------

class TestRevocation(TwoWorkspaces):
    def new_token(self, label, workspace=A, scopes="read,act"):
        return create_token(self.data, workspace, scopes, label=label)

    def revoke(self, label, workspace=A):
        tid = token_id_by_label(self.data, workspace, label)
        out = cli(self.data, "token", "revoke", "--data", self.data, "--workspace", workspace,
                  tid).stdout
        self.assertIn(tid, out)
        return tid

    def assertUnauthorized(self, r):
        self.assertEqual(r.status, 401, r)
        self.assertTrue((r.header("WWW-Authenticate") or "").startswith("Bearer"), r)
        self.assertEqual(r.json().get("error"), "unauthorized", r)
        self.assertNotIn(b"structuredContent", r.body)

    def test_revoked_token_in_open_session(self):
        tok = self.new_token("rev-session")
        sid = self.api.open_session(tok)
        st = self.ok(self.api.session_call(tok, sid, "workspace.status"))
        self.assertEqual(st["workspace"], A)
        self.revoke("rev-session")
        # The very next request, in the session that is still open:
        self.assertUnauthorized(self.api.session_call(tok, sid, "workspace.status"))
        self.assertUnauthorized(self.api.in_session(tok, sid, "ping", id=3))
        self.assertUnauthorized(self.api.in_session(tok, sid, "tools/list", id=4))
        self.assertUnauthorized(self.api.request(
            "GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": sid,
                            "MCP-Protocol-Version": LEGACY}, token=tok))
        self.assertUnauthorized(self.api.request(
            "DELETE", headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}, token=tok))
        self.assertUnauthorized(self.api.call(tok, "workspace.status"))
        # A new session cannot be opened with it either.
        r = self.api._with(None, lambda c: th.rpc(
            "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                           "clientInfo": {"name": "x", "version": "1"}}, id=0, token=tok, conn=c))
        self.assertUnauthorized(r)

    def test_revoked_token_on_a_kept_alive_connection(self):
        tok = self.new_token("rev-keepalive")
        conn = self.api.conn()
        try:
            r = self.api.call(tok, "workspace.status", conn=conn)
            self.assertEqual(self.ok(r)["workspace"], A)
            sock = conn.sock
            self.revoke("rev-keepalive")
            r = self.api.call(tok, "decision.list", {"limit": 5}, conn=conn)
            self.assertIs(conn.sock, sock, "the request after revoking used a new connection")
            self.assertUnauthorized(r)
            self.assertNoIdsOf(r, self.a_ids, what="revoked token's reply")
        finally:
            conn.close()

    def test_revoked_token_cannot_ingest(self):
        tok = self.new_token("rev-ingest")
        line = {"type": "episode", "kind": "message_received",
                "occurred_at": "2026-11-27T09:00:00Z", "counterparty": "rev@alpha.example",
                "summary": "before revoking", "external_id": "rev-1"}
        r = self.api.ingest(tok, [line])
        self.assertEqual(r.status, 200, r)
        self.revoke("rev-ingest")
        before = self.status_of(self.tok["a_rw"])
        r = self.api.ingest(tok, [dict(line, external_id="rev-2", summary="after revoking")])
        self.assertUnauthorized(r)
        self.assertEqual(self.status_of(self.tok["a_rw"]), before)

    def test_revoked_token_cannot_approve(self):
        # A person's token approves the agent's first draft; revoked, it cannot approve or
        # reject the second.
        tok = self.new_token("rev-approve", scopes="read,approve")
        first, prop = (self.ok(self.api.call(self.tok["a_rw"], "action.communicate", {
            "to": "@jkim", "message": m})) for m in ("Please renew the staging certs.",
                                                      "And the prod ones next week."))
        self.assertEqual(prop["status"], "pending_approval", prop)
        done = self.ok(self.api.call(tok, "action.approve", {"decision_id": first["decision_id"]}))
        self.assertEqual(done["status"], "success", done)
        self.revoke("rev-approve")
        self.assertUnauthorized(self.api.call(tok, "action.approve",
                                              {"decision_id": prop["decision_id"]}))
        self.assertUnauthorized(self.api.call(tok, "action.reject",
                                              {"decision_id": prop["decision_id"]}))
        self.assertEqual(self.decision_status(self.tok["a_rw"], prop["decision_id"]), "pending")
        # Only that token is affected: its workspace's other tokens and B's keep working.
        self.assertEqual(self.status_of(self.tok["a_rw"])["workspace"], A)
        self.assertEqual(self.status_of(self.tok["a_ro"])["workspace"], A)
        self.assertEqual(self.status_of(self.tok["a_person"])["workspace"], A)
        self.assertEqual(self.status_of(self.tok["b_rw"])["workspace"], B)

    def test_b_cannot_revoke_a_token(self):
        tok = self.new_token("a-keep")
        tid = token_id_by_label(self.data, A, "a-keep")
        foreign = cli(self.data, "token", "revoke", "--data", self.data, "--workspace", B, tid,
                      check=False)
        never = cli(self.data, "token", "revoke", "--data", self.data, "--workspace", B,
                    forge(tid), check=False)
        self.assertNotEqual(foreign.returncode, 0, foreign)
        self.assertEqual((foreign.returncode, foreign.stdout, foreign.stderr.replace(tid, "<ID>")),
                         (never.returncode, never.stdout, never.stderr.replace(forge(tid), "<ID>")))
        self.assertEqual(self.status_of(tok)["workspace"], A)
        listing = cli(self.data, "token", "list", "--data", self.data, "--workspace", A).stdout
        row = next(l for l in listing.splitlines() if l.startswith(tid))
        self.assertIn("active", row)
        self.assertNotIn(tid, cli(self.data, "token", "list", "--data", self.data,
                                  "--workspace", B).stdout)

    def test_revoked_token_over_stdio_stops_at_once(self):
        # docs/mcp.md: "The token is checked on every request (a revoked token stops working
        # at once)." Over stdio the token comes from CORTEX_TOKEN, for a process that is
        # already running when the token is revoked.
        tok = self.new_token("rev-stdio")
        env = {k: v for k, v in os.environ.items() if k != "CORTEX_TOKEN"}
        env["CORTEX_TOKEN"] = tok
        proc = subprocess.Popen([CORTEX_BIN, "mcp", "--stdio", "--data", self.data],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env)
        try:
            def send(msg):
                proc.stdin.write((json.dumps(msg) + "\n").encode())
                proc.stdin.flush()

            def reply():
                line = proc.stdout.readline()
                return json.loads(line) if line.strip() else None

            send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": LEGACY, "capabilities": {},
                             "clientInfo": {"name": "x", "version": "1"}}})
            self.assertIn("result", reply())
            send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "workspace.status", "arguments": {}}}
            send(call)
            self.assertEqual(reply()["result"]["structuredContent"]["workspace"], A)
            self.revoke("rev-stdio")
            send(dict(call, id=2))
            r = reply()  # None: the process ended, which is also a refusal
            if r is not None:
                refused = "error" in r or (r.get("result", {}).get("isError") is True and
                                           r["result"]["structuredContent"].get("error") ==
                                           "unauthorized")
                self.assertTrue(refused, f"revoked token still served over stdio: {r}")
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()


# --------------------------------------------------------------------------------------------
# Call quotas count per workspace (only with a binary that has [quotas])
# --------------------------------------------------------------------------------------------

class TestQuotasPerWorkspace(TwoWorkspaces):
    config = "[quotas]\ncalls_per_minute = 6\n"

    @classmethod
    def _prepare(cls):
        super()._prepare()
        # Does this binary know [quotas]? A config error makes `cortex mcp --stdio` exit 2
        # before it reads anything (an empty stdin then exits 0).
        env = dict(os.environ, CORTEX_TOKEN=cls.tok["b_ro"])
        probe = subprocess.run([CORTEX_BIN, "mcp", "--stdio", "--data", cls.data,
                                *cls.extra_args], input=b"", capture_output=True, timeout=30,
                               env=env)
        if probe.returncode != 0 and b"quotas" in probe.stderr:
            raise unittest.SkipTest("this cortex has no [quotas] configuration")

    @classmethod
    def _build(cls):
        cls.a_pending = cls.b_pending = None  # the fixture's own calls would spend the quota

    def test_b_spending_its_quota_does_not_refuse_a(self):
        for _ in range(3):  # a minute boundary mid-test resets the window: try again
            b_refused = None
            for _ in range(12):
                r = self.api.call(self.tok["b_rw"], "workspace.status")
                res = tool_result(self, r)
                if res.get("isError"):
                    b_refused = res["structuredContent"]
                    break
            self.assertIsNotNone(b_refused, "B was never refused: quota not enforced?")
            self.assertEqual(b_refused["error"], "quota_exceeded", b_refused)
            self.assertEqual(b_refused.get("quota"), "calls_per_minute", b_refused)
            a_results = [tool_result(self, self.api.call(self.tok["a_rw"], "workspace.status"))
                         for _ in range(3)]
            still = tool_result(self, self.api.call(self.tok["b_rw"], "workspace.status"))
            if still.get("isError"):  # same window: the comparison is meaningful
                for res in a_results:
                    self.assertNotEqual(res.get("isError"), True, res)
                    self.assertEqual(res["structuredContent"]["workspace"], A)
                return
            time.sleep(1)
        self.fail("could not stay inside one quota window")


if __name__ == "__main__":
    unittest.main()
