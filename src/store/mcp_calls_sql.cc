#include "core/json_text.h"
#include "store/mcp_calls.h"
#include "store/sql_tx.h"

namespace cortex {

using json = nlohmann::json;

Result<ClientRequestRound> McpCallsReader::GetRound(const std::string& ws, const std::string& id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT id, workspace_id, session_id, token_id, pending, responses, created_at,"
      " expires_at FROM mcp_client_requests WHERE id = ? AND workspace_id = ?");
  s.Bind(1, id).Bind(2, ws);
  return OneRow(s, "no client request " + id, [](const Stmt& r) {
    return ClientRequestRound{r.Text(0),
                              r.Text(1),
                              r.Text(2),
                              r.Text(3),
                              ParseStoredJson(r.Text(4)),
                              ParseStoredJson(r.Text(5)),
                              r.Time(6),
                              r.Time(7)};
  });
}

Status McpCallsWriter::InsertRound(const ClientRequestRound& r) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(r.workspace_id));
  const std::string pending = DumpJson(r.pending), responses = DumpJson(r.responses);
  Stmt s = s_.conn.Prepare(
      "INSERT INTO mcp_client_requests (id, workspace_id, session_id, token_id, pending,"
      " responses, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  return s.Bind(1, r.id)
      .Bind(2, r.workspace_id)
      .Bind(3, r.session_id)
      .Bind(4, r.token_id)
      .Bind(5, pending)
      .Bind(6, responses)
      .Bind(7, r.created_at)
      .Bind(8, r.expires_at)
      .Run();
}

Result<bool> McpCallsWriter::AnswerRound(const std::string& ws, const std::string& id,
                                         const std::string& key, const json& response) {
  auto round = GetRound(ws, id);
  if (!round.ok()) return round.status();
  json pending = json::array();
  bool found = false;
  for (const json& k : round->pending) {
    if (k == key) {
      found = true;
    } else {
      pending.push_back(k);
    }
  }
  if (!found) return false;
  json responses = round->responses;
  responses[key] = response;
  // Conditional on what was read, so that of two answers racing on PostgreSQL only one
  // lands on this state (the other sees its key gone, or retries with the new state).
  const std::string was = DumpJson(round->pending), now = DumpJson(pending),
                    answered = DumpJson(responses);
  Stmt s = s_.conn.Prepare(
      "UPDATE mcp_client_requests SET pending = ?, responses = ? WHERE id = ? AND"
      " workspace_id = ? AND pending = ?");
  CORTEX_RETURN_IF_ERROR(
      s.Bind(1, now).Bind(2, answered).Bind(3, id).Bind(4, ws).Bind(5, was).Run());
  if (s_.conn.Changes() == 1) return true;
  return Status::Unavailable("client request " + id + " was answered concurrently; retry");
}

Status McpCallsWriter::DeleteRoundsBefore(TimePoint before) {
  Stmt s = s_.conn.Prepare("DELETE FROM mcp_client_requests WHERE expires_at < ?");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, before).Run());
  Stmt t = s_.conn.Prepare("DELETE FROM mcp_tasks WHERE expires_at < ?");
  return t.Bind(1, before).Run();
}

namespace {
// A JSON column that may be NULL (a task's result and error): null is NULL.
std::optional<std::string> NullableJson(const json& v) {
  if (v.is_null()) return std::nullopt;
  return DumpJson(v);
}

// The columns TaskRow reads, in its order (a literal, joined to each statement's text),
// and after them, where asked for, `arguments`.
#define CORTEX_TASK_COLUMNS                                                               \
  "id, workspace_id, token_id, tool, decision_id, status, status_message, result, error," \
  " created_at, updated_at, expires_at, scopes, input_requests, input_responses,"         \
  " request_state, instance_id"
constexpr int kTaskArgumentsColumn = 17;

McpTask TaskRow(const Stmt& r) {
  McpTask t;
  t.id = r.Text(0);
  t.workspace_id = r.Text(1);
  t.token_id = r.Text(2);
  t.tool = r.Text(3);
  t.decision_id = r.Text(4);
  t.status = r.As<TaskStatus>(5);
  t.status_message = r.Text(6);
  t.result = r.IsNull(7) ? json() : ParseStoredJson(r.Text(7));
  t.error = r.IsNull(8) ? json() : ParseStoredJson(r.Text(8));
  t.created_at = r.Time(9);
  t.updated_at = r.Time(10);
  t.expires_at = r.Time(11);
  t.scopes = r.Int(12);
  t.input_requests = ParseStoredJson(r.Text(13));
  t.input_responses = ParseStoredJson(r.Text(14));
  t.request_state = r.Text(15);
  t.instance_id = r.Text(16);
  return t;
}

McpTask TaskRowWithArguments(const Stmt& r) {
  McpTask t = TaskRow(r);
  t.arguments = ParseStoredJson(r.Text(kTaskArgumentsColumn));
  return t;
}
}  // namespace

Result<McpTask> McpCallsReader::GetTask(const std::string& ws, const std::string& id,
                                        bool with_arguments) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(with_arguments ? "SELECT " CORTEX_TASK_COLUMNS
                                            ", arguments FROM mcp_tasks WHERE id = ? AND"
                                            " workspace_id = ?"
                                          : "SELECT " CORTEX_TASK_COLUMNS
                                            " FROM mcp_tasks WHERE id = ? AND workspace_id = ?");
  s.Bind(1, id).Bind(2, ws);
  return OneRow(s, "no task " + id, with_arguments ? TaskRowWithArguments : TaskRow);
}

Result<std::vector<McpTask>> McpCallsReader::TasksOfInstance(const std::string& instance) {
  Stmt s = s_.conn.Prepare("SELECT " CORTEX_TASK_COLUMNS " FROM mcp_tasks WHERE instance_id = ?");
  s.Bind(1, instance);
  return AllRows(s, TaskRow);
}

Result<bool> McpCallsReader::AnyDeadTasks(TimePoint dead_before) {
  Stmt s = s_.conn.Prepare(
      "SELECT 1 FROM mcp_tasks WHERE status = 'working' AND updated_at < ? AND instance_id NOT IN"
      " (SELECT id FROM mcp_task_instances WHERE heartbeat_at >= ?) LIMIT 1");
  s.Bind(1, dead_before).Bind(2, dead_before);
  Status st;
  bool found = s.Step(&st);
  CORTEX_RETURN_IF_ERROR(st);
  return found;
}

Status McpCallsWriter::NoteTaskProgress(const std::string& ws, const std::string& id,
                                        const std::string& instance, const std::string& message,
                                        TimePoint now) {
  // No Enter, as UpdateTask: a note must not wait for the batch its task is landing.
  Stmt s = s_.conn.Prepare(
      "UPDATE mcp_tasks SET status_message = ?, updated_at = ? WHERE id = ? AND workspace_id = ?"
      " AND status = 'working' AND instance_id = ?");
  return s.Bind(1, message).Bind(2, now).Bind(3, id).Bind(4, ws).Bind(5, instance).Run();
}

Status McpCallsWriter::ReleaseTask(const std::string& ws, const std::string& id) {
  Stmt s =
      s_.conn.Prepare("UPDATE mcp_tasks SET instance_id = '' WHERE id = ? AND workspace_id = ?");
  return s.Bind(1, id).Bind(2, ws).Run();
}

Status McpCallsWriter::Heartbeat(const std::string& instance, TimePoint now) {
  Stmt s = s_.conn.Prepare(
      "INSERT INTO mcp_task_instances (id, heartbeat_at) VALUES (?, ?) ON CONFLICT (id) DO"
      " UPDATE SET heartbeat_at = excluded.heartbeat_at");
  return s.Bind(1, instance).Bind(2, now).Run();
}

Result<int64_t> McpCallsWriter::FailTasksOf(const std::string& instance, TimePoint dead_before,
                                            TimePoint now, const std::string& message,
                                            const json& error) {
  const std::string error_text = DumpJson(error);
  int64_t failed = 0;
  if (!instance.empty()) {
    Stmt s = s_.conn.Prepare(
        "UPDATE mcp_tasks SET status = 'failed', status_message = ?, error = ?, updated_at = ?,"
        " instance_id = '', arguments = '{}' WHERE instance_id = ? AND status = 'working'");
    CORTEX_RETURN_IF_ERROR(
        s.Bind(1, message).Bind(2, error_text).Bind(3, now).Bind(4, instance).Run());
    failed = s_.conn.Changes();
    Stmt d = s_.conn.Prepare("DELETE FROM mcp_task_instances WHERE id = ?");
    CORTEX_RETURN_IF_ERROR(d.Bind(1, instance).Run());
    return failed;
  }
  Stmt s = s_.conn.Prepare(
      "UPDATE mcp_tasks SET status = 'failed', status_message = ?, error = ?, updated_at = ?,"
      " arguments = '{}' WHERE status = 'working' AND updated_at < ? AND instance_id NOT IN"
      " (SELECT id FROM mcp_task_instances WHERE heartbeat_at >= ?)");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, message)
                             .Bind(2, error_text)
                             .Bind(3, now)
                             .Bind(4, dead_before)
                             .Bind(5, dead_before)
                             .Run());
  failed = s_.conn.Changes();
  Stmt d = s_.conn.Prepare("DELETE FROM mcp_task_instances WHERE heartbeat_at < ?");
  CORTEX_RETURN_IF_ERROR(d.Bind(1, dead_before).Run());
  return failed;
}

Status McpCallsWriter::InsertTask(const McpTask& t) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(t.workspace_id));
  const std::optional<std::string> result_col = NullableJson(t.result),
                                   error_col = NullableJson(t.error);
  const std::string args = DumpJson(t.arguments), requests = DumpJson(t.input_requests),
                    responses = DumpJson(t.input_responses);
  Stmt s = s_.conn.Prepare("INSERT INTO mcp_tasks (" CORTEX_TASK_COLUMNS
                           ", arguments) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                           " ?, ?)");
  return s.Bind(1, t.id)
      .Bind(2, t.workspace_id)
      .Bind(3, t.token_id)
      .Bind(4, t.tool)
      .Bind(5, t.decision_id)
      .Bind(6, t.status)
      .Bind(7, t.status_message)
      .Bind(8, result_col)
      .Bind(9, error_col)
      .Bind(10, t.created_at)
      .Bind(11, t.updated_at)
      .Bind(12, t.expires_at)
      .Bind(13, t.scopes)
      .Bind(14, requests)
      .Bind(15, responses)
      .Bind(16, t.request_state)
      .Bind(17, t.instance_id)
      .Bind(18, args)
      .Run();
}

Result<bool> McpCallsWriter::UpdateTask(const McpTask& t, const McpTask& prev) {
  // No Enter (PostgreSQL's lock on the workspace's row): the WHERE below is the move's own
  // check, and a tasks/cancel must not wait for the batch its task is landing in that
  // workspace (an episode.ingest: it would be cancelled only once it had landed).
  const std::optional<std::string> result_col = NullableJson(t.result),
                                   error_col = NullableJson(t.error);
  const std::string requests = DumpJson(t.input_requests), responses = DumpJson(t.input_responses),
                    was = DumpJson(prev.input_responses);
  // An ended task's arguments are let go: nothing runs it again, and an episode.ingest's
  // are its whole batch, kept for the task's week otherwise.
  // Only the moves kTaskMoves lists (a bug, not a race: a race is the `false` below).
  if (t.status != prev.status && !IsLegalMove(prev.status, t.status)) {
    return Status::Internal("task " + t.id + " cannot move from " + std::string(Name(prev.status)) +
                            " to " + std::string(Name(t.status)));
  }
  const bool ended = IsFinal(t.status);
  static const std::string kSet =
      "UPDATE mcp_tasks SET status = ?, status_message = ?, result = ?, error = ?,"
      " updated_at = ?, input_requests = ?, input_responses = ?, request_state = ?,"
      " instance_id = ?";
  static const std::string kWhere =
      " WHERE id = ? AND workspace_id = ? AND status = ? AND input_responses = ?";
  static const std::string kMove = kSet + kWhere, kEnd = kSet + ", arguments = '{}'" + kWhere;
  Stmt s = s_.conn.Prepare(ended ? kEnd : kMove);
  CORTEX_RETURN_IF_ERROR(s.Bind(1, t.status)
                             .Bind(2, t.status_message)
                             .Bind(3, result_col)
                             .Bind(4, error_col)
                             .Bind(5, t.updated_at)
                             .Bind(6, requests)
                             .Bind(7, responses)
                             .Bind(8, t.request_state)
                             .Bind(9, t.instance_id)
                             .Bind(10, t.id)
                             .Bind(11, t.workspace_id)
                             .Bind(12, prev.status)
                             .Bind(13, was)
                             .Run());
  return s_.conn.Changes() == 1;
}

}  // namespace cortex
