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

// What an action.communicate call with an idempotency key got the first time.
struct IdempotentCall {
  std::string args_hash;    // SHA-256 of its arguments
  std::string result_json;  // its result (engines/actions/idempotency.h)
};

class ActionsReader {
 public:
  explicit ActionsReader(TxState& s) : s_(s) {}
  Result<Action> Get(const std::string& ws, const std::string& action_id);
  Result<Action> FindByDecision(const std::string& ws, const std::string& decision_id);
  // Pending actions of every workspace whose due time is at or before `t`, soonest first.
  Result<std::vector<Action>> Due(TimePoint t, int limit);
  // The call `token_id` made with idempotency key `key`, if it is remembered.
  Result<std::optional<IdempotentCall>> FindIdempotent(const std::string& ws,
                                                       const std::string& token_id,
                                                       const std::string& key);

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
  // Remembers `call` for (`ws`, `token_id`, `key`): false if a call with that key was
  // remembered first (a concurrent one, on PostgreSQL).
  Result<bool> RememberIdempotent(const std::string& ws, const std::string& token_id,
                                  const std::string& key, const IdempotentCall& call, TimePoint at);
  // Forgets the keys remembered before `t`.
  Status DeleteIdempotentBefore(TimePoint t);
};

inline ActionsReader ReadTx::actions() const { return ActionsReader(s_); }
inline ActionsWriter WriteTx::actions() const { return ActionsWriter(s_); }

}  // namespace cortex
