// The decisions area: everything Cortex decided, with its evidence.
#pragma once

#include <optional>
#include <string>
#include <utility>
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
  // The rule_fired decisions triage made (a rule that decided a message) with id >=
  // `min_id`: (rule id, the message's episode id), one range of decisions_by_class.
  Result<std::vector<std::pair<std::string, std::string>>> FiredTriageRules(
      const std::string& ws, const std::string& min_id);

  // One range of an index, newest first: the decisions of a class (any, if none), and of
  // one triage class if set. decisions_by_class is (workspace_id, class, triage_class, id),
  // with triage_class '' for every class but triage (migration 18).
  struct Range {
    std::optional<DecisionClass> cls;
    std::optional<TriageClass> triage_class;
  };

 protected:
  TxState& s_;

 private:
  // Appends the newest `limit` decisions of range `r` that pass `f`.
  Status Append(const std::string& ws, const DecisionFilter& f, const Range& r, int limit,
                std::vector<Decision>& out);
  // The same, their ids only (read from the index alone where it can).
  Status AppendIds(const std::string& ws, const DecisionFilter& f, const Range& r, int limit,
                   std::vector<std::string>& out);
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
