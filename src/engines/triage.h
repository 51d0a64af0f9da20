// Triage: what deserves attention now, later or never. Every inbound message is triaged as
// it is ingested, in the same transaction: signals -> rules (or the default policy) -> a
// notification and a `triage` decision that records why.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "engines/rules.h"
#include "store/store.h"

namespace cortex {

// True for the episode kinds that are triaged (messages that came in).
bool IsInbound(const std::string& episode_kind);

// Triages the inbound episodes of one write transaction. Loads the workspace's rules and
// settings once; Finish() records rule hit counts.
class Triager {
 public:
  Triager(WriteTx& tx, const Clock& clock, std::string ws_id);

  // Triages `ep` (REQUIRES: IsInbound(ep.kind), not stored yet) and stores it with its
  // decision and notification, stamped with `world_version`: its signals are computed
  // against the episodes stored before it. `who` is its counterparty as this transaction
  // sees it (nullptr if it has none). Returns the notification.
  Result<Notification> Triage(const Episode& ep, const Entity* who,
                              const std::string& world_version);

  // Writes the accumulated rule hit counts. Call once, before commit.
  Status Finish();

 private:
  Status Load();

  WriteTx& tx_;
  const Clock& clock_;
  std::string ws_id_;
  bool loaded_ = false;
  std::string agent_version_;
  WorkspaceSettings settings_;
  std::vector<Rule> rules_;  // active triage rules, in evaluation order
  ConfidenceThresholds thresholds_;
  std::map<std::string, int64_t> hits_;  // rule id -> hits in this transaction
};

}  // namespace cortex
