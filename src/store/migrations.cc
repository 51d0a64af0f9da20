#include "store/migrations.h"

namespace cortex {

// Times are stored as integer milliseconds since the Unix epoch (UTC).
const std::vector<Migration>& SqliteMigrations() {
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
  };
  return kMigrations;
}

}  // namespace cortex
