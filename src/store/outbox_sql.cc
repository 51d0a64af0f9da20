#include <nlohmann/json.hpp>

#include "store/outbox.h"
#include "store/sql_tx.h"

namespace cortex {

Result<std::vector<OutboxItem>> OutboxReader::Due(TimePoint t, int limit) {
  Stmt s = s_.conn.Prepare(
      "SELECT action_id, workspace_id, recipient, body, status, attempts, next_attempt_at,"
      " last_error, created_at FROM outbox WHERE status = 'pending' AND next_attempt_at <= ?"
      " AND (lease_until IS NULL OR lease_until <= ?) ORDER BY next_attempt_at LIMIT ?");
  s.Bind(1, t).Bind(2, t).Bind(3, static_cast<int64_t>(limit));
  return AllRows(s, [](const Stmt& r) {
    OutboxItem o;
    o.action_id = r.Text(0);
    o.workspace_id = r.Text(1);
    o.recipient = r.Text(2);
    o.body = r.Text(3);
    o.status = r.As<OutboxStatus>(4);
    o.attempts = static_cast<int>(r.Int(5));
    o.next_attempt_at = r.Time(6);
    o.last_error = r.Text(7);
    o.created_at = r.Time(8);
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
      "INSERT INTO outbox (action_id, workspace_id, recipient, body, status, attempts,"
      " next_attempt_at, lease_until, last_error, created_at, delivered_at)"
      " VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, NULL)");
  return s.Bind(1, o.action_id)
      .Bind(2, o.workspace_id)
      .Bind(3, o.recipient)
      .Bind(4, o.body)
      .Bind(5, o.status)
      .Bind(6, static_cast<int64_t>(o.attempts))
      .Bind(7, o.next_attempt_at)
      .Bind(8, o.last_error)
      .Bind(9, o.created_at)
      .Run();
}

Result<bool> OutboxWriter::Lease(const OutboxItem& seen, TimePoint now, TimePoint lease_until) {
  Stmt s = s_.conn.Prepare(
      "UPDATE outbox SET lease_until = ? WHERE action_id = ? AND status = 'pending'"
      " AND attempts = ? AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, lease_until)
                             .Bind(2, seen.action_id)
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
      " lease_until = NULL, delivered_at = ? WHERE action_id = ?");
  return s.Bind(1, o.status)
      .Bind(2, static_cast<int64_t>(o.attempts))
      .Bind(3, o.next_attempt_at)
      .Bind(4, o.last_error)
      .Bind(5, delivered_at)
      .Bind(6, o.action_id)
      .Run();
}

Result<bool> OutboxWriter::RecordDelivered(const OutboxItem& o, TimePoint at) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(o.workspace_id));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO delivered_messages (action_id, workspace_id, recipient, body,"
      " delivered_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, o.action_id)
                             .Bind(2, o.workspace_id)
                             .Bind(3, o.recipient)
                             .Bind(4, o.body)
                             .Bind(5, at)
                             .Run());
  return s_.conn.Changes() == 1;
}

}  // namespace cortex
