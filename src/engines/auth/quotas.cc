#include "engines/auth/quotas.h"

#include <algorithm>
#include <cstring>

#include "core/time.h"
#include "store/quotas.h"
#include "store/workspaces.h"

namespace cortex {
namespace {

constexpr int64_t kDayMs = 86'400'000;
constexpr int64_t kMinuteMs = 60'000;

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

int SecondsUntil(int64_t now_ms, int64_t end_ms) {
  return static_cast<int>(std::max<int64_t>(1, (end_ms - now_ms + 999) / 1000));
}

// The window of length `len_ms` holding `ms` (shifted by `offset_ms` for a local day): its
// number and the whole seconds left in it.
struct Window {
  int64_t number;
  int seconds_left;
};
Window WindowOf(int64_t ms, int64_t len_ms, int64_t offset_ms = 0) {
  int64_t local = ms + offset_ms;
  int64_t number = FloorDiv(local, len_ms);
  return {number, SecondsUntil(local, (number + 1) * len_ms)};
}

}  // namespace

const QuotaField* FindQuota(const std::string& name) {
  for (const QuotaField& f : kQuotaFields) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

Result<QuotaLimits> EffectiveQuotas(ReadTx& tx, const std::string& ws,
                                    const QuotaLimits& defaults) {
  auto overrides = tx.quotas().Overrides(ws);
  if (!overrides.ok()) return overrides.status();
  QuotaLimits out = defaults;
  for (const auto& [name, value] : *overrides) {
    if (const QuotaField* f = FindQuota(name)) out.*(f->value) = value;
  }
  return out;
}

std::string QuotaExceeded::Message(const char* what) const {
  return "Quota " + quota + " (" + std::to_string(limit) + ") is reached; it resets in " +
         std::to_string(retry_after_s) + " s. " + what;
}

LocalDay LocalDayOf(TimePoint now, int utc_offset_minutes) {
  Window day = WindowOf(ToUnixMillis(now), kDayMs, int64_t{utc_offset_minutes} * kMinuteMs);
  return {FormatTime(FromUnixMillis(day.number * kDayMs)).substr(0, 10), day.seconds_left};
}

Result<std::optional<QuotaExceeded>> SpendInferenceUnit(WriteTx& tx, const std::string& ws,
                                                        const std::string& token,
                                                        const QuotaLimits& defaults,
                                                        TimePoint now) {
  auto settings = tx.workspaces().Settings(ws);
  if (!settings.ok()) return settings.status();
  auto limits = EffectiveQuotas(tx, ws, defaults);
  if (!limits.ok()) return limits.status();
  LocalDay day = LocalDayOf(now, settings->utc_offset_minutes);
  auto used = tx.quotas().InferenceUnits(ws, token, day.day);
  if (!used.ok()) return used.status();
  if (used->workspace >= limits->inference_units_per_day) {
    return std::optional(QuotaExceeded{"inference_units_per_day", limits->inference_units_per_day,
                                       day.seconds_left});
  }
  if (used->token >= limits->token_inference_units_per_day) {
    return std::optional(QuotaExceeded{"token_inference_units_per_day",
                                       limits->token_inference_units_per_day, day.seconds_left});
  }
  CORTEX_RETURN_IF_ERROR(tx.quotas().AddInferenceUnits(ws, token, day.day, 1));
  return std::optional<QuotaExceeded>();
}

namespace {

// The first spent quota among `used`, days first: when a day and a minute are both spent,
// the day's reset is the one worth waiting for.
std::optional<QuotaExceeded> FirstSpent(const CallCounts& used, const QuotaLimits& limits,
                                        int minute_left, int day_left) {
  if (used.token_day >= limits.token_calls_per_day) {
    return QuotaExceeded{"token_calls_per_day", limits.token_calls_per_day, day_left};
  }
  if (used.workspace_day >= limits.calls_per_day) {
    return QuotaExceeded{"calls_per_day", limits.calls_per_day, day_left};
  }
  if (used.token_minute >= limits.token_calls_per_minute) {
    return QuotaExceeded{"token_calls_per_minute", limits.token_calls_per_minute, minute_left};
  }
  if (used.workspace_minute >= limits.calls_per_minute) {
    return QuotaExceeded{"calls_per_minute", limits.calls_per_minute, minute_left};
  }
  return std::nullopt;
}

}  // namespace

Result<std::optional<QuotaExceeded>> CallQuotas::Admit(const std::string& ws,
                                                       const std::string& token,
                                                       const QuotaLimits& limits,
                                                       int utc_offset_minutes) {
  int64_t now_ms = ToUnixMillis(clock_.Now());
  const auto m = WindowOf(now_ms, kMinuteMs);
  const auto d = WindowOf(now_ms, kDayMs, int64_t{utc_offset_minutes} * kMinuteMs);
  const int64_t minute = m.number, day = d.number;
  const int minute_left = m.seconds_left, day_left = d.seconds_left;

  if (shared_ != nullptr) {
    // Counted in the store: the call is counted first (the counters' row locks order
    // concurrent calls on every instance), then checked; a refused call's count is rolled
    // back with its transaction. Relaxed durability: a database crash may forget the last
    // moment's counts, which is cheaper than an fsync per tool call.
    std::optional<QuotaExceeded> over;
    Status st = shared_->Write(
        [&](WriteTx& tx) -> Status {
          auto counted = tx.quotas().CountCall(ws, token, minute, day);
          if (!counted.ok()) return counted.status();
          CallCounts before = *counted;  // without this call
          for (int64_t* n : {&before.workspace_minute, &before.workspace_day, &before.token_minute,
                             &before.token_day}) {
            --*n;
          }
          over = FirstSpent(before, limits, minute_left, day_left);
          return over ? Status::Conflict("quota reached") : Status::Ok();
        },
        Store::Durability::kRelaxed);
    if (over) return over;
    if (!st.ok()) return st;
    return std::optional<QuotaExceeded>();
  }

  std::lock_guard<std::mutex> lock(mu_);
  Counters& w = workspaces_[ws];
  Counters& t = tokens_[token];
  for (Counters* c : {&w, &t}) {  // a window that has moved on starts from zero
    if (c->minute.start != minute) c->minute = {minute, 0};
    if (c->day.start != day) c->day = {day, 0};
  }
  CallCounts used{w.minute.count, w.day.count, t.minute.count, t.day.count};
  if (auto over = FirstSpent(used, limits, minute_left, day_left)) return over;
  ++t.minute.count;
  ++t.day.count;
  ++w.minute.count;
  ++w.day.count;
  return std::optional<QuotaExceeded>();
}

}  // namespace cortex
