#include "core/crypto.h"
#include "store/sessions.h"
#include "store/sql_tx.h"

namespace cortex {
namespace {

// What the table holds for the session id a client holds. Bound in place, so each caller
// keeps it in a local declared before its statement.
std::string Stored(const std::string& id) { return Sha256Hex(id); }

}  // namespace

Result<std::optional<McpSession>> SessionsReader::Get(const std::string& id) {
  const std::string stored = Stored(id);
  Stmt s = s_.conn.Prepare(
      "SELECT workspace_id, created_at, last_used, client_elicits, log_level FROM mcp_sessions"
      " WHERE id = ?");
  s.Bind(1, stored);
  Status st;
  if (!s.Step(&st)) {
    if (!st.ok()) return st;
    return std::optional<McpSession>();
  }
  return std::optional(McpSession{id, s.Text(0), s.Time(1), s.Time(2), s.Int(3) != 0, s.Text(4)});
}

Result<int64_t> SessionsReader::Count(TimePoint since) {
  Stmt s = s_.conn.Prepare("SELECT count(*) FROM mcp_sessions WHERE last_used >= ?");
  s.Bind(1, since);
  Status st;
  int64_t n = s.Step(&st) ? s.Int(0) : 0;
  CORTEX_RETURN_IF_ERROR(st);
  return n;
}

Result<SessionsReader::Counts> SessionsReader::CountFor(TimePoint since, const std::string& ws,
                                                        const std::string& token_id) {
  Counts out;
  auto total = Count(since);
  if (!total.ok()) return total.status();
  out.total = *total;
  // Each on its own index: (workspace_id, last_used), (token_id, last_used).
  Stmt w = s_.conn.Prepare(
      "SELECT count(*) FROM mcp_sessions WHERE workspace_id = ? AND last_used >= ?");
  w.Bind(1, ws).Bind(2, since);
  Status st;
  out.workspace = w.Step(&st) ? w.Int(0) : 0;
  CORTEX_RETURN_IF_ERROR(st);
  if (token_id.empty()) return out;
  Stmt t =
      s_.conn.Prepare("SELECT count(*) FROM mcp_sessions WHERE token_id = ? AND last_used >= ?");
  t.Bind(1, token_id).Bind(2, since);
  out.token = t.Step(&st) ? t.Int(0) : 0;
  CORTEX_RETURN_IF_ERROR(st);
  return out;
}

Status SessionsWriter::Insert(const McpSession& m, const std::string& token_id) {
  const std::string stored = Stored(m.id);
  Stmt s = s_.conn.Prepare(
      "INSERT INTO mcp_sessions (id, workspace_id, created_at, last_used, token_id,"
      " client_elicits) VALUES (?, ?, ?, ?, ?, ?)");
  return s.Bind(1, stored)
      .Bind(2, m.workspace_id)
      .Bind(3, m.created_at)
      .Bind(4, m.last_used)
      .Bind(5, token_id)
      .Bind(6, static_cast<int64_t>(m.client_elicits ? 1 : 0))
      .Run();
}

Status SessionsWriter::Touch(const std::string& id, TimePoint at) {
  const std::string stored = Stored(id);
  Stmt s = s_.conn.Prepare("UPDATE mcp_sessions SET last_used = ? WHERE id = ? AND last_used < ?");
  return s.Bind(1, at).Bind(2, stored).Bind(3, at).Run();
}

Result<std::vector<std::string>> SessionsReader::Subscriptions(const std::string& id) {
  const std::string stored = Stored(id);
  Stmt s = s_.conn.Prepare(
      "SELECT uri FROM mcp_subscriptions WHERE session_id = ? ORDER BY created_at, uri");
  s.Bind(1, stored);
  std::vector<std::string> out;
  Status st;
  while (s.Step(&st)) out.push_back(s.Text(0));
  CORTEX_RETURN_IF_ERROR(st);
  return out;
}

Result<bool> SessionsWriter::Subscribe(const std::string& ws, const std::string& id,
                                       const std::string& uri, TimePoint at) {
  const std::string stored = Stored(id);
  Stmt owner = s_.conn.Prepare("SELECT 1 FROM mcp_sessions WHERE id = ? AND workspace_id = ?");
  owner.Bind(1, stored).Bind(2, ws);
  Status st;
  if (!owner.Step(&st)) {
    CORTEX_RETURN_IF_ERROR(st);
    return false;
  }
  Stmt s = s_.conn.Prepare(
      "INSERT INTO mcp_subscriptions (session_id, uri, created_at) VALUES (?, ?, ?)"
      " ON CONFLICT (session_id, uri) DO NOTHING");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, stored).Bind(2, uri).Bind(3, at).Run());
  return true;
}

Status SessionsWriter::Unsubscribe(const std::string& id, const std::string& uri) {
  const std::string stored = Stored(id);
  Stmt s = s_.conn.Prepare("DELETE FROM mcp_subscriptions WHERE session_id = ? AND uri = ?");
  return s.Bind(1, stored).Bind(2, uri).Run();
}

Result<bool> SessionsWriter::SetLogLevel(const std::string& ws, const std::string& id,
                                         const std::string& level) {
  const std::string stored = Stored(id);
  Stmt s =
      s_.conn.Prepare("UPDATE mcp_sessions SET log_level = ? WHERE id = ? AND workspace_id = ?");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, level).Bind(2, stored).Bind(3, ws).Run());
  return s_.conn.Changes() == 1;
}

Result<bool> SessionsWriter::Delete(const std::string& ws, const std::string& id) {
  const std::string stored = Stored(id);
  Stmt s = s_.conn.Prepare("DELETE FROM mcp_sessions WHERE id = ? AND workspace_id = ?");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, stored).Bind(2, ws).Run());
  if (s_.conn.Changes() != 1) return false;
  Stmt subs = s_.conn.Prepare("DELETE FROM mcp_subscriptions WHERE session_id = ?");
  CORTEX_RETURN_IF_ERROR(subs.Bind(1, stored).Run());
  return true;
}

Status SessionsWriter::DeleteIdle(TimePoint before) {
  Stmt s = s_.conn.Prepare("DELETE FROM mcp_sessions WHERE last_used < ?");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, before).Run());
  Stmt subs = s_.conn.Prepare(
      "DELETE FROM mcp_subscriptions WHERE session_id NOT IN (SELECT id FROM mcp_sessions)");
  return subs.Run();
}

}  // namespace cortex
