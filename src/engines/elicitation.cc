#include "engines/elicitation.h"

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

}  // namespace

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
    question = "Send this message to " + who->name + " (" + action->recipient + ")?\n\n" +
               action->draft + "\n\nApprove it (edit the text first if you like) or reject it.";
    return tx.inbox().InsertElicitation(e);
  });
  if (!st.ok()) return st;
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
                     {"default", pending.draft}}},
                   {"reason", {{"type", "string"}, {"title", "Why not (when rejecting)"}}}}},
                 {"required", {"decision"}}};
  InputRequired out;
  out.input_requests = {
      {kApprovalInput,
       {{"method", "elicitation/create"},
        {"params", {{"mode", "form"}, {"message", question}, {"requestedSchema", schema}}}}}};
  out.request_state = e.id + "." + secret;
  return out;
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
  // The answer: an ElicitResult for our one input request.
  const json* answer = nullptr;
  if (input_responses.is_object() && input_responses.contains(kApprovalInput)) {
    answer = &input_responses[kApprovalInput];
  }
  if (answer == nullptr || !answer->is_object() || !answer->contains("action") ||
      !answer->at("action").is_string()) {
    return Status::InvalidArgument(
        "inputResponses must hold the answer to 'approval' (an ElicitResult with an action)");
  }
  std::string action = answer->at("action");
  std::optional<std::string> decision, message, reason;
  if (action == "accept") {
    const json content = answer->value("content", json::object());
    auto text = [&](const char* key) -> Result<std::optional<std::string>> {
      if (!content.contains(key) || content[key].is_null()) return std::optional<std::string>();
      if (!content[key].is_string()) {
        return Status::InvalidArgument(std::string("the answer's '") + key + "' must be text");
      }
      return std::optional<std::string>(content[key].get<std::string>());
    };
    auto d = text("decision");
    if (!d.ok()) return d.status();
    if (!*d || (**d != "approve" && **d != "reject")) {
      return Status::InvalidArgument("the answer's 'decision' must be approve or reject");
    }
    decision = **d;
    auto m = text("message");
    if (!m.ok()) return m.status();
    message = *m;
    auto r = text("reason");
    if (!r.ok()) return r.status();
    reason = *r;
  } else if (action != "decline" && action != "cancel") {
    return Status::InvalidArgument("the answer's action must be accept, decline or cancel");
  }

  Elicitation e;
  Status st = store.Write([&](WriteTx& tx) -> Status {
    auto found = tx.inbox().GetElicitation(ws, id);
    if (found.status().code() == Code::kNotFound) {
      return Status::InvalidArgument("requestState is not one this server issued");
    }
    if (!found.ok()) return found.status();
    e = std::move(*found);
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

  ActionEngine engine(store, clock, config);
  Actor by{"elicitation", token_id, ""};
  if (decision == "approve") {
    // The form's text is the draft unless the person changed it.
    return engine.Approve(ws, e.decision_id, message, by);
  }
  if (decision == "reject") return engine.Reject(ws, e.decision_id, reason, by);
  // Declined or dismissed: the draft stays pending, for the inbox.
  ActionResult r;
  Status read = store.Read([&](ReadTx& tx) -> Status {
    auto a = tx.actions().FindByDecision(ws, e.decision_id);
    if (!a.ok()) return a.status();
    r.status = a->status == ActionStatus::kPending ? "pending_approval" : "success";
    r.decision_id = e.decision_id;
    r.action_id = a->id;
    r.draft = a->draft;
    r.message = a->status == ActionStatus::kPending
                    ? "Not decided in the client: the draft waits in the inbox until " +
                          FormatTime(*a->due_at) + "."
                    : "Already " + std::string(Name(a->status)) + ".";
    return Status::Ok();
  });
  if (!read.ok()) return read;
  return r;
}

}  // namespace cortex
