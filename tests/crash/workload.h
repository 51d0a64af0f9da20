// The power-loss harness's load and its checks (tests/crash/power_loss.cc drives them).
//
// The load runs the real store through the engines' public functions, from several threads
// at once: ingest batches (IngestJsonl), proposals (ActionEngine::Communicate) at trust
// levels 1, 2 and 3, approvals and rejections, and the scheduled work (ProcessDue, the
// Dispatcher) on a clock that moves. Every write is logged before it is made and marked
// acknowledged when the call returns OK. At the crash the simulated disk freezes a copy of
// the log (under its lock, so the copy holds exactly the writes acknowledged before the
// crash); the checks run on the store reopened from what the crash left.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "connectors/connector.h"
#include "core/clock.h"
#include "engines/actions/actions.h"
#include "store/store.h"

namespace cortex::crashtest {

// Everything the load wrote or tried to write.
struct LoadLog {
  struct Batch {  // an ingest batch: the external ids of its episodes
    std::vector<std::string> ids;
    bool acked = false;
  };
  struct Proposal {  // an acknowledged action.communicate
    std::string decision_id, action_id, status;
    int level = 0;
  };
  struct Ending {  // an acknowledged approval or rejection
    std::string decision_id, action_id;
    bool approved = false;
  };
  bool setup_acked = false;  // the workspace, its people and their trust
  std::vector<Batch> batches;
  std::vector<Proposal> proposals;
  std::vector<Ending> endings;
  std::set<std::string> delivered;  // action ids delivered by a Dispatcher pass that returned
};

// The log, shared by the load's threads; Freeze() is called at the crash.
class SharedLog {
 public:
  template <typename F>
  void Update(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    f(log_);
  }
  void Freeze() {
    std::lock_guard<std::mutex> lock(mu_);
    frozen_ = log_;
  }
  const LoadLog& frozen() const { return frozen_; }

 private:
  std::mutex mu_;
  LoadLog log_;
  LoadLog frozen_;
};

struct LoadOptions {
  uint64_t seed = 1;
  int ingest_threads = 2;
  int ops_per_thread = 12;
};

// The engines' settings: an undo window of a minute, drafts expiring after ten.
ActionConfig LoadActionConfig();

// The load's workspace id, or empty if it is not there.
std::string WorkspaceId(Store& store);

// A connector that records what it delivers and always succeeds.
class RecordingConnector : public Connector {
 public:
  const char* name() const override { return "crash-test"; }
  Status Deliver(const OutboxItem& item) override {
    ids.push_back(item.id);
    return Status::Ok();
  }
  std::vector<std::string> ids;
};

// The workspace, its three people (trust levels 1, 2 and 3) and their settings. Logged as
// acknowledged once all of it is.
Status SetUpWorld(Store& store, const Clock& clock, SharedLog* log);

// Runs the load on `store` until every thread has done its share or `stop()` (the crash
// has happened) says to.
void RunLoad(Store& store, FixedClock& clock, const LoadOptions& options, SharedLog* log,
             bool (*stop)());

// Runs the scheduled work (ProcessDue, then the Dispatcher) until there is none left, as a
// restarted server's dispatch thread does. Returns the actions handled plus the rows
// delivered; `delivered` gets the rows' ids.
Result<int> DrainScheduledWork(Store& store, FixedClock& clock,
                               std::vector<std::string>* delivered);

// What the checks found: problems (empty when all holds) and what they looked at.
struct CheckReport {
  std::vector<std::string> problems;
  int64_t acked_checked = 0;  // acknowledged writes (batches, proposals, endings, deliveries)
  int64_t batches = 0, proposals = 0, endings = 0, deliveries = 0;  // of which
  int64_t episodes = 0;  // episodes of acknowledged batches found
  int64_t resumed = 0;   // scheduled actions handled and deliveries made after the restart
};

// Checks the store reopened after the crash at `dir` against the frozen log: what was
// acknowledged is there once, no batch is half there, the ledger verifies, the database
// passes integrity_check, and the scheduled work then runs exactly once.
CheckReport CheckAfterCrash(Store& store, const std::string& dir, FixedClock& clock,
                            const LoadLog& acked);

}  // namespace cortex::crashtest
