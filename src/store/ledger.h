// The ledger area: the append-only, hash-chained action ledger (docs/ledger.md), and its
// anchor on the workspace row. Hashing is the ledger engine's (engines/actions/ledger.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

class LedgerReader {
 public:
  explicit LedgerReader(TxState& s) : s_(s) {}
  // The chain's anchor kept on the workspace row: the last seq and hash appended.
  Result<std::pair<int64_t, std::string>> Anchor(const std::string& ws);
  // Entries of `ws` with seq > after_seq, in seq order, at most `limit`.
  Result<std::vector<LedgerEntry>> List(const std::string& ws, int64_t after_seq, int limit);
  // The entries of one action, in seq order.
  Result<std::vector<LedgerEntry>> ListForAction(const std::string& ws,
                                                 const std::string& action_id);
  // The life of the action that `decision_id` proposed, in seq order, as decision.inspect
  // shows it: each entry's id, event, time and detail (JSON text; empty for the proposal,
  // whose detail names no actor). No hashes, nothing parsed. Empty if the decision
  // proposed no action.
  struct HistoryEntry {
    std::string id;
    LedgerEvent event;
    TimePoint occurred_at;
    std::string detail;
  };
  Result<std::vector<HistoryEntry>> HistoryOfDecision(const std::string& ws,
                                                      const std::string& decision_id);
  // The provenance (JSON text) of the entry that proposed (or refused) `decision_id`'s
  // action. NotFound if it proposed none.
  Result<std::string> ProposalProvenance(const std::string& ws, const std::string& decision_id);

 protected:
  TxState& s_;
};

class LedgerWriter : public LedgerReader {
 public:
  using LedgerReader::LedgerReader;
  // Inserts the entry, with its provenance and detail given as JSON text (the ledger engine
  // has written them to hash the entry; e.provenance and e.detail are not read), and moves
  // the workspace's anchor to it.
  // REQUIRES: e.seq, e.prev_hash and e.hash computed by the ledger engine.
  Status Append(const LedgerEntry& e, const std::string& provenance_json,
                const std::string& detail_json);
};

inline LedgerReader ReadTx::ledger() const { return LedgerReader(s_); }
inline LedgerWriter WriteTx::ledger() const { return LedgerWriter(s_); }

}  // namespace cortex
