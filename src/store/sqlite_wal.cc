// The SQLite store's log syncing and checkpointing (sqlite_wal.h).
#include "store/sqlite_wal.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/thread_name.h"
#include "store/sqlite_conn.h"

namespace cortex {
namespace {

// WalTestSeams; atomics only because a test sets them while another test's threads may
// still be winding down.
std::atomic<int (*)(int)> g_sync_log{nullptr};
std::atomic<int> g_every_frames{0}, g_writer_frames{0};

}  // namespace

void SetWalTestSeams(const WalTestSeams& seams) {
  g_sync_log = seams.sync_log;
  g_every_frames = seams.checkpoint_every_frames;
  g_writer_frames = seams.writer_checkpoint_frames;
}

WriteAheadLog::~WriteAheadLog() {
  if (fd_ >= 0) ::close(fd_);
}

Status WriteAheadLog::Open(const std::string& path) {
  std::lock_guard<std::mutex> lock(sync_mu_);
  path_ = path;
  CORTEX_RETURN_IF_ERROR(Reopen());
  int dir = ::open(std::filesystem::path(path).parent_path().c_str(), O_RDONLY | O_CLOEXEC);
  int rc = dir < 0 ? -1 : ::fsync(dir);
  int err = errno;
  if (dir >= 0) ::close(dir);
  if (rc != 0) return Error("cannot sync the directory of " + path, err);
  return Status::Ok();
}

Status WriteAheadLog::Sync() {
  std::lock_guard<std::mutex> lock(sync_mu_);
  if (Status health = Health(); !health.ok()) return health;
  // SQLite keeps the log while a connection is open (it truncates, never replaces it);
  // if it were ever replaced, syncing the old file would sync nothing of the new. Only
  // the inode number is asked for: asking for the times too (stat, fstat) makes Linux
  // 6.13+ stamp the next write with a fine-grained mtime, and every fdatasync then writes
  // the inode as well (docs/performance.md).
  struct statx now, held;
  if (::statx(AT_FDCWD, path_.c_str(), 0, STATX_INO, &now) != 0 ||
      ::statx(fd_, "", AT_EMPTY_PATH, STATX_INO, &held) != 0 || now.stx_ino != held.stx_ino ||
      now.stx_dev_major != held.stx_dev_major || now.stx_dev_minor != held.stx_dev_minor) {
    if (Status reopened = Reopen(); !reopened.ok()) return Fail(reopened);
  }
  int (*sync)(int) = g_sync_log.load(std::memory_order_relaxed);
  if ((sync != nullptr ? sync(fd_) : ::fdatasync(fd_)) != 0) {
    return Fail(Error("cannot sync the write-ahead log", errno));
  }
  return Status::Ok();
}

Status WriteAheadLog::Health() {
  std::lock_guard<std::mutex> lock(state_mu_);
  return failed_;
}

Status WriteAheadLog::Error(const std::string& what, int err) {
  return Status::Internal("sqlite: " + what + ": " + std::strerror(err));
}

Status WriteAheadLog::Fail(const Status& error) {
  std::lock_guard<std::mutex> lock(state_mu_);
  if (failed_.ok()) failed_ = error;
  return failed_;
}

Status WriteAheadLog::Reopen() {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error("cannot open the write-ahead log " + path_, errno);
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  return Status::Ok();
}

Status Checkpointer::Start(const std::string& path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    return Status::Internal("cannot open " + path +
                            " to checkpoint it: " + (db_ ? sqlite3_errmsg(db_) : "out of memory"));
  }
  sqlite3_busy_timeout(db_, kSqliteBusyTimeoutMs);
  // A read opens the log on this connection: until then a checkpoint finds none and
  // does nothing.
  if (sqlite3_exec(db_, "PRAGMA synchronous=NORMAL; SELECT count(*) FROM sqlite_schema", nullptr,
                   nullptr, nullptr) != SQLITE_OK) {
    return Status::Internal(std::string("sqlite: ") + sqlite3_errmsg(db_));
  }
  thread_ = std::thread([this] { Loop(); });
  NameThread(thread_, "cortex-ckpt");
  return Status::Ok();
}

void Checkpointer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (db_ != nullptr) sqlite3_close_v2(db_);
  db_ = nullptr;
}

void Checkpointer::Request() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wanted_ = true;
  }
  cv_.notify_one();
}

void Checkpointer::Pause() {
  std::unique_lock<std::mutex> lock(mu_);
  paused_ = true;
  cv_.wait(lock, [&] { return !running_; });
}

void Checkpointer::Resume() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = false;
  }
  cv_.notify_all();
}

int Checkpointer::EveryFrames() {
  int n = g_every_frames.load(std::memory_order_relaxed);
  return n > 0 ? n : kCheckpointEveryFrames;
}

int Checkpointer::WriterFrames() {
  int n = g_writer_frames.load(std::memory_order_relaxed);
  return n > 0 ? n : kWriterCheckpointFrames;
}

int Checkpointer::OnCommit(void* self, sqlite3* db, const char* name, int frames) {
  auto& c = *static_cast<Checkpointer*>(self);
  if (frames < c.last_frames_) c.next_at_ = EveryFrames();  // the log started over
  c.last_frames_ = frames;
  if (frames >= WriterFrames()) {
    // What SQLite's automatic checkpoint does, once this thread's pass (if one runs) is
    // over: SQLite would refuse a second checkpoint at once (SQLITE_BUSY), and the log
    // would grow for as long as the pass lasts.
    c.Pause();
    (void)sqlite3_wal_checkpoint(db, name);
    c.Resume();
  } else if (frames >= c.next_at_) {
    c.next_at_ = frames + EveryFrames();
    c.Request();
  }
  return SQLITE_OK;
}

void Checkpointer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return (wanted_ && !paused_) || stop_; });
    if (stop_) return;
    wanted_ = false;
    running_ = true;
    lock.unlock();
    // An I/O error leaves the log as it was (a checkpoint can be run again), and the
    // writer's own checkpoint will try again. Readers can hold a pass back: it copies
    // only what no reader may still need from the database file, and SQLite answers OK
    // even when that is nothing. `copied` counts from the log's start, so it goes back to
    // 0 when the log starts over: 0 is never progress.
    int log_frames = 0, copied = 0;
    int rc =
        sqlite3_wal_checkpoint_v2(db_, "main", SQLITE_CHECKPOINT_PASSIVE, &log_frames, &copied);
    bool progressed = rc == SQLITE_OK && copied > 0 && copied != copied_;
    if (progressed) rc = SyncDatabase();
    if (rc == SQLITE_OK) copied_ = copied;  // after the sync: a failed one is tried again
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
      spdlog::warn("background checkpoint failed: {}", sqlite3_errmsg(db_));
    }
    // Still a request's worth behind (held back, or refused by another process's
    // checkpoint): the writer's next request may never come, so try again, sooner while
    // passes make progress, backing off while one reader holds them all back.
    bool behind = rc == SQLITE_BUSY || (rc == SQLITE_OK && log_frames - copied >= EveryFrames());
    retry_ = behind && !progressed ? std::min(2 * retry_, kCheckpointMaxRetry) : kCheckpointRetry;
    lock.lock();
    running_ = false;
    cv_.notify_all();  // Pause()
    if (behind && !wanted_) {
      cv_.wait_for(lock, retry_, [&] { return wanted_ || stop_; });
      wanted_ = true;
    }
  }
}

// SQLite syncs the database at the end of a checkpoint only when it copied the whole log,
// which with the writer committing meanwhile it seldom does: the pages it copied would
// wait in the page cache for the writer's own checkpoint to sync them all at once, a long
// pause (docs/performance.md). Synced here after every pass that copied some, few are left
// for it; an extra sync is never unsafe.
int Checkpointer::SyncDatabase() {
  sqlite3_file* file = nullptr;
  int rc = sqlite3_file_control(db_, "main", SQLITE_FCNTL_FILE_POINTER, &file);
  if (rc != SQLITE_OK || file == nullptr || file->pMethods == nullptr) return rc;
  return file->pMethods->xSync(file, SQLITE_SYNC_NORMAL);
}

}  // namespace cortex
