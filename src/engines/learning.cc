#include "engines/learning.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/ids.h"
#include "core/json_text.h"
#include "core/time.h"
#include "engines/signals.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/rules.h"
#include "store/workspaces.h"

namespace cortex {
namespace {

using nlohmann::json;

// Evidence and contradictions kept per rule: the newest this many (triage copies a rule's
// evidence into every decision it drives).
constexpr size_t kMaxEvidence = 50;

const char* const kDayNames[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
const char* const kDayPlural[] = {"Mondays", "Tuesdays",  "Wednesdays", "Thursdays",
                                  "Fridays", "Saturdays", "Sundays"};

enum class Outcome { kFast, kMedium, kSlow };

// One received message, judged by when (and whether) the person answered it.
struct Observation {
  const MessageFact* msg;
  Outcome outcome;
  bool answered;
  double weight;                       // 0.5 ^ (age / half-life)
  int weekday;                         // local, 0 = Monday
  int minute;                          // local minute of the day
  std::optional<TimePoint> reply;      // the person's answer
  std::optional<TimePoint> block_end;  // the focus block active at its time, if any: its end
};

// The longest calendar block looked back for, as triage's active_focus_block signal does.
constexpr auto kMaxBlockLength = std::chrono::days(14);

// The workspace's calendar (focus) blocks of the lookback that still stand, by start: the
// block active at a time is found by binary search, as triage's signal finds it (of the
// blocks begun up to kMaxBlockLength before, those that end after it, the latest end).
struct Blocks {
  std::vector<std::pair<TimePoint, TimePoint>> spans;  // (start, end), by start

  std::optional<TimePoint> EndAt(TimePoint t) const {
    auto it = std::upper_bound(spans.begin(), spans.end(), t,
                               [](TimePoint v, const auto& b) { return v < b.first; });
    std::optional<TimePoint> end;
    while (it != spans.begin()) {
      --it;
      if (it->first <= t - kMaxBlockLength) break;
      if (it->second > t && (!end || it->second > *end)) end = it->second;
    }
    return end;
  }
};

struct History {
  std::vector<Observation> received;     // judged (not pending), oldest first
  std::vector<const MessageFact*> sent;  // every message the person sent them
};

double Weight(TimePoint t, TimePoint now, const LearningConfig& c) {
  double age_days = std::chrono::duration<double>(now - t).count() / 86400.0;
  if (age_days < 0) age_days = 0;
  return std::pow(0.5, age_days / c.half_life_days);
}

// A received message and the person's answer to it: the first message sent to the same
// counterparty after it, in the same thread (any thread if it has none). Whether it is
// fast, slow or pending depends on the time of the pass, so that is judged per pass.
struct Answered {
  const MessageFact* msg;
  std::optional<TimePoint> reply;
  int weekday;  // local, 0 = Monday
  int minute;   // local minute of the day
};

// A message as the memory keeps it: its local weekday and time of day are worked out once.
struct Message {
  MessageFact fact;
  int weekday;  // local, 0 = Monday
  int minute;   // local minute of the day
};

// One counterparty's messages, as read, and (once judged) their answers.
struct Counterparty {
  std::vector<Message> messages;  // as read, in no order until judged
  bool judged = false;
  std::vector<Answered> received;        // oldest first
  std::vector<const MessageFact*> sent;  // oldest first
};

// Sorts one counterparty's messages and finds each received message's answer.
void Judge(Counterparty& cp) {
  std::sort(cp.messages.begin(), cp.messages.end(), [](const Message& a, const Message& b) {
    return std::tie(a.fact.occurred_at, a.fact.id) < std::tie(b.fact.occurred_at, b.fact.id);
  });
  // thread -> times of sent messages, ascending; "any" for every thread.
  std::unordered_map<std::string_view, std::vector<TimePoint>> by_thread;
  std::vector<TimePoint> any;
  cp.sent.clear();
  cp.received.clear();
  for (const Message& each : cp.messages) {
    const MessageFact& m = each.fact;
    if (!m.sent) continue;
    any.push_back(m.occurred_at);
    if (!m.thread.empty()) by_thread[m.thread].push_back(m.occurred_at);
    cp.sent.push_back(&m);
  }
  static const std::vector<TimePoint> kNone;
  for (const Message& each : cp.messages) {
    const MessageFact& m = each.fact;
    if (m.sent) continue;
    const std::vector<TimePoint>* times = &any;
    if (!m.thread.empty()) {
      auto it = by_thread.find(m.thread);
      times = it == by_thread.end() ? &kNone : &it->second;
    }
    std::optional<TimePoint> reply;
    auto next = std::upper_bound(times->begin(), times->end(), m.occurred_at);
    if (next != times->end()) reply = *next;
    cp.received.push_back({&m, reply, each.weekday, each.minute});
  }
  cp.judged = true;
}

}  // namespace

struct LearnMemory::Impl {
  std::string ws_id;
  bool valid = false;        // false: the next pass reads the whole history
  bool incremental = false;  // how the last pass read
  TimePoint since;           // messages before this were not read
  std::string settings;      // the settings weekdays were judged with (JSON)
  std::string cursor;        // the greatest world_version read
  int64_t episodes = 0;      // the workspace's episode count, as read
  std::unordered_map<std::string, Counterparty> by_entity;

  void Add(MessageFact m, const WorkspaceSettings& settings) {
    Counterparty& cp = by_entity[m.entity_id];
    LocalTime local = ToLocal(m.occurred_at, settings);
    cp.messages.push_back({std::move(m), local.weekday, local.minute_of_day});
    cp.judged = false;
  }
};

LearnMemory::LearnMemory() : impl_(std::make_unique<Impl>()) {}
LearnMemory::~LearnMemory() = default;
LearnMemory::LearnMemory(LearnMemory&&) noexcept = default;
LearnMemory& LearnMemory::operator=(LearnMemory&&) noexcept = default;
bool LearnMemory::last_incremental() const { return impl_->incremental; }

namespace {

// Each counterparty's received messages of the lookback, judged as of `now`, and the
// messages sent to them. One not answered yet and younger than slow_reply is pending: it is
// no evidence either way. Judges the counterparties not judged yet.
std::unordered_map<std::string, History> Observe(LearnMemory::Impl& m, const Blocks& blocks,
                                                 TimePoint now, const LearningConfig& c) {
  TimePoint since = now - std::chrono::days(c.lookback_days);
  std::unordered_map<std::string, History> out;
  for (auto& [entity_id, cp] : m.by_entity) {
    if (!cp.judged) Judge(cp);
    History h;
    for (const Answered& a : cp.received) {
      const MessageFact* msg = a.msg;
      if (msg->occurred_at < since) continue;
      Outcome o;
      if (a.reply && *a.reply - msg->occurred_at <= c.fast_reply) {
        o = Outcome::kFast;
      } else if (a.reply && *a.reply - msg->occurred_at <= c.slow_reply) {
        o = Outcome::kMedium;
      } else if (a.reply || now - msg->occurred_at >= c.slow_reply) {
        o = Outcome::kSlow;
      } else {
        continue;  // pending
      }
      h.received.push_back({msg, o, a.reply.has_value(), Weight(msg->occurred_at, now, c),
                            a.weekday, a.minute, a.reply, blocks.EndAt(msg->occurred_at)});
    }
    for (const MessageFact* s : cp.sent) {
      if (s->occurred_at >= since) h.sent.push_back(s);
    }
    if (!h.received.empty() || !h.sent.empty()) out.emplace(entity_id, std::move(h));
  }
  return out;
}

Blocks SortedBlocks(std::vector<std::pair<TimePoint, TimePoint>> spans) {
  std::sort(spans.begin(), spans.end());
  return {std::move(spans)};
}

std::unordered_map<std::string, History> Observe(const std::vector<MessageFact>& messages,
                                                 const Blocks& blocks,
                                                 const WorkspaceSettings& settings, TimePoint now,
                                                 const LearningConfig& c,
                                                 LearnMemory::Impl* scratch) {
  for (const MessageFact& m : messages) scratch->Add(m, settings);
  return Observe(*scratch, blocks, now, c);
}

// fast: answered within fast_reply (on every day, some weekdays, or one half of the day);
// slow: answered late or never; silent: never answered nor written to; focus: a message
// that came during a focus block answered within focus_reply, before the block ended; hold:
// one answered only after the block ended (within fast_reply of its end).
enum class Kind { kFast, kSlow, kSilent, kFocus, kHold };

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

constexpr char kFocusSignal[] = "active_focus_block";
constexpr int kNoon = 12 * 60;

// Which received messages a pattern looks at: local weekdays (0 = every day), a window of
// the day [from, until) (may wrap midnight), and whether a focus block was active.
struct Scope {
  unsigned weekdays = 0;
  std::optional<int> from, until;
  int focus = 0;  // 1: only during a focus block; -1: only outside one; 0: either

  // The scope of a rule's conditions.
  static Scope Of(const Rule& r) {
    Scope s;
    s.weekdays = r.when.weekdays;
    if (r.when.from_minute && r.when.until_minute) {
      s.from = r.when.from_minute;
      s.until = r.when.until_minute;
    }
    const auto& sig = r.when.signals;
    if (std::find(sig.begin(), sig.end(), kFocusSignal) != sig.end()) s.focus = 1;
    return s;
  }
  static Scope Hours(int from, int until) {
    Scope s;
    s.from = from;
    s.until = until;
    return s;
  }
  bool Has(const Observation& o) const {
    if (weekdays != 0 && (weekdays & (1u << o.weekday)) == 0) return false;
    if (from && until && !InWindow(o.minute, *from, *until)) return false;
    if (focus != 0 && o.block_end.has_value() != (focus > 0)) return false;
    return true;
  }
  // The messages of the other weekdays, or the other half of the day (for a fast rule's
  // contrast).
  Scope Rest() const {
    Scope s;
    if (weekdays != 0) s.weekdays = 0x7f & ~weekdays;
    if (from && until) {
      s.from = until;
      s.until = from;
    }
    return s;
  }
  bool Morning() const { return from == 0 && until == kNoon; }
};

// What a pattern's observations say.
struct Stats {
  // (time, id) of the messages for and against; the ids point into the memory.
  std::vector<std::pair<TimePoint, const std::string*>> support_ids, contra_ids;
  double support_w = 0, contra_w = 0;  // decayed
  int support_n = 0, total_n = 0;      // raw, for the summary (received messages only)
  int sent_n = 0;                      // silent: messages the person sent them
  int64_t Support() const { return std::lround(support_w); }
  int64_t Contradictions() const { return std::lround(contra_w); }
};

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

// "fast:entity_..." -> "entity_...".
std::string EntityOfPattern(const std::string& pattern) {
  size_t colon = pattern.find(':');
  return colon == std::string::npos ? "" : pattern.substr(colon + 1);
}

// "fast:entity_..." -> (fast, entity_...).
std::optional<std::pair<Kind, std::string>> SplitPattern(const std::string& pattern) {
  size_t colon = pattern.find(':');
  if (colon == std::string::npos) return std::nullopt;
  auto kind = KindFromName(std::string_view(pattern).substr(0, colon));
  if (!kind) return std::nullopt;
  return std::make_pair(*kind, pattern.substr(colon + 1));
}

// Over the last `days` days: the counterparty's received messages the rule matches, and
// how many triage classed differently from the rule (by the class they got).
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

}  // namespace

namespace {

// Every pattern the histories support, sorted by pattern.
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

}  // namespace

std::vector<Finding> FindPatterns(const std::vector<MessageFact>& messages,
                                  const std::map<std::string, Entity>& entities,
                                  const WorkspaceSettings& settings, TimePoint now,
                                  const LearningConfig& config, const std::vector<Span>& blocks) {
  LearnMemory::Impl scratch;
  return FindIn(Observe(messages, SortedBlocks(blocks), settings, now, config, &scratch), entities,
                now, config);
}

namespace {

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

}  // namespace

bool Reevaluate(Rule& r, const std::vector<MessageFact>& messages,
                const std::map<std::string, Entity>& entities, const WorkspaceSettings& settings,
                TimePoint now, const LearningConfig& config, const std::vector<Span>& blocks) {
  LearnMemory::Impl scratch;
  return ReevaluateWith(r, Observe(messages, SortedBlocks(blocks), settings, now, config, &scratch),
                        entities, now, config);
}

namespace {

bool SameEvidence(const Rule& a, const Rule& b) {
  return a.summary == b.summary && a.evidence == b.evidence &&
         a.contradiction_evidence == b.contradiction_evidence && a.support == b.support &&
         a.contradictions == b.contradictions && RuleDefinitionJson(a) == RuleDefinitionJson(b) &&
         a.backtest == b.backtest;
}

// One change a pass makes to the store, worked out in a read transaction and written in a
// short write transaction (so that a pass over a long history never holds up writers).
struct Change {
  Rule rule;
  bool insert = false;
  std::optional<TimePoint> retired_at;
  std::optional<DecisionClass> decision;  // and its payload summary:
  std::string what;
};

Status Decide(WriteTx& tx, const Clock& clock, const Workspace& ws, TimePoint now,
              const std::string& trace_id, const LearningConfig& config, DecisionClass cls,
              const Rule& r, const std::string& what) {
  Decision d;
  d.id = NewId("dec_", clock);
  d.workspace_id = ws.id;
  d.decision_class = cls;
  d.status = DecisionStatus::kRecorded;
  d.occurred_at = now;
  auto split = SplitPattern(r.pattern);
  if (split) d.entity_id = split->second;
  d.payload_summary = what;
  d.rule_id = r.id;
  d.rule_summary = r.summary;
  d.confidence = ConfidenceLabel(r, config.thresholds);
  d.trace_id = trace_id;
  d.agent_version = ws.agent_version;
  d.world_version = ws.world_version;
  d.source_episode_ids = r.evidence;
  json details = json::object();
  details["pattern"] = r.pattern;
  details["rule_name"] = r.name;
  details["when"] = RuleWhenJson(r);
  details["then"] = {{"triage", Name(*r.then.triage_class)}};
  details["support"] = r.support;
  details["contradictions"] = r.contradictions;
  details["contradiction_evidence"] = r.contradiction_evidence;
  details["backtest"] = r.backtest;
  d.details_json = DumpJson(details);
  return tx.decisions().Insert(d);
}

// What the rules of a workspace look like, to tell whether they changed between a
// pass's read and its write.
std::string Fingerprint(const std::vector<Rule>& rules) {
  std::string out;
  for (const Rule& r : rules) {
    out += r.id + ' ' + std::string(Name(r.status)) + ' ' + std::to_string(r.support) + ' ' +
           std::to_string(r.contradictions) + ' ' + r.summary + '\n';
  }
  return out;
}

// Brings `m` up to the workspace as `tx` sees it: the episodes stamped after the last it
// read, if their number adds up to the workspace's count; otherwise the whole lookback.
Status Recall(ReadTx& tx, const std::string& ws_id, const WorkspaceSettings& settings,
              TimePoint now, const LearningConfig& config, LearnMemory::Impl& m) {
  TimePoint since = now - std::chrono::days(config.lookback_days);
  std::string settings_json = DumpJson(SettingsToJson(settings));
  auto counts = tx.workspaces().Counts(ws_id);
  if (!counts.ok()) return counts.status();
  // Messages that left the lookback stay in memory until the next whole read: one at least
  // every kRereadAfter keeps the memory to the lookback and that much more.
  constexpr auto kRereadAfter = std::chrono::days(30);
  bool incremental = m.valid && m.ws_id == ws_id && since >= m.since &&
                     since - m.since < kRereadAfter && m.settings == settings_json;
  m.valid = false;  // until this read is whole
  if (incremental) {
    auto added = tx.episodes().EpisodesAfterVersion(ws_id, m.cursor);
    if (!added.ok()) return added.status();
    if (m.episodes + added->episodes == counts->episodes) {
      for (MessageFact& f : added->messages) m.Add(std::move(f), settings);
      if (added->world_version > m.cursor) m.cursor = added->world_version;
    } else {
      incremental = false;  // something was missed, or undone: read it all again
    }
  }
  if (!incremental) {
    auto latest = tx.episodes().LatestWorldVersion(ws_id);
    if (!latest.ok()) return latest.status();
    auto messages = tx.episodes().MessagesSince(ws_id, since);
    if (!messages.ok()) return messages.status();
    m.by_entity.clear();
    for (MessageFact& f : *messages) m.Add(std::move(f), settings);
    m.ws_id = ws_id;
    m.since = since;
    m.settings = settings_json;
    m.cursor = *latest;
  }
  m.episodes = counts->episodes;
  m.incremental = incremental;
  m.valid = true;
  return Status::Ok();
}

// Whether what the person did with a message `r` decided goes with the rule: they answered
// an interrupting message fast, a digest message not fast, a silent one never, and one held
// until a focus block ended not before it ended. nullopt when their answer says nothing of
// it (a held message with no block active surfaced at once).
std::optional<bool> Agrees(TriageClass cls, const Observation& o) {
  switch (cls) {
    case TriageClass::kInterruptNow:
      return o.outcome == Outcome::kFast;
    case TriageClass::kDailyDigest:
      return o.outcome != Outcome::kFast;
    case TriageClass::kHandleSilently:
      return !o.answered;
    case TriageClass::kSurfaceAtTransition:
      if (!o.block_end) return std::nullopt;
      return !(o.reply && *o.reply < *o.block_end);
  }
  return std::nullopt;
}

// A person's active triage rules, checked against what the person did with the messages
// each decided (its rule_fired decisions of the lookback): support is the rule's own
// evidence plus the messages that went with it (decayed), contradictions those that went
// against it. A rule with at least pretty_sure's support in contradictions and a ratio
// below pretty_sure's is retired (docs/learning.md, "A person's rules").
Status RecheckOwnRules(ReadTx& tx, const std::string& ws_id, const LearningConfig& config,
                       TimePoint now, const std::unordered_map<std::string, History>& histories,
                       const std::vector<Rule>& stored, std::vector<Change>* changes,
                       bool* rules_changed) {
  std::vector<const Rule*> own;
  for (const Rule& r : stored) {
    if (r.origin == RuleOrigin::kUser && r.status == RuleStatus::kActive &&
        r.kind == RuleKind::kTriage && r.then.triage_class) {
      own.push_back(&r);
    }
  }
  if (own.empty()) return Status::Ok();
  auto fired = tx.decisions().FiredTriageRules(
      ws_id, IdFloor("dec_", now - std::chrono::days(config.lookback_days)));
  if (!fired.ok()) return fired.status();
  std::unordered_map<std::string_view, const Observation*> judged;
  for (const auto& [id, h] : histories) {
    for (const Observation& o : h.received) judged.emplace(o.msg->id, &o);
  }
  std::unordered_map<std::string_view, std::vector<const Observation*>> by_rule;
  for (const auto& [rule_id, episode_id] : *fired) {
    auto it = judged.find(episode_id);
    if (it != judged.end()) by_rule[rule_id].push_back(it->second);
  }
  const ConfidenceThresholds& t = config.thresholds;
  for (const Rule* cur : own) {
    Stats s;
    for (const Observation* o : by_rule[cur->id]) {
      std::optional<bool> agrees = Agrees(*cur->then.triage_class, *o);
      if (!agrees) continue;
      ++s.total_n;
      if (*agrees) {
        ++s.support_n;
        s.support_w += o->weight;
      } else {
        s.contra_w += o->weight;
        s.contra_ids.emplace_back(o->msg->occurred_at, &o->msg->id);
      }
    }
    Rule r = *cur;
    r.support = static_cast<int64_t>(r.evidence.size()) + s.Support();
    r.contradictions = s.Contradictions();
    r.contradiction_evidence = Newest(s.contra_ids);
    int64_t total = r.support + r.contradictions;
    double ratio = total == 0 ? 1.0 : static_cast<double>(r.support) / static_cast<double>(total);
    if (r.contradictions >= t.pretty_min_support && ratio < t.pretty_min_ratio) {
      r.status = RuleStatus::kRetired;
      r.active = false;
      int against = s.total_n - s.support_n;
      std::string did =
          *cur->then.triage_class == TriageClass::kInterruptNow
              ? "you answered " + std::to_string(against) + " of the " + std::to_string(s.total_n) +
                    " messages it interrupted for " + "only after " + Hours(config.fast_reply)
          : *cur->then.triage_class == TriageClass::kDailyDigest
              ? "you answered " + std::to_string(against) + " of the " + std::to_string(s.total_n) +
                    " messages it put in the digest " + "within " + Hours(config.fast_reply)
          : *cur->then.triage_class == TriageClass::kSurfaceAtTransition
              ? "you answered " + std::to_string(against) + " of the " + std::to_string(s.total_n) +
                    " messages it held during a focus block before the block ended"
              : "you answered " + std::to_string(against) + " of the " + std::to_string(s.total_n) +
                    " messages it recorded silently";
      std::string why = "Retired your rule '" + r.name + "': " + did + " (support " +
                        std::to_string(r.support) + ", contradictions " +
                        std::to_string(r.contradictions) + ", below " +
                        std::to_string(static_cast<int>(t.pretty_min_ratio * 100)) +
                        " %). Import it again to put it back.";
      changes->push_back({std::move(r), false, now, DecisionClass::kRuleRetired, why});
      *rules_changed = true;
      continue;
    }
    if (r.support != cur->support || r.contradictions != cur->contradictions ||
        r.contradiction_evidence != cur->contradiction_evidence) {
      changes->push_back({std::move(r), false, std::nullopt, {}, ""});
    }
  }
  return Status::Ok();
}

// The person's active triage rule that already does what learned rule `f` would, if any:
// the same class, on every message `f` matches (no conditions beyond its counterparty,
// by identifier, entity id or tag, and weekdays that include `f`'s).
const Rule* CoveredBy(const Rule& f, const std::vector<Rule>& stored, const Entity& who) {
  for (const Rule& r : stored) {
    if (r.origin != RuleOrigin::kUser || r.status != RuleStatus::kActive ||
        r.kind != RuleKind::kTriage || r.then.triage_class != f.then.triage_class) {
      continue;
    }
    const RuleConditions& c = r.when;
    if (!c.not_signals.empty() || !c.channels.empty() || !c.words.empty()) continue;
    // Its signals and hours must not leave out a message of f's: none, or the same as f's.
    if (!c.signals.empty() && c.signals != f.when.signals) continue;
    if (c.from_minute &&
        (c.from_minute != f.when.from_minute || c.until_minute != f.when.until_minute)) {
      continue;
    }
    if (c.weekdays != 0 && (f.when.weekdays == 0 || (f.when.weekdays & ~c.weekdays) != 0)) {
      continue;
    }
    auto has = [](const std::vector<std::string>& v, const std::string& x) {
      return std::find(v.begin(), v.end(), x) != v.end();
    };
    if (!c.tags.empty() && std::none_of(c.tags.begin(), c.tags.end(),
                                        [&](const std::string& t) { return has(who.tags, t); })) {
      continue;
    }
    if (!c.counterparties.empty() &&
        std::none_of(c.counterparties.begin(), c.counterparties.end(), [&](const std::string& x) {
          return x == who.id || has(who.identifiers, x);
        })) {
      continue;
    }
    return &r;
  }
  return nullptr;
}

// The read half of a pass: the changes it makes, and the fingerprint of the rules it read.
Status Plan(ReadTx& tx, const Clock& clock, const std::string& ws_id, const LearningConfig& config,
            TimePoint now, LearnMemory::Impl& memory, std::vector<Change>* changes,
            bool* rules_changed, std::string* fingerprint, std::vector<std::string>* covered) {
  auto settings = tx.workspaces().Settings(ws_id);
  if (!settings.ok()) return settings.status();
  CORTEX_RETURN_IF_ERROR(Recall(tx, ws_id, *settings, now, config, memory));
  auto stored = tx.rules().List(ws_id, /*active_only=*/false);
  if (!stored.ok()) return stored.status();
  *fingerprint = Fingerprint(*stored);
  // The focus blocks are read on every pass (a few a day; no memory): a calendar change
  // retracts a block without a new episode to tell an incremental read.
  auto spans = tx.episodes().BlocksSince(
      ws_id, now - std::chrono::days(config.lookback_days) - kMaxBlockLength);
  if (!spans.ok()) return spans.status();
  Blocks blocks{std::move(*spans)};

  auto histories = Observe(memory, blocks, now, config);
  std::map<std::string, Entity> entities;
  auto load_entity = [&](const std::string& id) -> Status {
    if (entities.count(id)) return Status::Ok();
    auto e = tx.entities().Get(ws_id, id);
    if (!e.ok()) return e.status();
    entities.emplace(id, std::move(*e));
    return Status::Ok();
  };
  for (const auto& [id, h] : histories) CORTEX_RETURN_IF_ERROR(load_entity(id));
  // The current row of each pattern: the newest.
  std::map<std::string, Rule*> current;
  for (Rule& r : *stored) {
    if (r.origin != RuleOrigin::kLearned || r.pattern.empty()) continue;
    Rule*& slot = current[r.pattern];
    if (slot == nullptr || slot->id < r.id) slot = &r;
    if (auto split = SplitPattern(r.pattern)) {
      Status s = load_entity(split->second);
      if (!s.ok() && s.code() != Code::kNotFound) return s;
    }
  }

  std::vector<Finding> findings = FindIn(histories, entities, now, config);

  // What triage did with the messages of the backtest window.
  std::unordered_map<std::string, TriageClass> got;
  {
    std::unordered_set<std::string_view> recent;
    TimePoint from = now - std::chrono::days(config.backtest_days);
    for (const auto& [id, h] : histories) {
      for (const Observation& o : h.received) {
        if (o.msg->occurred_at >= from) recent.insert(o.msg->id);
      }
    }
    if (!recent.empty()) {
      auto classes = tx.episodes().NotifiedClasses(ws_id, from);
      if (!classes.ok()) return classes.status();
      for (auto& [ep, cls] : *classes) {
        if (recent.count(ep)) got.emplace(std::move(ep), cls);
      }
    }
  }
  auto backtest = [&](Rule& r) {
    auto split = SplitPattern(r.pattern);
    static const History kNone;
    auto it = split ? histories.find(split->second) : histories.end();
    r.backtest = Backtest(r, it == histories.end() ? kNone : it->second, got, now, config);
  };

  std::set<std::string> seen;
  for (Finding& f : findings) {
    seen.insert(f.rule.pattern);
    auto it = current.find(f.rule.pattern);
    Rule* cur = it == current.end() ? nullptr : it->second;
    auto who = entities.find(EntityOfPattern(f.rule.pattern));
    const Rule* own = who == entities.end() ? nullptr : CoveredBy(f.rule, *stored, who->second);
    if (own != nullptr && (cur == nullptr || cur->status != RuleStatus::kActive)) {
      // Not proposed: the person's rule already does it. A proposal made before is withdrawn.
      covered->push_back(f.rule.summary + " (your rule '" + own->name + "')");
      if (cur != nullptr && cur->status == RuleStatus::kProposed) {
        Rule r = *cur;
        r.status = RuleStatus::kRetired;
        r.active = false;
        std::string why = "Withdrew the proposed rule '" + r.name + "': your rule '" + own->name +
                          "' already does this. " + r.summary;
        changes->push_back({std::move(r), false, now, DecisionClass::kRuleRetired, why});
      }
      continue;
    }
    bool propose = cur == nullptr || cur->status == RuleStatus::kRetired ||
                   (cur->status == RuleStatus::kRejected &&
                    f.rule.support >= 2 * std::max<int64_t>(cur->rejected_support, 1));
    if (propose) {
      Rule r = std::move(f.rule);
      r.id = NewId("rul_", clock);
      r.workspace_id = ws_id;
      r.created_at = now;
      backtest(r);
      std::string what = "Proposed a learned rule: " + r.summary;
      if (config.auto_accept_strong && ConfidenceLabel(r, config.thresholds) == "strong_pattern") {
        // [learning] auto_accept_strong: in force at once, as if the person had accepted it.
        r.status = RuleStatus::kActive;
        r.active = true;
        *rules_changed = true;
        what =
            "Proposed a learned rule and put it in force (a strong pattern, and "
            "[learning] auto_accept_strong is on): " +
            r.summary;
      }
      changes->push_back({std::move(r), true, std::nullopt, DecisionClass::kRuleProposed, what});
      continue;
    }
    if (cur->status == RuleStatus::kProposed) {
      // A proposal follows the pattern as it now stands (its days may change).
      Rule r = *cur;
      Rule& n = f.rule;
      r.when = n.when;
      r.then = n.then;
      r.summary = n.summary;
      r.evidence = n.evidence;
      r.contradiction_evidence = n.contradiction_evidence;
      r.support = n.support;
      r.contradictions = n.contradictions;
      backtest(r);
      if (!SameEvidence(r, *cur)) changes->push_back({std::move(r), false, std::nullopt, {}, ""});
    }
  }
  // Active learned rules are checked against the evidence as it now stands; proposals
  // the evidence no longer supports are withdrawn.
  for (auto& [pattern, cur] : current) {
    bool active = cur->status == RuleStatus::kActive;
    bool withdrawn = cur->status == RuleStatus::kProposed && !seen.count(pattern);
    if (!active && !withdrawn) continue;
    Rule r = *cur;
    if (!ReevaluateWith(r, histories, entities, now, config)) continue;
    backtest(r);
    if (withdrawn || ConfidenceLabel(r, config.thresholds) == "just_guessing") {
      r.status = RuleStatus::kRetired;
      r.active = false;
      std::string why = active ? "Retired the learned rule '" + r.name +
                                     "': its evidence no longer holds (support " +
                                     std::to_string(r.support) + ", contradictions " +
                                     std::to_string(r.contradictions) + "). " + r.summary
                               : "Withdrew the proposed rule '" + r.name +
                                     "': its evidence no longer holds. " + r.summary;
      changes->push_back({std::move(r), false, now, DecisionClass::kRuleRetired, why});
      *rules_changed = *rules_changed || active;
      continue;
    }
    if (!SameEvidence(r, *cur)) changes->push_back({std::move(r), false, std::nullopt, {}, ""});
  }
  return RecheckOwnRules(tx, ws_id, config, now, histories, *stored, changes, rules_changed);
}

}  // namespace

Result<LearnReport> Learn(Store& store, const Clock& clock, const std::string& ws_id,
                          const LearningConfig& config, LearnMemory* memory) {
  return Learn(store, clock, ws_id, config, memory, nullptr);
}

namespace {
constexpr char kLearnCancelled[] = "the learning pass was cancelled; nothing was written";
}  // namespace

bool IsLearnCancelled(const Status& st) {
  return st.code() == Code::kUnavailable && st.message() == kLearnCancelled;
}

Result<LearnReport> Learn(Store& store, const Clock& clock, const std::string& ws_id,
                          const LearningConfig& config, LearnMemory* memory,
                          const LearnObserver& observe) {
  auto go_on = [&](LearnPhase phase) { return !observe || observe(phase); };
  LearnMemory scratch;
  LearnMemory::Impl& m = memory != nullptr ? memory->impl() : scratch.impl();
  // A person may accept or reject a rule (or another pass may write) between this pass's
  // read and its write: then the pass starts over, a few times at most.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    TimePoint now = clock.Now();
    std::vector<Change> changes;
    bool rules_changed = false;
    std::string fingerprint;
    std::vector<std::string> covered;
    if (!go_on(LearnPhase::kReading)) return Status::Unavailable(kLearnCancelled);
    CORTEX_RETURN_IF_ERROR(store.Read([&](ReadTx& tx) {
      changes.clear();
      rules_changed = false;
      covered.clear();
      return Plan(tx, clock, ws_id, config, now, m, &changes, &rules_changed, &fingerprint,
                  &covered);
    }));
    LearnReport report;
    bool raced = false;
    if (!go_on(LearnPhase::kWriting)) return Status::Unavailable(kLearnCancelled);
    Status st = store.Write([&](WriteTx& tx) -> Status {
      report = LearnReport{};
      raced = false;
      // Passes of several instances (PostgreSQL) write one after another, and the second
      // sees the first's rules: it starts over instead of proposing them twice.
      if (!changes.empty()) CORTEX_RETURN_IF_ERROR(tx.workspaces().Lock(ws_id));
      auto ws = tx.workspaces().Get(ws_id);
      if (!ws.ok()) return ws.status();
      report.agent_version = ws->agent_version;
      if (changes.empty()) return Status::Ok();
      auto stored = tx.rules().List(ws_id, /*active_only=*/false);
      if (!stored.ok()) return stored.status();
      if (Fingerprint(*stored) != fingerprint) {
        raced = true;
        return Status::Ok();
      }
      std::string trace_id = NewId("trc_", clock);
      // Decisions are made under the version before the pass; rules put in force by it
      // carry the version it makes.
      std::string av = ws->agent_version;
      if (rules_changed) av = NewIdAfter("av_", clock, ws->agent_version);
      for (Change& c : changes) {
        if (c.insert && c.rule.status == RuleStatus::kActive) c.rule.activated_version = av;
        if (c.insert) {
          CORTEX_RETURN_IF_ERROR(tx.rules().Insert(c.rule));
        } else {
          CORTEX_RETURN_IF_ERROR(tx.rules().Update(c.rule, c.retired_at));
        }
        if (c.decision) {
          CORTEX_RETURN_IF_ERROR(
              Decide(tx, clock, *ws, now, trace_id, config, *c.decision, c.rule, c.what));
        }
        if (c.insert) {
          ++report.proposed;
        } else if (c.decision == DecisionClass::kRuleRetired) {
          ++report.retired;
        } else {
          ++report.updated;
        }
      }
      if (rules_changed) {
        report.agent_version = av;
        CORTEX_RETURN_IF_ERROR(tx.workspaces().SetAgentVersion(ws_id, av));
      }
      return Status::Ok();
    });
    if (!st.ok()) return st;
    report.covered = std::move(covered);
    if (!raced) {
      (void)go_on(LearnPhase::kDone);
      return report;
    }
    if (attempt == kAttempts) {
      return Status::Unavailable("the workspace's rules kept changing during the pass");
    }
  }
}

namespace {

Result<Rule> Decide(Store& store, const Clock& clock, const std::string& ws_id,
                    const std::string& rule_id, bool accept) {
  Rule out;
  Status st = store.Write([&](WriteTx& tx) -> Status {
    auto rule = tx.rules().Get(ws_id, rule_id);
    if (!rule.ok()) return rule.status();
    Rule r = *rule;
    if (r.origin != RuleOrigin::kLearned) {
      return Status::InvalidArgument("rule " + rule_id + " (" + r.name +
                                     ") is a person's rule: change it in the rules file "
                                     "(cortex rules import)");
    }
    bool was_active = r.status == RuleStatus::kActive;
    if (accept && r.status != RuleStatus::kProposed && r.status != RuleStatus::kRejected) {
      return Status::Conflict("rule " + rule_id + " is " + std::string(Name(r.status)) +
                              ": only a proposed or rejected rule can be accepted");
    }
    if (!accept && r.status != RuleStatus::kProposed && r.status != RuleStatus::kActive) {
      return Status::Conflict("rule " + rule_id + " is " + std::string(Name(r.status)) +
                              ": only a proposed or active rule can be rejected");
    }
    auto ws = tx.workspaces().Get(ws_id);
    if (!ws.ok()) return ws.status();
    std::optional<TimePoint> retired_at;
    if (accept) {
      r.status = RuleStatus::kActive;
    } else {
      r.status = RuleStatus::kRejected;
      r.rejected_support = std::max<int64_t>(r.support, 1);
      retired_at = clock.Now();
    }
    if (accept || was_active) {
      std::string av = NewIdAfter("av_", clock, ws->agent_version);
      CORTEX_RETURN_IF_ERROR(tx.workspaces().SetAgentVersion(ws_id, av));
      if (accept) r.activated_version = av;
    }
    r.active = r.status == RuleStatus::kActive;
    CORTEX_RETURN_IF_ERROR(tx.rules().Update(r, retired_at));
    out = std::move(r);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

std::string Clock24(int minute) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02d:%02d", (minute / 60) % 100, minute % 60);
  return buf;
}

}  // namespace

Result<Rule> AcceptRule(Store& store, const Clock& clock, const std::string& ws_id,
                        const std::string& rule_id) {
  return Decide(store, clock, ws_id, rule_id, /*accept=*/true);
}

Result<Rule> RejectRule(Store& store, const Clock& clock, const std::string& ws_id,
                        const std::string& rule_id) {
  return Decide(store, clock, ws_id, rule_id, /*accept=*/false);
}

json RuleWhenJson(const Rule& r) {
  const RuleConditions& c = r.when;
  json when = json::object();
  auto list = [&](const char* key, const std::vector<std::string>& v) {
    if (!v.empty()) when[key] = v;
  };
  list("signals", c.signals);
  list("not_signals", c.not_signals);
  list("tags", c.tags);
  list("counterparty", c.counterparties);
  list("channel", c.channels);
  list("words", c.words);
  if (c.from_minute && c.until_minute) {
    when["hours"] = Clock24(*c.from_minute) + "-" + Clock24(*c.until_minute);
  }
  if (c.weekdays != 0) {
    json days = json::array();
    for (int d = 0; d < 7; ++d) {
      if (c.weekdays & (1u << d)) days.push_back(kDayNames[d]);
    }
    when["weekdays"] = days;
  }
  return when;
}

}  // namespace cortex
