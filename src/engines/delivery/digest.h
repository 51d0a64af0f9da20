// The daily digest: once a day, at the workspace's digest_time (its settings,
// docs/rules.md), the messages that waited for the digest, each with why, and the drafts
// still waiting for the person's approval, sent to the person (settings.digest_to, which
// also turns it on) through the delivery connector. Each is a `digest` decision (pending, then
// delivered or failed, as decision.list shows) and an outbox row of kind `digest` written in one
// transaction; the store's `digests` table admits one per workspace and local day, which is what
// makes it go out once across restarts and instances (docs/inbox.md, "The daily digest").
#pragma once

#include <chrono>

#include "core/clock.h"
#include "core/status.h"
#include "store/store.h"

namespace cortex {

// How long after its time a missed digest is still sent: a server down at 17:00 and up at
// 21:00 sends that day's; one up the next morning does not send yesterday's.
inline constexpr std::chrono::hours kDigestCatchUp{12};
// A digest lists what waited since the last one composed (a missed day's messages carry
// over), going back at most this far; without an earlier digest, one day.
inline constexpr std::chrono::hours kDigestLookBack{7 * 24};
// At most this many messages are listed; the digest says how many more there were.
inline constexpr int kMaxDigestItems = 100;

// Composes and queues the digest of every workspace with a digest_to whose digest time
// passed at most kDigestCatchUp before `now` and whose digest for that local day was not
// composed yet.
// A day with nothing to report sends nothing (and is settled). Returns how many digests were
// composed.
Result<int> ComposeDueDigests(Store& store, const Clock& clock, TimePoint now);

}  // namespace cortex
