// action.communicate's idempotency keys: a client that lost the reply to a call (a timeout,
// a dropped connection, a server killed after its commit) retries with the same
// `idempotency_key` and gets the first call's result, not a second message. A key belongs
// to one token of one workspace; a retry with other arguments is refused; keys are kept
// kIdempotencyKeyLifetime. The key is remembered in the transaction that records the
// proposal, so it exists exactly when the proposal does. docs/actions.md, "Retries".
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "engines/actions/actions.h"
#include "store/tx.h"

namespace cortex {

inline constexpr std::chrono::hours kIdempotencyKeyLifetime{24};

// SHA-256 of the arguments that make a call what it is (to, message, tone, context).
std::string CommunicateArgsHash(const CommunicateRequest& req);

// The first result of `req`'s key, if remembered. InvalidArgument if that call had other
// arguments.
Result<std::optional<ActionResult>> FindReplay(ReadTx& tx, const std::string& ws,
                                               const CommunicateRequest& req);

// Remembers `result` for `req`'s key (REQUIRES: a key). False if another call with the key
// was remembered first.
Result<bool> RememberResult(WriteTx& tx, const Clock& clock, const std::string& ws,
                            const CommunicateRequest& req, const ActionResult& result);

}  // namespace cortex
