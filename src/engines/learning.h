// The learner: rules found in a workspace's own history (who the person answers fast, and
// on which weekdays; whom they leave for days; senders they never write to), proposed to
// the person with their evidence, contradictions, confidence and a backtest. A person
// accepts (the rule becomes active, triage uses it from the next message) or rejects them.
// The method, thresholds and half-life: docs/learning.md.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "engines/rules.h"
#include "store/episodes.h"
#include "store/model.h"
#include "store/store.h"

namespace cortex {

struct LearningConfig {
  std::chrono::minutes fast_reply{180};  // answered within this: "fast"
  std::chrono::hours slow_reply{24};     // not answered within this: "slow"
  double half_life_days = 90;            // an episode this old counts half
  int lookback_days = 365;               // older episodes are not read
  int backtest_days = 30;
  // A weekday rule needs the other days to be answered fast at most this often.
  double other_days_max_ratio = 0.25;
  // A strong_pattern proposal is put in force at once, without the person ([learning]
  // auto_accept_strong). Off by default.
  bool auto_accept_strong = false;
  ConfidenceThresholds thresholds;
};

// What one pass found for one pattern, before it is compared with the stored rules.
struct Finding {
  Rule rule;  // origin learned, status proposed, pattern set, no id yet
};

// The pure part of a pass: the patterns `messages` support, as of `now`. `entities` names
// the counterparties (by id); those missing are skipped. Deterministic: sorted by pattern.
std::vector<Finding> FindPatterns(const std::vector<MessageFact>& messages,
                                  const std::map<std::string, Entity>& entities,
                                  const WorkspaceSettings& settings, TimePoint now,
                                  const LearningConfig& config);

// Recomputes evidence, contradictions, support and summary of a learned rule `r` (its
// pattern and conditions) from `messages`. False iff its pattern names no counterparty in
// `entities`.
bool Reevaluate(Rule& r, const std::vector<MessageFact>& messages,
                const std::map<std::string, Entity>& entities, const WorkspaceSettings& settings,
                TimePoint now, const LearningConfig& config);

struct LearnReport {
  int proposed = 0;           // new proposals (rule_proposed decisions)
  int updated = 0;            // stored rules whose evidence or definition changed
  int retired = 0;            // proposals or active rules no longer supported (rule_retired)
  std::string agent_version;  // after the pass
};

// One learning pass over workspace `ws_id`, in one write transaction.
Result<LearnReport> Learn(Store& store, const Clock& clock, const std::string& ws_id,
                          const LearningConfig& config);

// A person accepts a learned rule (proposed or rejected): it becomes active, and the
// workspace's agent_version moves. NotFound for no such rule; InvalidArgument for a
// person's rule; Conflict if it is already active or retired.
Result<Rule> AcceptRule(Store& store, const Clock& clock, const std::string& ws_id,
                        const std::string& rule_id);

// A person rejects a learned rule (proposed or active): it is not proposed again unless its
// support at least doubles. Moves agent_version if it was active. Errors as AcceptRule.
Result<Rule> RejectRule(Store& store, const Clock& clock, const std::string& ws_id,
                        const std::string& rule_id);

// The rule's `when` as in the rules language (docs/rules.md), e.g.
// {"counterparty": ["entity_..."], "weekdays": ["tue"]}.
nlohmann::json RuleWhenJson(const Rule& r);

}  // namespace cortex
