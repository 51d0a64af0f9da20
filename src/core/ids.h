// Prefixed ULIDs: "ep_" + 26 Crockford base-32 characters, time-sortable.
#pragma once

#include <string>
#include <string_view>

#include "core/clock.h"

namespace cortex {

// A new id such as "ep_01HXR4M9TZ...". Ids made by one process are strictly increasing,
// even within one millisecond. Thread-safe.
std::string NewId(std::string_view prefix, const Clock& clock);

// A new id greater than `previous` (an id with the same prefix, or empty): for versions
// that must keep increasing when several processes mint them, whose clocks or
// same-millisecond ids need not agree. Usually NewId(); otherwise `previous` plus one.
std::string NewIdAfter(std::string_view prefix, const Clock& clock, std::string_view previous);

// The smallest id with `prefix` minted at time `t`: ids minted at or after `t` compare
// greater or equal, ids minted before compare less.
std::string IdFloor(std::string_view prefix, TimePoint t);

// True iff `id` is `prefix` followed by a well-formed ULID.
bool IsId(std::string_view id, std::string_view prefix);

}  // namespace cortex
