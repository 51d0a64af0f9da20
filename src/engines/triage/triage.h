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
#include "engines/triage/rules.h"
#include "store/store.h"

namespace cortex {

// True for the episode kinds that are triaged (messages that came in).
bool IsInbound(const std::string& episode_kind);

// Triages the inbound episodes of one write transaction. Loads the workspace's rules and
// settings once. Episodes are stored as they are triaged (the next one's signals read them);
// their decisions and notifications, which no triage reads, are held (up to a few thousand)
// and stored together in counterparty order, so that a big batch writes each counterparty's
// index pages once per flush instead of once per message (docs/performance.md).
class Triager {
 public:
  Triager(WriteTx& tx, const Clock& clock, std::string ws_id);

  // Triages `ep` (REQUIRES: IsInbound(ep.kind), not stored yet) and stores it, stamped
  // with `world_version`: its signals are computed against the episodes stored before it.
  // `who` is its counterparty as this transaction sees it (nullptr if it has none). Its
  // decision and notification are held, and stored by Finish() or once enough are held.
  Status Triage(const Episode& ep, const Entity* who, const std::string& world_version);

  // Stores the held decisions and notifications and the rule hit counts. Call once, before
  // commit.
  Status Finish();

 private:
  Status Load();
  Status StoreOutcomes();  // the held decisions and notifications

  WriteTx& tx_;
  const Clock& clock_;
  std::string ws_id_;
  bool loaded_ = false;
  std::string agent_version_;
  WorkspaceSettings settings_;
  std::vector<Rule> rules_;  // active triage rules, in evaluation order
  ConfidenceThresholds thresholds_;
  std::map<std::string, int64_t> hits_;  // rule id -> hits in this transaction
  struct Outcome {
    Decision decision;
    Notification notification;
    std::optional<Decision> fired;  // the rule_fired decision of the rule that decided it
  };
  std::vector<Outcome> outcomes_;  // triaged, not stored yet
};

}  // namespace cortex
