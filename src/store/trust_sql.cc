#include "core/json_text.h"
#include "store/sql_tx.h"
#include "store/trust.h"

namespace cortex {

Result<std::vector<TrustSetting>> TrustReader::List(const std::string& ws) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT action_class, scope, level, ceiling, updated_at FROM trust WHERE workspace_id = ?"
      " ORDER BY action_class, scope");
  s.Bind(1, ws);
  return AllRows(s, [](const Stmt& r) {
    TrustSetting t;
    t.action_class = r.Text(0);
    t.scope = r.Text(1);
    if (!r.IsNull(2)) t.level = static_cast<int>(r.Int(2));
    if (!r.IsNull(3)) t.ceiling = static_cast<int>(r.Int(3));
    t.updated_at = r.Time(4);
    return t;
  });
}

Result<TrustStreak> TrustReader::GetStreak(const std::string& ws, const std::string& cls,
                                           const std::string& entity_id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT streak, evidence FROM trust_streaks WHERE workspace_id = ? AND action_class = ?"
      " AND entity_id = ?");
  s.Bind(1, ws).Bind(2, cls).Bind(3, entity_id);
  Status st;
  TrustStreak out;
  if (s.Step(&st)) {
    out.streak = s.Int(0);
    out.evidence = ParseStoredJson(s.Text(1)).get<std::vector<std::string>>();
  }
  CORTEX_RETURN_IF_ERROR(st);
  return out;
}

Status TrustWriter::Set(const std::string& ws, const TrustSetting& t) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO trust (workspace_id, action_class, scope, level, ceiling, updated_at)"
      " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (workspace_id, action_class, scope) DO UPDATE"
      " SET level = excluded.level, ceiling = excluded.ceiling, updated_at = "
      "excluded.updated_at");
  std::optional<int64_t> level, ceiling;
  if (t.level) level = *t.level;
  if (t.ceiling) ceiling = *t.ceiling;
  return s.Bind(1, ws)
      .Bind(2, t.action_class)
      .Bind(3, t.scope)
      .Bind(4, level)
      .Bind(5, ceiling)
      .Bind(6, t.updated_at)
      .Run();
}

Status TrustWriter::SetStreak(const std::string& ws, const std::string& cls,
                              const std::string& entity_id, const TrustStreak& t) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  std::string evidence = DumpJson(nlohmann::json(t.evidence));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO trust_streaks (workspace_id, action_class, entity_id, streak, evidence)"
      " VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace_id, action_class, entity_id) DO UPDATE"
      " SET streak = excluded.streak, evidence = excluded.evidence");
  return s.Bind(1, ws).Bind(2, cls).Bind(3, entity_id).Bind(4, t.streak).Bind(5, evidence).Run();
}

}  // namespace cortex
