#include "tests/crash/workload.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/limits.h"
#include "core/time.h"
#include "engines/actions/actions.h"
#include "engines/actions/ledger.h"
#include "engines/actions/trust.h"
#include "engines/auth/tokens.h"
#include "engines/delivery/delivery.h"
#include "engines/world/ingest.h"
#include "store/outbox.h"
#include "store/trust.h"

namespace cortex::crashtest {
namespace {

constexpr char kWorkspace[] = "alpha";
// Trust levels 1 (a draft, approved or expiring), 2 (executed after the undo window unless
// rejected) and 3 (executed at once).
const char* const kPeople[] = {"ann@one.example", "bob@two.example", "cy@three.example"};

void IngestThread(Store& store, const Clock& clock, const std::string& ws, int thread,
                  const LoadOptions& o, SharedLog* log, bool (*stop)()) {
  std::mt19937_64 rng(o.seed * 1000003 + static_cast<uint64_t>(thread));
  std::vector<size_t> mine;  // this thread's acknowledged batches
  for (int op = 0; op < o.ops_per_thread && !stop(); ++op) {
    std::string jsonl;
    size_t index = 0;
    if (!mine.empty() && rng() % 10 == 0) {
      // A client retrying a batch it was answered for: it must add nothing.
      size_t again = mine[rng() % mine.size()];
      log->Update([&](LoadLog& l) {
        for (const std::string& id : l.batches[again].ids) {
          jsonl += R"({"type":"episode","kind":"message_received",)"
                   R"("occurred_at":"2026-06-10T08:00:00Z","counterparty":"ann@one.example",)"
                   R"("summary":"again","external_id":")" +
                   id + "\"}\n";
        }
      });
      (void)IngestJsonl(store, clock, ws, jsonl);
      continue;
    }
    // Mostly small batches; now and then one big enough to spill pages before its commit,
    // and rarely one that lands in steps (limits::kIngestLinesPerStep), undone if cut short.
    size_t lines = rng() % 20 == 0   ? 150 + rng() % 150
                   : rng() % 60 == 0 ? limits::kIngestLinesPerStep + 100 + rng() % 600
                                     : 1 + rng() % 12;
    LoadLog::Batch batch;
    for (size_t i = 0; i < lines; ++i) {
      std::string id =
          "t" + std::to_string(thread) + "-" + std::to_string(op) + "-" + std::to_string(i);
      batch.ids.push_back(id);
      std::string who = rng() % 8 == 0 ? "new-" + id + "@four.example" : kPeople[rng() % 3];
      std::string summary(rng() % 4 == 0 ? 200 + rng() % 1500 : 20 + rng() % 60,
                          static_cast<char>('a' + rng() % 26));
      jsonl += R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-10T0)" +
               std::to_string(rng() % 10) + ":" + std::to_string(10 + rng() % 50) +
               R"(:00Z","counterparty":")" + who + R"(","summary":")" + summary +
               R"(","thread":"th)" + std::to_string(rng() % 5) + R"(","external_id":")" + id +
               "\"}\n";
    }
    log->Update([&](LoadLog& l) {
      index = l.batches.size();
      l.batches.push_back(std::move(batch));
    });
    if (IngestJsonl(store, clock, ws, jsonl).ok()) {
      log->Update([&](LoadLog& l) { l.batches[index].acked = true; });
      mine.push_back(index);
    }
  }
}

void ActionThread(Store& store, const Clock& clock, const std::string& ws, const LoadOptions& o,
                  SharedLog* log, bool (*stop)()) {
  std::mt19937_64 rng(o.seed * 1000003 + 77);
  ActionConfig config = LoadActionConfig();
  ActionEngine engine(store, clock, config);
  std::vector<LoadLog::Proposal> pending;  // this thread's acknowledged pending proposals
  for (int op = 0; op < o.ops_per_thread && !stop(); ++op) {
    if (pending.empty() || rng() % 5 < 3) {
      int level = 1 + static_cast<int>(rng() % 3);
      CommunicateRequest req;
      req.to = kPeople[level - 1];
      req.message = "Update " + std::to_string(op) + std::string(rng() % 300, 'x');
      auto r = engine.Communicate(ws, req);
      if (!r.ok()) continue;
      LoadLog::Proposal p{r->decision_id, r->action_id, std::string(Name(r->outcome)), level};
      log->Update([&](LoadLog& l) { l.proposals.push_back(p); });
      if (p.status == "pending_approval") pending.push_back(p);
      continue;
    }
    size_t i = rng() % pending.size();
    LoadLog::Proposal p = pending[i];
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    bool approve = rng() % 10 < 7;
    Actor by{"cli", "", ""};
    auto r = approve ? engine.Approve(ws, p.decision_id, std::nullopt, by)
                     : engine.Reject(ws, p.decision_id, std::string("no"), by);
    // Conflict: the scheduled work got there first (executed or expired).
    if (!r.ok() || r->outcome == ActionOutcome::kError) continue;
    log->Update([&](LoadLog& l) { l.endings.push_back({p.decision_id, p.action_id, approve}); });
  }
}

// Runs the scheduled work (what the server's dispatch thread does) for as long as the other
// threads write, on a clock it moves 5-45 s a pass: undo windows (60 s) pass and drafts
// (600 s) expire during the load, with approvals and rejections racing them.
void ScheduledWorkThread(Store& store, FixedClock& clock, const LoadOptions& o, SharedLog* log,
                         bool (*stop)(), const std::atomic<int>& writing) {
  std::mt19937_64 rng(o.seed * 1000003 + 99);
  ActionConfig config = LoadActionConfig();
  ActionEngine engine(store, clock, config);
  DeliveryConfig delivery;
  RecordingConnector connector;
  Dispatcher dispatcher(store, clock, connector, delivery);
  for (int pass = 0; pass < 40 * o.ops_per_thread && writing > 0 && !stop(); ++pass) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    clock.Advance(std::chrono::seconds(5 + rng() % 40));
    (void)engine.ProcessDue(clock.Now());
    connector.ids.clear();
    if (dispatcher.RunOnce(clock.Now()).ok()) {
      log->Update(
          [&](LoadLog& l) { l.delivered.insert(connector.ids.begin(), connector.ids.end()); });
    }
  }
}

}  // namespace

ActionConfig LoadActionConfig() {
  ActionConfig c;
  c.undo_window = std::chrono::seconds(60);
  c.draft_expiry = std::chrono::seconds(600);
  return c;
}

std::string WorkspaceId(Store& store) {
  auto ws = FindWorkspace(store, kWorkspace);
  return ws.ok() ? ws->id : std::string();
}

Status SetUpWorld(Store& store, const Clock& clock, SharedLog* log) {
  auto ws = EnsureWorkspace(store, clock, kWorkspace);
  if (!ws.ok()) return ws.status();
  std::string jsonl;
  for (const char* who : kPeople) {
    jsonl += std::string(R"({"type":"entity","name":")") + who + R"(","identifiers":[")" + who +
             "\"]}\n";
  }
  CORTEX_RETURN_IF_ERROR(IngestJsonl(store, clock, ws->id, jsonl).status());
  for (int level = 1; level <= 3; ++level) {
    CORTEX_RETURN_IF_ERROR(store.Write([&](WriteTx& tx) {
      auto scope = ResolveTrustScope(tx, ws->id, kPeople[level - 1]);
      if (!scope.ok()) return scope.status();
      return tx.trust().Set(ws->id,
                            TrustSetting{"communicate", *scope, level, std::nullopt, clock.Now()});
    }));
  }
  log->Update([](LoadLog& l) { l.setup_acked = true; });
  return Status::Ok();
}

void RunLoad(Store& store, FixedClock& clock, const LoadOptions& options, SharedLog* log,
             bool (*stop)()) {
  const std::string ws = WorkspaceId(store);
  std::vector<std::thread> threads;
  std::atomic<int> writing = options.ingest_threads + 1;
  for (int t = 0; t < options.ingest_threads; ++t) {
    threads.emplace_back([&, t] {
      IngestThread(store, clock, ws, t, options, log, stop);
      --writing;
    });
  }
  threads.emplace_back([&] {
    ActionThread(store, clock, ws, options, log, stop);
    --writing;
  });
  threads.emplace_back([&] { ScheduledWorkThread(store, clock, options, log, stop, writing); });
  for (std::thread& t : threads) t.join();
}

}  // namespace cortex::crashtest
