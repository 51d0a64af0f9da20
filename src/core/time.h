// RFC 3339 times on the wire: always UTC with a trailing 'Z' on output.
#pragma once

#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/status.h"

namespace cortex {

// "2026-05-12T13:24:00Z" (milliseconds are added only when non-zero).
std::string FormatTime(TimePoint t);

// Accepts "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)"; returns the UTC instant.
Result<TimePoint> ParseTime(std::string_view text);
// Whether `t` lies in the years ParseTime accepts (1970 to 2200): what ingest stores.
bool InTimeRange(TimePoint t);

int64_t ToUnixMillis(TimePoint t);
TimePoint FromUnixMillis(int64_t ms);

}  // namespace cortex
