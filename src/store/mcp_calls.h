// The MCP calls area: what a tools/call that waits on its client keeps between messages
// (the requests a 2025-11-25 call sent its client mid-call). Rows belong to a workspace;
// every look-up names it, so another workspace's id is simply not found.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/states.h"
#include "store/tx.h"

namespace cortex {

// One round of requests a 2025-11-25 tools/call sent its client (protocol/mcp_ask.cc).
struct ClientRequestRound {
  std::string id;  // creq_...
  std::string workspace_id;
  std::string session_id;  // the session's stored id (SHA-256 of the one the client holds)
  std::string token_id;    // the token the call was made with: only it may answer
  nlohmann::json pending = nlohmann::json::array();     // keys not answered yet
  nlohmann::json responses = nlohmann::json::object();  // key -> the client's result
  TimePoint created_at;
  TimePoint expires_at;
};

// A task of the io.modelcontextprotocol/tasks extension (engines/tasks/approval_tasks.h).
struct McpTask {
  std::string id;  // task_...
  std::string workspace_id;
  std::string token_id;  // the token whose call created it
  std::string tool;
  std::string decision_id;  // the draft it follows, or ""
  TaskStatus status = TaskStatus::kWorking;
  std::string status_message;
  nlohmann::json result;  // completed: the tool's result (an ActionResult, as JSON)
  nlohmann::json error;   // failed: the JSON-RPC error; null otherwise
  TimePoint created_at;
  TimePoint updated_at;
  TimePoint expires_at;
  // A task a TaskRunner runs (engines/tasks/task_runner.h); defaults for a draft's task.
  // The call's arguments (GetTask: only if asked for; {} once the task has ended).
  nlohmann::json arguments = nlohmann::json::object();
  int64_t scopes = 0;                                         // the creating token's scopes
  nlohmann::json input_requests = nlohmann::json::object();   // input_required: unanswered
  nlohmann::json input_responses = nlohmann::json::object();  // the answers so far
  std::string request_state;  // the tool's state between its rounds of input
  std::string instance_id;    // the instance running it, "" when none does
};

class McpCallsReader {
 public:
  explicit McpCallsReader(TxState& s) : s_(s) {}
  // Round `id` of `ws`. NotFound if none.
  Result<ClientRequestRound> GetRound(const std::string& ws, const std::string& id);
  // Task `id` of `ws`. NotFound if none. Its `arguments` are read only when asked for:
  // they may be megabytes (an episode.ingest's batch), and a tasks/get needs none of them.
  Result<McpTask> GetTask(const std::string& ws, const std::string& id,
                          bool with_arguments = false);
  // The tasks instance `instance` runs (TaskRunner: those no longer working were cancelled
  // or failed elsewhere), without their arguments.
  Result<std::vector<McpTask>> TasksOfInstance(const std::string& instance);
  // Whether FailTasksOf("", dead_before, ...) would fail any task (an idle runner looks
  // before it writes).
  Result<bool> AnyDeadTasks(TimePoint dead_before);

 protected:
  TxState& s_;
};

class McpCallsWriter : public McpCallsReader {
 public:
  using McpCallsReader::McpCallsReader;
  Status InsertRound(const ClientRequestRound& r);
  // Records the response to `key` of round `id` of `ws`: false if the key is not pending
  // (answered already, also by a concurrent answer on PostgreSQL, or never asked).
  Result<bool> AnswerRound(const std::string& ws, const std::string& id, const std::string& key,
                           const nlohmann::json& response);
  Status InsertTask(const McpTask& t);
  // Moves task `t.id` (of t.workspace_id) from `prev` (as read: its status and answers) to
  // t's status, message, result, error, input requests and answers, request state and
  // instance: false if it no longer is as `prev` (another instance moved it first). A task
  // that ends (completed, failed, cancelled) forgets its arguments.
  Result<bool> UpdateTask(const McpTask& t, const McpTask& prev);
  // The statusMessage of task `id` of `ws` while `instance` runs it (working): `message`,
  // moved at `now`. Nothing once it has moved on, or another instance has it.
  Status NoteTaskProgress(const std::string& ws, const std::string& id, const std::string& instance,
                          const std::string& message, TimePoint now);
  // Task `id` of `ws` is no longer run by an instance.
  Status ReleaseTask(const std::string& ws, const std::string& id);
  // Records that instance `instance` is alive at `now`.
  Status Heartbeat(const std::string& instance, TimePoint now);
  // Fails (status failed, `message`, `error` JSON) the working tasks of `instance`, or,
  // with `instance` empty, those not moved since `dead_before` of every instance whose last
  // heartbeat is before `dead_before` (or that has none: it stopped already, or was idle
  // until the task started; it beats from then on), and forgets those instances (their
  // rows keep instance_id: one that was alive after all sees its tasks failed and stops
  // them). Returns how many tasks it failed.
  Result<int64_t> FailTasksOf(const std::string& instance, TimePoint dead_before, TimePoint now,
                              const std::string& message, const nlohmann::json& error);
  // Drops rounds and tasks that expired before `before`.
  Status DeleteRoundsBefore(TimePoint before);
};

inline McpCallsReader ReadTx::calls() const { return McpCallsReader(s_); }
inline McpCallsWriter WriteTx::calls() const { return McpCallsWriter(s_); }

}  // namespace cortex
