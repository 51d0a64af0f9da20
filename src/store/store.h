// The storage interface the engines use. One implementation per database (SQLite and
// PostgreSQL); both run the same SQL, written once per area (store/<area>_sql.cc) over the
// driver interface of store/sql.h. A transaction (store/tx.h) hands out the areas.
//
// Work is expressed as transactions: Read() runs a function against a consistent snapshot
// that never waits behind writers; Write() runs a function inside one write transaction,
// committed durably before Write() returns. Because a write is a self-contained function,
// an implementation is free to batch several concurrent writes into one commit (group
// commit) without changing any caller.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "store/model.h"
#include "store/tx.h"
#include "store/workspace_gate.h"

namespace cortex {

// A failed Write() committed nothing, except one whose connection broke during its commit
// (PostgreSQL): Unavailable with this in its message, as the write may have been committed.
inline constexpr std::string_view kCommitOutcomeUnknown = "commit outcome unknown";
inline bool CommitOutcomeUnknown(const Status& st) {
  return st.code() == Code::kUnavailable &&
         st.message().find(kCommitOutcomeUnknown) != std::string::npos;
}

class Store {
 public:
  virtual ~Store() = default;

  // Runs `fn` on a consistent snapshot. Thread-safe; readers run concurrently.
  virtual Status Read(const std::function<Status(ReadTx&)>& fn) = 0;

  // How a commit must reach the disk before Write() returns.
  enum class Durability {
    kSynced,   // flushed: survives a crash of this process, the database or the machine
    kRelaxed,  // may be lost if the database server itself crashes within a moment of the
               // commit: only for bookkeeping cheaper to lose than to flush (tool-call
               // counts, a session's last use); never for anything a caller acknowledges,
               // and never locking a workspace (PostgreSQL lets these past its cap on
               // concurrent writes)
  };

  // Runs `fn` in one write transaction: committed iff `fn` returns OK, rolled back entirely
  // otherwise. Thread-safe. `fn` may run on another thread (SQLite's writer thread), so it
  // must not rely on the caller's thread-local state.
  virtual Status Write(const std::function<Status(WriteTx&)>& fn, Durability durability) = 0;
  Status Write(const std::function<Status(WriteTx&)>& fn) { return Write(fn, Durability::kSynced); }

  // A write too long for one transaction, in workspace `ws_id` (a large ingest batch):
  // `step(tx, i)` runs for i = 0, 1, 2... each time in a write transaction, until it returns
  // true. All or nothing, like Write(): if a step fails, or the process stops before the
  // last step commits, what the earlier steps wrote is undone (after a crash, by the next
  // open of the store). SQLite commits each step on its own, so that other workspaces'
  // writes go in between, and holds `ws_id` (EnterWorkspace) from the first step to the
  // last. The default (PostgreSQL: concurrent writers, snapshot isolation) runs all the
  // steps in one Write(), which may run them again from 0 on a retry: step 0 starts afresh.
  using Step = std::function<Result<bool>(WriteTx&, int)>;
  virtual Status WriteInSteps(const std::string& ws_id, const Step& step);
  // Undoes the WriteInSteps batches of processes that stopped half way (`cortex ingest`
  // killed while `cortex serve` runs on the same data): the open of the store does it too,
  // a long-running server calls this now and then. How many it undid.
  virtual Result<int> UndoStrandedWrites() { return 0; }

  // A request's pass to workspace `ws_id`: while it lives, no WriteInSteps holds the
  // workspace (one under way is waited for), so the request neither sees part of one nor
  // builds on it. Free (an empty pass) where writes are not stepped.
  virtual WorkspaceGate::Pass EnterWorkspace(const std::string& /*ws_id*/) { return {}; }
  // The same, or none while a WriteInSteps holds `ws_id`: background work skips the
  // workspace rather than wait.
  virtual std::optional<WorkspaceGate::Pass> TryEnterWorkspace(const std::string& /*ws_id*/) {
    return WorkspaceGate::Pass();
  }

  // True when a request running as a fiber (core/suspend.h) is suspended in Write() while
  // its write waits to be committed, rather than blocking its thread. False: Write(), like
  // every call, blocks the calling thread (PostgreSQL: each statement is a round trip).
  virtual bool SuspendsWrites() const { return false; }

  // The highest migration applied.
  virtual Result<int> SchemaVersion() = 0;

  // True when several `cortex serve` processes may share this store (PostgreSQL): state
  // they must agree on, such as tool-call counts, then lives in the store, not in memory.
  virtual bool MultiInstance() const = 0;

  // Between these two calls (use SharedReads), every Read() this thread makes on this store
  // runs in one read transaction. The default does nothing: each Read() is its own.
  virtual void BeginSharedReads() {}
  virtual void EndSharedReads() noexcept {}
};

// While it lives, the Read() calls of this thread share one snapshot: a read-only request's
// authentication, quota check and tool cost one read transaction instead of three (SQLite:
// each is a lock and an unlock of the WAL index and an fstat, ~12% of a read's CPU), and see
// the same state. Only for work that does not write: a Read() after a Write() in the scope
// would not see it. The reads also share one connection, so none may run inside another's
// function (no Read() nested in a Read(), which no caller does anyway).
class SharedReads {
 public:
  explicit SharedReads(Store& store) : store_(store) { store_.BeginSharedReads(); }
  ~SharedReads() { store_.EndSharedReads(); }
  SharedReads(const SharedReads&) = delete;
  SharedReads& operator=(const SharedReads&) = delete;

 private:
  Store& store_;
};

// Opens (creating if needed) the SQLite store in directory `dir` and applies any pending
// migrations.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& dir);

// Connects to the PostgreSQL database at `url` (postgresql://...) and applies any pending
// migrations. The database must exist.
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& url);

// A postgresql:// (or postgres://) URL opens PostgreSQL; anything else is a SQLite data
// directory.
Result<std::unique_ptr<Store>> OpenStore(const std::string& where);
// OpenStore for commands that only work on data that exists: a SQLite data directory
// without a database is NotFound, saying so, and is not created (a typo in --data).
Result<std::unique_ptr<Store>> OpenExistingStore(const std::string& where);
bool IsPostgresUrl(const std::string& where);

// Held by `cortex serve` while it runs. On a SQLite data directory: an exclusive lock
// (flock, released by the kernel when the process ends, even by kill -9) on
// DIR/serve.lock, which also holds the server's pid. A second server on the same
// directory gets Conflict naming the first; several instances share a PostgreSQL
// store instead, where this holds nothing. CLI commands do not take it.
class ServeLock {
 public:
  static Result<ServeLock> Take(const std::string& where);
  ServeLock(ServeLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ServeLock& operator=(ServeLock&&) = delete;
  ~ServeLock();

 private:
  explicit ServeLock(int fd) : fd_(fd) {}
  int fd_;
};
// `where` without a password, for logs.
std::string RedactedLocation(const std::string& where);

}  // namespace cortex
