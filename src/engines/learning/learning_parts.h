// What the learner's files share (learning_history.cc: the person's history, judged;
// learning_patterns.cc: the patterns found in it and how they read; learning.cc: the pass
// that proposes, rechecks and withdraws rules). Internal to them; docs/learning.md says what
// they do.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/time.h"
#include "engines/learning/learning.h"
#include "engines/triage/signals.h"

namespace cortex {
namespace learning {

// Evidence and contradictions kept per rule: the newest this many (triage copies a rule's
// evidence into every decision it drives).
inline constexpr size_t kMaxEvidence = 50;

inline constexpr const char* kDayNames[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

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

}  // namespace learning

struct LearnMemory::Impl {
  std::string ws_id;
  bool valid = false;        // false: the next pass reads the whole history
  bool incremental = false;  // how the last pass read
  TimePoint since;           // messages before this were not read
  std::string settings;      // the settings weekdays were judged with (JSON)
  std::string cursor;        // the greatest world_version read
  int64_t episodes = 0;      // the workspace's episode count, as read
  std::unordered_map<std::string, learning::Counterparty> by_entity;

  void Add(MessageFact m, const WorkspaceSettings& settings) {
    learning::Counterparty& cp = by_entity[m.entity_id];
    LocalTime local = ToLocal(m.occurred_at, settings);
    cp.messages.push_back({std::move(m), local.weekday, local.minute_of_day});
    cp.judged = false;
  }
};

namespace learning {

// fast: answered within fast_reply (on every day, some weekdays, or one half of the day);
// slow: answered late or never; silent: never answered nor written to; focus: a message
// that came during a focus block answered within focus_reply, before the block ended; hold:
// one answered only after the block ended (within fast_reply of its end).
enum class Kind { kFast, kSlow, kSilent, kFocus, kHold };

const char* KindName(Kind k);
std::optional<Kind> KindFromName(std::string_view s);
TriageClass EffectOf(Kind k);

constexpr SignalKind kFocusSignal = SignalKind::kActiveFocusBlock;
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

// 0.5 ^ (age / half-life) of a message at `t`, seen at `now`.
double Weight(TimePoint t, TimePoint now, const LearningConfig& c);

// Each counterparty's received messages of the lookback, judged as of `now`, and the
// messages sent to them. One not answered yet and younger than slow_reply is pending: it is
// no evidence either way. Judges the counterparties not judged yet.
std::unordered_map<std::string, History> Observe(LearnMemory::Impl& m, const Blocks& blocks,
                                                 TimePoint now, const LearningConfig& c);
// The same of `messages`, read into `scratch` first (a memory of one use).
std::unordered_map<std::string, History> Observe(const std::vector<MessageFact>& messages,
                                                 const Blocks& blocks,
                                                 const WorkspaceSettings& settings, TimePoint now,
                                                 const LearningConfig& c,
                                                 LearnMemory::Impl* scratch);
Blocks SortedBlocks(std::vector<std::pair<TimePoint, TimePoint>> spans);

// The ids of the newest kMaxEvidence of `ids` (time, id), newest first.
std::vector<std::string> Newest(std::vector<std::pair<TimePoint, const std::string*>> ids);
// "an hour", "4 hours", "90 minutes".
std::string Hours(std::chrono::minutes m);

// Every pattern the histories support, sorted by pattern.
std::vector<Finding> FindIn(const std::unordered_map<std::string, History>& histories,
                            const std::map<std::string, Entity>& entities, TimePoint now,
                            const LearningConfig& config);
// Describes `r` again from the histories as they stand (Reevaluate); false if its pattern
// or counterparty is unknown.
bool ReevaluateWith(Rule& r, const std::unordered_map<std::string, History>& histories,
                    const std::map<std::string, Entity>& entities, TimePoint now,
                    const LearningConfig& c);
// "fast:entity_..." -> "entity_...".
std::string EntityOfPattern(const std::string& pattern);
// "fast:entity_..." -> (fast, entity_...).
std::optional<std::pair<Kind, std::string>> SplitPattern(const std::string& pattern);
// Over the last backtest_days: the counterparty's received messages the rule matches, and
// how many triage classed differently from the rule (by the class they got).
nlohmann::json Backtest(const Rule& r, const History& h,
                        const std::unordered_map<std::string, TriageClass>& got, TimePoint now,
                        const LearningConfig& c);

}  // namespace learning
}  // namespace cortex
