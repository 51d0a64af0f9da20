// What action.communicate decides, as a pure function of the facts it read: the trust level
// for the counterparty (its own setting, its tags', the class default, under its tags'
// ceilings), then the action rules that match (each may cap the level, block the action or
// mark it urgent). Testable without a store (action_policy_test.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engines/actions/trust.h"
#include "engines/triage/rules.h"
#include "store/model.h"

namespace cortex {

struct ActionVerdict {
  EffectiveTrust trust;              // before the rules
  int level = 1;                     // after them: 0 refused, 1-2 pending, 3 executed
  std::vector<const Rule*> fired;    // the rules that matched, in evaluation order
  const Rule* blocked_by = nullptr;  // the first of them that blocks the action, if any
  bool urgent = false;

  // The action's first status: refused (level 0), executed (3) or pending.
  ActionStatus status() const;
};

// REQUIRES: `rules` are the workspace's active rules, sorted for evaluation
// (SortForEvaluation); those of another kind or action class are passed over.
// `situation.counterparty` is set. The verdict points into `rules`.
ActionVerdict DecideAction(const std::string& action_class,
                           const std::vector<TrustSetting>& trust_settings,
                           const TrustConfig& config, const std::vector<Rule>& rules,
                           const Situation& situation);

// The cap that rules put on (class x counterparty) whatever the message: the lowest
// max_level (0 for a block) among the active action rules of `action_class` whose only
// conditions are about the counterparty (tags, counterparties) and that match `who`.
// Earned trust never rises past it. REQUIRES: `rules` are the workspace's active rules.
std::optional<int> StandingRuleCap(const std::string& action_class, const std::vector<Rule>& rules,
                                   const Entity& who);

}  // namespace cortex
