// The undo log of a write in steps (Store::WriteInSteps on SQLite). Each step commits on
// its own, and with it the inverse of what it changed, recorded by SQLite's session
// extension (https://sqlite.org/sessionintro.html) as a changeset: the last step deletes the
// log in its own transaction, which is what makes the whole write visible as done; a failed
// step, or an open of the store after its writer stopped (a crash, kill -9, power loss),
// applies the inverses, newest first. Internal to the SQLite store.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "store/sqlite_conn.h"

struct sqlite3_session;  // sqlite3.h declares it only where the session extension is asked
                         // for (SQLITE_ENABLE_SESSION: sqlite_steps.cc alone, see CMakeLists)

namespace cortex {

// Records what one step changes, while it lives, on `conn` (the writer), in every table
// but the undo log's own.
class StepRecorder {
 public:
  explicit StepRecorder(SqliteConn& conn);
  ~StepRecorder();
  StepRecorder(const StepRecorder&) = delete;
  StepRecorder& operator=(const StepRecorder&) = delete;

  // Stores the inverse of what was changed since construction as step `step` of `batch`.
  // Inside the step's transaction.
  Status SaveInverse(const std::string& batch, int step);

 private:
  SqliteConn& conn_;
  sqlite3_session* session_ = nullptr;
  int created_ = 0;  // SQLITE_OK
};

// An open store, in words that tell whether it is still open: the boot, the pid and its
// start time (a pid reused after a restart is another process), and a name for this open
// of the store within the process (a store reopened in the same process, as the power-loss
// harness does, is another owner). Open while the returned object lives.
class StoreOwner {
 public:
  StoreOwner();
  ~StoreOwner();
  StoreOwner(const StoreOwner&) = delete;
  StoreOwner& operator=(const StoreOwner&) = delete;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// Inside a write transaction on the writer:
// a new write in steps, owned by `owner`;
Status BeginSteps(SqliteConn& conn, const std::string& batch, const std::string& ws_id,
                  const StoreOwner& owner);
// its end: the log goes, with the last step (or after an undo);
Status EndSteps(SqliteConn& conn, const std::string& batch);
// what its committed steps changed, undone newest first;
Status UndoSteps(SqliteConn& conn, const std::string& batch);
// its owner given up: the next open of the store (or a serving one, within seconds)
// undoes it.
Status AbandonSteps(SqliteConn& conn, const std::string& batch);

// The writes in steps whose owner is no longer open, newest first (outside a transaction,
// or in a read one).
Result<std::vector<std::string>> StrandedSteps(SqliteConn& conn);

}  // namespace cortex
