// The tool registry: each tool declared once (name, title, description, schemas,
// annotations, required scope, handler) and listed in registration order. Arguments are
// validated against the tool's inputSchema before its handler runs.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/json_schema.h"
#include "engines/auth/tokens.h"
#include "store/store.h"
#include "tools/catalog.h"
#include "tools/tool_result.h"

namespace cortex {

// Everything a handler may use. One per call.
struct ToolContext {
  const AuthContext& auth;
  Store& store;
  const Clock& clock;
  std::string trace_id;  // trc_...
  nlohmann::json meta;   // the request's params._meta (e.g. a progressToken), or null
  // Sends a request-scoped notification (e.g. notifications/progress) ahead of the result.
  std::function<void(nlohmann::json)> notify;
  // The client can ask its user by a form (elicitation; declared in a 2026-07-28 request's
  // _meta, or at a 2025-11-25 session's initialize): the tool may answer
  // ToolReply::InputRequired. A 2026-07-28 retry carries the answers and the state.
  bool client_elicits = false;
  nlohmann::json input_responses = nullptr;  // params.inputResponses, or null
  std::string request_state = {};            // params.requestState, or empty
  // The least severe level of log notifications the client asked for (an index into
  // kLogLevels): logging/setLevel in a 2025-11-25 session, _meta's logLevel in a
  // 2026-07-28 request. -1: it asked for none.
  int log_threshold = -1;
  // Set once the client gives the call up (notifications/cancelled naming it, tasks/cancel
  // of its task): a long tool checks it (Cancelled) between steps and stops, leaving nothing
  // half-done. Null: this call cannot be cancelled.
  std::shared_ptr<std::atomic<bool>> cancelled = nullptr;
  // Told each progress report's text where no client listens for them: a task's runner
  // keeps the latest as the task's statusMessage. Null: reports go to `notify` only.
  std::function<void(std::string)> progress_note = nullptr;
};

// Whether the client has given the call up (ToolContext::cancelled).
inline bool Cancelled(const ToolContext& ctx) {
  return ctx.cancelled && ctx.cancelled->load(std::memory_order_relaxed);
}
// Sends notifications/progress for the call if the client asked for progress (a
// progressToken in the request's _meta), and tells ctx.progress_note (a task's) the report
// as text: `message`, or "progress of total". `progress` must grow from one report to the
// next; `total` and `message` may be left out.
void ReportProgress(ToolContext& ctx, double progress, std::optional<double> total = std::nullopt,
                    std::string_view message = {});

// The MCP log levels (RFC 5424 severities), least severe first.
inline constexpr const char* kLogLevels[] = {"debug", "info",     "notice", "warning",
                                             "error", "critical", "alert",  "emergency"};
// The index of `level` in kLogLevels, or -1.
int LogLevelIndex(std::string_view level);
// Sends a notifications/message to the client if it asked for `level` (ctx.log_threshold).
// REQUIRES: `level` is one of kLogLevels.
void LogToClient(ToolContext& ctx, std::string_view level, nlohmann::json data);

using ToolHandler = std::function<ToolReply(ToolContext&, const nlohmann::json& args)>;

// Whether a tool runs as a task (io.modelcontextprotocol/tasks; listed as
// execution.taskSupport): never, when the client declares the extension, or only then (a
// 2026-07-28 call without it is refused with -32021).
enum class TaskSupport { kForbidden, kOptional, kRequired };

struct ToolDef {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema;
  nlohmann::json output_schema;  // null for tools without structured output
  nlohmann::json annotations;    // e.g. {"readOnlyHint": true}
  Scope scope = kScopeRead;      // needed to call it
  // The handler may wait on the network (a model drafting a message): it must not run
  // where waiting holds up other requests (an I/O thread).
  bool calls_out = false;
  // The handler may run long (an ingest of thousands of lines, a learning pass): it runs
  // where calls_out tools run (never on an I/O thread), may be cancelled (ctx.cancelled),
  // and its progress notifications reach the client while it runs. It is not given the
  // call's workspace pass (Store::EnterWorkspace): it takes what it needs itself (an
  // ingest holds the workspace in steps).
  bool long_running = false;
  // Client capabilities the tool cannot work without (e.g. "sampling"): a 2026-07-28 call
  // from a client that did not declare them is refused with -32021.
  std::vector<std::string> required_client_capabilities = {};
  ToolHandler handler;
  // Tasks (engines/tasks/task_runner.h): for a client that declares the extension, the handler
  // runs in the background and the call answers with the task. `before_task`, if set, runs
  // first, synchronously: an InputRequired or error reply is the call's answer (rounds of
  // input before the task), any other reply lets the task start with the call's answers.
  TaskSupport task_support = TaskSupport::kForbidden;
  ToolHandler before_task = nullptr;
};

class ToolRegistry {
 public:
  // Adds a tool. InvalidArgument if the name is taken or a schema does not compile.
  Status Add(ToolDef def);

  // The tools/list entries, in registration order.
  const nlohmann::json& ListJson() const { return list_; }
  bool Has(const std::string& name) const;
  // Whether tool `name` is declared read-only (annotation readOnlyHint); false if unknown.
  bool IsReadOnly(std::string_view name) const;
  // Whether tool `name` may wait on the network (ToolDef::calls_out); false if unknown.
  bool CallsOut(std::string_view name) const;
  // ToolDef::required_client_capabilities of tool `name` (empty if unknown).
  const std::vector<std::string>& RequiredClientCapabilities(std::string_view name) const;
  // Whether any tool may (for a call whose tool is not known in advance).
  bool AnyCallsOut() const;
  // ToolDef::task_support of tool `name` (kForbidden if unknown), and whether any tool
  // supports tasks.
  TaskSupport TaskSupportOf(std::string_view name) const;
  bool AnyTaskSupport() const { return any_task_support_; }
  // Whether tool `name` may run long (ToolDef::long_running); false if unknown.
  bool LongRunning(std::string_view name) const;
  // Whether `body` (a request not yet parsed) names a long-running tool as a JSON string:
  // the transport's cheap look before it picks where the request runs.
  bool MayNameLongRunning(std::string_view body) const;

  // Calls tool `name` (REQUIRES: Has(name)): checks scope, validates `args`, runs the
  // handler. Never throws: a handler's exception becomes an internal_error result.
  // `before_task`: runs ToolDef::before_task instead (an empty Ok reply if it has none),
  // after the same checks.
  ToolReply Call(const std::string& name, const nlohmann::json& args, ToolContext& ctx,
                 bool before_task = false) const;

  // When on, every successful structured result is checked against its outputSchema, and
  // a mismatch is an internal_error (tests turn this on).
  void set_check_output(bool on) { check_output_ = on; }

  // The resources and prompts served beside the tools (tools/catalog.h).
  Catalog& catalog() { return catalog_; }
  const Catalog& catalog() const { return catalog_; }

 private:
  struct Entry {
    ToolDef def;
    JsonSchema input;
    std::optional<JsonSchema> output;
    bool read_only = false;  // annotations.readOnlyHint is true
  };
  const Entry* Find(std::string_view name) const;  // null if no tool has that name
  // Looked up by name several times per call (scope, read-only, tasks, long-running...):
  // hashed, as a string_view without a copy.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<Entry> tools_;
  std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> index_;  // into tools_
  nlohmann::json list_ = nlohmann::json::array();
  bool check_output_ = false;
  bool any_task_support_ = false;
  Catalog catalog_;
};

}  // namespace cortex
