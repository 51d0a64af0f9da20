// Quotas: how many tool calls a token and a workspace may make per minute and per local
// day, and how many inference units (model calls) they may spend per local day. Defaults
// come from the [quotas] section of the config; `cortex quota set` overrides them per
// workspace. docs/quotas.md explains the windows.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/clock.h"
#include "core/status.h"
#include "store/store.h"

namespace cortex {

struct QuotaLimits {
  int64_t calls_per_minute = 1200;  // per workspace, all its tokens together
  int64_t calls_per_day = 50000;
  int64_t inference_units_per_day = 200;
  int64_t token_calls_per_minute = 600;  // per token
  int64_t token_calls_per_day = 20000;
  int64_t token_inference_units_per_day = 100;
};

struct QuotaField {
  const char* name;  // as in the config, the CLI and quota_exceeded bodies
  int64_t QuotaLimits::*value;
};
inline constexpr QuotaField kQuotaFields[] = {
    {"calls_per_minute", &QuotaLimits::calls_per_minute},
    {"calls_per_day", &QuotaLimits::calls_per_day},
    {"inference_units_per_day", &QuotaLimits::inference_units_per_day},
    {"token_calls_per_minute", &QuotaLimits::token_calls_per_minute},
    {"token_calls_per_day", &QuotaLimits::token_calls_per_day},
    {"token_inference_units_per_day", &QuotaLimits::token_inference_units_per_day},
};
inline constexpr int64_t kMaxQuotaValue = 1'000'000'000;

// The field named `name`, or null.
const QuotaField* FindQuota(const std::string& name);

// `defaults` overlaid with the workspace's overrides.
Result<QuotaLimits> EffectiveQuotas(ReadTx& tx, const std::string& ws, const QuotaLimits& defaults);

// A refusal: which quota, its limit, and when the window that refused resets.
struct QuotaExceeded {
  std::string quota;
  int64_t limit = 0;
  int retry_after_s = 0;
  std::string Message(const char* what) const;
};

// The workspace's local day containing `now` (YYYY-MM-DD) and the whole seconds until its
// next local midnight (at least 1).
struct LocalDay {
  std::string day;
  int seconds_left = 0;
};
LocalDay LocalDayOf(TimePoint now, int utc_offset_minutes);

// Spends one inference unit of token `token` in workspace `ws` inside `tx`, unless the
// workspace's or the token's daily budget is spent (then nothing is spent).
Result<std::optional<QuotaExceeded>> SpendInferenceUnit(WriteTx& tx, const std::string& ws,
                                                        const std::string& token,
                                                        const QuotaLimits& defaults, TimePoint now);

// Tool-call counters over fixed windows: the clock minute, and the workspace's local day.
// With `shared` null they are kept in this process (one process serves a SQLite store, and
// a durable write per read call would cost more than the call); with a store they are
// counted there, so that several instances on PostgreSQL share one total
// (docs/quotas.md). Thread-safe.
class CallQuotas {
 public:
  explicit CallQuotas(const Clock& clock, Store* shared = nullptr)
      : clock_(clock), shared_(shared) {}

  // Counts one call by `token` in `ws` unless a limit is reached (then the refusal); a
  // refused call counts against nothing.
  Result<std::optional<QuotaExceeded>> Admit(const std::string& ws, const std::string& token,
                                             const QuotaLimits& limits, int utc_offset_minutes);

 private:
  struct Window {
    int64_t start = -1;  // minute number, or local day number
    int64_t count = 0;
  };
  struct Counters {
    Window minute, day;
  };
  const Clock& clock_;
  Store* shared_;
  std::mutex mu_;
  std::unordered_map<std::string, Counters> workspaces_;
  std::unordered_map<std::string, Counters> tokens_;
};

}  // namespace cortex
