// Approval inside the person's own MCP client. When action.communicate leaves a draft at
// level 1 and the calling client declared it can ask its user (`elicitation`, in a
// 2026-07-28 request), the tool answers with an input-required result: a form asking the
// person to approve (optionally editing the text) or reject, and a request state. The
// client retries the same call with the answer and the state; the answer is the person's,
// recorded with channel `elicitation` and the token id.
//
// In a 2025-11-25 session whose client declared elicitation at initialize, the same form is
// sent as an elicitation/create request on the tools/call's event stream, which stays open
// until the client's response arrives (on any instance) or the form expires, then carries
// the call's result.
//
// Only a token with the `approve` scope is asked (a person's client): an agent's client
// could answer its own question, and an agent never approves. The request state names a
// stored elicitation: it is answered once, by the token that was asked, for the same
// arguments, within kElicitationLifetime. docs/inbox.md, "In your MCP client".
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "engines/actions/actions.h"
#include "engines/actions/actor.h"
#include "store/store.h"

namespace cortex {

inline constexpr std::chrono::minutes kElicitationLifetime{10};
// The key of the one input request in an input-required result.
inline constexpr char kApprovalInput[] = "approval";

struct InputRequired {
  nlohmann::json input_requests;  // {"approval": {"method": "elicitation/create", ...}}
  std::string request_state;
};

// Puts the pending draft of `pending` (a level-1 pending_approval result of a call with
// `args` by `token_id`) to the person.
Result<InputRequired> AskInClient(Store& store, const Clock& clock, const std::string& ws,
                                  const std::string& token_id, const nlohmann::json& args,
                                  const ActionResult& pending);

// Applies the person's answer to a retried call. InvalidArgument (saying why) for a
// request state that is unknown, expired, already answered, another token's or another
// call's, or an answer that is not an ElicitResult of the form; nothing changes then.
// A declined or cancelled form leaves the draft pending (in the inbox).
Result<ActionResult> AnswerInClient(Store& store, const Clock& clock, const ActionConfig& config,
                                    const std::string& ws, const std::string& token_id,
                                    const nlohmann::json& args, const std::string& request_state,
                                    const nlohmann::json& input_responses);

// The approval form (an elicitation/create request) for a draft: `question` asked, with
// `draft` as the message field's default.
nlohmann::json ApprovalForm(const std::string& question, const std::string& draft);
// The approval form of the draft of decision `decision_id` (of `ws`), as AskInClient puts it.
Result<nlohmann::json> ApprovalRequest(Store& store, const std::string& ws,
                                       const std::string& decision_id);
// Applies a person's answer to the approval form (an ElicitResult) to the draft of
// `decision_id`, by `by`: the result, or nullopt if the form was declined or cancelled
// (nothing decided). InvalidArgument for an answer that is not the form's; Conflict if the
// draft is no longer pending.
Result<std::optional<ActionResult>> DecideByForm(Store& store, const Clock& clock,
                                                 const ActionConfig& config, const std::string& ws,
                                                 const std::string& decision_id, const Actor& by,
                                                 const nlohmann::json& answer);

// 2025-11-25 sessions: the held tools/call stream sent an elicitation/create request whose
// id is the elicitation's; the client's JSON-RPC response (its `result`, or null for an
// error response: nothing decided) is applied as AnswerInClient's is, by the token the
// request was sent to, once, before it expires; its result is kept for the stream.
Status AnswerElicitationRequest(Store& store, const Clock& clock, const ActionConfig& config,
                                const std::string& ws, const std::string& token_id,
                                const std::string& id, const nlohmann::json& elicit_result);

// What a stream held for elicitation `id` sends: the result its answer led to, or, once
// it expired unanswered, where the draft stands; nullopt while it waits.
Result<std::optional<ActionResult>> ElicitationOutcome(Store& store, const Clock& clock,
                                                       const std::string& ws,
                                                       const std::string& id);

}  // namespace cortex
