#include <nlohmann/json.hpp>

#include "store/outbox.h"
#include "store/sql_tx.h"

namespace cortex {

Result<std::vector<OutboxItem>> OutboxReader::Due(TimePoint t, OutboxKind kind, int limit) {
  Stmt s = s_.conn.Prepare(
      "SELECT id, kind, workspace_id, recipient, body, status, attempts, next_attempt_at,"
      " last_error, created_at FROM outbox WHERE status = 'pending' AND kind = ?"
      " AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)"
      " ORDER BY next_attempt_at LIMIT ?");
  s.Bind(1, kind).Bind(2, t).Bind(3, t).Bind(4, static_cast<int64_t>(limit));
  return AllRows(s, [](const Stmt& r) {
    OutboxItem o;
    o.id = r.Text(0);
    o.kind = r.As<OutboxKind>(1);
    o.workspace_id = r.Text(2);
    o.recipient = r.Text(3);
    o.body = r.Text(4);
    o.status = r.As<OutboxStatus>(5);
    o.attempts = static_cast<int>(r.Int(6));
    o.next_attempt_at = r.Time(7);
    o.last_error = r.Text(8);
    o.created_at = r.Time(9);
    return o;
  });
}

Result<std::vector<OutboxItem>> OutboxReader::List(const std::string& ws, OutboxKind kind,
                                                   int limit) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT id, recipient, body, status, attempts, last_error, created_at FROM outbox"
      " WHERE workspace_id = ? AND kind = ? ORDER BY created_at DESC, id DESC LIMIT ?");
  s.Bind(1, ws).Bind(2, kind).Bind(3, static_cast<int64_t>(limit));
  return AllRows(s, [&](const Stmt& r) {
    OutboxItem o;
    o.id = r.Text(0);
    o.kind = kind;
    o.workspace_id = ws;
    o.recipient = r.Text(1);
    o.body = r.Text(2);
    o.status = r.As<OutboxStatus>(3);
    o.attempts = static_cast<int>(r.Int(4));
    o.last_error = r.Text(5);
    o.created_at = r.Time(6);
    return o;
  });
}

Result<std::vector<nlohmann::json>> OutboxReader::ListDelivered(const std::string& ws) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT action_id, recipient, body, delivered_at FROM delivered_messages"
      " WHERE workspace_id = ? ORDER BY delivered_at, action_id");
  s.Bind(1, ws);
  return AllRows(s, [](const Stmt& r) {
    return nlohmann::json{{"action_id", r.Text(0)},
                          {"recipient", r.Text(1)},
                          {"body", r.Text(2)},
                          {"delivered_at", FormatTime(r.Time(3))}};
  });
}

Status OutboxWriter::Insert(const OutboxItem& o) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(o.workspace_id));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO outbox (id, kind, workspace_id, recipient, body, status, attempts,"
      " next_attempt_at, lease_until, last_error, created_at, delivered_at)"
      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, NULL)");
  return s.Bind(1, o.id)
      .Bind(2, o.kind)
      .Bind(3, o.workspace_id)
      .Bind(4, o.recipient)
      .Bind(5, o.body)
      .Bind(6, o.status)
      .Bind(7, static_cast<int64_t>(o.attempts))
      .Bind(8, o.next_attempt_at)
      .Bind(9, o.last_error)
      .Bind(10, o.created_at)
      .Run();
}

Result<bool> OutboxWriter::Lease(const OutboxItem& seen, TimePoint now, TimePoint lease_until) {
  Stmt s = s_.conn.Prepare(
      "UPDATE outbox SET lease_until = ? WHERE id = ? AND status = 'pending'"
      " AND attempts = ? AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, lease_until)
                             .Bind(2, seen.id)
                             .Bind(3, static_cast<int64_t>(seen.attempts))
                             .Bind(4, now)
                             .Bind(5, now)
                             .Run());
  return s_.conn.Changes() == 1;
}

Status OutboxWriter::Update(const OutboxItem& o, std::optional<TimePoint> delivered_at) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(o.workspace_id));
  Stmt s = s_.conn.Prepare(
      "UPDATE outbox SET status = ?, attempts = ?, next_attempt_at = ?, last_error = ?,"
      " lease_until = NULL, delivered_at = ? WHERE id = ?");
  return s.Bind(1, o.status)
      .Bind(2, static_cast<int64_t>(o.attempts))
      .Bind(3, o.next_attempt_at)
      .Bind(4, o.last_error)
      .Bind(5, delivered_at)
      .Bind(6, o.id)
      .Run();
}

Result<bool> OutboxWriter::RecordDelivered(const OutboxItem& o, TimePoint at) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(o.workspace_id));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO delivered_messages (action_id, workspace_id, recipient, body,"
      " delivered_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, o.id)
                             .Bind(2, o.workspace_id)
                             .Bind(3, o.recipient)
                             .Bind(4, o.body)
                             .Bind(5, at)
                             .Run());
  return s_.conn.Changes() == 1;
}

Result<bool> OutboxReader::DigestComposed(const std::string& ws, const std::string& day) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare("SELECT 1 FROM digests WHERE workspace_id = ? AND day = ?");
  s.Bind(1, ws).Bind(2, day);
  Status st;
  bool found = s.Step(&st);
  if (!st.ok()) return st;
  return found;
}

Result<std::optional<TimePoint>> OutboxReader::LastDigestAt(const std::string& ws) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT digest_at FROM digests WHERE workspace_id = ? ORDER BY digest_at DESC LIMIT 1");
  s.Bind(1, ws);
  auto at = OneRow(s, "", [](const Stmt& r) { return r.Time(0); });
  if (at.ok()) return std::optional<TimePoint>(*at);
  if (at.status().code() == Code::kNotFound) return std::optional<TimePoint>();
  return at.status();
}

Result<bool> OutboxWriter::ClaimDigest(const std::string& ws, const std::string& day,
                                       TimePoint digest_at, const std::string& decision_id,
                                       TimePoint now) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO digests (workspace_id, day, digest_at, decision_id, created_at)"
      " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
  CORTEX_RETURN_IF_ERROR(
      s.Bind(1, ws).Bind(2, day).Bind(3, digest_at).Bind(4, decision_id).Bind(5, now).Run());
  return s_.conn.Changes() == 1;
}

Status OutboxWriter::DeleteEventsBefore(TimePoint t) {
  Stmt s = s_.conn.Prepare("DELETE FROM outbox WHERE kind = 'event' AND created_at < ?");
  return s.Bind(1, t).Run();
}

}  // namespace cortex
