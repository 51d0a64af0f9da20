#include "store/actions.h"
#include "store/sql_tx.h"

namespace cortex {

namespace {
constexpr const char* kActionSelect =
    "SELECT id, workspace_id, action_class, entity_id, recipient, status, level, urgent,"
    " message, tone, context, draft, decision_id, due_at, created_at, updated_at, subject,"
    " in_reply_to FROM actions";

Action ActionRow(const Stmt& s) {
  Action a;
  a.id = s.Text(0);
  a.workspace_id = s.Text(1);
  a.action_class = s.Text(2);
  a.entity_id = s.Text(3);
  a.recipient = s.Text(4);
  a.status = s.As<ActionStatus>(5);
  a.level = static_cast<int>(s.Int(6));
  a.urgent = s.Int(7) != 0;
  a.message = s.Text(8);
  a.tone = s.Text(9);
  a.context = s.Text(10);
  a.draft = s.Text(11);
  a.decision_id = s.Text(12);
  a.due_at = s.OptTime(13);
  a.created_at = s.Time(14);
  a.updated_at = s.Time(15);
  a.subject = s.Text(16);
  a.in_reply_to = s.Text(17);
  return a;
}
}  // namespace

Result<Action> ActionsReader::Get(const std::string& ws, const std::string& id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  static const std::string sql = kActionSelect + std::string(" WHERE id = ? AND workspace_id = ?");
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, id).Bind(2, ws);
  return OneRow(s, "no action " + id, ActionRow);
}

Result<Action> ActionsReader::FindByDecision(const std::string& ws,
                                             const std::string& decision_id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  static const std::string sql =
      kActionSelect + std::string(" WHERE workspace_id = ? AND decision_id = ?");
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, ws).Bind(2, decision_id);
  return OneRow(s, "no action for decision " + decision_id, ActionRow);
}

Result<std::vector<Action>> ActionsReader::Due(TimePoint t, int limit) {
  static const std::string sql =
      kActionSelect +
      std::string(" WHERE due_at IS NOT NULL AND due_at <= ? ORDER BY due_at LIMIT ?");
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, t).Bind(2, static_cast<int64_t>(limit));
  return AllRows(s, ActionRow);
}

Status ActionsWriter::Insert(const Action& a) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(a.workspace_id));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO actions (id, workspace_id, action_class, entity_id, recipient, status, level,"
      " urgent, message, tone, context, draft, decision_id, due_at, created_at, updated_at,"
      " subject, in_reply_to) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  return s.Bind(1, a.id)
      .Bind(2, a.workspace_id)
      .Bind(3, a.action_class)
      .Bind(4, a.entity_id)
      .Bind(5, a.recipient)
      .Bind(6, a.status)
      .Bind(7, static_cast<int64_t>(a.level))
      .Bind(8, static_cast<int64_t>(a.urgent ? 1 : 0))
      .Bind(9, a.message)
      .Bind(10, a.tone)
      .Bind(11, a.context)
      .Bind(12, a.draft)
      .Bind(13, a.decision_id)
      .Bind(14, a.due_at)
      .Bind(15, a.created_at)
      .Bind(16, a.updated_at)
      .Bind(17, a.subject)
      .Bind(18, a.in_reply_to)
      .Run();
}

Status ActionsWriter::Transition(const std::string& ws, const std::string& id, ActionStatus from,
                                 ActionStatus to, const std::optional<std::string>& draft,
                                 TimePoint at) {
  if (!IsLegalMove(from, to)) {
    return Status::Internal("action " + id + " cannot move from " + std::string(Name(from)) +
                            " to " + std::string(Name(to)));
  }
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "UPDATE actions SET status = ?, draft = coalesce(?, draft), due_at = NULL, updated_at = ?"
      " WHERE id = ? AND workspace_id = ? AND status = ?");
  CORTEX_RETURN_IF_ERROR(
      s.Bind(1, to).Bind(2, draft).Bind(3, at).Bind(4, id).Bind(5, ws).Bind(6, from).Run());
  if (s_.conn.Changes() == 1) return Status::Ok();
  return Status::Conflict("action " + id + " is not " + std::string(Name(from)));
}

Result<std::optional<IdempotentCall>> ActionsReader::FindIdempotent(const std::string& ws,
                                                                    const std::string& token_id,
                                                                    const std::string& key) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT args_hash, result FROM idempotency_keys"
      " WHERE workspace_id = ? AND token_id = ? AND idem_key = ?");
  s.Bind(1, ws).Bind(2, token_id).Bind(3, key);
  auto call = OneRow(s, "", [](const Stmt& r) { return IdempotentCall{r.Text(0), r.Text(1)}; });
  if (call.ok()) return std::optional<IdempotentCall>(std::move(*call));
  if (call.status().code() == Code::kNotFound) return std::optional<IdempotentCall>();
  return call.status();
}

Result<bool> ActionsWriter::RememberIdempotent(const std::string& ws, const std::string& token_id,
                                               const std::string& key, const IdempotentCall& call,
                                               TimePoint at) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO idempotency_keys (workspace_id, token_id, idem_key, args_hash, result,"
      " created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, ws)
                             .Bind(2, token_id)
                             .Bind(3, key)
                             .Bind(4, call.args_hash)
                             .Bind(5, call.result_json)
                             .Bind(6, at)
                             .Run());
  return s_.conn.Changes() == 1;
}

Status ActionsWriter::DeleteIdempotentBefore(TimePoint t) {
  Stmt s = s_.conn.Prepare("DELETE FROM idempotency_keys WHERE created_at < ?");
  return s.Bind(1, t).Run();
}

}  // namespace cortex
