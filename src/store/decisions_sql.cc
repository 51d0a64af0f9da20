#include <algorithm>
#include <functional>

#include "core/json_text.h"
#include "store/decisions.h"
#include "store/sql_tx.h"

namespace cortex {

namespace {
constexpr const char* kDecisionSelect =
    "SELECT id, workspace_id, class, status, occurred_at, entity_id, payload_summary, rule_id,"
    " rule_summary, confidence, trace_id, agent_version, world_version, source_episode_ids,"
    " details, notification_id, triage_decision_id, ledger_entry_id, triage_class FROM decisions";

Decision DecisionRow(const Stmt& s) {
  Decision d;
  d.id = s.Text(0);
  d.workspace_id = s.Text(1);
  d.decision_class = s.As<DecisionClass>(2);
  d.status = s.As<DecisionStatus>(3);
  d.occurred_at = s.Time(4);
  d.entity_id = s.OptText(5);
  d.payload_summary = s.Text(6);
  d.rule_id = s.OptText(7);
  d.rule_summary = s.OptText(8);
  d.confidence = s.Text(9);
  d.trace_id = s.Text(10);
  d.agent_version = s.Text(11);
  d.world_version = s.Text(12);
  d.source_episode_ids = ParseStoredJson(s.Text(13)).get<std::vector<std::string>>();
  d.details_json = s.Text(14);
  d.notification_id = s.OptText(15);
  d.triage_decision_id = s.OptText(16);
  d.ledger_entry_id = s.OptText(17);
  std::string triage_class = s.Text(18);  // '' for every class but triage
  if (!triage_class.empty()) d.triage_class = ParseStored<TriageClass>(triage_class);
  return d;
}

// Rounds a count of ids up to a power of two, so that the look-ups by id come in a few
// statement shapes (each is prepared once per connection).
size_t Slots(size_t n) {
  size_t slots = 1;
  while (slots < n) slots *= 2;
  return slots;
}
}  // namespace

Result<Decision> DecisionsReader::Get(const std::string& ws, const std::string& id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  static const std::string sql =
      kDecisionSelect + std::string(" WHERE id = ? AND workspace_id = ?");
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, id).Bind(2, ws);
  return OneRow(s, "no decision " + id, DecisionRow);
}

Result<std::vector<Decision>> DecisionsReader::List(const std::string& ws,
                                                    const DecisionFilter& filter, int limit) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  std::vector<Decision> out;
  DecisionFilter f = filter;
  if (f.triage_class) {
    // A triage class asked for: triage decisions only.
    if (f.decision_class && *f.decision_class != DecisionClass::kTriage) return out;
    f.decision_class = DecisionClass::kTriage;
  }
  // The ranges of one class: triage decisions of the whole workspace lie in one range per
  // triage class of decisions_by_class (migration 18), a counterparty's in one range of
  // decisions_by_entity_class.
  std::vector<DecisionsReader::Range> ranges;
  auto add_class = [&](DecisionClass cls) {
    if (cls != DecisionClass::kTriage || f.triage_class || f.entity_id || f.status) {
      ranges.push_back({cls, f.triage_class});
      return;
    }
    for (TriageClass t : AllOf<TriageClass>()) ranges.push_back({cls, t});
  };
  if (!f.decision_class && (f.entity_id || !f.status)) {
    // Decisions of any class, of a counterparty or of the whole workspace: the newest of
    // each class (a range of decisions_by_entity_class or decisions_by_class apiece),
    // merged, rather than indexes of their own (migration 10).
    for (DecisionClass cls : AllOf<DecisionClass>()) {
      // (Not the classes that never have the status asked: their range would be walked
      // to its end, row by row, to find nothing.)
      if (f.status && !DecisionClassMayHaveStatus(cls, *f.status)) continue;
      add_class(cls);
    }
  } else if (f.decision_class && f.status) {
    // A class never has the statuses DecisionClassMayHaveStatus rules out (nothing to
    // walk a range for), and every class but proposals and digests has one status only:
    // the class's range alone answers.
    if (!DecisionClassMayHaveStatus(*f.decision_class, *f.status)) return out;
    if (*f.decision_class != DecisionClass::kActionProposed &&
        *f.decision_class != DecisionClass::kDigest) {
      f.status.reset();
    }
    add_class(*f.decision_class);
  } else if (f.decision_class) {
    add_class(*f.decision_class);
  } else {
    ranges.push_back({});  // a status of any class: decisions_by_status
  }
  if (ranges.size() == 1) {
    CORTEX_RETURN_IF_ERROR(Append(ws, f, ranges[0], limit, out));
    return out;
  }
  // Several ranges: the newest ids of each (from the index alone), merged and cut at the
  // page, then those rows in one look-up, rather than a page of rows from every range.
  std::vector<std::string> ids;
  for (const Range& r : ranges) CORTEX_RETURN_IF_ERROR(AppendIds(ws, f, r, limit, ids));
  std::sort(ids.begin(), ids.end(), std::greater<>());
  if (ids.size() > static_cast<size_t>(limit)) ids.resize(limit);
  if (ids.empty()) return out;
  size_t slots = Slots(ids.size());
  std::string sql = kDecisionSelect + std::string(" WHERE workspace_id = ? AND id IN (?");
  for (size_t i = 1; i < slots; ++i) sql += ", ?";
  sql += ")";
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, ws);
  for (size_t i = 0; i < slots; ++i) {
    // (The slots past the ids repeat the last one: IN ignores a repeat.)
    s.Bind(static_cast<int>(i) + 2, ids[std::min(i, ids.size() - 1)]);
  }
  Status st;
  while (s.Step(&st)) out.push_back(DecisionRow(s));
  CORTEX_RETURN_IF_ERROR(st);
  std::sort(out.begin(), out.end(),
            [](const Decision& a, const Decision& b) { return a.id > b.id; });
  return out;
}

namespace {

using Range = DecisionsReader::Range;

// The WHERE clause (and order and limit) of one range with filter `f`; BindRange binds it.
std::string RangeWhere(const DecisionFilter& f, const Range& r) {
  std::string sql = " WHERE workspace_id = ?";
  if (r.cls) sql += " AND class = ?";
  if (f.status) sql += " AND status = ?";
  if (f.entity_id) sql += " AND entity_id = ?";
  if (r.triage_class) {
    // Of a counterparty: its range of decisions_by_entity_class, the triage class checked
    // row by row (`|| ''` keeps the planner from taking decisions_by_class instead: its
    // range would be every such decision of the workspace).
    sql += f.entity_id ? " AND triage_class || '' = ?" : " AND triage_class = ?";
  } else if (r.cls && !f.status && !f.entity_id) {
    // One class's range of decisions_by_class, in id order. (With a status,
    // decisions_by_status gives that order; with a counterparty,
    // decisions_by_entity_class.)
    sql += " AND triage_class = ''";
  }
  if (f.min_id) sql += " AND id >= ?";
  if (f.max_id) sql += " AND id < ?";
  sql += " ORDER BY id DESC LIMIT ?";
  return sql;
}

void BindRange(Stmt& s, const std::string& ws, const DecisionFilter& f, const Range& r, int limit) {
  int i = 1;
  s.Bind(i++, ws);
  if (r.cls) s.Bind(i++, *r.cls);
  if (f.status) s.Bind(i++, *f.status);
  if (f.entity_id) s.Bind(i++, *f.entity_id);
  if (r.triage_class) s.Bind(i++, *r.triage_class);
  if (f.min_id) s.Bind(i++, *f.min_id);
  if (f.max_id) s.Bind(i++, *f.max_id);
  s.Bind(i++, static_cast<int64_t>(limit));
}

}  // namespace

Status DecisionsReader::Append(const std::string& ws, const DecisionFilter& f, const Range& r,
                               int limit, std::vector<Decision>& out) {
  std::string sql = kDecisionSelect + RangeWhere(f, r);
  Stmt s = s_.conn.Prepare(sql);
  BindRange(s, ws, f, r, limit);
  Status st;
  while (s.Step(&st)) out.push_back(DecisionRow(s));
  return st;
}

Status DecisionsReader::AppendIds(const std::string& ws, const DecisionFilter& f, const Range& r,
                                  int limit, std::vector<std::string>& out) {
  std::string sql = "SELECT id FROM decisions" + RangeWhere(f, r);
  Stmt s = s_.conn.Prepare(sql);
  BindRange(s, ws, f, r, limit);
  Status st;
  while (s.Step(&st)) out.push_back(s.Text(0));
  return st;
}

Result<std::vector<std::pair<std::string, std::string>>> DecisionsReader::FiredTriageRules(
    const std::string& ws, const std::string& min_id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT rule_id, source_episode_ids FROM decisions WHERE workspace_id = ?"
      " AND class = 'rule_fired' AND triage_class = '' AND id >= ?"
      " AND triage_decision_id IS NOT NULL AND rule_id IS NOT NULL");
  s.Bind(1, ws).Bind(2, min_id);
  std::vector<std::pair<std::string, std::string>> out;
  Status st;
  while (s.Step(&st)) {
    auto sources = ParseStoredJson(s.Text(1));
    if (!sources.is_array() || sources.empty() || !sources[0].is_string()) continue;
    out.emplace_back(s.Text(0), sources[0].get<std::string>());
  }
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<TriageLink>> DecisionsReader::RecentTriage(const std::string& ws,
                                                              const std::string& entity_id,
                                                              const std::string& min_id,
                                                              int limit) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT id, rule_id, rule_summary, confidence, source_episode_ids, details"
      " FROM decisions WHERE workspace_id = ? AND entity_id = ? AND class = 'triage'"
      " AND id >= ? ORDER BY id DESC LIMIT ?");
  s.Bind(1, ws).Bind(2, entity_id).Bind(3, min_id).Bind(4, static_cast<int64_t>(limit));
  return AllRows(s, [](const Stmt& r) {
    TriageLink t;
    t.decision_id = r.Text(0);
    t.rule_id = r.OptText(1);
    t.rule_summary = r.OptText(2);
    t.confidence = r.Text(3);
    t.source_episode_ids = ParseStoredJson(r.Text(4)).get<std::vector<std::string>>();
    t.triage_class = Parse<TriageClass>(ParseStoredJson(r.Text(5)).value("triage_class", ""));
    return t;
  });
}

Status DecisionsWriter::Insert(const Decision& d) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(d.workspace_id));
  if (!DecisionClassMayHaveStatus(d.decision_class, d.status)) {
    return Status::Internal("a " + std::string(Name(d.decision_class)) + " decision cannot be " +
                            std::string(Name(d.status)));
  }
  std::string sources = DumpJson(nlohmann::json(d.source_episode_ids));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO decisions (id, workspace_id, class, status, occurred_at, entity_id,"
      " payload_summary, rule_id, rule_summary, confidence, trace_id, agent_version,"
      " world_version, source_episode_ids, details, notification_id, triage_decision_id,"
      " ledger_entry_id, triage_class)"
      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  static const std::string kNone;  // the triage class of every other class
  s.Bind(1, d.id)
      .Bind(2, d.workspace_id)
      .Bind(3, d.decision_class)
      .Bind(4, d.status)
      .Bind(5, d.occurred_at)
      .Bind(6, d.entity_id)
      .Bind(7, d.payload_summary)
      .Bind(8, d.rule_id)
      .Bind(9, d.rule_summary)
      .Bind(10, d.confidence)
      .Bind(11, d.trace_id)
      .Bind(12, d.agent_version)
      .Bind(13, d.world_version)
      .Bind(14, sources)
      .Bind(15, d.details_json)
      .Bind(16, d.notification_id)
      .Bind(17, d.triage_decision_id)
      .Bind(18, d.ledger_entry_id);
  if (d.triage_class) {
    s.Bind(19, *d.triage_class);
  } else {
    s.Bind(19, kNone);
  }
  return s.Run();
}

Status DecisionsWriter::SetStatus(const std::string& ws, const std::string& id,
                                  DecisionStatus status) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  // Only a proposal's and a digest's status move (DecisionClassMayHaveStatus).
  if (!DecisionClassMayHaveStatus(DecisionClass::kActionProposed, status) &&
      !DecisionClassMayHaveStatus(DecisionClass::kDigest, status)) {
    return Status::Internal("a decision cannot become " + std::string(Name(status)));
  }
  Stmt s = s_.conn.Prepare(
      "UPDATE decisions SET status = ? WHERE id = ? AND workspace_id = ?"
      " AND class IN ('action_proposed', 'digest')");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, status).Bind(2, id).Bind(3, ws).Run());
  return s_.conn.Changes() == 1 ? Status::Ok()
                                : Status::Internal("no proposal or digest " + id + " in workspace");
}

}  // namespace cortex
