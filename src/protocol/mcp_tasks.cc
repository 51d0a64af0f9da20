// Tasks on the 2026-07-28 wire (engines/tasks/approval_tasks.h): the CreateTaskResult a tools/call
// answers with, and tasks/get, tasks/update and tasks/cancel. Only for a request whose
// client capabilities declare the extension; every task call is the caller's workspace's
// (another workspace's task id is not found: -32602, as an unknown one).
#include <spdlog/spdlog.h>

#include "core/crypto.h"
#include "core/ids.h"
#include "core/json_text.h"
#include "engines/tasks/approval_tasks.h"
#include "protocol/mcp_parts.h"
#include "protocol/mcp_server.h"
#include "tools/action_tools.h"

namespace cortex {
namespace {

using json = nlohmann::json;

constexpr std::string_view kTaskStream = "task:";  // "task:<ws> <task id> <rpc id, JSON>"

// The 2025-11-25 Task: ttl and pollInterval (ms) instead of ttlMs and pollIntervalMs.
json LegacyTaskJson(const McpTask& task) {
  json j = TaskJson(task);
  j["ttl"] = j["ttlMs"];
  j["pollInterval"] = j["pollIntervalMs"];
  j.erase("ttlMs");
  j.erase("pollIntervalMs");
  return j;
}

// A completed task's tools/call result: a runner's task keeps it whole; a draft's task
// keeps the action's result.
json TaskResult(const McpTask& task, bool modern) {
  json r = task.decision_id.empty()
               ? task.result
               : ActionReply(ActionResultFromJson(DumpJson(task.result))).ToCallToolResult();
  if (!modern) r["_meta"] = {{"io.modelcontextprotocol/related-task", {{"taskId", task.id}}}};
  return r;
}

RpcFailure TaskFailure(const Status& st) {
  switch (st.code()) {
    case Code::kNotFound:
      return RpcFailure{{rpc::kInvalidParams, "Invalid params: unknown taskId", {}}};
    case Code::kInvalidArgument:
      return RpcFailure{{rpc::kInvalidParams, "Invalid params: " + st.message(), {}}};
    case Code::kUnavailable:
      return RpcFailure{{rpc::kInternalError, "Service unavailable: retry", {}},
                        Disposition::kUnavailable};
    default:
      spdlog::warn("task: {}", st.message());
      return RpcFailure{{rpc::kInternalError, "Internal error", {}}};
  }
}

}  // namespace

bool McpServer::DeclaresTasks(const json& params) {
  auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return false;
  auto caps = meta->find(kMetaCapabilities);
  if (caps == meta->end() || !caps->is_object()) return false;
  auto ext = caps->find("extensions");
  return ext != caps->end() && ext->is_object() && ext->contains(kTasksExtension);
}

std::optional<std::variant<json, RpcFailure>> McpServer::StartTask(const json& params,
                                                                   const AuthContext& auth,
                                                                   McpResponse& out) {
  if (!tools_.AnyTaskSupport()) return std::nullopt;  // Cortex's own tools: none does
  auto name = params.find("name");
  if (name == params.end() || !name->is_string()) return std::nullopt;
  const std::string& tool = name->get_ref<const std::string&>();
  TaskSupport support = tools_.TaskSupportOf(tool);
  if (support == TaskSupport::kForbidden) return std::nullopt;
  if (!DeclaresTasks(params)) {
    if (support == TaskSupport::kOptional) return std::nullopt;  // it runs at once
    out.tool = tool;
    out.status = "missing_capability";
    return RpcFailure{
        {rpc::kMissingRequiredClientCapability,
         std::string("Missing required client capability: extensions.") + kTasksExtension + " (" +
             tool + " runs only as a task)",
         {{"requiredCapabilities", {{"extensions", {{kTasksExtension, json::object()}}}}}}},
        Disposition::kRejected};
  }
  if (runner_ == nullptr) {
    if (support == TaskSupport::kOptional) return std::nullopt;
    out.tool = tool;
    return RpcFailure{{rpc::kInternalError, "Internal error: this server runs no tasks", {}}};
  }
  // The call's own checks first (scope, arguments, quotas), and the tool's rounds of input
  // before its task (ToolDef::before_task): a refusal or a round is the answer.
  auto gate = CallTool(params, auth, out, /*modern=*/true, false, -1, nullptr,
                       /*before_task=*/true);
  if (std::holds_alternative<RpcFailure>(gate)) return gate;
  const json& r = std::get<json>(gate);
  if (r.value("isError", false) || r.value("resultType", "") == "input_required") return gate;
  McpTask t;
  t.id = "task_" + RandomHex(16);
  t.workspace_id = auth.workspace_id;
  t.token_id = auth.token_id;
  t.tool = tool;
  t.arguments = params.value("arguments", json::object());
  t.scopes = auth.scopes;
  if (auto in = params.find("inputResponses"); in != params.end() && in->is_object()) {
    t.input_responses = *in;
  }
  t.request_state = params.value("requestState", std::string());
  t.expires_at = clock_.Now() + kTaskLifetime;
  auto started = runner_->Start(std::move(t));
  if (!started.ok()) {
    out.status = "unavailable";
    return RpcFailure{
        {rpc::kInternalError, "Service unavailable: " + started.status().message(), {}},
        Disposition::kUnavailable};
  }
  out.status = "task";
  out.text_is_structured = false;
  json result = TaskJson(*started);
  result["resultType"] = "task";
  return result;
}

TaskOutcome McpServer::RunTask(const McpTask& task,
                               const std::shared_ptr<std::atomic<bool>>& cancelled,
                               const std::function<void(std::string)>& progress) {
  AuthContext auth{task.workspace_id, "", task.token_id, static_cast<unsigned>(task.scopes)};
  std::string trace = NewId("trc_", clock_);
  ToolContext ctx{auth, store_, clock_, trace, nullptr, [](json) {}};
  // Its questions go on the task (inputRequests), answered by tasks/update.
  ctx.client_elicits = true;
  ctx.input_responses = task.input_responses.empty() ? json(nullptr) : task.input_responses;
  ctx.request_state = task.request_state;
  ctx.cancelled = cancelled;
  ctx.progress_note = progress;  // the task's statusMessage while it works
  ToolReply reply = tools_.Call(task.tool, task.arguments, ctx);
  TaskOutcome o;
  const json& body = reply.body();
  if (reply.is_invalid_params()) {
    o.kind = TaskOutcome::Kind::kFailed;
    o.message = "Invalid params: " + body.value("message", std::string());
    o.error = {{"code", rpc::kInvalidParams}, {"message", o.message}};
    return o;
  }
  if (reply.is_raw() && body.value("resultType", "") == "input_required") {
    o.kind = TaskOutcome::Kind::kInputRequired;
    o.input_requests = body.value("inputRequests", json::object());
    o.request_state = body.value("requestState", std::string());
    o.message = "Waiting for input: answer the inputRequests with tasks/update.";
    return o;
  }
  if (reply.is_error() && body.value("error", "") == "internal_error") {
    // The tool could not run (it threw, or its store failed): a protocol-level error.
    o.kind = TaskOutcome::Kind::kFailed;
    o.message = body.value("message", std::string("internal error"));
    o.error = {{"code", rpc::kInternalError}, {"message", "Internal error: " + o.message}};
    return o;
  }
  if (reply.is_error()) o.message = "The tool reported an error.";
  o.result = std::move(reply).ToCallToolResult();
  return o;
}

bool McpServer::MaybeTask(const json& params, const AuthContext& auth, const std::string& tool,
                          json& result, bool modern) {
  // A draft left waiting for a person's approval (action.communicate's pending_approval),
  // for a client that takes tasks: one that declares the extension (2026-07-28), or asks
  // for one with the call's `task` parameter (2025-11-25).
  bool wants =
      modern ? DeclaresTasks(params) : params.contains("task") && params["task"].is_object();
  if (!wants || result.value("isError", false)) return false;
  auto sc = result.find("structuredContent");
  if (sc == result.end() || !sc->is_object() ||
      sc->value("status", std::string()) != Name(ActionOutcome::kPendingApproval) ||
      sc->value("decision_id", std::string()).empty()) {
    return false;
  }
  ActionResult pending;
  pending.outcome = ActionOutcome::kPendingApproval;
  pending.decision_id = (*sc)["decision_id"];
  pending.message = sc->value("message", std::string());
  auto task = CreateApprovalTask(store_, clock_, auth.workspace_id, auth.token_id, tool, pending);
  if (!task.ok()) {
    // The draft is in the inbox all the same: the plain result says so.
    spdlog::warn("tools/call {}: no task for decision {}: {}", tool, pending.decision_id,
                 task.status().message());
    return false;
  }
  if (!modern) {
    result = {{"task", LegacyTaskJson(*task)}};
    return true;
  }
  result = TaskJson(*task);
  result["resultType"] = "task";
  return true;
}

std::optional<std::variant<json, RpcFailure>> McpServer::TaskMethod(
    const std::string& method, const json& params, const AuthContext& auth, bool modern,
    const McpRequest& req, const json& rpc_id, McpResponse& out) {
  bool known = method == "tasks/get" || method == "tasks/cancel" ||
               (modern ? method == "tasks/update" : method == "tasks/result");
  if (!known) return std::nullopt;
  if (modern && !DeclaresTasks(params)) {
    return RpcFailure{
        {rpc::kMissingRequiredClientCapability,
         std::string("Missing required client capability: extensions.") + kTasksExtension,
         {{"requiredCapabilities", {{"extensions", {{kTasksExtension, json::object()}}}}}}}};
  }
  auto id = params.find("taskId");
  if (id == params.end() || !id->is_string()) {
    return RpcFailure{{rpc::kInvalidParams, "Invalid params: \"taskId\" must be a string", {}}};
  }
  const std::string& task_id = id->get_ref<const std::string&>();
  if (method == "tasks/update") {
    json responses = params.value("inputResponses", json::object());
    if (!responses.is_object()) {
      return RpcFailure{
          {rpc::kInvalidParams, "Invalid params: inputResponses must be an object", {}}};
    }
    auto task = ReadTask(store_, clock_, auth.workspace_id, task_id);
    if (!task.ok()) return TaskFailure(task.status());
    if (task->decision_id.empty()) {
      // A runner's task: the answers go on the row; the last one queues it again, here.
      if (runner_ == nullptr) {
        return RpcFailure{{rpc::kInternalError, "Internal error: this server runs no tasks", {}}};
      }
      auto resumed =
          AnswerTask(store_, clock_, auth.workspace_id, task_id, responses, runner_->instance_id());
      if (!resumed.ok()) return TaskFailure(resumed.status());
      if (*resumed) runner_->Enqueue(std::move(**resumed));
      return json::object();
    }
    Status st = UpdateTask(store_, clock_, actions_, auth.workspace_id, auth.token_id,
                           auth.Has(kScopeApprove), task_id, responses);
    if (!st.ok()) return TaskFailure(st);
    return json::object();
  }
  if (method == "tasks/cancel") {
    Status st = CancelTask(store_, clock_, auth.workspace_id, task_id);
    if (!st.ok()) return TaskFailure(st);
    if (runner_ != nullptr) runner_->CancelLocal(task_id);  // elsewhere: seen by its poll
    if (modern) return json::object();
  }
  auto task = ReadTask(store_, clock_, auth.workspace_id, task_id);
  if (!task.ok()) return TaskFailure(task.status());
  if (!modern && method == "tasks/result") {
    if (task->status == TaskStatus::kCompleted) return TaskResult(*task, modern);
    if (task->status == TaskStatus::kCancelled || task->status == TaskStatus::kFailed) {
      return RpcFailure{{rpc::kInvalidParams,
                         "Invalid params: task " + task->id + " ended " +
                             std::string(Name(task->status)) + ": " + task->status_message,
                         {}}};
    }
    if (req.transport != McpTransport::kHttp || !req.accepts_stream) {
      return RpcFailure{{rpc::kInvalidParams,
                         "Invalid params: task " + task->id +
                             " has not finished; poll tasks/get (or accept text/event-stream "
                             "to wait for its result)",
                         {}}};
    }
    // Waits on the call's own stream until the task ends (a person decides).
    out.held_stream =
        std::string(kTaskStream) + auth.workspace_id + " " + task->id + " " + DumpJson(rpc_id);
    return json(nullptr);
  }
  if (!modern) return LegacyTaskJson(*task);
  json body = TaskJson(*task);
  if (task->status == TaskStatus::kInputRequired) {
    auto asked = TaskInputRequests(store_, auth.workspace_id, *task);
    if (!asked.ok()) return TaskFailure(asked.status());
    body["inputRequests"] = std::move(*asked);
  } else if (task->status == TaskStatus::kCompleted) {
    body["result"] = TaskResult(*task, modern);
  } else if (task->status == TaskStatus::kFailed) {
    body["error"] = task->error;
  }
  return body;
}

bool McpServer::IsTaskStream(std::string_view stream) { return stream.rfind(kTaskStream, 0) == 0; }

std::optional<std::string> McpServer::TaskStreamNext(const std::string& stream,
                                                     std::string& state) {
  if (state == "done") return std::nullopt;
  std::string_view rest = std::string_view(stream).substr(kTaskStream.size());
  size_t a = rest.find(' '), b = rest.find(' ', a + 1);
  if (a == std::string_view::npos || b == std::string_view::npos) return std::nullopt;
  auto task = ReadTask(store_, clock_, std::string(rest.substr(0, a)),
                       std::string(rest.substr(a + 1, b - a - 1)));
  if (task.ok() && !IsFinal(task->status)) {
    return std::string();  // still waiting
  }
  if (!task.ok() && task.status().code() == Code::kUnavailable) return std::string();
  json id = ParseStoredJson(std::string(rest.substr(b + 1)));
  json body;
  if (!task.ok()) {
    body = rpc::MakeError(id, TaskFailure(task.status()).error);
  } else if (task->status == TaskStatus::kCompleted) {
    body = rpc::MakeResult(id, TaskResult(*task, /*modern=*/false));
  } else {
    body = rpc::MakeError(id, {rpc::kInvalidParams,
                               "Invalid params: task " + task->id + " ended " +
                                   std::string(Name(task->status)) + ": " + task->status_message,
                               {}});
  }
  state = "done";
  return "event: message\ndata: " + DumpJson(body) + "\n\n";
}

}  // namespace cortex
