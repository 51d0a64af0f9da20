// The checks after a simulated power loss (workload.h). They read the database with SQL of
// their own, beside the store, so that a bug in the store's queries cannot hide a loss.
#include <sqlite3.h>

#include <map>

#include "engines/actions/ledger.h"
#include "engines/delivery/delivery.h"
#include "store/outbox.h"
#include "tests/crash/workload.h"

namespace cortex::crashtest {
namespace {

// A read-only connection of the checks' own.
class Sql {
 public:
  explicit Sql(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      error_ = "cannot open " + path;
    }
  }
  ~Sql() { sqlite3_close(db_); }
  const std::string& error() const { return error_; }

  // Each row's columns as text; `param` bound to every ?.
  std::vector<std::vector<std::string>> Rows(const std::string& sql,
                                             const std::string& param = "") {
    std::vector<std::vector<std::string>> rows;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      error_ = std::string("cannot run ") + sql + ": " + sqlite3_errmsg(db_);
      return rows;
    }
    for (int i = 1; i <= sqlite3_bind_parameter_count(s); ++i) {
      sqlite3_bind_text(s, i, param.data(), static_cast<int>(param.size()), SQLITE_TRANSIENT);
    }
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const unsigned char* t = sqlite3_column_text(s, c);
        row.push_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      rows.push_back(std::move(row));
    }
    sqlite3_finalize(s);
    return rows;
  }
  std::string One(const std::string& sql, const std::string& param = "") {
    auto rows = Rows(sql, param);
    return rows.empty() || rows[0].empty() ? std::string() : rows[0][0];
  }

 private:
  sqlite3* db_ = nullptr;
  std::string error_;
};

}  // namespace

Result<int> DrainScheduledWork(Store& store, FixedClock& clock,
                               std::vector<std::string>* delivered) {
  ActionConfig config = LoadActionConfig();
  ActionEngine engine(store, clock, config);
  DeliveryConfig delivery;
  RecordingConnector connector;
  Dispatcher dispatcher(store, clock, connector, delivery);
  int total = 0;
  for (int round = 0; round < 50; ++round) {
    auto handled = engine.ProcessDue(clock.Now());
    if (!handled.ok()) return handled.status();
    auto sent = dispatcher.RunOnce(clock.Now());
    if (!sent.ok()) return sent.status();
    total += *handled + *sent;
    if (*handled == 0 && *sent == 0) break;
  }
  delivered->insert(delivered->end(), connector.ids.begin(), connector.ids.end());
  return total;
}

CheckReport CheckAfterCrash(Store& store, const std::string& dir, FixedClock& clock,
                            const LoadLog& acked) {
  CheckReport report;
  auto problem = [&](std::string what) { report.problems.push_back(std::move(what)); };
  Sql sql(dir + "/cortex.db");
  if (!sql.error().empty()) {
    problem(sql.error());
    return report;
  }
  if (std::string ic = sql.One("PRAGMA integrity_check"); ic != "ok") {
    problem("integrity_check: " + ic);
  }
  const std::string ws = WorkspaceId(store);
  if (ws.empty()) {
    // Only a crash during the first open may leave no workspace, and then nothing after
    // it was acknowledged either.
    if (acked.setup_acked) problem("the workspace, acknowledged, is gone");
    return report;
  }
  auto verify = VerifyLedger(store, ws);
  if (!verify.ok() || !verify->ok) {
    problem("ledger: " + (verify.ok() ? verify->problem : verify.status().ToString()));
  }

  // Episodes: an acknowledged batch whole and once, any other whole or not at all.
  std::map<std::string, int> episodes;
  for (auto& row : sql.Rows("SELECT external_id, count(*) FROM episodes WHERE workspace_id = ? "
                            "AND external_id IS NOT NULL GROUP BY external_id",
                            ws)) {
    episodes[row[0]] = std::stoi(row[1]);
  }
  for (const LoadLog::Batch& b : acked.batches) {
    size_t present = 0;
    for (const std::string& id : b.ids) {
      auto it = episodes.find(id);
      if (it == episodes.end()) continue;
      ++present;
      if (it->second != 1)
        problem("episode " + id + " stored " + std::to_string(it->second) + " times");
    }
    if (b.acked) {
      ++report.acked_checked;
      ++report.batches;
      report.episodes += static_cast<int64_t>(present);
      if (present != b.ids.size()) {
        problem("acknowledged batch " + b.ids[0] + ": " + std::to_string(present) + " of " +
                std::to_string(b.ids.size()) + " episodes");
      }
    } else if (present != 0 && present != b.ids.size()) {
      problem("batch " + b.ids[0] + " half there: " + std::to_string(present) + " of " +
              std::to_string(b.ids.size()));
    }
  }
  // The world counts each write adds match the rows.
  if (sql.One("SELECT episode_count FROM workspaces WHERE id = ?", ws) !=
          sql.One("SELECT count(*) FROM episodes WHERE workspace_id = ?", ws) ||
      sql.One("SELECT entity_count FROM workspaces WHERE id = ?", ws) !=
          sql.One("SELECT count(*) FROM entities WHERE workspace_id = ?", ws)) {
    problem("the workspace's counts do not match its rows");
  }

  // Actions: each acknowledged step there; every action whole.
  auto status_of = [&](const std::string& action_id) {
    return sql.One("SELECT status FROM actions WHERE id = ?", action_id);
  };
  for (const LoadLog::Proposal& p : acked.proposals) {
    ++report.acked_checked;
    ++report.proposals;
    std::string status = status_of(p.action_id);
    if (status.empty() ||
        sql.One("SELECT count(*) FROM decisions WHERE id = ?", p.decision_id) != "1") {
      problem("acknowledged proposal " + p.decision_id + " is gone");
    } else if (p.status == "success" && status != "executed" && status != "delivered") {
      problem("acknowledged execution of " + p.action_id + " undone: " + status);
    }
  }
  for (const LoadLog::Ending& e : acked.endings) {
    ++report.acked_checked;
    ++report.endings;
    std::string status = status_of(e.action_id);
    bool ok = e.approved ? status == "executed" || status == "delivered" : status == "rejected";
    if (!ok)
      problem("acknowledged " + std::string(e.approved ? "approval" : "rejection") + " of " +
              e.action_id + " undone: " + status);
  }
  for (const std::string& id : acked.delivered) {
    ++report.acked_checked;
    ++report.deliveries;
    if (status_of(id) != "delivered") problem("acknowledged delivery of " + id + " undone");
  }
  for (const char* q : {"SELECT a.id FROM actions a WHERE a.workspace_id = ? AND NOT EXISTS "
                        "(SELECT 1 FROM decisions d WHERE d.id = a.decision_id)",
                        "SELECT a.id FROM actions a WHERE a.workspace_id = ? AND NOT EXISTS "
                        "(SELECT 1 FROM ledger l WHERE l.action_id = a.id)",
                        "SELECT a.id FROM actions a WHERE a.workspace_id = ? AND a.status IN "
                        "('executed', 'delivered') AND NOT EXISTS (SELECT 1 FROM ledger l WHERE "
                        "l.action_id = a.id AND l.event = 'executed')",
                        "SELECT action_id || ' ' || event FROM ledger WHERE workspace_id = ? "
                        "GROUP BY action_id, event HAVING count(*) > 1"}) {
    for (auto& row : sql.Rows(q, ws))
      problem("half an action or a repeated step: " + row[0] + " (" + q + ")");
  }

  // The scheduled work resumes: every undo window, expiry and delivery happens, once.
  clock.Advance(std::chrono::hours(48));
  std::vector<std::string> after;
  auto resumed = DrainScheduledWork(store, clock, &after);
  if (!resumed.ok()) {
    problem("scheduled work after the restart: " + resumed.status().ToString());
    return report;
  }
  report.resumed = *resumed;
  std::set<std::string> seen;
  for (const std::string& id : after) {
    if (!seen.insert(id).second) problem("delivered twice after the restart: " + id);
    if (acked.delivered.count(id)) problem("delivered again after the restart: " + id);
  }
  std::vector<std::string> again;
  auto more = DrainScheduledWork(store, clock, &again);
  if (!more.ok() || *more != 0) problem("scheduled work ran twice");
  if (std::string n = sql.One("SELECT count(*) FROM actions WHERE workspace_id = ? AND status "
                              "IN ('pending', 'executed')",
                              ws);
      n != "0") {
    problem(n + " actions still pending or undelivered after the restart");
  }
  // Exactly one outbox message per action that was executed.
  std::map<std::string, int> outbox;
  Status listed = store.Read([&](ReadTx& tx) {
    auto rows = tx.outbox().List(ws, OutboxKind::kMessage, 1 << 20);
    if (!rows.ok()) return rows.status();
    for (const OutboxItem& item : *rows) ++outbox[item.id];
    return Status::Ok();
  });
  if (!listed.ok()) problem("outbox: " + listed.ToString());
  auto executed = sql.Rows(
      "SELECT id FROM actions WHERE workspace_id = ? AND status IN ('delivered', 'failed')", ws);
  if (executed.size() != outbox.size()) {
    problem(std::to_string(executed.size()) + " actions executed, " +
            std::to_string(outbox.size()) + " outbox messages");
  }
  for (auto& row : executed) {
    if (outbox[row[0]] != 1)
      problem("action " + row[0] + " has " + std::to_string(outbox[row[0]]) + " outbox messages");
  }
  verify = VerifyLedger(store, ws);
  if (!verify.ok() || !verify->ok)
    problem("ledger after the restart's work: " +
            (verify.ok() ? verify->problem : verify.status().ToString()));
  if (!sql.error().empty()) problem(sql.error());
  return report;
}

}  // namespace cortex::crashtest
