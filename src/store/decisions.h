// The decisions area: everything Cortex decided, with its evidence.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

class DecisionsReader {
 public:
  explicit DecisionsReader(TxState& s) : s_(s) {}
  Result<Decision> Get(const std::string& ws, const std::string& decision_id);
  // Newest first (by id), at most `limit`.
  Result<std::vector<Decision>> List(const std::string& ws, const DecisionFilter& filter,
                                     int limit);
  // The newest triage decisions about `entity_id` with id >= `min_id`, newest first, at
  // most `limit`.
  Result<std::vector<TriageLink>> RecentTriage(const std::string& ws, const std::string& entity_id,
                                               const std::string& min_id, int limit);

 protected:
  TxState& s_;

 private:
  // Appends the newest `limit` decisions that pass `f`, of class `cls` if it is set.
  Status Append(const std::string& ws, const DecisionFilter& f,
                const std::optional<DecisionClass>& cls, int limit, std::vector<Decision>& out);
};

class DecisionsWriter : public DecisionsReader {
 public:
  using DecisionsReader::DecisionsReader;
  Status Insert(const Decision& d);
  // Moves the status of proposal `decision_id` (an action_proposed decision).
  Status SetStatus(const std::string& ws, const std::string& decision_id, DecisionStatus status);
};

inline DecisionsReader ReadTx::decisions() const { return DecisionsReader(s_); }
inline DecisionsWriter WriteTx::decisions() const { return DecisionsWriter(s_); }

}  // namespace cortex
