#include <algorithm>
#include <functional>
#include <tuple>

#include "core/json_text.h"
#include "store/rules.h"
#include "store/sql_tx.h"

namespace cortex {

namespace {
constexpr const char* kRuleSelect =
    "SELECT id, workspace_id, name, origin, summary, definition, position, evidence, support,"
    " contradictions, hits, active, created_at, status, learned FROM rules";

Rule RuleRow(const Stmt& s) {
  Rule r;
  r.id = s.Text(0);
  r.workspace_id = s.Text(1);
  r.name = s.Text(2);
  r.origin = s.As<RuleOrigin>(3);
  r.summary = s.Text(4);
  ApplyRuleDefinitionJson(ParseStoredJson(s.Text(5)), &r);
  r.position = static_cast<int>(s.Int(6));
  r.evidence = ParseStoredJson(s.Text(7)).get<std::vector<std::string>>();
  r.support = s.Int(8);
  r.contradictions = s.Int(9);
  r.hits = s.Int(10);
  r.active = s.Int(11) != 0;
  r.created_at = s.Time(12);
  r.status = s.As<RuleStatus>(13);
  nlohmann::json learned = ParseStoredJson(s.Text(14));
  r.pattern = learned.value("pattern", "");
  if (learned.contains("contradiction_evidence"))
    r.contradiction_evidence = learned["contradiction_evidence"].get<std::vector<std::string>>();
  if (learned.contains("backtest")) r.backtest = learned["backtest"];
  r.rejected_support = learned.value("rejected_support", int64_t{0});
  r.activated_version = learned.value("activated_version", "");
  return r;
}

std::string LearnedJson(const Rule& r) {
  if (r.origin != RuleOrigin::kLearned) {
    // A person's rule: what the learner found against it (docs/learning.md).
    if (r.contradiction_evidence.empty()) return "{}";
    nlohmann::json j = nlohmann::json::object();
    j["contradiction_evidence"] = r.contradiction_evidence;
    return DumpJson(j);
  }
  nlohmann::json j = nlohmann::json::object();
  j["pattern"] = r.pattern;
  j["contradiction_evidence"] = r.contradiction_evidence;
  j["backtest"] = r.backtest;
  j["rejected_support"] = r.rejected_support;
  j["activated_version"] = r.activated_version;
  return DumpJson(j);
}
}  // namespace

Result<std::vector<Rule>> RulesReader::List(const std::string& ws, bool active_only) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  // Sorted here, not by ORDER BY: the index gives (active, position) but not the id that
  // breaks ties, so SQLite would sort in a temporary b-tree (this runs for every message
  // triaged and every action).
  static const std::string all = kRuleSelect + std::string(" WHERE workspace_id = ?");
  static const std::string active = all + " AND active = 1";
  Stmt s = s_.conn.Prepare(active_only ? active : all);
  s.Bind(1, ws);
  auto out = AllRows(s, RuleRow);
  if (!out.ok()) return out;
  std::sort(out->begin(), out->end(), [](const Rule& a, const Rule& b) {
    return std::make_tuple(!a.active, a.position, std::cref(a.id)) <
           std::make_tuple(!b.active, b.position, std::cref(b.id));
  });
  return out;
}

Result<Rule> RulesReader::Get(const std::string& ws, const std::string& id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  static const std::string sql = kRuleSelect + std::string(" WHERE workspace_id = ? AND id = ?");
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, ws).Bind(2, id);
  return OneRow(s, "no rule " + id, RuleRow);
}

Status RulesWriter::Insert(const Rule& r) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(r.workspace_id));
  std::string definition = DumpJson(RuleDefinitionJson(r));
  std::string evidence = DumpJson(nlohmann::json(r.evidence));
  std::string learned = LearnedJson(r);
  // A rule handed over as not active but with the default status is a retired one.
  RuleStatus status =
      r.status == RuleStatus::kActive && !r.active ? RuleStatus::kRetired : r.status;
  Stmt s = s_.conn.Prepare(
      "INSERT INTO rules (id, workspace_id, name, origin, summary, definition, position,"
      " evidence, support, contradictions, hits, active, created_at, retired_at, status,"
      " learned) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)");
  return s.Bind(1, r.id)
      .Bind(2, r.workspace_id)
      .Bind(3, r.name)
      .Bind(4, r.origin)
      .Bind(5, r.summary)
      .Bind(6, definition)
      .Bind(7, static_cast<int64_t>(r.position))
      .Bind(8, evidence)
      .Bind(9, r.support)
      .Bind(10, r.contradictions)
      .Bind(11, r.hits)
      .Bind(12, static_cast<int64_t>(status == RuleStatus::kActive ? 1 : 0))
      .Bind(13, r.created_at)
      .Bind(14, status)
      .Bind(15, learned)
      .Run();
}

Status RulesWriter::Update(const Rule& r, std::optional<TimePoint> retired_at) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(r.workspace_id));
  Stmt s = s_.conn.Prepare(
      "UPDATE rules SET summary = ?, definition = ?, evidence = ?, support = ?,"
      " contradictions = ?, active = ?, status = ?, learned = ?,"
      " retired_at = COALESCE(retired_at, ?) WHERE workspace_id = ? AND id = ?");
  std::string definition = DumpJson(RuleDefinitionJson(r));
  std::string evidence = DumpJson(nlohmann::json(r.evidence));
  std::string learned = LearnedJson(r);
  s.Bind(1, r.summary)
      .Bind(2, definition)
      .Bind(3, evidence)
      .Bind(4, r.support)
      .Bind(5, r.contradictions)
      .Bind(6, static_cast<int64_t>(r.status == RuleStatus::kActive ? 1 : 0))
      .Bind(7, r.status)
      .Bind(8, learned);
  if (retired_at) {
    s.Bind(9, *retired_at);
  } else {
    s.BindNull(9);
  }
  return s.Bind(10, r.workspace_id).Bind(11, r.id).Run();
}

Status RulesWriter::Retire(const std::string& ws, const std::string& id, TimePoint at) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "UPDATE rules SET active = 0, status = 'retired', retired_at = ? WHERE workspace_id = ?"
      " AND id = ?");
  return s.Bind(1, at).Bind(2, ws).Bind(3, id).Run();
}

Status RulesWriter::SetPosition(const std::string& ws, const std::string& id, int position) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare("UPDATE rules SET position = ? WHERE workspace_id = ? AND id = ?");
  return s.Bind(1, static_cast<int64_t>(position)).Bind(2, ws).Bind(3, id).Run();
}

Status RulesWriter::AddHits(const std::string& ws, const std::string& id, int64_t n) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare("UPDATE rules SET hits = hits + ? WHERE workspace_id = ? AND id = ?");
  return s.Bind(1, n).Bind(2, ws).Bind(3, id).Run();
}

}  // namespace cortex
