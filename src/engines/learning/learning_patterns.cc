// The patterns the learner looks for in a history (fast, slow, silent, focus, hold), how
// each is measured over its scope, and how a rule that states one reads (docs/learning.md,
// "What it finds").
#include <algorithm>
#include <cctype>
#include <cmath>

#include "engines/learning/learning_parts.h"

namespace cortex {
namespace learning {

using nlohmann::json;

namespace {

const char* const kDayPlural[] = {"Mondays", "Tuesdays",  "Wednesdays", "Thursdays",
                                  "Fridays", "Saturdays", "Sundays"};

}  // namespace

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kFast:
      return "fast";
    case Kind::kSlow:
      return "slow";
    case Kind::kSilent:
      return "silent";
    case Kind::kFocus:
      return "focus";
    case Kind::kHold:
      return "hold";
  }
  return "";
}

std::optional<Kind> KindFromName(std::string_view s) {
  for (Kind k : {Kind::kFast, Kind::kSlow, Kind::kSilent, Kind::kFocus, Kind::kHold}) {
    if (s == KindName(k)) return k;
  }
  return std::nullopt;
}

TriageClass EffectOf(Kind k) {
  switch (k) {
    case Kind::kFast:
    case Kind::kFocus:
      return TriageClass::kInterruptNow;
    case Kind::kSlow:
      return TriageClass::kDailyDigest;
    case Kind::kSilent:
      return TriageClass::kHandleSilently;
    case Kind::kHold:
      return TriageClass::kSurfaceAtTransition;
  }
  return TriageClass::kDailyDigest;
}

// Whether a message goes with pattern `kind`. A focus pattern's messages came during a
// focus block (its scope says so).
bool Holds(Kind kind, const Observation& o, const LearningConfig& c) {
  switch (kind) {
    case Kind::kFast:
      return o.outcome == Outcome::kFast;
    case Kind::kSlow:
      return o.outcome == Outcome::kSlow;
    case Kind::kSilent:
      return !o.answered;
    case Kind::kFocus:
      return o.reply && o.block_end && *o.reply < *o.block_end &&
             *o.reply - o.msg->occurred_at <= c.focus_reply;
    case Kind::kHold:
      return o.reply && o.block_end && *o.reply >= *o.block_end &&
             *o.reply - *o.block_end <= c.fast_reply;
  }
  return false;
}

// With `ids`, also the (time, id) of each message for and against (for a rule's evidence;
// a pattern only being tried needs the counts).
Stats Measure(Kind kind, const Scope& scope, const History& h, TimePoint now,
              const LearningConfig& c, bool ids = false) {
  Stats s;
  for (const Observation& o : h.received) {
    if (!scope.Has(o)) continue;
    bool holds = Holds(kind, o, c);
    ++s.total_n;
    if (holds) {
      ++s.support_n;
      s.support_w += o.weight;
      if (ids) s.support_ids.emplace_back(o.msg->occurred_at, &o.msg->id);
    } else {
      s.contra_w += o.weight;
      if (ids) s.contra_ids.emplace_back(o.msg->occurred_at, &o.msg->id);
    }
  }
  if (kind == Kind::kSilent) {
    // Writing to them at all goes against "never written to".
    for (const MessageFact* m : h.sent) {
      ++s.sent_n;
      s.contra_w += Weight(m->occurred_at, now, c);
      if (ids) s.contra_ids.emplace_back(m->occurred_at, &m->id);
    }
  }
  return s;
}

std::string Label(const Stats& s, const ConfidenceThresholds& t) {
  Rule r;
  r.support = s.Support();
  r.contradictions = s.Contradictions();
  return ConfidenceLabel(r, t);
}

bool Qualifies(const Stats& s, const ConfidenceThresholds& t) {
  return Label(s, t) != "just_guessing";
}

std::vector<std::string> Newest(std::vector<std::pair<TimePoint, const std::string*>> ids) {
  auto newer = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second > *b.second;
  };
  size_t n = std::min(ids.size(), kMaxEvidence);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), newer);
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(*ids[i].second);
  return out;
}

std::string Slug(const std::string& name) {
  std::string out;
  for (char ch : name) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c)) {
      out += static_cast<char>(std::tolower(c));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.size() > 60) out.resize(60);
  return out.empty() ? "someone" : out;
}

std::string DaysText(unsigned mask, bool plural) {
  std::string out;
  std::vector<int> days;
  for (int d = 0; d < 7; ++d) {
    if (mask & (1u << d)) days.push_back(d);
  }
  for (size_t i = 0; i < days.size(); ++i) {
    if (i > 0) out += i + 1 == days.size() ? " and " : ", ";
    out += plural ? kDayPlural[days[i]] : kDayNames[days[i]];
  }
  return out;
}

std::string Of(int n, int total) {
  return (n == total && total > 2 ? "all " : "") + std::to_string(n) + " of " +
         std::to_string(total);
}

std::string Hours(std::chrono::minutes m) {
  if (m.count() % 60 != 0) return std::to_string(m.count()) + " minutes";
  int64_t h = m.count() / 60;
  return h == 1 ? "an hour" : std::to_string(h) + " hours";
}

// Fills name, summary, evidence and counts of `r` from `s`. `other` is the contrast: for a
// fast rule on some days or hours, the other days or hours; for a hold rule, the messages
// that came outside focus blocks.
void Describe(Rule& r, Kind kind, const Scope& scope, const Stats& s, const Stats* other,
              const Entity& who, const LearningConfig& c) {
  const unsigned mask = scope.weekdays;
  const Stats* other_days = other;
  std::string slug = Slug(who.name);
  r.name = std::string("learned-") + KindName(kind) + "-" + slug;
  for (int d = 0; d < 7; ++d) {
    if (mask & (1u << d)) r.name += std::string("-") + kDayNames[d];
  }
  if (scope.from) r.name += scope.Morning() ? "-mornings" : "-afternoons";
  switch (kind) {
    case Kind::kFast:
      if (scope.from) {
        bool am = scope.Morning();
        r.summary = "Interrupt for " + who.name + (am ? " in the mornings" : " in the afternoons") +
                    ": you answered " + Of(s.support_n, s.total_n) +
                    (am ? " before noon" : " after noon") + " within " + Hours(c.fast_reply);
        if (other != nullptr) {
          r.summary += " (" + std::to_string(other->support_n) + " of " +
                       std::to_string(other->total_n) +
                       (am ? " in the afternoon)" : " in the morning)");
        }
        r.summary += ".";
      } else if (mask == 0) {
        r.summary = "Interrupt for " + who.name + ": you answered " + Of(s.support_n, s.total_n) +
                    " of their messages within " + Hours(c.fast_reply) + ".";
      } else {
        r.summary = "Reply to " + who.name + " quickly on " + DaysText(mask, true) +
                    ": you answered " + Of(s.support_n, s.total_n) + " within " +
                    Hours(c.fast_reply);
        if (other_days != nullptr) {
          r.summary += " (" + std::to_string(other_days->support_n) + " of " +
                       std::to_string(other_days->total_n) + " on other days)";
        }
        r.summary += ".";
      }
      break;
    case Kind::kSlow:
      r.summary = "Put " + who.name + " in the daily digest: " + Of(s.support_n, s.total_n) +
                  " of their messages waited more than a day for your answer, or got none.";
      break;
    case Kind::kSilent:
      r.summary = "Record " + who.name +
                  " silently, like a newsletter: " + std::to_string(s.total_n) +
                  " messages, none answered, and you never wrote " + "to them.";
      break;
    case Kind::kFocus:
      r.summary = "Interrupt for " + who.name + " even during focus blocks: you answered " +
                  Of(s.support_n, s.total_n) +
                  " of their messages that came during a focus block within " +
                  Hours(c.focus_reply) + ", before it ended.";
      break;
    case Kind::kHold:
      r.summary = "Hold " + who.name + "'s messages until your focus block ends: you answered " +
                  Of(s.support_n, s.total_n) +
                  " that came during a focus block only after it ended, within " +
                  Hours(c.fast_reply);
      if (other != nullptr) {
        r.summary += " (outside focus blocks, " + std::to_string(other->support_n) + " of " +
                     std::to_string(other->total_n) + " within " + Hours(c.fast_reply) + ")";
      }
      r.summary += ".";
      break;
  }
  r.evidence = Newest(s.support_ids);
  r.contradiction_evidence = Newest(s.contra_ids);
  r.support = s.Support();
  r.contradictions = s.Contradictions();
}

Rule NewLearned(Kind kind, const Scope& scope, const Entity& who) {
  Rule r;
  r.origin = RuleOrigin::kLearned;
  r.status = RuleStatus::kProposed;
  r.active = false;
  r.kind = RuleKind::kTriage;
  r.pattern = std::string(KindName(kind)) + ":" + who.id;
  r.when.counterparties = {who.id};
  r.when.weekdays = scope.weekdays;
  r.when.from_minute = scope.from;
  r.when.until_minute = scope.until;
  if (scope.focus > 0) r.when.signals = {kFocusSignal};
  r.then.triage_class = EffectOf(kind);
  return r;
}

// A finding of `kind` over `scope`, described with `other` as its contrast.
Finding Found(Kind kind, const Scope& scope, const History& h, const Stats* other,
              const Entity& who, TimePoint now, const LearningConfig& c) {
  Finding f{NewLearned(kind, scope, who)};
  Describe(f.rule, kind, scope, Measure(kind, scope, h, now, c, true), other, who, c);
  return f;
}

// Whether the messages of `rest` show that the scope matters: at least 2, at most
// other_days_max_ratio of them fast.
bool Contrasts(const Stats& rest, const LearningConfig& c) {
  return rest.total_n >= 2 &&
         rest.support_n <= c.other_days_max_ratio * static_cast<double>(rest.total_n);
}

// The fast-reply pattern of one counterparty: on every day, or on the weekdays where it
// holds while the other days do not.
// holds while the other days do not; else in the mornings or the afternoons, likewise.
std::optional<Finding> FindFast(const History& h, const Entity& who, TimePoint now,
                                const LearningConfig& c) {
  Stats all = Measure(Kind::kFast, Scope{}, h, now, c);
  if (Qualifies(all, c.thresholds)) return Found(Kind::kFast, Scope{}, h, nullptr, who, now, c);
  Scope days;
  for (int d = 0; d < 7; ++d) {
    Scope one;
    one.weekdays = 1u << d;
    Stats day = Measure(Kind::kFast, one, h, now, c);
    if (day.total_n >= 2 &&
        day.support_n >= c.thresholds.pretty_min_ratio * static_cast<double>(day.total_n)) {
      days.weekdays |= 1u << d;
    }
  }
  if (days.weekdays != 0 && days.weekdays != 0x7f) {
    Stats on = Measure(Kind::kFast, days, h, now, c);
    Stats off = Measure(Kind::kFast, days.Rest(), h, now, c);
    // Without the contrast, nothing says the day matters.
    if (Qualifies(on, c.thresholds) && Contrasts(off, c)) {
      return Found(Kind::kFast, days, h, &off, who, now, c);
    }
  }
  // Not by day: by the half of the day (local time, split at noon).
  for (Scope half : {Scope::Hours(0, kNoon), Scope::Hours(kNoon, 0)}) {
    Stats on = Measure(Kind::kFast, half, h, now, c);
    if (!Qualifies(on, c.thresholds)) continue;
    Stats off = Measure(Kind::kFast, half.Rest(), h, now, c);
    if (Contrasts(off, c)) return Found(Kind::kFast, half, h, &off, who, now, c);
  }
  return std::nullopt;
}

// What the person does with the counterparty's messages that come during focus blocks:
// answers them before the block ends (focus: interrupt even then; looked for only when no
// fast rule holds: one that does interrupts already, and a weekday's or an hour's fast
// messages falling in blocks are no sign that the block matters), or only after it ends
// though they answer them fast otherwise (hold: surface at the transition).
std::optional<Finding> FindFocus(const History& h, const Entity& who, bool any_fast, TimePoint now,
                                 const LearningConfig& c) {
  Scope in;
  in.focus = 1;
  if (!any_fast && Qualifies(Measure(Kind::kFocus, in, h, now, c), c.thresholds)) {
    return Found(Kind::kFocus, in, h, nullptr, who, now, c);
  }
  if (!Qualifies(Measure(Kind::kHold, in, h, now, c), c.thresholds)) return std::nullopt;
  Scope out;
  out.focus = -1;
  Stats outside = Measure(Kind::kFast, out, h, now, c);
  if (outside.total_n < 2 ||
      outside.support_n < c.thresholds.pretty_min_ratio * static_cast<double>(outside.total_n)) {
    return std::nullopt;  // they do not answer them fast otherwise: nothing to hold back
  }
  return Found(Kind::kHold, in, h, &outside, who, now, c);
}

std::optional<Finding> FindQuiet(const History& h, const Entity& who, TimePoint now,
                                 const LearningConfig& c) {
  for (Kind kind : {Kind::kSilent, Kind::kSlow}) {
    Stats s = Measure(kind, Scope{}, h, now, c);
    if (!Qualifies(s, c.thresholds)) continue;
    return Found(kind, Scope{}, h, nullptr, who, now, c);
  }
  return std::nullopt;
}

std::string EntityOfPattern(const std::string& pattern) {
  size_t colon = pattern.find(':');
  return colon == std::string::npos ? "" : pattern.substr(colon + 1);
}

std::optional<std::pair<Kind, std::string>> SplitPattern(const std::string& pattern) {
  size_t colon = pattern.find(':');
  if (colon == std::string::npos) return std::nullopt;
  auto kind = KindFromName(std::string_view(pattern).substr(0, colon));
  if (!kind) return std::nullopt;
  return std::make_pair(*kind, pattern.substr(colon + 1));
}

json Backtest(const Rule& r, const History& h,
              const std::unordered_map<std::string, TriageClass>& got, TimePoint now,
              const LearningConfig& c) {
  TimePoint from = now - std::chrono::days(c.backtest_days);
  int messages = 0, changed = 0;
  json from_class = json::object();
  Scope scope = Scope::Of(r);
  for (const Observation& o : h.received) {
    if (o.msg->occurred_at < from || !scope.Has(o)) continue;
    ++messages;
    auto it = got.find(o.msg->id);
    if (it == got.end() || it->second == *r.then.triage_class) continue;
    ++changed;
    std::string k(Name(it->second));
    from_class[k] = from_class.value(k, 0) + 1;
  }
  return {{"days", c.backtest_days},
          {"messages", messages},
          {"would_change", changed},
          {"changed_from", from_class},
          {"to", Name(*r.then.triage_class)}};
}

std::vector<Finding> FindIn(const std::unordered_map<std::string, History>& histories,
                            const std::map<std::string, Entity>& entities, TimePoint now,
                            const LearningConfig& config) {
  std::vector<Finding> out;
  for (const auto& [entity_id, h] : histories) {
    auto who = entities.find(entity_id);
    if (who == entities.end()) continue;
    auto fast = FindFast(h, who->second, now, config);
    bool any_fast = fast.has_value();
    if (fast) out.push_back(std::move(*fast));
    if (auto f = FindQuiet(h, who->second, now, config)) out.push_back(std::move(*f));
    if (auto f = FindFocus(h, who->second, any_fast, now, config)) out.push_back(std::move(*f));
  }
  std::sort(out.begin(), out.end(),
            [](const Finding& a, const Finding& b) { return a.rule.pattern < b.rule.pattern; });
  return out;
}

bool ReevaluateWith(Rule& r, const std::unordered_map<std::string, History>& histories,
                    const std::map<std::string, Entity>& entities, TimePoint now,
                    const LearningConfig& c) {
  auto split = SplitPattern(r.pattern);
  if (!split) return false;
  auto who = entities.find(split->second);
  if (who == entities.end()) return false;
  static const History kNone;
  auto it = histories.find(split->second);
  const History& h = it == histories.end() ? kNone : it->second;
  Scope scope = Scope::Of(r);
  if (split->first == Kind::kFocus || split->first == Kind::kHold) scope.focus = 1;
  Stats s = Measure(split->first, scope, h, now, c, true);
  std::string name = r.name;
  if (split->first == Kind::kFast && (scope.weekdays != 0 || scope.from)) {
    Stats off = Measure(Kind::kFast, scope.Rest(), h, now, c);
    Describe(r, split->first, scope, s, &off, who->second, c);
  } else if (split->first == Kind::kHold) {
    Scope out;
    out.focus = -1;
    Stats outside = Measure(Kind::kFast, out, h, now, c);
    Describe(r, split->first, scope, s, &outside, who->second, c);
  } else {
    Describe(r, split->first, scope, s, nullptr, who->second, c);
  }
  r.name = name;  // a rule keeps the name it was proposed (or edited) under
  return true;
}

}  // namespace learning

std::vector<Finding> FindPatterns(const std::vector<MessageFact>& messages,
                                  const std::map<std::string, Entity>& entities,
                                  const WorkspaceSettings& settings, TimePoint now,
                                  const LearningConfig& config, const std::vector<Span>& blocks) {
  LearnMemory::Impl scratch;
  return learning::FindIn(
      learning::Observe(messages, learning::SortedBlocks(blocks), settings, now, config, &scratch),
      entities, now, config);
}

bool Reevaluate(Rule& r, const std::vector<MessageFact>& messages,
                const std::map<std::string, Entity>& entities, const WorkspaceSettings& settings,
                TimePoint now, const LearningConfig& config, const std::vector<Span>& blocks) {
  LearnMemory::Impl scratch;
  return learning::ReevaluateWith(
      r,
      learning::Observe(messages, learning::SortedBlocks(blocks), settings, now, config, &scratch),
      entities, now, config);
}

}  // namespace cortex
