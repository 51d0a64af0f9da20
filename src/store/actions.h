// The actions area: one row per action, holding its current state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

class ActionsReader {
 public:
  explicit ActionsReader(TxState& s) : s_(s) {}
  Result<Action> Get(const std::string& ws, const std::string& action_id);
  Result<Action> FindByDecision(const std::string& ws, const std::string& decision_id);
  // Pending actions of every workspace whose due time is at or before `t`, soonest first.
  Result<std::vector<Action>> Due(TimePoint t, int limit);

 protected:
  TxState& s_;
};

class ActionsWriter : public ActionsReader {
 public:
  using ActionsReader::ActionsReader;
  Status Insert(const Action& a);
  // Moves action `id` from status `from` to `to` (clearing its due time, and replacing its
  // draft if `draft` is given). Conflict if it is not in status `from`: this is what makes
  // concurrent approvals execute once. Internal if kActionMoves has no such move (a bug).
  Status Transition(const std::string& ws, const std::string& id, ActionStatus from,
                    ActionStatus to, const std::optional<std::string>& draft, TimePoint at);
};

inline ActionsReader ReadTx::actions() const { return ActionsReader(s_); }
inline ActionsWriter WriteTx::actions() const { return ActionsWriter(s_); }

}  // namespace cortex
