// The action ledger: append-only, hash-chained per workspace (docs/ledger.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "store/store.h"

namespace cortex {

// Appends an entry for `action_id` to the workspace's chain inside `tx` and returns its id:
// `id` if given (a decision inserted before the entry can name it), else a new one.
// `provenance` is copied in as given (decision-time facts; reads need nothing else).
Result<std::string> AppendLedgerEntry(WriteTx& tx, const Clock& clock, const std::string& ws,
                                      const std::string& action_id, const std::string& decision_id,
                                      LedgerEvent event, const nlohmann::json& provenance,
                                      const nlohmann::json& detail, std::string id = {});

// The hash of an entry: SHA-256 over prev_hash and the entry's canonical JSON.
std::string LedgerHash(const LedgerEntry& e);

struct LedgerCheck {
  int64_t entries = 0;
  bool ok = true;
  std::string problem;  // the first entry that was edited, deleted or reordered, and how
};

// Walks the workspace's chain from the first entry and recomputes every link.
Result<LedgerCheck> VerifyLedger(Store& store, const std::string& ws);

}  // namespace cortex
