// The SQLite store's write-ahead log beside its writer: WriteAheadLog makes commits durable
// by syncing the log itself, and Checkpointer copies the log into the database on a thread
// of its own (docs/store.md). Internal to the store (sqlite_store.cc): nothing outside
// src/store/ includes it.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"

namespace cortex {

// Makes commits durable by syncing the write-ahead log through a descriptor of its own.
// The writer commits with synchronous=NORMAL (the log written, not synced), so the commit
// and the sync are separate steps: the writer commits and goes on to the next batch while
// the sync, which covers every commit made before it (the log is appended in order, and
// fdatasync flushes the file whichever descriptor wrote it), runs beside it. With
// synchronous=FULL the sync ran inside COMMIT, and the next batch waited for it.
//
// A failed sync is final. Linux reports a write-back error once and marks the pages clean,
// so a later sync that succeeds says nothing of them, and commits after the failure build
// on data that may not be on disk: from then on every Sync() fails, and the store refuses
// writes until it is reopened (PostgreSQL stops for the same reason). Syncs are serialized,
// so an error is reported to the sync that covered the failed pages, not to a neighbour.
class WriteAheadLog {
 public:
  ~WriteAheadLog();

  // Opens the log at `path`, and syncs its directory once so that the file itself survives
  // a power loss.
  Status Open(const std::string& path);

  // Every commit that returned before this call is on disk when it returns Ok.
  Status Sync();

  // The first failed sync's error, or Ok: after one, nothing more may be written. Never
  // waits for a sync under way (the writer asks before every batch).
  Status Health();

 private:
  static Status Error(const std::string& what, int err);
  Status Fail(const Status& error);
  Status Reopen();

  std::mutex sync_mu_;  // held across each sync; guards path_ and fd_
  std::string path_;
  int fd_ = -1;
  std::mutex state_mu_;  // guards failed_ alone, so that asking never waits for a sync
  Status failed_;        // the first failed sync's error
};

// Checkpoints beside the writer. A checkpoint copies the log's newest version of each page
// into the database, syncing the log before and the database after. When the writer
// checkpointed itself (SQLite's automatic checkpoint, on the committing connection), every
// write queued behind it waited for the copy and the syncs (docs/performance.md). Here the
// writer's commit hook asks this thread for a checkpoint each time the log has grown by
// kCheckpointEveryFrames pages, and the thread runs it PASSIVE (never waiting for, nor
// blocking, the writer or the readers) on a connection of its own, through SQLite's
// default VFS, then syncs the database if it copied anything (SyncDatabase); one held back
// by readers is tried again (kCheckpointRetry). It never writes the log. SQLite
// starts the log over at the writer's first write after a checkpoint that copied all of
// it, which while commits keep coming a pass never does; so the writer still checkpoints
// itself at kWriterCheckpointFrames, copying only what came after the last pass. Safety is
// SQLite's: frames are reused only after a checkpoint that synced the database.
class Checkpointer {
 public:
  ~Checkpointer() { Stop(); }

  // Opens the database at `path` on a connection of its own and starts the thread.
  Status Start(const std::string& path);

  // Waits for a checkpoint under way, then closes the connection.
  void Stop();

  // Asks for a checkpoint; one asked for while one runs follows it.
  void Request();

  // Waits for a checkpoint under way to end, and keeps others from starting until Resume().
  void Pause();
  void Resume();

  // The writer's commit hook (SqliteConn::SetCommitHook), on the writer thread.
  static int OnCommit(void* self, sqlite3* db, const char* name, int frames);

  // The two thresholds below, or a test's (WalTestSeams).
  static int EveryFrames();
  static int WriterFrames();

 private:
  // Checkpoints (copying the log's pages into the database, then syncing the database
  // file) run on this thread each time the log has grown by this many pages (32 MiB)...
  static constexpr int kCheckpointEveryFrames = 8000;
  // ...and the writer checkpoints itself once the log holds this many (128 MiB): a
  // background checkpoint never catches up with a writer that keeps committing, and SQLite
  // starts the log over only after a checkpoint has copied all of it (docs/store.md).
  static constexpr int kWriterCheckpointFrames = 32000;
  // A pass that leaves kCheckpointEveryFrames pages or more behind is tried again after
  // this long, doubling up to 3.2 s while passes copy nothing. Readers hold passes back:
  // one that began while the log was fully copied reads the database file alone, and
  // nothing may be copied under it; one with an older snapshot stops the copy where its
  // snapshot ends. Another process's checkpoint refuses one (SQLITE_BUSY).
  static constexpr auto kCheckpointRetry = std::chrono::milliseconds(100);
  static constexpr auto kCheckpointMaxRetry = std::chrono::milliseconds(3200);

  void Loop();

  // Syncs the database file after a pass that copied pages (SQLite itself syncs it only
  // after a checkpoint that copied the whole log).
  int SyncDatabase();

  sqlite3* db_ = nullptr;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool wanted_ = false, running_ = false, paused_ = false, stop_ = false;  // guarded by mu_
  int next_at_ = EveryFrames();  // the writer thread's (OnCommit)
  int last_frames_ = 0;
  int copied_ = 0;  // the log's frames copied and synced as of the last pass (Loop's)
  std::chrono::milliseconds retry_ = kCheckpointRetry;  // Loop's
};

// Test seams for the power-loss harness (tests/crash/, store/crash_vfs.h), which simulates
// the disk: it must see the log's syncs, which bypass SQLite's VFS (WriteAheadLog syncs a
// descriptor of its own), and it checkpoints and starts the log over every few commits
// rather than every 32 MiB. Set before any store is opened; nothing else sets them.
struct WalTestSeams {
  int (*sync_log)(int fd) = nullptr;  // called instead of fdatasync(2) when set
  int checkpoint_every_frames = 0;    // Checkpointer's thresholds, when > 0
  int writer_checkpoint_frames = 0;
};
void SetWalTestSeams(const WalTestSeams& seams);

}  // namespace cortex
