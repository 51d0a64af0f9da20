#include "core/json_text.h"
#include "store/ledger.h"
#include "store/sql_tx.h"

namespace cortex {

namespace {
constexpr const char* kLedgerSelect =
    "SELECT id, workspace_id, seq, action_id, decision_id, event, occurred_at, provenance,"
    " detail, prev_hash, hash FROM ledger";

LedgerEntry LedgerRow(const Stmt& s) {
  LedgerEntry e;
  e.id = s.Text(0);
  e.workspace_id = s.Text(1);
  e.seq = s.Int(2);
  e.action_id = s.Text(3);
  e.decision_id = s.Text(4);
  e.event = s.As<LedgerEvent>(5);
  e.occurred_at = s.Time(6);
  // A tampered row may not even be JSON: keep what is there, verification will say so.
  e.provenance = ParseJson(s.Text(7));
  e.detail = ParseJson(s.Text(8));
  e.prev_hash = s.Text(9);
  e.hash = s.Text(10);
  return e;
}
}  // namespace

Result<std::pair<int64_t, std::string>> LedgerReader::Anchor(const std::string& ws) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare("SELECT ledger_seq, ledger_head FROM workspaces WHERE id = ?");
  s.Bind(1, ws);
  return OneRow(s, "no workspace " + ws,
                [](const Stmt& r) { return std::make_pair(r.Int(0), r.Text(1)); });
}

Result<std::vector<LedgerEntry>> LedgerReader::List(const std::string& ws, int64_t after_seq,
                                                    int limit) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  static const std::string sql =
      kLedgerSelect + std::string(" WHERE workspace_id = ? AND seq > ? ORDER BY seq LIMIT ?");
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, ws).Bind(2, after_seq).Bind(3, static_cast<int64_t>(limit));
  return AllRows(s, LedgerRow);
}

Result<std::vector<LedgerEntry>> LedgerReader::ListForAction(const std::string& ws,
                                                             const std::string& action_id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  static const std::string sql =
      kLedgerSelect + std::string(" WHERE workspace_id = ? AND action_id = ? ORDER BY seq");
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, ws).Bind(2, action_id);
  return AllRows(s, LedgerRow);
}

Result<std::vector<LedgerReader::HistoryEntry>> LedgerReader::HistoryOfDecision(
    const std::string& ws, const std::string& decision_id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  // From ledger_by_decision alone: a row is read only for its detail, and a proposal's
  // detail (the draft, the level) names no actor, so a proposal's row is not read.
  static const std::string sql =
      "SELECT id, event, occurred_at,"
      " CASE WHEN event IN ('proposed', 'refused') THEN '' ELSE detail END FROM ledger"
      " WHERE workspace_id = ? AND decision_id = ? ORDER BY seq";
  Stmt s = s_.conn.Prepare(sql);
  s.Bind(1, ws).Bind(2, decision_id);
  return AllRows(s, [](const Stmt& r) {
    return HistoryEntry{r.Text(0), r.As<LedgerEvent>(1), r.Time(2), r.Text(3)};
  });
}

Result<std::string> LedgerReader::ProposalProvenance(const std::string& ws,
                                                     const std::string& decision_id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "SELECT provenance FROM ledger WHERE workspace_id = ? AND decision_id = ?"
      " AND event IN ('proposed', 'refused')");
  s.Bind(1, ws).Bind(2, decision_id);
  return OneRow(s, "no proposal for decision " + decision_id,
                [](const Stmt& r) { return r.Text(0); });
}

Status LedgerWriter::Append(const LedgerEntry& e, const std::string& provenance_json,
                            const std::string& detail_json) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(e.workspace_id));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO ledger (id, workspace_id, seq, action_id, decision_id, event, occurred_at,"
      " provenance, detail, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, e.id)
                             .Bind(2, e.workspace_id)
                             .Bind(3, e.seq)
                             .Bind(4, e.action_id)
                             .Bind(5, e.decision_id)
                             .Bind(6, e.event)
                             .Bind(7, e.occurred_at)
                             .Bind(8, provenance_json)
                             .Bind(9, detail_json)
                             .Bind(10, e.prev_hash)
                             .Bind(11, e.hash)
                             .Run());
  Stmt anchor =
      s_.conn.Prepare("UPDATE workspaces SET ledger_seq = ?, ledger_head = ? WHERE id = ?");
  return anchor.Bind(1, e.seq).Bind(2, e.hash).Bind(3, e.workspace_id).Run();
}

}  // namespace cortex
