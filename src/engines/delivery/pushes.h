// Events pushed to the person: an `interrupt_now` notification as it surfaces
// (notification.created) and a draft waiting for their approval (approval.requested). Each
// is an outbox row of kind `event`, written in the transaction that makes what it reports,
// so none is lost or pushed for something that did not happen; the dispatcher POSTs it to
// the `[push]` webhook, signed, at least once (docs/inbox.md, "Pushes").
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/status.h"
#include "store/tx.h"

namespace cortex {

// An event older than this is not pushed: an interrupt an hour late is no interrupt (and
// an ingest of last month's mail must not ring the person's phone for each message).
inline constexpr std::chrono::minutes kPushFreshness{60};
// Events are kept this long after they were made, pushed or not, then forgotten.
inline constexpr std::chrono::hours kPushRetention{7 * 24};

inline constexpr std::string_view kNotificationCreated = "notification.created";
inline constexpr std::string_view kApprovalRequested = "approval.requested";

// Queues event `type` with `data` for workspace `ws`. The body pushed is
// {"id": "evt_...", "type", "workspace_id", "created_at", "data"}.
Status QueuePush(WriteTx& tx, const Clock& clock, const std::string& ws, std::string_view type,
                 nlohmann::json data);

}  // namespace cortex
