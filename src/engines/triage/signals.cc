#include "engines/triage/signals.h"

#include <algorithm>
#include <cctype>

#include "core/json_text.h"
#include "core/time.h"
#include "store/episodes.h"

namespace cortex {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

// Words that make a message urgent, matched as whole words, case-insensitive.
const char* const kUrgentWords[] = {
    "urgent",    "urgently",    "asap",       "as soon as possible", "by eod",  "eod",
    "emergency", "immediately", "right away", "time-sensitive",      "critical"};
const char* const kDayNames[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

constexpr int kThreadActiveMin = 2;        // other messages in the thread...
constexpr hours kThreadWindow{24};         // ...within this window make it active
constexpr hours kAwaitingWindow{24 * 7};   // unanswered messages older than this are stale
constexpr hours kMaxBlockLength{24 * 14};  // longest calendar block looked back for

std::optional<std::string> UrgentWord(const Episode& ep) {
  std::string text = MessageText(ep);
  for (const char* word : kUrgentWords) {
    if (HasWholeWord(text, word)) return std::string(word);
  }
  return std::nullopt;
}

// REQUIRES: 0 <= minute_of_day <= 24 * 60 ("24:00" ends a working day).
std::string Hhmm(int minute_of_day) {
  int h = minute_of_day / 60, m = minute_of_day % 60;
  return {static_cast<char>('0' + h / 10), static_cast<char>('0' + h % 10), ':',
          static_cast<char>('0' + m / 10), static_cast<char>('0' + m % 10)};
}

std::string WorkingDays(unsigned mask) {
  if (mask == 0x1f) return "Mon-Fri";
  std::string out;
  for (int d = 0; d < 7; ++d) {
    if (mask & (1u << d)) out += (out.empty() ? "" : ", ") + std::string(kDayNames[d]);
  }
  return out;
}

std::string Who(const Entity* e) { return e->name.empty() ? e->identifiers.front() : e->name; }

}  // namespace

LocalTime ToLocal(TimePoint t, const WorkspaceSettings& s) {
  int64_t minutes_since_epoch = ToUnixMillis(t) / 60000 + s.utc_offset_minutes;
  int64_t day =
      minutes_since_epoch >= 0 ? minutes_since_epoch / 1440 : (minutes_since_epoch - 1439) / 1440;
  LocalTime lt;
  lt.minute_of_day = static_cast<int>(minutes_since_epoch - day * 1440);
  lt.weekday = static_cast<int>(((day % 7) + 7 + 3) % 7);  // 1970-01-01 was a Thursday
  return lt;
}

std::string MessageText(const Episode& ep) {
  return AsciiLower(ep.subject + "\n" + ep.summary + "\n" + ep.body);
}

bool HasWholeWord(const std::string& text, const std::string& word) {
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  size_t pos = 0;
  while ((pos = text.find(word, pos)) != std::string::npos) {
    size_t end = pos + word.size();
    if ((pos == 0 || !is_word(text[pos - 1])) && (end >= text.size() || !is_word(text[end]))) {
      return true;
    }
    pos = end;
  }
  return false;
}

bool InWindow(int minute, int from, int until) {
  return from < until ? minute >= from && minute < until : minute >= from || minute < until;
}

std::string LocalClock(TimePoint t, const WorkspaceSettings& s) {
  return Hhmm(ToLocal(t, s).minute_of_day);
}

TimePoint NextDigest(TimePoint t, const WorkspaceSettings& s) {
  int64_t ms = ToUnixMillis(t) + int64_t{s.utc_offset_minutes} * 60000;
  int64_t day_ms = 86'400'000;
  int64_t day_start = (ms >= 0 ? ms / day_ms : (ms - day_ms + 1) / day_ms) * day_ms;
  int64_t digest = day_start + int64_t{s.digest_minute} * 60000;
  if (digest <= ms) digest += day_ms;
  return FromUnixMillis(digest - int64_t{s.utc_offset_minutes} * 60000);
}

nlohmann::json SignalsJson(const std::vector<Signal>& signals) {
  nlohmann::json out = nlohmann::json::array();
  for (const Signal& s : signals) {
    nlohmann::json& j = out.emplace_back(nlohmann::json::object());
    j["kind"] = Name(s.kind);
    j["summary"] = s.summary;
  }
  return out;
}

Result<SignalReport> ComputeSignals(ReadTx& tx, const WorkspaceSettings& settings,
                                    const Episode& ep, const Entity* who) {
  SignalReport out;
  const std::string& ws = ep.workspace_id;
  const TimePoint t = ep.occurred_at;

  if (who != nullptr && std::find(who->tags.begin(), who->tags.end(), "vip") != who->tags.end()) {
    out.signals.push_back({SignalKind::kVipCounterparty, "Sender is in VIP watchlist."});
  }

  auto block = tx.episodes().ActiveBlockAt(ws, t, t - kMaxBlockLength);
  if (!block.ok()) return block.status();
  if (*block) {
    const Episode& b = **block;
    std::string name = b.subject.empty() ? b.summary : b.subject;
    out.signals.push_back(
        {SignalKind::kActiveFocusBlock,
         "Calendar block '" + name + "' active until " + LocalClock(*b.ends_at, settings) + "."});
    out.focus_block = b;
  }

  if (who != nullptr) {
    auto history = tx.episodes().CounterpartyHistory(ws, who->id, t, t - kAwaitingWindow);
    if (!history.ok()) return history.status();
    if (!history->any_earlier) {
      out.signals.push_back({SignalKind::kFirstContact, "First message from " + Who(who) + "."});
    }
    bool newsletter =
        std::find(who->tags.begin(), who->tags.end(), "newsletter") != who->tags.end();
    if (history->unanswered > 0 && !newsletter) {
      std::string n = std::to_string(history->unanswered);
      out.signals.push_back({SignalKind::kAwaitingYourReply,
                             Who(who) + " is waiting for your reply: " + n + " earlier message" +
                                 (history->unanswered == 1 ? "" : "s") + " unanswered since " +
                                 FormatTime(*history->first_unanswered_at) + "."});
    }
  }

  if (auto word = UrgentWord(ep)) {
    out.signals.push_back({SignalKind::kUrgentLanguage, "Message says '" + *word + "'."});
  }

  LocalTime lt = ToLocal(t, settings);
  bool working_day = (settings.work_days & (1u << lt.weekday)) != 0;
  bool working_hour =
      InWindow(lt.minute_of_day, settings.work_start_minute, settings.work_end_minute);
  if (!working_day || !working_hour) {
    out.signals.push_back(
        {SignalKind::kAfterHours,
         "Arrived " + std::string(kDayNames[lt.weekday]) + " " + Hhmm(lt.minute_of_day) +
             ", outside working hours (" + Hhmm(settings.work_start_minute) + "-" +
             Hhmm(settings.work_end_minute) + ", " + WorkingDays(settings.work_days) + ")."});
  }

  if (!ep.thread.empty()) {
    auto recent = tx.episodes().CountInThread(ws, ep.thread, t - kThreadWindow, t);
    if (!recent.ok()) return recent.status();
    if (*recent >= kThreadActiveMin) {
      std::string name = ep.subject.empty() ? ep.thread : ep.subject;
      out.signals.push_back(
          {SignalKind::kThreadActive, "Thread '" + name + "' has " + std::to_string(*recent) +
                                          " other messages in the last 24 hours."});
    }
  }
  return out;
}

}  // namespace cortex
