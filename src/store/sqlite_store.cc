// The SQLite store: the driver for store/sql.h over one writer connection (writes are
// group-committed in BEGIN IMMEDIATE transactions) and a pool of reader connections. In WAL mode
// readers see the last committed snapshot and never wait behind the writer.
#include <fcntl.h>
#include <semaphore.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/limits.h"
#include "core/suspend.h"
#include "core/thread_name.h"
#include "core/time.h"
#include "store/migrations.h"
#include "store/sql.h"
#include "store/sql_tx.h"
#include "store/sqlite_vfs.h"
#include "store/store.h"

namespace cortex {
namespace {

constexpr int kBusyTimeoutMs = 5000;  // another process (e.g. `cortex ingest`) holds the lock
// Idle readers kept open: the write pool's size, since each write request reads its token,
// workspace and quota on a reader before queueing its write (at 32 connections ~20 hold
// one at once). With 8, a burst of writes opened and closed connections all along (134 a
// second), each parsing the schema and preparing its statements again. An idle reader
// keeps its page cache (up to 2 MiB), but the readers writes use touch the same few pages:
// RSS under that load went down (62.7 → 59.8 MiB).
constexpr size_t kMaxReaders = limits::kWriteThreads;
// Each write of a group commit but the first runs in a savepoint, whose statement journal
// (the pages it changed, for a rollback) SQLite keeps in memory up to this size and then
// spills to a temp file, two writes per page. An action.communicate changes 30-45 pages
// (120-185 KiB): at the default, 64 KiB, most calls created and deleted a file. At 512 KiB
// none does, while a 10,000-line ingest behind another write still spills rather than hold
// hundreds of MiB. The spill writes the memory in one write, which the writer's VFS splits
// (store/sqlite_vfs.h): SQLite's unix VFS takes at most 128 KiB - 1 bytes per write.
constexpr int kStatementJournalSpillBytes = 512 << 10;
// Checkpoints (copying the log's pages into the database, then syncing the database file)
// run on a thread of their own each time the log has grown by this many pages (32 MiB)...
constexpr int kCheckpointEveryFrames = 8000;
// ...and the writer checkpoints itself once the log holds this many (128 MiB): a
// background checkpoint never catches up with a writer that keeps committing, and SQLite
// starts the log over only after a checkpoint has copied all of it (docs/store.md).
constexpr int kWriterCheckpointFrames = 32000;
// A pass that leaves kCheckpointEveryFrames pages or more behind is tried again after this
// long, doubling up to 3.2 s while passes copy nothing. Readers hold passes back: one
// that began while the log was fully copied reads the database file alone, and nothing may
// be copied under it; one with an older snapshot stops the copy where its snapshot ends.
// Another process's checkpoint refuses one (SQLITE_BUSY).
constexpr auto kCheckpointRetry = std::chrono::milliseconds(100);
constexpr auto kCheckpointMaxRetry = std::chrono::milliseconds(3200);

// A prepared SQLite statement: bound and stepped in place.
class SqliteStatement final : public SqlStatement {
 public:
  SqliteStatement(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  ~SqliteStatement() override { sqlite3_finalize(s_); }

  void BindText(int i, std::string_view v) override {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void BindInt(int i, int64_t v) override { sqlite3_bind_int64(s_, i, v); }
  void BindNull(int i) override { sqlite3_bind_null(s_, i); }

  bool Step(Status* status) override {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) *status = Error(rc);
    return false;
  }
  std::string Text(int col) const override {
    const unsigned char* p = sqlite3_column_text(s_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(s_, col)))
             : std::string();
  }
  int64_t Int(int col) const override { return sqlite3_column_int64(s_, col); }
  bool IsNull(int col) const override { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  void Reset() override {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

 private:
  Status Error(int rc) const {
    std::string msg = std::string("sqlite: ") + sqlite3_errmsg(db_);
    int primary = rc & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return Status::Unavailable(msg);
    if (primary == SQLITE_CONSTRAINT) return Status::Conflict(msg);
    return Status::Internal(msg);
  }

  sqlite3* db_;
  sqlite3_stmt* s_;
};

// One connection with its statement cache. Used by one thread at a time.
class Conn final : public SqlConn {
 public:
  ~Conn() override {
    cache_.clear();  // finalizes every statement before the close
    if (db_) sqlite3_close_v2(db_);
  }

  static Result<std::unique_ptr<Conn>> Open(const std::string& path, bool readonly) {
    auto c = std::make_unique<Conn>();
    int flags = SQLITE_OPEN_NOMUTEX |
                (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    // The writer writes the log through a VFS that sends a commit's frames in one write
    // (store/sqlite_vfs.h); readers never write it.
    const char* vfs = readonly ? nullptr : CoalescingWalVfs();
    if (sqlite3_open_v2(path.c_str(), &c->db_, flags, vfs) != SQLITE_OK) {
      return Status::Internal("cannot open " + path + ": " +
                              (c->db_ ? sqlite3_errmsg(c->db_) : "out of memory"));
    }
    if (vfs != nullptr) DropUncommittedFramesOnRollback(c->db_);
    sqlite3_busy_timeout(c->db_, kBusyTimeoutMs);
    sqlite3_extended_result_codes(c->db_, 1);
    // WAL: readers never block the writer nor wait for it. synchronous=NORMAL (which the
    // writer's VFS requires): a commit writes the log without syncing it; SqliteStore syncs
    // the log itself (WriteAheadLog) before any write is acknowledged, outside the writer's
    // critical section.
    // The writer gets a 16 MiB page cache (an ingest walks every index); readers keep
    // SQLite's 2 MiB, since a read touches a few pages. Bigger caches bought little ingest
    // speed and cost resident memory (bench/README.md).
    // Checkpoints: see Checkpointer.
    const char* pragmas = readonly ? "PRAGMA foreign_keys=ON; PRAGMA query_only=ON;"
                                   : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                                     "PRAGMA foreign_keys=ON; PRAGMA cache_size=-16384;";
    CORTEX_RETURN_IF_ERROR(c->Exec(pragmas));
    return c;
  }

  Status Exec(const char* sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
    if (rc == SQLITE_OK) return Status::Ok();
    std::string msg = std::string("sqlite: ") + (err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    if ((rc & 0xff) == SQLITE_BUSY) return Status::Unavailable(msg);
    return Status::Internal(msg);
  }

  // Runs one statement from the cache: for the BEGIN/COMMIT/SAVEPOINT of every
  // transaction, which sqlite3_exec would parse again each time.
  Status Run(std::string_view sql) { return Prepare(sql).Run(); }

  // False once SQLite has rolled the open transaction back by itself (after an I/O or
  // out-of-memory error, for instance).
  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

  Stmt Prepare(std::string_view sql) override {
    auto it = cache_.find(sql);
    if (it == cache_.end()) {
      sqlite3_stmt* s = nullptr;
      if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                             SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) {
        throw std::runtime_error(std::string("prepare failed: ") + sqlite3_errmsg(db_) +
                                 " in: " + std::string(sql));
      }
      it = cache_.emplace(std::string(sql), std::make_unique<SqliteStatement>(db_, s)).first;
    }
    return Stmt(*it->second);
  }

  int64_t Changes() override { return sqlite3_changes64(db_); }

  // SQLite calls `hook` after each commit, with the number of pages the log holds (this
  // replaces SQLite's own automatic checkpoint).
  void SetCommitHook(int (*hook)(void*, sqlite3*, const char*, int), void* arg) {
    sqlite3_wal_hook(db_, hook, arg);
  }

  // The write-ahead log's path (the file exists once the connection has run a statement).
  std::string WalPath() const { return sqlite3_filename_wal(sqlite3_db_filename(db_, "main")); }

  // One process writes at a time: there is nothing to lock per workspace.
  Status Enter(const std::string&) override { return Status::Ok(); }

  // Starts a read transaction (a reader's snapshot begins at its first statement);
  // `remember`: whether it may use remembered rows (Stable).
  Status BeginRead(bool remember) {
    remember_ = remember;
    version_known_ = false;
    return Run("BEGIN");
  }

  // A reader keeps its remembered rows for as long as the database's data version stays
  // where it was when they were read: any commit, by any connection of any process, moves
  // it. Read inside the transaction, the version is that of the transaction's snapshot,
  // so the rows are exactly what the transaction would read. The writer keeps none (its
  // own uncommitted changes would not move the version). Only a read-only request's
  // transaction (SharedReads) uses them: a request that writes sees a new version almost
  // every time under write load, and there checking and refilling cost more than a look-up
  // (+2% instructions per action.communicate, measured).
  StableRows* Stable() override {
    // Not once SQLite has ended the transaction by itself (after an I/O error, say): the
    // version read would no longer be the one the transaction's reads see.
    if (!remember_ || !InTransaction()) return nullptr;
    if (!version_known_) {
      Stmt s = Prepare("PRAGMA data_version");
      Status st;
      if (!s.Step(&st)) return nullptr;
      if (s.Int(0) != stable_version_) {
        stable_ = StableRows();
        stable_version_ = s.Int(0);
      }
      version_known_ = true;
    }
    return &stable_;
  }

 private:
  sqlite3* db_ = nullptr;
  bool remember_ = false;       // a reader in a transaction that may use stable_
  bool version_known_ = false;  // stable_version_ is this transaction's
  int64_t stable_version_ = -1;
  StableRows stable_;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<SqliteStatement>, Hash, std::equal_to<>> cache_;
};

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
  ~WriteAheadLog() {
    if (fd_ >= 0) ::close(fd_);
  }

  // Opens the log at `path`, and syncs its directory once so that the file itself survives
  // a power loss.
  Status Open(const std::string& path) {
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

  // Every commit that returned before this call is on disk when it returns Ok.
  Status Sync() {
    std::lock_guard<std::mutex> lock(sync_mu_);
    if (Status health = Health(); !health.ok()) return health;
    // SQLite keeps the log while a connection is open (it truncates, never replaces it);
    // if it were ever replaced, syncing the old file would sync nothing of the new. Only
    // the inode number is asked for: asking for the times too (stat, fstat) makes Linux
    // (6.13 and later) give the next write a fine-grained modification time, so every
    // commit changed the inode and every fdatasync had to write it as well (on this
    // machine's ext4, ~25% longer per sync).
    struct statx now, held;
    if (::statx(AT_FDCWD, path_.c_str(), 0, STATX_INO, &now) != 0 ||
        ::statx(fd_, "", AT_EMPTY_PATH, STATX_INO, &held) != 0 || now.stx_ino != held.stx_ino ||
        now.stx_dev_major != held.stx_dev_major || now.stx_dev_minor != held.stx_dev_minor) {
      if (Status reopened = Reopen(); !reopened.ok()) return Fail(reopened);
    }
    if (::fdatasync(fd_) != 0) return Fail(Error("cannot sync the write-ahead log", errno));
    return Status::Ok();
  }

  // The first failed sync's error, or Ok: after one, nothing more may be written. Never
  // waits for a sync under way (the writer asks before every batch).
  Status Health() {
    std::lock_guard<std::mutex> lock(state_mu_);
    return failed_;
  }

 private:
  static Status Error(const std::string& what, int err) {
    return Status::Internal("sqlite: " + what + ": " + std::strerror(err));
  }

  Status Fail(const Status& error) {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (failed_.ok()) failed_ = error;
    return failed_;
  }

  Status Reopen() {
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error("cannot open the write-ahead log " + path_, errno);
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
    return Status::Ok();
  }

  std::mutex sync_mu_;  // held across each sync; guards path_ and fd_
  std::string path_;
  int fd_ = -1;
  std::mutex state_mu_;  // guards failed_ alone, so that asking never waits for a sync
  Status failed_;        // the first failed sync's error
};

// Checkpoints beside the writer. A checkpoint copies the log's newest version of each page
// into the database, syncing the log before and the database after. When the writer
// checkpointed every 4,000 pages (SQLite's automatic checkpoint, on the committing
// connection), every write queued behind it waited for the copy and the syncs: at 32
// connections communicate ran ~30% faster with checkpoints off altogether. Here the
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

  Status Start(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
        SQLITE_OK) {
      return Status::Internal("cannot open " + path + " to checkpoint it: " +
                              (db_ ? sqlite3_errmsg(db_) : "out of memory"));
    }
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
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

  // Waits for a checkpoint under way, then closes the connection.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = nullptr;
  }

  // Asks for a checkpoint; one asked for while one runs follows it.
  void Request() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      wanted_ = true;
    }
    cv_.notify_one();
  }

  // Waits for a checkpoint under way to end, and keeps others from starting until Resume().
  void Pause() {
    std::unique_lock<std::mutex> lock(mu_);
    paused_ = true;
    cv_.wait(lock, [&] { return !running_; });
  }
  void Resume() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      paused_ = false;
    }
    cv_.notify_all();
  }

  // The writer's commit hook (Conn::SetCommitHook), on the writer thread.
  static int OnCommit(void* self, sqlite3* db, const char* name, int frames) {
    auto& c = *static_cast<Checkpointer*>(self);
    if (frames < c.last_frames_) c.next_at_ = kCheckpointEveryFrames;  // the log started over
    c.last_frames_ = frames;
    if (frames >= kWriterCheckpointFrames) {
      // What SQLite's automatic checkpoint does, once this thread's pass (if one runs) is
      // over: SQLite would refuse a second checkpoint at once (SQLITE_BUSY), and the log
      // would grow for as long as the pass lasts.
      c.Pause();
      (void)sqlite3_wal_checkpoint(db, name);
      c.Resume();
    } else if (frames >= c.next_at_) {
      c.next_at_ = frames + kCheckpointEveryFrames;
      c.Request();
    }
    return SQLITE_OK;
  }

 private:
  void Loop() {
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
      bool behind =
          rc == SQLITE_BUSY || (rc == SQLITE_OK && log_frames - copied >= kCheckpointEveryFrames);
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
  // wait in the page cache for the writer's own checkpoint to sync them all, a pause of
  // 200-270 ms at 32 connections. Synced here after every pass that copied some, they are
  // few by then (pauses under ~100 ms); an extra sync is never unsafe.
  int SyncDatabase() {
    sqlite3_file* file = nullptr;
    int rc = sqlite3_file_control(db_, "main", SQLITE_FCNTL_FILE_POINTER, &file);
    if (rc != SQLITE_OK || file == nullptr || file->pMethods == nullptr) return rc;
    return file->pMethods->xSync(file, SQLITE_SYNC_NORMAL);
  }

  sqlite3* db_ = nullptr;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool wanted_ = false, running_ = false, paused_ = false, stop_ = false;  // guarded by mu_
  int next_at_ = kCheckpointEveryFrames;  // the writer thread's (OnCommit)
  int last_frames_ = 0;
  int copied_ = 0;  // the log's frames copied and synced as of the last pass (Loop's)
  std::chrono::milliseconds retry_ = kCheckpointRetry;  // Loop's
};

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::string path) : path_(std::move(path)) {}

  Status Init() {
    auto w = Conn::Open(path_, /*readonly=*/false);
    if (!w.ok()) return w.status();
    writer_ = std::move(*w);
    CORTEX_RETURN_IF_ERROR(Migrate());
    CORTEX_RETURN_IF_ERROR(wal_.Open(writer_->WalPath()));
    CORTEX_RETURN_IF_ERROR(wal_.Sync());  // the migrations' commits
    CORTEX_RETURN_IF_ERROR(checkpointer_.Start(path_));
    writer_->SetCommitHook(&Checkpointer::OnCommit, &checkpointer_);
    writer_thread_ = std::thread([this] { WriterLoop(); });
    NameThread(writer_thread_, "cortex-writer");
    sync_thread_ = std::thread([this] { SyncLoop(); });
    NameThread(sync_thread_, "cortex-walsync");
    return Status::Ok();
  }

  // Callers are gone by now: the writer finishes what is queued, then the syncer what is
  // committed.
  ~SqliteStore() override {
    Stop(writer_thread_, work_cv_, stop_writer_);
    Stop(sync_thread_, sync_cv_, stop_syncer_);
    if (writer_) writer_->SetCommitHook(nullptr, nullptr);
    checkpointer_.Stop();
  }

  Status Read(const std::function<Status(ReadTx&)>& fn) override {
    if (shared_.store == this) {
      if (!shared_.conn) {  // the scope's first read opens its transaction
        auto conn = BeginRead(/*remember=*/true);
        if (!conn.ok()) return conn.status();
        shared_.conn = std::move(*conn);
      }
      TxState state(*shared_.conn);
      ReadTx tx(state);
      return fn(tx);
    }
    auto conn = BeginRead(/*remember=*/false);
    if (!conn.ok()) return conn.status();
    Status st;
    {
      TxState state(**conn);
      ReadTx tx(state);
      st = fn(tx);
    }
    Status end = EndRead(std::move(*conn));
    return st.ok() ? end : st;
  }

  // Group commit on two threads of the store's own. Callers queue their functions and
  // wait. The writer thread runs whatever is queued as one batch, in one transaction (each
  // function but the first inside its own savepoint, so one failing rolls back only
  // itself; see RunBatch), commits it and goes straight on to the next batch; the sync
  // thread makes the commits durable (one fdatasync covers every batch committed before
  // it) and only then are their callers answered (when nothing else is queued and no
  // flush is under way, the writer syncs and answers a batch itself). So the disk's flush
  // never holds up the next batch, and no caller hears of a write before it is on disk.
  // Every write is synced: writes share a sync anyway.
  // A request running as a fiber (core/suspend.h) is suspended rather than its thread
  // blocked.
  Status Write(const std::function<Status(WriteTx&)>& fn, Durability) override {
    PendingWrite me;
    me.fn = &fn;
    if (Suspender* suspender = Suspender::Current()) {
      suspender->Suspend([&](Suspender::Resume resume) {
        me.resume = std::move(resume);
        Enqueue(me);
      });
    } else {
      Enqueue(me);
      while (sem_wait(&me.acked) != 0) {
        if (errno != EINTR) std::abort();  // (EINTR: a signal handler ran)
      }
    }
    if (me.error) std::rethrow_exception(me.error);
    return me.result;
  }

  // Write() above suspends a request running as a fiber.
  bool SuspendsWrites() const override { return true; }

  void BeginSharedReads() override {
    if (shared_.store == nullptr) shared_.store = this;
    if (shared_.store == this) ++shared_.depth;  // (another store's scope: not ours)
  }

  void EndSharedReads() noexcept override {
    if (shared_.store != this || --shared_.depth > 0) return;
    shared_.store = nullptr;
    if (shared_.conn) (void)EndRead(std::move(shared_.conn));
  }

  // Other processes may open the file (`cortex ingest` while `cortex serve` runs), but only
  // one serves: SQLite is a single-host store.
  bool MultiInstance() const override { return false; }

  Result<int> SchemaVersion() override {
    std::lock_guard<std::mutex> lock(write_mu_);
    Stmt s = writer_->Prepare("SELECT coalesce(max(number), 0) FROM schema_migrations");
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::Internal("no schema version") : st;
    return static_cast<int>(s.Int(0));
  }

 private:
  // A queued write. Its caller sleeps on `acked` alone: an acknowledgement wakes exactly
  // the batch's callers, not every waiting one (with one condition variable for all, each
  // batch woke ~30 threads to find ~10 done, each retaking the queue's lock). glibc
  // (since 2.21) lets a semaphore be destroyed as soon as sem_wait returns, so the
  // caller's stack frame can go while sem_post is still returning.
  struct PendingWrite {
    PendingWrite() {
      if (sem_init(&acked, /*pshared=*/0, 0) != 0) std::abort();
    }
    ~PendingWrite() { sem_destroy(&acked); }
    PendingWrite(const PendingWrite&) = delete;
    PendingWrite& operator=(const PendingWrite&) = delete;

    const std::function<Status(WriteTx&)>* fn = nullptr;
    Status result;
    std::exception_ptr error;  // rethrown in the caller's thread
    // Once result and error are final: the suspended caller's resume if it has one, else
    // the semaphore its thread sleeps on.
    Suspender::Resume resume;
    sem_t acked;
  };

  void Enqueue(PendingWrite& w) {
    bool wake_writer = false;
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      queue_.push_back(&w);
      wake_writer = queue_.size() == 1;  // the writer may be waiting for work
    }
    if (wake_writer) work_cv_.notify_one();
  }

  void WriterLoop() {
    std::unique_lock<std::mutex> lock(queue_mu_);
    while (true) {
      work_cv_.wait(lock, [&] { return !queue_.empty() || stop_writer_; });
      if (queue_.empty()) return;  // stopping, and nothing is left to write
      std::vector<PendingWrite*> batch;
      size_t n = std::min(queue_.size(), limits::kMaxWritesPerCommit);
      batch.assign(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      lock.unlock();
      CommitAndHandOver(batch);
      lock.lock();
    }
  }

  // Runs a batch, then syncs and answers it or leaves it to the sync thread. Called without
  // the queue's lock, and wakes (a caller's semaphore, the sync thread) happen outside it: a
  // thread woken while it is held would run at once, on this CPU, only to wait for it.
  void CommitAndHandOver(const std::vector<PendingWrite*>& batch) {
    if (Status health = wal_.Health(); !health.ok()) {  // see WriteAheadLog
      return Acknowledge(batch, health);
    }
    bool committed = false;
    try {
      committed = RunBatch(batch);
    } catch (...) {
      // Only SQLite's own statements can throw here (out of memory): never leave the
      // writer inside a transaction.
      std::lock_guard<std::mutex> write_lock(write_mu_);
      (void)writer_->Exec("ROLLBACK");
      for (PendingWrite* w : batch) {
        if (w->result.ok()) w->result = Status::Internal("write failed");
      }
    }
    if (!committed) return Acknowledge(batch, Status::Ok());  // nothing written, nothing to sync
    bool sync_here = false;
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      // Nothing to run meanwhile and no flush under way: sync here, which saves a hand-off
      // to the sync thread (a request's latency when the load is light). Otherwise the sync
      // thread takes it, so that the writer is free for writes that arrive meanwhile rather
      // than held in an fdatasync of its own.
      sync_here = queue_.empty() && unsynced_.empty() && !syncing_;
      if (!sync_here) unsynced_.insert(unsynced_.end(), batch.begin(), batch.end());
    }
    if (sync_here) return Acknowledge(batch, wal_.Sync());
    sync_cv_.notify_one();  // visible to readers now, durable after the sync thread's sync
  }

  // Answers a batch's callers. A failed sync leaves the writes' fate unknown: each caller
  // is told it failed. Needs no lock: a batch belongs to the thread that answers it.
  void Acknowledge(const std::vector<PendingWrite*>& batch, const Status& synced) {
    for (PendingWrite* w : batch) {
      if (w->result.ok() && !synced.ok()) w->result = synced;
      // The last touch: the caller may return at once.
      if (w->resume) {
        Suspender::Resume resume = std::move(w->resume);
        resume();
      } else {
        sem_post(&w->acked);
      }
    }
  }

  void SyncLoop() {
    std::unique_lock<std::mutex> lock(queue_mu_);
    while (true) {
      sync_cv_.wait(lock, [&] { return !unsynced_.empty() || stop_syncer_; });
      if (unsynced_.empty()) return;
      std::vector<PendingWrite*> batch;
      batch.swap(unsynced_);  // all committed before this sync starts
      syncing_ = true;
      lock.unlock();
      Acknowledge(batch, wal_.Sync());
      lock.lock();
      syncing_ = false;
    }
  }

  // Runs a batch in one transaction; true if it committed.
  bool RunBatch(const std::vector<PendingWrite*>& batch) {
    std::lock_guard<std::mutex> lock(write_mu_);
    Status begin = writer_->Run("BEGIN IMMEDIATE");
    if (!begin.ok()) {
      for (PendingWrite* w : batch) w->result = begin;
      return false;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      PendingWrite* w = batch[i];
      // Each write runs in a savepoint, so that one failing undoes only itself; but a
      // savepoint keeps a copy of every page it changes (a 10,000-line ingest: thousands,
      // spilled to a temp file), and the first write has nothing before it to keep. It runs
      // in the bare transaction, which is rolled back and begun again if it fails (the
      // write lock is let go in between: another process may take it first, and the rest
      // of the batch then waits for it as any write would, up to the busy timeout).
      const bool first = i == 0;
      Status sp = first ? Status::Ok() : writer_->Run("SAVEPOINT w");
      if (sp.ok()) {
        try {
          TxState state(*writer_);
          WriteTx tx(state);
          w->result = (*w->fn)(tx);
          if (w->result.ok()) w->result = state.FinishWrite();
        } catch (...) {
          w->error = std::current_exception();
          w->result = Status::Internal("write failed");
        }
      } else {
        w->result = sp;
      }
      if (!writer_->InTransaction()) {
        // SQLite abandoned the whole transaction: nothing of this batch is written.
        Status gone =
            w->result.ok() ? Status::Unavailable("sqlite: transaction rolled back") : w->result;
        for (size_t j = 0; j < batch.size(); ++j) {
          if (j > i || batch[j]->result.ok()) batch[j]->result = gone;
        }
        return false;
      }
      if (first) {
        if (w->result.ok()) continue;
        (void)writer_->Run("ROLLBACK");
        if (batch.size() == 1) return false;  // nothing to commit
        if (Status again = writer_->Run("BEGIN IMMEDIATE"); !again.ok()) {
          for (size_t j = 1; j < batch.size(); ++j) batch[j]->result = again;
          return false;
        }
        continue;
      }
      if (w->result.ok()) w->result = writer_->Run("RELEASE w");
      if (!w->result.ok()) {
        (void)writer_->Run("ROLLBACK TO w");
        (void)writer_->Run("RELEASE w");
      }
    }
    Status commit = writer_->Run("COMMIT");
    if (!commit.ok()) {
      (void)writer_->Run("ROLLBACK");
      for (PendingWrite* w : batch) {
        if (w->result.ok()) w->result = commit;
      }
      return false;
    }
    return true;
  }

  Status Migrate() {
    std::lock_guard<std::mutex> lock(write_mu_);
    CORTEX_RETURN_IF_ERROR(writer_->Exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " number INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"));
    for (const Migration& m : Migrations()) {
      CORTEX_RETURN_IF_ERROR(writer_->Exec("BEGIN IMMEDIATE"));
      Stmt check = writer_->Prepare("SELECT 1 FROM schema_migrations WHERE number = ?");
      check.Bind(1, static_cast<int64_t>(m.number));
      Status st;
      bool applied = check.Step(&st);
      if (st.ok() && !applied) {
        st = writer_->Exec(m.sql);
        if (st.ok()) {
          std::string name(m.name);
          Stmt rec = writer_->Prepare(
              "INSERT INTO schema_migrations (number, name, applied_at) VALUES (?, ?, ?)");
          st = rec.Bind(1, static_cast<int64_t>(m.number))
                   .Bind(2, name)
                   .Bind(3, std::chrono::system_clock::now())
                   .Run();
        }
      }
      if (st.ok()) st = writer_->Exec("COMMIT");
      if (!st.ok()) {
        (void)writer_->Exec("ROLLBACK");
        return Status::Internal("migration " + std::to_string(m.number) +
                                " failed: " + st.message());
      }
    }
    return Status::Ok();
  }

  // A pooled reader inside a read transaction.
  Result<std::unique_ptr<Conn>> BeginRead(bool remember) {
    auto conn = AcquireReader();
    if (!conn.ok()) return conn.status();
    Status st = (*conn)->BeginRead(remember);
    if (!st.ok()) {
      ReleaseReader(std::move(*conn));
      return st;
    }
    return conn;
  }

  // Ends a read transaction (a commit just ends it). The connection goes back to the pool
  // unless it is somehow still in a transaction, where it would fail every later BEGIN.
  // Never throws: it also runs from SharedReads' destructor.
  Status EndRead(std::unique_ptr<Conn> conn) noexcept {
    try {
      Status st = conn->Run("COMMIT");
      if (!conn->InTransaction()) ReleaseReader(std::move(conn));
      return st;
    } catch (...) {  // the connection is dropped (closed), not pooled
      return Status::Internal("ending a read transaction failed");
    }
  }

  Result<std::unique_ptr<Conn>> AcquireReader() {
    {
      std::lock_guard<std::mutex> lock(readers_mu_);
      if (!readers_.empty()) {
        auto c = std::move(readers_.back());
        readers_.pop_back();
        return c;
      }
    }
    return Conn::Open(path_, /*readonly=*/true);
  }

  void ReleaseReader(std::unique_ptr<Conn> c) {
    std::lock_guard<std::mutex> lock(readers_mu_);
    if (readers_.size() < kMaxReaders) readers_.push_back(std::move(c));
  }

  // The open SharedReads scope of this thread, if any (at most one store's at a time).
  struct SharedRead {
    const SqliteStore* store = nullptr;
    int depth = 0;               // nested scopes
    std::unique_ptr<Conn> conn;  // in a read transaction, once the scope's first Read() ran
  };
  static thread_local SharedRead shared_;

  void Stop(std::thread& thread, std::condition_variable& cv, bool& flag) {
    if (!thread.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      flag = true;
    }
    cv.notify_all();
    thread.join();
  }

  std::string path_;
  std::mutex queue_mu_;                  // guards the queues and the flags
  std::condition_variable work_cv_;      // queue_ has writes, or the writer is to stop
  std::condition_variable sync_cv_;      // unsynced_ has writes, or the syncer is to stop
  std::vector<PendingWrite*> queue_;     // to run
  std::vector<PendingWrite*> unsynced_;  // committed, to sync
  bool stop_writer_ = false;
  bool stop_syncer_ = false;
  bool syncing_ = false;  // the sync thread is flushing (or answering) a batch
  std::thread writer_thread_;
  std::thread sync_thread_;
  std::mutex write_mu_;  // the writer connection (batches, migrations, SchemaVersion)
  std::unique_ptr<Conn> writer_;
  Checkpointer checkpointer_;
  WriteAheadLog wal_;
  std::mutex readers_mu_;
  std::vector<std::unique_ptr<Conn>> readers_;
};

thread_local SqliteStore::SharedRead SqliteStore::shared_;

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::InvalidArgument("cannot create data directory " + dir + ": " + ec.message());
  // Process-wide, and only before SQLite initializes: on the first store opened.
  // MEMSTATUS off: SQLite's memory statistics take one process-wide mutex on every
  // allocation, which the reader connections of all I/O threads then contend for. Both
  // are speed settings: if SQLite was already initialised (SQLITE_MISUSE) it runs without.
  static const int configured[] = {
      sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, kStatementJournalSpillBytes),
      sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0)};
  (void)configured;
  auto store = std::make_unique<SqliteStore>(dir + "/cortex.db");
  CORTEX_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace cortex
