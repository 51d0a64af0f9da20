#include <algorithm>
#include <tuple>

#include "store/notifications.h"
#include "store/sql_tx.h"

namespace cortex {

namespace {
constexpr const char* kNotificationSelect =
    "SELECT id, workspace_id, episode_id, decision_id, entity_id, triage_class, surface_at,"
    " created_at FROM notifications";

Notification NotificationRow(const Stmt& s) {
  return Notification{s.Text(0),    s.Text(1),    s.Text(2),
                      s.Text(3),    s.OptText(4), s.As<TriageClass>(5),
                      s.OptTime(6), s.Time(7)};
}
}  // namespace

Result<Notification> NotificationsReader::Get(const std::string& ws, const std::string& id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  static const std::string sql =
      kNotificationSelect + std::string(" WHERE id = ? AND workspace_id = ?");
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, id).Bind(2, ws);
  return OneRow(s, "no notification " + id, NotificationRow);
}

Result<std::vector<Notification>> NotificationsReader::List(const std::string& ws,
                                                            std::optional<TriageClass> cls,
                                                            std::optional<TimePoint> after,
                                                            std::optional<TimePoint> until,
                                                            int limit, bool newest_first) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  std::vector<Notification> out;
  if (cls) {
    CORTEX_RETURN_IF_ERROR(Append(ws, *cls, after, until, limit, newest_first, out));
    return out;
  }
  // Any class: the first of each class (a range of notifications_by_class apiece), merged
  // (migration 10, as for decisions).
  for (TriageClass c : AllOf<TriageClass>()) {
    CORTEX_RETURN_IF_ERROR(Append(ws, c, after, until, limit, newest_first, out));
  }
  auto key = [](const Notification& n) { return std::tie(*n.surface_at, n.id); };
  std::sort(out.begin(), out.end(), [&](const Notification& a, const Notification& b) {
    return newest_first ? key(a) > key(b) : key(a) < key(b);
  });
  if (out.size() > static_cast<size_t>(limit)) out.resize(limit);
  return out;
}

Status NotificationsReader::Append(const std::string& ws, TriageClass cls,
                                   std::optional<TimePoint> after, std::optional<TimePoint> until,
                                   int limit, bool newest_first, std::vector<Notification>& out) {
  std::string sql = kNotificationSelect + std::string(
                                              " WHERE workspace_id = ? AND triage_class = ?"
                                              " AND surface_at IS NOT NULL");
  if (after) sql += " AND surface_at > ?";
  if (until) sql += " AND surface_at <= ?";
  sql += newest_first ? " ORDER BY surface_at DESC, id DESC" : " ORDER BY surface_at, id";
  sql += " LIMIT ?";
  Stmt s = s_.conn.Prepare(sql);
  int i = 1;
  s.Bind(i++, ws);
  s.Bind(i++, cls);
  if (after) s.Bind(i++, *after);
  if (until) s.Bind(i++, *until);
  s.Bind(i++, static_cast<int64_t>(limit));
  Status st;
  while (s.Step(&st)) out.push_back(NotificationRow(s));
  return st;
}

Status NotificationsWriter::Insert(const Notification& n) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(n.workspace_id));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO notifications (id, workspace_id, episode_id, decision_id, entity_id,"
      " triage_class, surface_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  return s.Bind(1, n.id)
      .Bind(2, n.workspace_id)
      .Bind(3, n.episode_id)
      .Bind(4, n.decision_id)
      .Bind(5, n.entity_id)
      .Bind(6, n.triage_class)
      .Bind(7, n.surface_at)
      .Bind(8, n.created_at)
      .Run();
}

}  // namespace cortex
