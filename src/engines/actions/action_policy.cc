#include "engines/actions/action_policy.h"

#include <algorithm>

namespace cortex {

ActionStatus ActionVerdict::status() const {
  if (level == 0) return ActionStatus::kRefused;
  return level == 3 ? ActionStatus::kExecuted : ActionStatus::kPending;
}

ActionVerdict DecideAction(const std::string& action_class,
                           const std::vector<TrustSetting>& trust_settings,
                           const TrustConfig& config, const std::vector<Rule>& rules,
                           const Situation& situation) {
  ActionVerdict v;
  v.trust = ResolveTrust(trust_settings, action_class, *situation.counterparty, config);
  v.level = v.trust.level;
  for (const Rule& r : rules) {
    if (r.kind != RuleKind::kAction || r.action_class != action_class) continue;
    if (!RuleMatches(r, situation)) continue;
    v.fired.push_back(&r);
    if (r.then.max_level) v.level = std::min(v.level, *r.then.max_level);
    if (r.then.block && v.blocked_by == nullptr) v.blocked_by = &r;
    v.urgent |= r.then.urgent;
  }
  if (v.blocked_by != nullptr) v.level = 0;
  return v;
}

std::optional<int> StandingRuleCap(const std::string& action_class, const std::vector<Rule>& rules,
                                   const Entity& who) {
  std::optional<int> cap;
  for (const Rule& r : rules) {
    if (r.kind != RuleKind::kAction || r.action_class != action_class || !r.active) continue;
    const RuleConditions& c = r.when;
    bool about_counterparty_only = c.signals.empty() && c.not_signals.empty() &&
                                   c.channels.empty() && c.words.empty() && !c.from_minute &&
                                   !c.until_minute && c.weekdays == 0;
    if (!about_counterparty_only) continue;
    Situation s;
    s.counterparty = &who;
    if (!RuleMatches(r, s)) continue;
    std::optional<int> level = r.then.block ? std::optional<int>(0) : r.then.max_level;
    if (level && (!cap || *level < *cap)) cap = level;
  }
  return cap;
}

}  // namespace cortex
