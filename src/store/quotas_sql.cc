#include "store/quotas.h"
#include "store/sql_tx.h"

namespace cortex {

Result<QuotasReader::InferenceUse> QuotasReader::InferenceUnits(const std::string& ws,
                                                                const std::string& token_id,
                                                                const std::string& day) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT COALESCE(SUM(units), 0), COALESCE(SUM(units) FILTER (WHERE token_id = ?), 0)"
      " FROM inference_usage WHERE workspace_id = ? AND day = ?");
  s.Bind(1, token_id).Bind(2, ws).Bind(3, day);
  Status st;
  InferenceUse use;
  if (s.Step(&st)) use = {s.Int(0), s.Int(1)};
  CORTEX_RETURN_IF_ERROR(st);
  return use;
}

Result<std::vector<std::pair<std::string, int64_t>>> QuotasReader::Overrides(
    const std::string& ws) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  using Overrides = std::vector<std::pair<std::string, int64_t>>;
  return s_.Remembered(&StableRows::quotas, ws, [&]() -> Result<Overrides> {
    Stmt s = s_.conn.Prepare(
        "SELECT name, value FROM quota_limits WHERE workspace_id = ? ORDER BY name");
    s.Bind(1, ws);
    return AllRows(s, [](const Stmt& r) { return std::make_pair(r.Text(0), r.Int(1)); });
  });
}

Status QuotasWriter::AddInferenceUnits(const std::string& ws, const std::string& token_id,
                                       const std::string& day, int64_t units) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO inference_usage (workspace_id, day, token_id, units) VALUES (?, ?, ?, ?)"
      " ON CONFLICT (workspace_id, day, token_id) DO UPDATE SET units = inference_usage.units + "
      "excluded.units");
  return s.Bind(1, ws).Bind(2, day).Bind(3, token_id).Bind(4, units).Run();
}

Status QuotasWriter::SetOverride(const std::string& ws, const std::string& name,
                                 std::optional<int64_t> value) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  if (!value) {
    Stmt s = s_.conn.Prepare("DELETE FROM quota_limits WHERE workspace_id = ? AND name = ?");
    return s.Bind(1, ws).Bind(2, name).Run();
  }
  Stmt s = s_.conn.Prepare(
      "INSERT INTO quota_limits (workspace_id, name, value) VALUES (?, ?, ?)"
      " ON CONFLICT (workspace_id, name) DO UPDATE SET value = excluded.value");
  return s.Bind(1, ws).Bind(2, name).Bind(3, *value).Run();
}

Result<CallCounts> QuotasWriter::CountCall(const std::string& ws, const std::string& token_id,
                                           int64_t minute, int64_t day) {
  // No Enter(ws): the upsert's row locks on the counters are all the serialization
  // counting needs.
  Stmt s = s_.conn.Prepare(
      "INSERT INTO call_counts (workspace_id, subject, unit, period, calls) VALUES"
      " (?1, '*', 'minute', ?3, 1), (?1, '*', 'day', ?4, 1),"
      " (?1, ?2, 'minute', ?3, 1), (?1, ?2, 'day', ?4, 1)"
      " ON CONFLICT (workspace_id, subject, unit, period)"
      " DO UPDATE SET calls = call_counts.calls + 1 RETURNING subject, unit, calls");
  s.Bind(1, ws).Bind(2, token_id).Bind(3, minute).Bind(4, day);
  CallCounts out;
  Status st;
  while (s.Step(&st)) {
    bool workspace = s.Text(0) == "*", is_minute = s.Text(1) == "minute";
    int64_t& slot = workspace ? (is_minute ? out.workspace_minute : out.workspace_day)
                              : (is_minute ? out.token_minute : out.token_day);
    slot = s.Int(2);
  }
  CORTEX_RETURN_IF_ERROR(st);
  return out;
}

Status QuotasWriter::DeleteCallCountsBefore(int64_t minute, int64_t day) {
  Stmt s = s_.conn.Prepare(
      "DELETE FROM call_counts WHERE (unit = 'minute' AND period < ?)"
      " OR (unit = 'day' AND period < ?)");
  return s.Bind(1, minute).Bind(2, day).Run();
}

}  // namespace cortex
