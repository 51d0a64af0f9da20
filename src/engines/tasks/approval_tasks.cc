#include "engines/tasks/approval_tasks.h"

#include "core/crypto.h"
#include "core/json_text.h"
#include "core/time.h"
#include "engines/actions/elicitation.h"
#include "store/actions.h"

namespace cortex {
namespace {

using json = nlohmann::json;

Result<McpTask> Find(Store& store, const Clock& clock, const std::string& ws, const std::string& id,
                     bool with_arguments = false) {
  McpTask t;
  CORTEX_RETURN_IF_ERROR(store.Read([&](ReadTx& tx) -> Status {
    auto found = tx.calls().GetTask(ws, id, with_arguments);
    if (!found.ok()) return found.status();
    t = std::move(*found);
    return Status::Ok();
  }));
  if (clock.Now() >= t.expires_at) return Status::NotFound("no task " + id);
  return t;
}

// Moves `t` from `from` to its new state; if another instance moved it first, reads it
// again.
Result<McpTask> Move(Store& store, const Clock& clock, McpTask t, const McpTask& from) {
  t.updated_at = clock.Now();
  bool moved = false;
  CORTEX_RETURN_IF_ERROR(store.Write([&](WriteTx& tx) -> Status {
    auto m = tx.calls().UpdateTask(t, from);
    if (!m.ok()) return m.status();
    moved = *m;
    return Status::Ok();
  }));
  if (moved) return t;
  return Find(store, clock, t.workspace_id, t.id);
}

}  // namespace

Result<McpTask> CreateApprovalTask(Store& store, const Clock& clock, const std::string& ws,
                                   const std::string& token_id, const std::string& tool,
                                   const ActionResult& pending) {
  McpTask t;
  t.id = "task_" + RandomHex(16);
  t.workspace_id = ws;
  t.token_id = token_id;
  t.tool = tool;
  t.decision_id = pending.decision_id;
  t.status = TaskStatus::kInputRequired;
  t.status_message = pending.message + " (decision " + pending.decision_id + ")";
  t.created_at = t.updated_at = clock.Now();
  t.expires_at = t.created_at + kTaskLifetime;
  CORTEX_RETURN_IF_ERROR(store.Write([&](WriteTx& tx) { return tx.calls().InsertTask(t); }));
  return t;
}

Result<McpTask> ReadTask(Store& store, const Clock& clock, const std::string& ws,
                         const std::string& id) {
  auto t = Find(store, clock, ws, id);
  if (!t.ok() || IsFinal(t->status) || t->decision_id.empty()) return t;
  Action a;
  CORTEX_RETURN_IF_ERROR(store.Read([&](ReadTx& tx) -> Status {
    auto found = tx.actions().FindByDecision(ws, t->decision_id);
    if (!found.ok()) return found.status();
    a = std::move(*found);
    return Status::Ok();
  }));
  if (a.status == ActionStatus::kPending) return t;
  McpTask next = *t;
  ActionResult r;
  r.decision_id = a.decision_id;
  r.action_id = a.id;
  r.draft = a.draft;
  r.level = a.level;
  switch (a.status) {
    case ActionStatus::kExecuted:
    case ActionStatus::kDelivered:
      next.status = TaskStatus::kCompleted;
      r.outcome = ActionOutcome::kSuccess;
      r.message = a.status == ActionStatus::kDelivered
                      ? "Approved and delivered to " + a.recipient + "."
                      : "Approved: sending to " + a.recipient + ".";
      next.status_message = r.message;
      next.result = ParseStoredJson(ActionResultJson(r));
      break;
    case ActionStatus::kFailed:
      // Approved, but the delivery failed: the tool's result says so (a tool error).
      next.status = TaskStatus::kCompleted;
      r.outcome = ActionOutcome::kError;
      r.error = "delivery_failed";
      r.message = "Approved, but delivery to " + a.recipient + " failed.";
      next.status_message = r.message;
      next.result = ParseStoredJson(ActionResultJson(r));
      break;
    default:  // rejected, expired, refused
      next.status = TaskStatus::kCancelled;
      next.status_message = "The draft was " + std::string(Name(a.status)) +
                            ": nothing was sent (decision " + a.decision_id + ").";
      break;
  }
  return Move(store, clock, std::move(next), *t);
}

Result<json> TaskInputRequests(Store& store, const std::string& ws, const McpTask& task) {
  if (task.decision_id.empty()) return task.input_requests;
  auto form = ApprovalRequest(store, ws, task.decision_id);
  if (!form.ok()) return form.status();
  return json{{kApprovalInput, std::move(*form)}};
}

Status UpdateTask(Store& store, const Clock& clock, const ActionConfig& config,
                  const std::string& ws, const std::string& token_id, bool may_approve,
                  const std::string& id, const json& input_responses) {
  auto t = ReadTask(store, clock, ws, id);
  if (!t.ok()) return t.status();
  if (t->status != TaskStatus::kInputRequired || !input_responses.is_object() ||
      !input_responses.contains(kApprovalInput) || t->decision_id.empty()) {
    return Status::Ok();  // nothing it asks for: ignored
  }
  if (!may_approve || !config.approve_in_client) {
    return Status::InvalidArgument(
        "only a person's token (scope approve) may decide this draft; it waits in the inbox "
        "(decision " +
        t->decision_id + ")");
  }
  auto decided = DecideByForm(store, clock, config, ws, t->decision_id,
                              Actor{"mcp_task", token_id, ""}, input_responses[kApprovalInput]);
  if (!decided.ok() && decided.status().code() != Code::kConflict) return decided.status();
  // Decided (or decided elsewhere first): the next tasks/get shows where it stands.
  return Status::Ok();
}

Result<std::optional<McpTask>> AnswerTask(Store& store, const Clock& clock, const std::string& ws,
                                          const std::string& id, const json& input_responses,
                                          const std::string& instance_id) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto t = Find(store, clock, ws, id, /*with_arguments=*/true);  // to run it again
    if (!t.ok()) return t.status();
    if (t->status != TaskStatus::kInputRequired || !t->decision_id.empty() ||
        !input_responses.is_object()) {
      return std::optional<McpTask>();  // nothing it asks for: ignored
    }
    McpTask next = *t;
    bool any = false;
    for (const auto& [key, answer] : input_responses.items()) {
      if (!next.input_requests.contains(key)) continue;  // not asked (or answered): ignored
      next.input_requests.erase(key);
      next.input_responses[key] = answer;
      any = true;
    }
    if (!any) return std::optional<McpTask>();
    bool resume = next.input_requests.empty();
    if (resume) {
      next.status = TaskStatus::kWorking;
      next.status_message.clear();
      next.instance_id = instance_id;
    }
    next.updated_at = clock.Now();
    bool moved = false;
    CORTEX_RETURN_IF_ERROR(store.Write([&](WriteTx& tx) -> Status {
      auto m = tx.calls().UpdateTask(next, *t);
      if (!m.ok()) return m.status();
      moved = *m;
      return Status::Ok();
    }));
    if (moved) return resume ? std::optional<McpTask>(std::move(next)) : std::nullopt;
    // Answered or cancelled concurrently: look again.
  }
  return Status::Unavailable("task " + id + " is being answered concurrently; retry");
}

Status CancelTask(Store& store, const Clock& clock, const std::string& ws, const std::string& id) {
  auto t = ReadTask(store, clock, ws, id);
  if (!t.ok()) return t.status();
  if (IsFinal(t->status)) return Status::Ok();
  McpTask next = *t;
  next.status = TaskStatus::kCancelled;
  next.status_message = t->decision_id.empty()
                            ? "Cancelled by the client."
                            : "Cancelled by the client; the draft still waits in the inbox "
                              "(decision " +
                                  t->decision_id + ").";
  auto moved = Move(store, clock, std::move(next), *t);
  return moved.status();
}

json TaskJson(const McpTask& task) {
  json j = {{"taskId", task.id},
            {"status", Name(task.status)},
            {"createdAt", FormatTime(task.created_at)},
            {"lastUpdatedAt", FormatTime(task.updated_at)},
            {"ttlMs", std::chrono::duration_cast<std::chrono::milliseconds>(kTaskLifetime).count()},
            {"pollIntervalMs", kTaskPollInterval.count()}};
  if (!task.status_message.empty()) j["statusMessage"] = task.status_message;
  return j;
}

}  // namespace cortex
