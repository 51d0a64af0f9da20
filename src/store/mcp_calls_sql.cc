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
std::string OptJson(const json& v) { return v.is_null() ? std::string() : DumpJson(v); }
}  // namespace

Result<McpTask> McpCallsReader::GetTask(const std::string& ws, const std::string& id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT id, workspace_id, token_id, tool, decision_id, status, status_message, result,"
      " error, created_at, updated_at, expires_at FROM mcp_tasks WHERE id = ? AND"
      " workspace_id = ?");
  s.Bind(1, id).Bind(2, ws);
  return OneRow(s, "no task " + id, [](const Stmt& r) {
    return McpTask{r.Text(0),
                   r.Text(1),
                   r.Text(2),
                   r.Text(3),
                   r.Text(4),
                   r.Text(5),
                   r.Text(6),
                   r.IsNull(7) ? json() : ParseStoredJson(r.Text(7)),
                   r.IsNull(8) ? json() : ParseStoredJson(r.Text(8)),
                   r.Time(9),
                   r.Time(10),
                   r.Time(11)};
  });
}

Status McpCallsWriter::InsertTask(const McpTask& t) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(t.workspace_id));
  const std::string result = OptJson(t.result), error = OptJson(t.error);
  std::optional<std::string> result_col, error_col;
  if (!result.empty()) result_col = result;
  if (!error.empty()) error_col = error;
  Stmt s = s_.conn.Prepare(
      "INSERT INTO mcp_tasks (id, workspace_id, token_id, tool, decision_id, status,"
      " status_message, result, error, created_at, updated_at, expires_at)"
      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
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
      .Run();
}

Result<bool> McpCallsWriter::UpdateTask(const McpTask& t, const std::string& from) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(t.workspace_id));
  const std::string result = OptJson(t.result), error = OptJson(t.error);
  std::optional<std::string> result_col, error_col;
  if (!result.empty()) result_col = result;
  if (!error.empty()) error_col = error;
  Stmt s = s_.conn.Prepare(
      "UPDATE mcp_tasks SET status = ?, status_message = ?, result = ?, error = ?,"
      " updated_at = ? WHERE id = ? AND workspace_id = ? AND status = ?");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, t.status)
                             .Bind(2, t.status_message)
                             .Bind(3, result_col)
                             .Bind(4, error_col)
                             .Bind(5, t.updated_at)
                             .Bind(6, t.id)
                             .Bind(7, t.workspace_id)
                             .Bind(8, from)
                             .Run());
  return s_.conn.Changes() == 1;
}

}  // namespace cortex
