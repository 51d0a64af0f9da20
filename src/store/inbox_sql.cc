#include "store/inbox.h"
#include "store/sql_tx.h"

namespace cortex {

Result<InboxSession> InboxReader::FindSession(const std::string& secret_hash) {
  Stmt s = s_.conn.Prepare(
      "SELECT id, workspace_id, secret_hash, link_id, created_at, expires_at, ended_at"
      " FROM inbox_sessions WHERE secret_hash = ?");
  s.Bind(1, secret_hash);
  return OneRow(s, "no such inbox session", [](const Stmt& r) {
    return InboxSession{r.Text(0), r.Text(1), r.Text(2),   r.Text(3),
                        r.Time(4), r.Time(5), r.OptTime(6)};
  });
}

Status InboxWriter::InsertLink(const InboxLink& l) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(l.workspace_id));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO inbox_links (id, workspace_id, secret_hash, created_at, expires_at, used_at,"
      " secure) VALUES (?, ?, ?, ?, ?, ?, ?)");
  return s.Bind(1, l.id)
      .Bind(2, l.workspace_id)
      .Bind(3, l.secret_hash)
      .Bind(4, l.created_at)
      .Bind(5, l.expires_at)
      .Bind(6, l.used_at)
      .Bind(7, static_cast<int64_t>(l.secure ? 1 : 0))
      .Run();
}

Result<InboxLink> InboxWriter::UseLink(const std::string& secret_hash, TimePoint now) {
  InboxLink link;
  {
    Stmt s = s_.conn.Prepare(
        "SELECT id, workspace_id, secret_hash, created_at, expires_at, used_at, secure"
        " FROM inbox_links WHERE secret_hash = ?");
    s.Bind(1, secret_hash);
    auto row = OneRow(s, "unknown sign-in link", [](const Stmt& r) {
      return InboxLink{r.Text(0), r.Text(1),    r.Text(2),    r.Time(3),
                       r.Time(4), r.OptTime(5), r.Int(6) != 0};
    });
    if (!row.ok()) return row.status();
    link = std::move(*row);
  }
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(link.workspace_id));
  if (link.used_at) return Status::Conflict("this sign-in link was already used");
  if (now >= link.expires_at) return Status::Conflict("this sign-in link has expired");
  // Conditional, so that of two uses racing on PostgreSQL only one wins.
  Stmt s = s_.conn.Prepare("UPDATE inbox_links SET used_at = ? WHERE id = ? AND used_at IS NULL");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, now).Bind(2, link.id).Run());
  if (s_.conn.Changes() != 1) return Status::Conflict("this sign-in link was already used");
  link.used_at = now;
  return link;
}

Status InboxWriter::InsertSession(const InboxSession& m) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(m.workspace_id));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO inbox_sessions (id, workspace_id, secret_hash, link_id, created_at,"
      " expires_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?)");
  return s.Bind(1, m.id)
      .Bind(2, m.workspace_id)
      .Bind(3, m.secret_hash)
      .Bind(4, m.link_id)
      .Bind(5, m.created_at)
      .Bind(6, m.expires_at)
      .Bind(7, m.ended_at)
      .Run();
}

Status InboxWriter::EndSession(const std::string& ws, const std::string& id, TimePoint at) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "UPDATE inbox_sessions SET ended_at = ? WHERE workspace_id = ? AND id = ?"
      " AND ended_at IS NULL");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, at).Bind(2, ws).Bind(3, id).Run());
  return s_.conn.Changes() == 1 ? Status::Ok() : Status::NotFound("no live session " + id);
}

Status InboxWriter::InsertElicitation(const Elicitation& e) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(e.workspace_id));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO elicitations (id, workspace_id, decision_id, token_id, secret_hash,"
      " args_hash, created_at, expires_at, answered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  return s.Bind(1, e.id)
      .Bind(2, e.workspace_id)
      .Bind(3, e.decision_id)
      .Bind(4, e.token_id)
      .Bind(5, e.secret_hash)
      .Bind(6, e.args_hash)
      .Bind(7, e.created_at)
      .Bind(8, e.expires_at)
      .Bind(9, e.answered_at)
      .Run();
}

Result<Elicitation> InboxReader::GetElicitation(const std::string& ws, const std::string& id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT id, workspace_id, decision_id, token_id, secret_hash, args_hash, created_at,"
      " expires_at, answered_at, result FROM elicitations WHERE id = ? AND workspace_id = ?");
  s.Bind(1, id).Bind(2, ws);
  return OneRow(s, "no elicitation " + id, [](const Stmt& r) {
    return Elicitation{
        r.Text(0), r.Text(1), r.Text(2), r.Text(3),    r.Text(4),
        r.Text(5), r.Time(6), r.Time(7), r.OptTime(8), r.IsNull(9) ? std::string() : r.Text(9)};
  });
}

Status InboxWriter::SetElicitationResult(const std::string& id, const std::string& result) {
  Stmt s = s_.conn.Prepare("UPDATE elicitations SET result = ? WHERE id = ?");
  return s.Bind(1, result).Bind(2, id).Run();
}

Result<bool> InboxWriter::MarkElicitationAnswered(const std::string& id, TimePoint now) {
  Stmt s = s_.conn.Prepare(
      "UPDATE elicitations SET answered_at = ? WHERE id = ? AND answered_at IS NULL");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, now).Bind(2, id).Run());
  return s_.conn.Changes() == 1;
}

}  // namespace cortex
