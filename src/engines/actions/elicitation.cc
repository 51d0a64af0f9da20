#include "engines/actions/elicitation.h"

#include "core/crypto.h"
#include "core/ids.h"
#include "core/json_text.h"
#include "core/time.h"
#include "store/actions.h"
#include "store/entities.h"
#include "store/inbox.h"

namespace cortex {
namespace {

using json = nlohmann::json;

constexpr size_t kSecretBytes = 32;

std::string ArgsHash(const json& args) { return Sha256Hex(DumpJson(args)); }

std::string Question(const Action& action, const Entity& who) {
  return "Send this message to " + who.name + " (" + action.recipient + ")?\n\n" + action.draft +
         "\n\nApprove it (edit the text first if you like) or reject it.";
}

}  // namespace

json ApprovalForm(const std::string& question, const std::string& draft) {
  json schema = {{"type", "object"},
                 {"properties",
                  {{"decision",
                    {{"type", "string"},
                     {"title", "Send it?"},
                     {"oneOf",
                      {{{"const", "approve"}, {"title", "Approve and send"}},
                       {{"const", "reject"}, {"title", "Reject"}}}}}},
                   {"message",
                    {{"type", "string"},
                     {"title", "The message (edit before approving)"},
                     {"default", draft}}},
                   {"reason", {{"type", "string"}, {"title", "Why not (when rejecting)"}}}}},
                 {"required", {"decision"}}};
  return {{"method", "elicitation/create"},
          {"params", {{"mode", "form"}, {"message", question}, {"requestedSchema", schema}}}};
}

Result<json> ApprovalRequest(Store& store, const std::string& ws, const std::string& decision_id) {
  json form;
  CORTEX_RETURN_IF_ERROR(store.Read([&](ReadTx& tx) -> Status {
    auto action = tx.actions().FindByDecision(ws, decision_id);
    if (!action.ok()) return action.status();
    auto who = tx.entities().Get(ws, action->entity_id);
    if (!who.ok()) return who.status();
    form = ApprovalForm(Question(*action, *who), action->draft);
    return Status::Ok();
  }));
  return form;
}

Result<InputRequired> AskInClient(Store& store, const Clock& clock, const std::string& ws,
                                  const std::string& token_id, const json& args,
                                  const ActionResult& pending) {
  std::string secret = RandomHex(kSecretBytes);
  Elicitation e;
  e.id = NewId("eli_", clock);
  e.workspace_id = ws;
  e.decision_id = pending.decision_id;
  e.token_id = token_id;
  e.secret_hash = Sha256Hex(secret);
  e.args_hash = ArgsHash(args);
  e.created_at = clock.Now();
  e.expires_at = e.created_at + kElicitationLifetime;
  std::string question;
  Status st = store.Write([&](WriteTx& tx) -> Status {
    auto action = tx.actions().Get(ws, pending.action_id);
    if (!action.ok()) return action.status();
    auto who = tx.entities().Get(ws, action->entity_id);
    if (!who.ok()) return who.status();
    question = Question(*action, *who);
    return tx.inbox().InsertElicitation(e);
  });
  if (!st.ok()) return st;
  InputRequired out;
  out.input_requests = {{kApprovalInput, ApprovalForm(question, pending.draft)}};
  out.request_state = e.id + "." + secret;
  return out;
}

namespace {

// The person's answer, from an ElicitResult: approve or reject (with the form's text), or
// nothing decided (declined, cancelled).
struct Answer {
  std::optional<std::string> decision, message, reason;
};

Result<Answer> ParseAnswer(const json& result) {
  if (!result.is_object() || !result.contains("action") || !result.at("action").is_string()) {
    return Status::InvalidArgument(
        "inputResponses must hold the answer to 'approval' (an ElicitResult with an action)");
  }
  std::string action = result.at("action");
  Answer a;
  if (action == "decline" || action == "cancel") return a;
  if (action != "accept") {
    return Status::InvalidArgument("the answer's action must be accept, decline or cancel");
  }
  const json content = result.value("content", json::object());
  auto text = [&](const char* key, std::optional<std::string>* out) -> Status {
    if (!content.is_object() || !content.contains(key) || content[key].is_null()) {
      return Status::Ok();
    }
    if (!content[key].is_string()) {
      return Status::InvalidArgument(std::string("the answer's '") + key + "' must be text");
    }
    *out = content[key].get<std::string>();
    return Status::Ok();
  };
  CORTEX_RETURN_IF_ERROR(text("decision", &a.decision));
  CORTEX_RETURN_IF_ERROR(text("message", &a.message));
  CORTEX_RETURN_IF_ERROR(text("reason", &a.reason));
  if (!a.decision || (*a.decision != "approve" && *a.decision != "reject")) {
    return Status::InvalidArgument("the answer's 'decision' must be approve or reject");
  }
  return a;
}

// Marks elicitation `id` answered, once, if `check` passes on it; InvalidArgument otherwise.
template <typename Check>
Result<Elicitation> Consume(Store& store, const Clock& clock, const std::string& ws,
                            const std::string& id, Check check) {
  Elicitation e;
  Status st = store.Write([&](WriteTx& tx) -> Status {
    auto found = tx.inbox().GetElicitation(ws, id);
    if (found.status().code() == Code::kNotFound) {
      return Status::InvalidArgument("requestState is not one this server issued");
    }
    if (!found.ok()) return found.status();
    e = std::move(*found);
    CORTEX_RETURN_IF_ERROR(check(e));
    if (e.answered_at) return Status::InvalidArgument("requestState was already answered");
    if (clock.Now() >= e.expires_at) {
      return Status::InvalidArgument(
          "requestState has expired; the draft waits in the inbox (decision " + e.decision_id +
          ")");
    }
    auto marked = tx.inbox().MarkElicitationAnswered(e.id, clock.Now());
    if (!marked.ok()) return marked.status();
    if (!*marked) return Status::InvalidArgument("requestState was already answered");
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return e;
}

// Where the draft of `decision_id` stands, for an answer that decided nothing (or none).
Result<ActionResult> DraftStanding(Store& store, const std::string& ws,
                                   const std::string& decision_id, const std::string& why) {
  ActionResult r;
  Status read = store.Read([&](ReadTx& tx) -> Status {
    auto a = tx.actions().FindByDecision(ws, decision_id);
    if (!a.ok()) return a.status();
    bool pending = a->status == ActionStatus::kPending;
    r.outcome = pending ? ActionOutcome::kPendingApproval : ActionOutcome::kSuccess;
    r.decision_id = decision_id;
    r.action_id = a->id;
    r.draft = a->draft;
    r.level = a->level;
    r.message = pending
                    ? why + ": the draft waits in the inbox until " + FormatTime(*a->due_at) + "."
                    : "Already " + std::string(Name(a->status)) + ".";
    return Status::Ok();
  });
  if (!read.ok()) return read;
  return r;
}

Result<ActionResult> Apply(Store& store, const Clock& clock, const ActionConfig& config,
                           const Elicitation& e, const Answer& answer) {
  ActionEngine engine(store, clock, config);
  Actor by{"elicitation", e.token_id, ""};
  // The form's text is the draft unless the person changed it (an edit, as in the inbox).
  if (answer.decision == "approve")
    return engine.Approve(e.workspace_id, e.decision_id, answer.message, by);
  if (answer.decision == "reject")
    return engine.Reject(e.workspace_id, e.decision_id, answer.reason, by);
  return DraftStanding(store, e.workspace_id, e.decision_id, "Not decided in the client");
}

}  // namespace

Result<std::optional<ActionResult>> DecideByForm(Store& store, const Clock& clock,
                                                 const ActionConfig& config, const std::string& ws,
                                                 const std::string& decision_id, const Actor& by,
                                                 const json& answer) {
  auto a = ParseAnswer(answer);
  if (!a.ok()) return a.status();
  if (!a->decision) return std::optional<ActionResult>();
  ActionEngine engine(store, clock, config);
  auto r = *a->decision == "approve" ? engine.Approve(ws, decision_id, a->message, by)
                                     : engine.Reject(ws, decision_id, a->reason, by);
  if (!r.ok()) return r.status();
  return std::optional(*r);
}

Result<ActionResult> AnswerInClient(Store& store, const Clock& clock, const ActionConfig& config,
                                    const std::string& ws, const std::string& token_id,
                                    const json& args, const std::string& request_state,
                                    const json& input_responses) {
  size_t dot = request_state.find('.');
  std::string id = request_state.substr(0, dot);
  if (dot == std::string::npos || !IsId(id, "eli_")) {
    return Status::InvalidArgument("requestState is not one this server issued");
  }
  std::string secret = request_state.substr(dot + 1);
  if (!input_responses.is_object() || !input_responses.contains(kApprovalInput)) {
    return Status::InvalidArgument(
        "inputResponses must hold the answer to 'approval' (an ElicitResult with an action)");
  }
  auto answer = ParseAnswer(input_responses[kApprovalInput]);
  if (!answer.ok()) return answer.status();
  auto e = Consume(store, clock, ws, id, [&](const Elicitation& e) -> Status {
    if (!ConstantTimeEquals(Sha256Hex(secret), e.secret_hash)) {
      return Status::InvalidArgument("requestState is not one this server issued");
    }
    if (e.token_id != token_id) {
      return Status::InvalidArgument("requestState was issued to another token");
    }
    if (e.args_hash != ArgsHash(args)) {
      return Status::InvalidArgument(
          "requestState belongs to a call with other arguments: retry with the same ones");
    }
    return Status::Ok();
  });
  if (!e.ok()) return e.status();
  return Apply(store, clock, config, *e, *answer);
}

Status AnswerElicitationRequest(Store& store, const Clock& clock, const ActionConfig& config,
                                const std::string& ws, const std::string& token_id,
                                const std::string& id, const json& elicit_result) {
  // A client that answered with an error decided nothing.
  auto answer = elicit_result.is_null() ? Result<Answer>(Answer{}) : ParseAnswer(elicit_result);
  if (!answer.ok()) return answer.status();
  auto e = Consume(store, clock, ws, id, [&](const Elicitation& e) -> Status {
    if (e.token_id != token_id) {
      return Status::InvalidArgument("elicitation " + id + " was sent to another token");
    }
    return Status::Ok();
  });
  if (!e.ok()) return e.status();
  auto result = Apply(store, clock, config, *e, *answer);
  ActionResult r;
  if (result.ok()) {
    r = *result;
  } else {
    r.outcome = ActionOutcome::kError;
    r.error = result.status().code() == Code::kConflict ? "not_pending" : "action_engine_error";
    r.message = result.status().message();
    r.decision_id = e->decision_id;
  }
  return store.Write(
      [&](WriteTx& tx) { return tx.inbox().SetElicitationResult(e->id, ActionResultJson(r)); });
}

Result<std::optional<ActionResult>> ElicitationOutcome(Store& store, const Clock& clock,
                                                       const std::string& ws,
                                                       const std::string& id) {
  Elicitation e;
  CORTEX_RETURN_IF_ERROR(store.Read([&](ReadTx& tx) -> Status {
    auto found = tx.inbox().GetElicitation(ws, id);
    if (!found.ok()) return found.status();
    e = std::move(*found);
    return Status::Ok();
  }));
  if (!e.result.empty()) return std::optional(ActionResultFromJson(e.result));
  if (!e.answered_at && clock.Now() >= e.expires_at) {
    auto standing = DraftStanding(store, ws, e.decision_id, "Not answered in the client");
    if (!standing.ok()) return standing.status();
    return std::optional(*standing);
  }
  return std::optional<ActionResult>();  // still waiting (or the answer is being applied)
}

}  // namespace cortex
