#include "store/migrations.h"

#include <regex>

namespace cortex {

// Written in SQLite's spelling; PostgresMigrationSql() gives PostgreSQL's. Times are
// integer milliseconds since the Unix epoch (UTC).
const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, "world model: workspaces, tokens, entities, episodes", R"sql(
CREATE TABLE workspaces (
  id            TEXT PRIMARY KEY,
  name          TEXT NOT NULL UNIQUE,
  world_version TEXT NOT NULL,
  agent_version TEXT NOT NULL,
  created_at    INTEGER NOT NULL
);
CREATE TABLE tokens (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  hash         TEXT NOT NULL UNIQUE,
  label        TEXT NOT NULL,
  scopes       INTEGER NOT NULL,
  created_at   INTEGER NOT NULL,
  revoked_at   INTEGER
);
CREATE INDEX tokens_by_workspace ON tokens(workspace_id, id);
CREATE TABLE entities (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  kind         TEXT NOT NULL,
  name         TEXT NOT NULL,
  created_at   INTEGER NOT NULL
);
CREATE INDEX entities_by_workspace ON entities(workspace_id, id);
CREATE TABLE entity_identifiers (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  identifier   TEXT NOT NULL,
  entity_id    TEXT NOT NULL REFERENCES entities(id),
  PRIMARY KEY (workspace_id, identifier)
) WITHOUT ROWID;
CREATE INDEX entity_identifiers_by_entity ON entity_identifiers(entity_id);
CREATE TABLE entity_tags (
  entity_id TEXT NOT NULL REFERENCES entities(id),
  tag       TEXT NOT NULL,
  PRIMARY KEY (entity_id, tag)
) WITHOUT ROWID;
CREATE TABLE episodes (
  id            TEXT PRIMARY KEY,
  workspace_id  TEXT NOT NULL REFERENCES workspaces(id),
  kind          TEXT NOT NULL,
  occurred_at   INTEGER NOT NULL,
  ends_at       INTEGER,
  entity_id     TEXT REFERENCES entities(id),
  channel       TEXT NOT NULL,
  subject       TEXT NOT NULL,
  summary       TEXT NOT NULL,
  body          TEXT NOT NULL,
  thread        TEXT NOT NULL,
  external_id   TEXT,
  world_version TEXT NOT NULL,
  created_at    INTEGER NOT NULL
);
CREATE INDEX episodes_by_time ON episodes(workspace_id, occurred_at);
CREATE INDEX episodes_by_entity ON episodes(workspace_id, entity_id, occurred_at);
CREATE INDEX episodes_by_thread ON episodes(workspace_id, thread, occurred_at);
CREATE UNIQUE INDEX episodes_by_external_id ON episodes(workspace_id, external_id)
  WHERE external_id IS NOT NULL;
)sql"},
      {2, "triage: settings, rules, decisions, notifications", R"sql(
ALTER TABLE workspaces ADD COLUMN settings TEXT NOT NULL DEFAULT '{}';
CREATE INDEX episodes_by_kind ON episodes(workspace_id, kind, occurred_at);
CREATE INDEX episodes_by_entity_kind ON episodes(workspace_id, entity_id, kind, occurred_at);
CREATE TABLE rules (
  id             TEXT PRIMARY KEY,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id),
  name           TEXT NOT NULL,
  origin         TEXT NOT NULL,
  summary        TEXT NOT NULL,
  definition     TEXT NOT NULL,
  position       INTEGER NOT NULL,
  evidence       TEXT NOT NULL,
  support        INTEGER NOT NULL,
  contradictions INTEGER NOT NULL,
  hits           INTEGER NOT NULL DEFAULT 0,
  active         INTEGER NOT NULL,
  created_at     INTEGER NOT NULL,
  retired_at     INTEGER
);
CREATE INDEX rules_by_workspace ON rules(workspace_id, active, position);
CREATE TABLE decisions (
  id                 TEXT PRIMARY KEY,
  workspace_id       TEXT NOT NULL REFERENCES workspaces(id),
  class              TEXT NOT NULL,
  status             TEXT NOT NULL,
  occurred_at        INTEGER NOT NULL,
  entity_id          TEXT REFERENCES entities(id),
  payload_summary    TEXT NOT NULL,
  rule_id            TEXT REFERENCES rules(id),
  rule_summary       TEXT,
  confidence         TEXT NOT NULL,
  trace_id           TEXT NOT NULL,
  agent_version      TEXT NOT NULL,
  world_version      TEXT NOT NULL,
  source_episode_ids TEXT NOT NULL,
  details            TEXT NOT NULL,
  notification_id    TEXT,
  triage_decision_id TEXT,
  ledger_entry_id    TEXT
);
CREATE INDEX decisions_by_workspace ON decisions(workspace_id, id);
CREATE INDEX decisions_by_class ON decisions(workspace_id, class, id);
CREATE INDEX decisions_by_status ON decisions(workspace_id, status, id);
CREATE INDEX decisions_by_entity ON decisions(workspace_id, entity_id, id);
CREATE TABLE notifications (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  episode_id   TEXT NOT NULL REFERENCES episodes(id),
  decision_id  TEXT NOT NULL REFERENCES decisions(id),
  entity_id    TEXT REFERENCES entities(id),
  triage_class TEXT NOT NULL,
  surface_at   INTEGER,
  created_at   INTEGER NOT NULL
);
CREATE INDEX notifications_by_surface ON notifications(workspace_id, surface_at, id);
CREATE INDEX notifications_by_class ON notifications(workspace_id, triage_class, surface_at, id);
)sql"},
      {3, "actions: trust, actions, the ledger, the outbox", R"sql(
ALTER TABLE workspaces ADD COLUMN ledger_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workspaces ADD COLUMN ledger_head TEXT NOT NULL DEFAULT '';
CREATE TABLE trust (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  action_class TEXT NOT NULL,
  scope        TEXT NOT NULL,  -- 'default', 'tag:<tag>' or 'entity:<entity id>'
  level        INTEGER,        -- NULL: no level set at this scope (a ceiling only)
  ceiling      INTEGER,        -- tags only: the highest level earned trust may reach
  updated_at   INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, action_class, scope)
) WITHOUT ROWID;
CREATE TABLE trust_streaks (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  action_class TEXT NOT NULL,
  entity_id    TEXT NOT NULL REFERENCES entities(id),
  streak       INTEGER NOT NULL,
  evidence     TEXT NOT NULL,  -- JSON array of the decision ids in the streak
  PRIMARY KEY (workspace_id, action_class, entity_id)
) WITHOUT ROWID;
CREATE TABLE actions (
  id                 TEXT PRIMARY KEY,
  workspace_id       TEXT NOT NULL REFERENCES workspaces(id),
  action_class       TEXT NOT NULL,
  entity_id          TEXT NOT NULL REFERENCES entities(id),
  recipient          TEXT NOT NULL,
  status             TEXT NOT NULL,
  level              INTEGER NOT NULL,
  urgent             INTEGER NOT NULL,
  message            TEXT NOT NULL,
  tone               TEXT NOT NULL,
  context            TEXT NOT NULL,
  draft              TEXT NOT NULL,
  decision_id        TEXT NOT NULL,
  due_at             INTEGER,
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL
);
CREATE INDEX actions_by_decision ON actions(workspace_id, decision_id);
CREATE INDEX actions_due ON actions(due_at) WHERE due_at IS NOT NULL;
CREATE TABLE ledger (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  seq          INTEGER NOT NULL,
  action_id    TEXT NOT NULL,
  decision_id  TEXT NOT NULL,
  event        TEXT NOT NULL,
  occurred_at  INTEGER NOT NULL,
  provenance   TEXT NOT NULL,
  detail       TEXT NOT NULL,
  prev_hash    TEXT NOT NULL,
  hash         TEXT NOT NULL,
  UNIQUE (workspace_id, seq)
);
CREATE INDEX ledger_by_action ON ledger(workspace_id, action_id, seq);
CREATE TABLE outbox (
  action_id       TEXT PRIMARY KEY,
  workspace_id    TEXT NOT NULL REFERENCES workspaces(id),
  recipient       TEXT NOT NULL,
  body            TEXT NOT NULL,
  status          TEXT NOT NULL,  -- pending | delivered | failed
  attempts        INTEGER NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  lease_until     INTEGER,
  last_error      TEXT NOT NULL,
  created_at      INTEGER NOT NULL,
  delivered_at    INTEGER
);
CREATE INDEX outbox_due ON outbox(status, next_attempt_at);
CREATE TABLE inference_usage (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  day          TEXT NOT NULL,  -- the workspace's local date, YYYY-MM-DD
  units        INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, day)
) WITHOUT ROWID;
CREATE TABLE delivered_messages (
  action_id    TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  recipient    TEXT NOT NULL,
  body         TEXT NOT NULL,
  delivered_at INTEGER NOT NULL
);
)sql"},
      // Rebuilds inference_usage: with several instances, stop them all while it runs.
      {4, "quotas: per-workspace limits; inference units per token", R"sql(
CREATE TABLE quota_limits (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  name         TEXT NOT NULL,  -- e.g. calls_per_minute (engines/auth/quotas.h)
  value        INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, name)
) WITHOUT ROWID;
CREATE TABLE inference_usage_v4 (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  day          TEXT NOT NULL,  -- the workspace's local date, YYYY-MM-DD
  token_id     TEXT NOT NULL,  -- '' for units spent before tokens were counted
  units        INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, day, token_id)
) WITHOUT ROWID;
INSERT INTO inference_usage_v4 (workspace_id, day, token_id, units)
  SELECT workspace_id, day, '', units FROM inference_usage;
DROP TABLE inference_usage;
ALTER TABLE inference_usage_v4 RENAME TO inference_usage;
)sql"},
      {5, "several instances: MCP sessions and tool-call counts in the store", R"sql(
CREATE TABLE mcp_sessions (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  created_at   INTEGER NOT NULL,
  last_used    INTEGER NOT NULL  -- refreshed at most once a minute
);
CREATE INDEX mcp_sessions_by_last_used ON mcp_sessions(last_used);
CREATE TABLE call_counts (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  subject      TEXT NOT NULL,     -- '*' for the workspace, else a token id ('' if none)
  unit         TEXT NOT NULL,     -- 'minute' or 'day'
  period       INTEGER NOT NULL,  -- minutes since the epoch, or the workspace's local day number
  calls        INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, subject, unit, period)
) WITHOUT ROWID;
CREATE INDEX call_counts_by_period ON call_counts(unit, period);
)sql"},
      {6, "decisions by counterparty and class", R"sql(
-- action.communicate looks for the counterparty's latest triage decision, and
-- decision.list filters by counterparty and class: without the class in the index both
-- read every decision of the counterparty's (its proposals too) to find a few.
CREATE INDEX decisions_by_entity_class ON decisions(workspace_id, entity_id, class, id);
)sql"},
      {7, "two episode indexes no query needs", R"sql(
-- Every ingested episode inserted into eight b-trees. No query reads episodes by time
-- alone, and the one that read a counterparty's episodes of any kind ("first contact")
-- now seeks episodes_by_entity_kind once per kind. At 10^6 episodes each of these was
-- another random page to load and rewrite per insert.
DROP INDEX episodes_by_time;
DROP INDEX episodes_by_entity;
)sql"},
      {8, "calendar blocks in an index of their own", R"sql(
-- Triage asks, for every message, which calendar block is active at its time: with
-- episodes_by_kind it walked two weeks of blocks and read each one's row to compare its
-- end. This index holds only the blocks, with their ends, so the walk reads the index
-- alone; and episodes_by_kind, which served no other query, no longer takes an insert
-- for every message.
CREATE INDEX episodes_blocks ON episodes(workspace_id, occurred_at, ends_at)
  WHERE kind = 'calendar_block';
DROP INDEX episodes_by_kind;
)sql"},
      {9, "the workspace counts its entities and episodes", R"sql(
-- workspace.status counted them on every call, in time proportional to the world (12 ms
-- at 10^5 episodes). Inserts now add to these counts; nothing deletes either.
-- Needs every instance stopped while it runs: an instance of an earlier version would go
-- on inserting without counting.
ALTER TABLE workspaces ADD COLUMN entity_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workspaces ADD COLUMN episode_count INTEGER NOT NULL DEFAULT 0;
UPDATE workspaces SET
  entity_count = (SELECT count(*) FROM entities WHERE entities.workspace_id = workspaces.id),
  episode_count = (SELECT count(*) FROM episodes WHERE episodes.workspace_id = workspaces.id);
)sql"},
      {10, "decisions and notifications of any class are listed class by class", R"sql(
-- decision.list without a class (by counterparty, or of the whole workspace) now reads
-- decisions_by_entity_class or decisions_by_class once per class and merges, and the due
-- notifications of any class are merged from notifications_by_class. Every decision paid
-- for the two decision indexes with two more pages to write, one of them at a random place
-- (its counterparty's), and every notification for its index with a page at its time:
-- ingest with triage is ~1.2x faster without the first two at 10^5 decisions, ~1.3x
-- faster again without the third at 10^6. An instance of an earlier version still answers
-- correctly, but those lists then scan: upgrade every instance together.
DROP INDEX decisions_by_entity;
DROP INDEX decisions_by_workspace;
DROP INDEX notifications_by_surface;
)sql"},
      {11, "the web inbox: one-time sign-in links and the sessions they open", R"sql(
CREATE TABLE inbox_links (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  secret_hash  TEXT NOT NULL UNIQUE,  -- SHA-256 of the link's secret; the secret is not kept
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  used_at      INTEGER,               -- set once: a link opens one session
  secure       INTEGER NOT NULL       -- made for https://: the session cookie is Secure
);
CREATE TABLE inbox_sessions (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  secret_hash  TEXT NOT NULL UNIQUE,  -- SHA-256 of the cookie's value
  link_id      TEXT NOT NULL REFERENCES inbox_links(id),
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  ended_at     INTEGER                -- signed out
);
)sql"},
      {12, "MCP session ids are kept hashed", R"sql(
-- mcp_sessions.id now holds the SHA-256 (hex) of the Mcp-Session-Id a client holds, as
-- tokens.hash does (store/sessions.h), so a copy of the database opens no session. The ids
-- stored in clear until now cannot be hashed by SQL that both databases run (SQLite has no
-- sha256()), so their sessions end here: a client whose session is unknown gets 404 and
-- initializes again, as MCP requires of it. Upgrade every instance together: one of an
-- earlier version neither finds the new sessions nor stores its own hashed.
DELETE FROM mcp_sessions;
)sql"},
      {13, "the outbox carries digests and pushed events too; one digest a day", R"sql(
-- An outbox row is anything delivered at least once: an action's message (its id is the
-- action's), a daily digest (the digest decision's id) or an event pushed to the person's
-- webhook (evt_...). Rows written before are messages.
ALTER TABLE outbox RENAME COLUMN action_id TO id;
ALTER TABLE outbox ADD COLUMN kind TEXT NOT NULL DEFAULT 'message';
DROP INDEX outbox_due;
CREATE INDEX outbox_due ON outbox(status, kind, next_attempt_at);
CREATE INDEX outbox_by_kind_age ON outbox(kind, created_at);
-- One row per workspace and local day whose digest was composed: the primary key is what
-- makes a digest go out once a day across restarts and instances.
CREATE TABLE digests (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  day          TEXT NOT NULL,     -- the workspace's local date, YYYY-MM-DD
  digest_at    INTEGER NOT NULL,  -- its digest time: the next digest covers from here
  decision_id  TEXT NOT NULL,     -- empty: there was nothing to send
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, day)
);
)sql"},
      {14, "MCP sessions are counted per workspace and per token", R"sql(
-- Open sessions are capped per workspace and per token as well as in all (HttpLimits:
-- [http] max_sessions_per_workspace, max_sessions_per_token), so that one tenant cannot
-- take every session. Sessions opened before have no token ('') and count for their
-- workspace only; they expire as any other.
ALTER TABLE mcp_sessions ADD COLUMN token_id TEXT NOT NULL DEFAULT '';
CREATE INDEX mcp_sessions_by_workspace ON mcp_sessions(workspace_id, last_used);
CREATE INDEX mcp_sessions_by_token ON mcp_sessions(token_id, last_used);
)sql"},
      {15, "drafts put to a person inside their MCP client", R"sql(
-- action.communicate at level 1 may ask the person in their own MCP client (2026-07-28's
-- input-required result, engines/actions/elicitation.h). The client echoes the request state back
-- with the answer; this row checks it: once, by the token that was asked, for the same
-- arguments, before it expires. Only the SHA-256 of the state's secret is kept.
CREATE TABLE elicitations (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  decision_id  TEXT NOT NULL,
  token_id     TEXT NOT NULL,
  secret_hash  TEXT NOT NULL,
  args_hash    TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  answered_at  INTEGER
);
)sql"},
      {16, "action.communicate's idempotency keys", R"sql(
-- A retry of action.communicate with the same idempotency_key (per workspace and token)
-- gets the first call's result instead of a second message (engines/actions/idempotency.h). Keys
-- are kept 24 hours.
CREATE TABLE idempotency_keys (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  token_id     TEXT NOT NULL,
  idem_key     TEXT NOT NULL,
  args_hash    TEXT NOT NULL,  -- SHA-256 of the call's arguments
  result       TEXT NOT NULL,  -- the first call's result, as JSON
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, token_id, idem_key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys(created_at);
)sql"},
      {17, "approval by elicitation in 2025-11-25 sessions", R"sql(
-- A session remembers whether its client can ask its user (initialize's capabilities), and
-- an elicitation keeps the result of the answer that ended it: the tools/call stream held
-- open for it (on whichever instance) sends that result (engines/actions/elicitation.h).
ALTER TABLE mcp_sessions ADD COLUMN client_elicits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE elicitations ADD COLUMN result TEXT;
)sql"},
      {18, "a triage decision's class in a column of its own, in decisions_by_class", R"sql(
-- decision.list shows each triage decision's class and filters by it ("what was held for a
-- break": triage_class surface_at_transition). It was inside details (JSON text) only. The
-- index keeps its place and its count (five B-trees a decision, migration 10): the class
-- is added to decisions_by_class, '' for every class but triage, so one class's decisions
-- are still one range in id order, and so are one triage class's. The class is copied from
-- details by matching its text (DumpJson's spelling), which both databases can do.
ALTER TABLE decisions ADD COLUMN triage_class TEXT NOT NULL DEFAULT '';
UPDATE decisions SET triage_class = CASE
    WHEN details LIKE '%"triage_class":"interrupt_now"%' THEN 'interrupt_now'
    WHEN details LIKE '%"triage_class":"surface_at_transition"%' THEN 'surface_at_transition'
    WHEN details LIKE '%"triage_class":"daily_digest"%' THEN 'daily_digest'
    WHEN details LIKE '%"triage_class":"handle_silently"%' THEN 'handle_silently'
    ELSE '' END
  WHERE class = 'triage';
DROP INDEX decisions_by_class;
CREATE INDEX decisions_by_class ON decisions(workspace_id, class, triage_class, id);
)sql"},
      {19, "a large ingest batch lands in steps, with what undoes them", R"sql(
-- SQLite only uses these (store/sqlite_steps.h): a batch too large for one transaction
-- commits in steps, each with the inverse of its changes, so that other workspaces' writes
-- go in between; the last step deletes the batch's rows here. A batch left here by a
-- process that no longer runs is undone when the store opens. PostgreSQL writes a batch
-- in one transaction and leaves both tables empty.
CREATE TABLE staged_batches (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  owner        TEXT NOT NULL,
  started_at   INTEGER NOT NULL
);
CREATE TABLE staged_undo (
  batch_id TEXT NOT NULL REFERENCES staged_batches(id),
  step     INTEGER NOT NULL,
  changes  BLOB NOT NULL,
  PRIMARY KEY (batch_id, step)
);
)sql"},
      {20, "the OAuth authorization server: clients, codes, refresh tokens", R"sql(
-- Remote MCP clients authorize through OAuth 2.1 (docs/authorization.md). A client registers
-- (RFC 7591); a person consents in the inbox, which gives the client a one-time code; the
-- code (with its PKCE verifier) becomes an access token, a row of tokens with the client's
-- id, an expiry and the resource it is for, and a refresh token that rotates. Codes and
-- refresh tokens are kept as SHA-256 hashes only, as tokens are.
CREATE TABLE oauth_clients (
  id            TEXT PRIMARY KEY,   -- cli_...: the client_id
  name          TEXT NOT NULL,
  redirect_uris TEXT NOT NULL,      -- a JSON array, matched exactly
  created_at    INTEGER NOT NULL
);
CREATE TABLE oauth_codes (
  hash           TEXT PRIMARY KEY,
  client_id      TEXT NOT NULL,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id),
  redirect_uri   TEXT NOT NULL,
  code_challenge TEXT NOT NULL,
  scopes         INTEGER NOT NULL,
  resource       TEXT NOT NULL,
  session_id     TEXT NOT NULL,
  created_at     INTEGER NOT NULL,
  expires_at     INTEGER NOT NULL,
  used_at        INTEGER,
  token_id       TEXT NOT NULL       -- what it was exchanged for: revoked if it comes again
);
CREATE TABLE oauth_refresh_tokens (
  hash         TEXT PRIMARY KEY,
  token_id     TEXT NOT NULL,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  used_at      INTEGER
);
-- Codes and refresh tokens are forgotten once expired (the background sweep).
CREATE INDEX oauth_codes_by_expiry ON oauth_codes(expires_at);
CREATE INDEX oauth_refresh_tokens_by_expiry ON oauth_refresh_tokens(expires_at);
ALTER TABLE tokens ADD COLUMN client_id TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN expires_at INTEGER;
ALTER TABLE tokens ADD COLUMN resource TEXT NOT NULL DEFAULT '';
)sql"},
      {21, "a message's subject and the episode it answers", R"sql(
-- action.communicate takes an optional subject and an optional in_reply_to (the episode id
-- of the message it answers): the SMTP connector writes them as Subject:, In-Reply-To: and
-- References:, and the delivered message's message_sent episode joins that thread.
-- '' means none: the subject then comes from the draft's first line.
ALTER TABLE actions ADD COLUMN subject TEXT NOT NULL DEFAULT '';
ALTER TABLE actions ADD COLUMN in_reply_to TEXT NOT NULL DEFAULT '';
)sql"},
      {22, "connectors' cursors, committed with the episodes they read", R"sql(
-- How far each connector has read each source (an IMAP folder: its UIDVALIDITY and last
-- UID; a calendar: its sync token), written in the transaction that stores the episodes
-- read up to there: a crash mid-sync loses nothing and duplicates nothing
-- (docs/connectors.md).
CREATE TABLE ingest_cursors (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  source       TEXT NOT NULL,
  cursor       TEXT NOT NULL,
  updated_at   INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, source)
);
)sql"},
      {23, "rules learned from behaviour: a rule's status, and what the learner keeps", R"sql(
-- A learned rule starts 'proposed'; a person accepts it ('active') or rejects it; the learner
-- retires it when its evidence fades (docs/learning.md). A person's rule is 'active' or
-- 'retired', as `active` said. `active` stays (1 iff status = 'active'): triage's index
-- reads it. `learned` holds the learner's own fields as JSON text: the pattern it found,
-- the contradicting episodes, the backtest, the support at rejection, the agent_version
-- its acceptance made; '{}' for a person's rule.
ALTER TABLE rules ADD COLUMN status TEXT NOT NULL DEFAULT 'active';
UPDATE rules SET status = 'retired' WHERE active = 0;
ALTER TABLE rules ADD COLUMN learned TEXT NOT NULL DEFAULT '{}';
)sql"},
      {24, "a session's log level (logging/setLevel)", R"sql(
-- A 2025-11-25 session's client may ask for log notifications from a level up; the level
-- is the session's, kept with it so that every instance sending on it honours it. '': none
-- asked for, none sent.
ALTER TABLE mcp_sessions ADD COLUMN log_level TEXT NOT NULL DEFAULT '';
)sql"},
      {25, "a session's resource subscriptions (resources/subscribe)", R"sql(
-- The resources a 2025-11-25 session subscribed to: the instance holding its GET stream
-- looks here, whichever instance took the subscribe. session_id is the session's stored
-- id (SHA-256, as mcp_sessions.id); rows go with their session.
CREATE TABLE mcp_subscriptions (
  session_id TEXT NOT NULL,
  uri        TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, uri)
);
)sql"},
      {26, "calendars: retracted episodes, current occurrences, CalDAV resources", R"sql(
-- Episodes are facts and never change; a calendar does. When an event is moved or
-- cancelled, its earlier episode is retracted: a row here, which the focus-block look-ups
-- honour (the episode itself stays, as do the decisions made while it stood).
CREATE TABLE episode_retractions (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  episode_id   TEXT NOT NULL REFERENCES episodes(id),
  retracted_at INTEGER NOT NULL,
  reason       TEXT NOT NULL,
  PRIMARY KEY (workspace_id, episode_id)
) WITHOUT ROWID;
-- A calendar connector's occurrences as they stand after its last pass, keyed by the
-- event's UID and recurrence id: the episode that records it now ('' once it is cancelled
-- or gone), what it looked like (fingerprint) and how many versions it has had, which
-- each new episode's external_id includes (docs/ingest.md, "Calendars change").
CREATE TABLE calendar_occurrences (
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id),
  source         TEXT NOT NULL,
  occurrence_key TEXT NOT NULL,
  episode_id     TEXT NOT NULL,
  fingerprint    TEXT NOT NULL,
  version        INTEGER NOT NULL,
  starts_at      INTEGER NOT NULL,
  ends_at        INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, source, occurrence_key)
) WITHOUT ROWID;
-- A CalDAV collection's event resources as last fetched (href, ETag, iCalendar text): a
-- pass asks the server for ETags and fetches only what changed; the rest is expanded
-- again from here as the window moves.
CREATE TABLE calendar_resources (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  source       TEXT NOT NULL,
  href         TEXT NOT NULL,
  etag         TEXT NOT NULL,
  data         TEXT NOT NULL,
  PRIMARY KEY (workspace_id, source, href)
) WITHOUT ROWID;
)sql"},
      {27, "episodes by the world_version that stamped them", R"sql(
-- The learner keeps a workspace's messages in memory while serving and, after a batch,
-- reads only the episodes stamped after the last it read (docs/learning.md, "Incremental
-- passes"). Versions only grow, so each insert appends at the index's right edge.
CREATE INDEX episodes_by_version ON episodes(workspace_id, world_version);
)sql"},
      {28, "requests a 2025-11-25 tools/call sends its client mid-call", R"sql(
-- A tool that needs input (an input-required result) in a 2025-11-25 session sends its
-- requests (elicitation/create, sampling/createMessage, roots/list) on the call's own event
-- stream; the client POSTs each response, to any instance. A row holds one round: the keys
-- still unanswered and the responses so far (JSON), for the session (stored id, SHA-256)
-- and token it was sent to. id (creq_ + 128 random bits) is unguessable. Rows are kept
-- until they expire (protocol/mcp_ask.cc).
CREATE TABLE mcp_client_requests (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  session_id   TEXT NOT NULL,
  token_id     TEXT NOT NULL,
  pending      TEXT NOT NULL,
  responses    TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL
);
CREATE INDEX mcp_client_requests_by_expiry ON mcp_client_requests(expires_at);
)sql"},
      {29, "MCP tasks (io.modelcontextprotocol/tasks)", R"sql(
-- A 2026-07-28 tools/call from a client that declares the tasks extension may answer with
-- a task instead of its result: an action.communicate draft waiting for a person's
-- approval is one (input_required until a person decides, then completed or cancelled).
-- The row is written before the reply. id is task_ + 128 random bits; every look-up names
-- the workspace. status: working, input_required, completed, failed, cancelled; result and
-- error are JSON (the tools/call result, the JSON-RPC error) once terminal. decision_id:
-- the draft the task follows ('' for none). Rows go once expired (ttlMs after creation).
CREATE TABLE mcp_tasks (
  id             TEXT PRIMARY KEY,
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id),
  token_id       TEXT NOT NULL,
  tool           TEXT NOT NULL,
  decision_id    TEXT NOT NULL,
  status         TEXT NOT NULL,
  status_message TEXT NOT NULL,
  result         TEXT,
  error          TEXT,
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL,
  expires_at     INTEGER NOT NULL
);
CREATE INDEX mcp_tasks_by_expiry ON mcp_tasks(expires_at);
)sql"},
      {30, "MCP tasks run in the background (engines/tasks/task_runner.h)", R"sql(
-- A tool that supports tasks runs on an instance's task runner when the client declares
-- the tasks extension. The row keeps what a run needs on any instance: the call's
-- arguments (JSON) and the scopes of its token; while input_required, the input requests
-- not yet answered (JSON object) and the answers so far (JSON object), with the tool's
-- request state; instance_id names the instance running it ('' when none is: queued for
-- none, waiting for input, or terminal). A tasks/cancel anywhere sets status cancelled;
-- the running instance sees it (it polls its own rows by instance_id). Each instance
-- writes a heartbeat; the working tasks of an instance silent for over 30 s (or gone) are
-- failed.
ALTER TABLE mcp_tasks ADD COLUMN arguments TEXT NOT NULL DEFAULT '{}';
ALTER TABLE mcp_tasks ADD COLUMN scopes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mcp_tasks ADD COLUMN input_requests TEXT NOT NULL DEFAULT '{}';
ALTER TABLE mcp_tasks ADD COLUMN input_responses TEXT NOT NULL DEFAULT '{}';
ALTER TABLE mcp_tasks ADD COLUMN request_state TEXT NOT NULL DEFAULT '';
ALTER TABLE mcp_tasks ADD COLUMN instance_id TEXT NOT NULL DEFAULT '';
CREATE INDEX mcp_tasks_by_instance ON mcp_tasks(instance_id);
CREATE INDEX mcp_tasks_working ON mcp_tasks(instance_id) WHERE status = 'working';
CREATE TABLE mcp_task_instances (
  id           TEXT PRIMARY KEY,
  heartbeat_at INTEGER NOT NULL
);
CREATE INDEX mcp_task_instances_by_heartbeat ON mcp_task_instances(heartbeat_at);
)sql"},
      {31, "a proposed action's history from one index", R"sql(
-- decision.inspect of a proposed action lists its ledger entries (LedgerReader::
-- HistoryOfDecision): every entry carries the proposing decision's id, and this index holds
-- what the list shows, so the list reads no ledger row but those whose detail it shows
-- (docs/performance.md, "A proposed action's history").
CREATE INDEX ledger_by_decision ON ledger(workspace_id, decision_id, seq, event, occurred_at, id);
)sql"},
  };
  return kMigrations;
}

// SQLite's INTEGER is 64-bit, PostgreSQL's is 32-bit: every INTEGER becomes BIGINT.
// BLOB is BYTEA there. WITHOUT ROWID is a SQLite storage hint with no PostgreSQL meaning.
std::string PostgresMigrationSql(const Migration& m) {
  static const std::regex kInteger(R"(\bINTEGER\b)");
  std::string sql = std::regex_replace(m.sql, kInteger, "BIGINT");
  sql = std::regex_replace(sql, std::regex(R"(\bBLOB\b)"), "BYTEA");
  return std::regex_replace(sql, std::regex(R"( WITHOUT ROWID)"), "");
}

}  // namespace cortex
