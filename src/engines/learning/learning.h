// The learner: rules found in a workspace's own history (who the person answers fast, and
// on which weekdays or half of the day; whom they leave for days; senders they never write
// to; whom they answer during focus blocks, and whom they leave until the block ends),
// proposed to
// the person with their evidence, contradictions, confidence and a backtest. A person
// accepts (the rule becomes active, triage uses it from the next message) or rejects them.
// The method, thresholds and half-life: docs/learning.md.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "engines/triage/rules.h"
#include "store/episodes.h"
#include "store/model.h"
#include "store/store.h"

namespace cortex {

struct LearningConfig {
  std::chrono::minutes fast_reply{180};  // answered within this: "fast"
  std::chrono::hours slow_reply{24};     // not answered within this: "slow"
  // A message during a focus block answered within this, before the block ended: the
  // person let it interrupt them ("focus").
  std::chrono::minutes focus_reply{30};
  double half_life_days = 90;  // an episode this old counts half
  int lookback_days = 365;     // older episodes are not read
  int backtest_days = 30;
  // A weekday rule needs the other days to be answered fast at most this often.
  double other_days_max_ratio = 0.25;
  // A strong_pattern proposal is put in force at once, without the person ([learning]
  // auto_accept_strong). Off by default.
  bool auto_accept_strong = false;
  ConfidenceThresholds thresholds;
};

// A calendar (focus) block: (start, end).
using Span = std::pair<TimePoint, TimePoint>;

// What one pass found for one pattern, before it is compared with the stored rules.
struct Finding {
  Rule rule;  // origin learned, status proposed, pattern set, no id yet
};

// The pure part of a pass: the patterns `messages` support, as of `now`. `entities` names
// the counterparties (by id); those missing are skipped; `blocks` are the workspace's focus
// blocks. Deterministic: sorted by pattern.
std::vector<Finding> FindPatterns(const std::vector<MessageFact>& messages,
                                  const std::map<std::string, Entity>& entities,
                                  const WorkspaceSettings& settings, TimePoint now,
                                  const LearningConfig& config,
                                  const std::vector<Span>& blocks = {});

// Recomputes evidence, contradictions, support and summary of a learned rule `r` (its
// pattern and conditions) from `messages`. False iff its pattern names no counterparty in
// `entities`.
bool Reevaluate(Rule& r, const std::vector<MessageFact>& messages,
                const std::map<std::string, Entity>& entities, const WorkspaceSettings& settings,
                TimePoint now, const LearningConfig& config, const std::vector<Span>& blocks = {});

struct LearnReport {
  int proposed = 0;           // new proposals (rule_proposed decisions)
  int updated = 0;            // stored rules whose evidence or definition changed
  int retired = 0;            // proposals or active rules no longer supported (rule_retired)
  std::string agent_version;  // after the pass
  // Patterns found but not proposed, because a person's active rule already does what they
  // would: "<summary> (your rule '<name>')".
  std::vector<std::string> covered;
};

// What the learner keeps of one workspace between passes while serving: every message of
// the lookback it has read, by counterparty, with each received message's answer. A pass
// given it reads only the episodes stamped after the last it read (by world_version),
// checks their number against the workspace's episode count, and re-judges only the
// counterparties they touch; anything else (a first pass, a count that does not add up,
// other settings, a clock that went back) reads the whole history again. What a pass finds
// is the same either way (docs/learning.md, "Incremental passes"). One per workspace, used
// by one pass at a time, while no batch lands in the workspace (the serve loop holds the
// workspace's pass).
class LearnMemory {
 public:
  LearnMemory();
  ~LearnMemory();
  LearnMemory(LearnMemory&&) noexcept;
  LearnMemory& operator=(LearnMemory&&) noexcept;
  // How the last pass read: true if incrementally (for tests and the bench).
  bool last_incremental() const;
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// One learning pass over workspace `ws_id`, in one write transaction. With `memory`, the
// pass reads only what changed since the pass that last used it.
Result<LearnReport> Learn(Store& store, const Clock& clock, const std::string& ws_id,
                          const LearningConfig& config, LearnMemory* memory = nullptr);

// A pass's phases, in order, for a caller that follows one (the MCP tool rule.learn).
enum class LearnPhase { kReading, kWriting, kDone };
inline constexpr int kLearnPhases = 3;
// Told each phase as it begins (kDone once the pass has committed); false stops the pass
// before it writes (Learn then answers Cancelled, nothing written). Asked
// again if the pass starts over.
using LearnObserver = std::function<bool(LearnPhase)>;
Result<LearnReport> Learn(Store& store, const Clock& clock, const std::string& ws_id,
                          const LearningConfig& config, LearnMemory* memory,
                          const LearnObserver& observe);

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
