// The SQLite store: one writer connection (writes are group-committed in BEGIN IMMEDIATE
// transactions) and a pool of reader connections. In WAL mode readers see the last committed
// snapshot and never wait behind the writer. The driver for store/sql.h is in sqlite_conn.h,
// the log's syncing and checkpointing in sqlite_wal.h.
#include <semaphore.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/crypto.h"
#include "core/limits.h"
#include "core/suspend.h"
#include "core/thread_name.h"
#include "core/time.h"
#include "store/migrations.h"
#include "store/sql.h"
#include "store/sql_tx.h"
#include "store/sqlite_conn.h"
#include "store/sqlite_steps.h"
#include "store/sqlite_wal.h"
#include "store/store.h"

namespace cortex {
namespace {

// Idle readers kept open: the write pool's size, since each write request reads its token,
// workspace and quota on a reader before queueing its write; with fewer, a burst of writes
// opened and closed connections all along (docs/performance.md).
constexpr size_t kMaxReaders = limits::kWriteThreads;
// Each write of a group commit but the first runs in a savepoint, whose statement journal
// SQLite keeps in memory up to this size and then spills to a temp file: room for an
// action.communicate's (30-45 pages), while a 10,000-line ingest still spills rather than
// hold hundreds of MiB. The writer's VFS splits the spill's one write (store/sqlite_vfs.h).
constexpr int kStatementJournalSpillBytes = 512 << 10;

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::string path) : path_(std::move(path)) {}

  Status Init() {
    auto w = SqliteConn::Open(path_, /*readonly=*/false);
    if (!w.ok()) return w.status();
    writer_ = std::move(*w);
    CORTEX_RETURN_IF_ERROR(Migrate());
    CORTEX_RETURN_IF_ERROR(UndoStrandedSteps());
    CORTEX_RETURN_IF_ERROR(wal_.Open(writer_->WalPath()));
    CORTEX_RETURN_IF_ERROR(wal_.Sync());  // the migrations' commits, and undone steps
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
        shared_.turns = gate_.Turns();
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
    return Submit(fn, nullptr);
  }

  // Write() above suspends a request running as a fiber.
  bool SuspendsWrites() const override { return true; }

  // Each step is a write of its own, recorded by a StepRecorder (store/sqlite_steps.h)
  // whose inverse commits with it (RunBatch); the last step drops the inverses. Between two steps
  // the writer runs whatever else is queued.
  // REQUIRES: not a fiber (a batch over limits::kIngestLinesPerStep lines is larger than
  // limits::kMaxFiberBodyBytes, and goes to the write pool).
  Status WriteInSteps(const std::string& ws_id, const Step& step) override {
    WorkspaceGate::Pass hold = gate_.Hold(ws_id);
    const std::string batch = RandomHex(16);
    bool done = false;
    Status st;
    try {
      for (int i = 0; !done; ++i) {
        StepRecord record{batch, i};
        st = Submit(
            [&](WriteTx& tx) -> Status {
              if (i == 0) CORTEX_RETURN_IF_ERROR(BeginSteps(*writer_, batch, ws_id, owner_));
              auto last = step(tx, i);
              if (!last.ok()) return last.status();
              done = record.last = *last;
              return done ? EndSteps(*writer_, batch) : Status::Ok();
            },
            &record);
        if (!st.ok()) break;
      }
    } catch (...) {
      UndoSteps(ws_id, batch);
      throw;
    }
    if (!st.ok()) UndoSteps(ws_id, batch);
    return st;
  }

  // Undoes what the steps of `batch` committed (nothing, if none did: a failed step may
  // still have committed, its sync failing after). Tried for a while, the workspace still
  // held; if the store cannot, the batch's owner is given up so that the next open of the
  // store, here or in another process, undoes it.
  void UndoSteps(const std::string& ws_id, const std::string& batch) {
    Status undone;
    for (int attempt = 0; attempt < 6; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100 << attempt));
      undone = Submit([&](WriteTx&) { return cortex::UndoSteps(*writer_, batch); }, nullptr,
                      /*undo=*/true);
      if (undone.ok()) return;
    }
    spdlog::error("undoing the steps of a failed ingest batch in workspace {}: {}", ws_id,
                  undone.message());
    (void)Write([&](WriteTx&) { return AbandonSteps(*writer_, batch); }, Durability::kSynced);
  }

  // As the open of the store does (UndoStrandedSteps), while serving: a write of its own
  // per batch, through the writer. A batch that another process undid meanwhile has no
  // steps left: undoing it again only recounts.
  // Looking costs a read of a table that is empty but while a batch lands.
  Result<int> UndoStrandedWrites() override {
    auto reader = BeginRead(/*remember=*/false);
    if (!reader.ok()) return reader.status();
    auto found = StrandedSteps(**reader);
    CORTEX_RETURN_IF_ERROR(EndRead(std::move(*reader)));
    if (!found.ok()) return found.status();
    std::vector<std::string> stranded = std::move(*found);
    for (const std::string& batch : stranded) {
      CORTEX_RETURN_IF_ERROR(Submit([&](WriteTx&) { return cortex::UndoSteps(*writer_, batch); },
                                    nullptr, /*undo=*/true));
      spdlog::warn("undid an ingest batch left half written by a process that stopped");
    }
    return static_cast<int>(stranded.size());
  }

  // A snapshot this thread's scope took while a write in steps was under way (or before
  // one that has ended since) is let go: the scope's next read takes a new one.
  WorkspaceGate::Pass EnterWorkspace(const std::string& ws_id) override {
    WorkspaceGate::Pass pass = gate_.Enter(ws_id);
    if (shared_.store == this && shared_.conn && gate_.Turns() != shared_.turns) {
      (void)EndRead(std::move(shared_.conn));
    }
    return pass;
  }
  std::optional<WorkspaceGate::Pass> TryEnterWorkspace(const std::string& ws_id) override {
    return gate_.TryEnter(ws_id);
  }

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
  // Queues `fn` and waits for its commit to be synced. A request running as a fiber
  // (core/suspend.h) is suspended rather than its thread blocked.
  struct StepRecord;
  // `undo`: the write puts back what a write in steps did (UndoSteps); it commits alone,
  // with foreign keys off (RunBatch).
  Status Submit(const std::function<Status(WriteTx&)>& fn, StepRecord* step, bool undo = false) {
    PendingWrite me;
    me.fn = &fn;
    me.step = step;
    me.undo = undo;
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

  // A write that is a step of WriteInSteps: what it changes (its function, then what the
  // transaction held back) is recorded, and the inverse saved with it unless it is the last.
  struct StepRecord {
    std::string batch;
    int number = 0;
    bool last = false;  // set by the step's function
  };

  // A queued write. Its caller sleeps on `acked` alone: an acknowledgement wakes exactly
  // the batch's callers, not every waiting one (docs/performance.md). glibc (since 2.21)
  // lets a semaphore be destroyed as soon as sem_wait returns, so the caller's stack frame
  // can go while sem_post is still returning.
  struct PendingWrite {
    PendingWrite() {
      if (sem_init(&acked, /*pshared=*/0, 0) != 0) std::abort();
    }
    ~PendingWrite() { sem_destroy(&acked); }
    PendingWrite(const PendingWrite&) = delete;
    PendingWrite& operator=(const PendingWrite&) = delete;

    const std::function<Status(WriteTx&)>* fn = nullptr;
    StepRecord* step = nullptr;
    bool undo = false;  // Submit's `undo`
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

  // Not inlined: bench/instructions counts what runs under these two by their names.
  [[gnu::noinline]] void WriterLoop() {
    std::unique_lock<std::mutex> lock(queue_mu_);
    while (true) {
      work_cv_.wait(lock, [&] { return !queue_.empty() || stop_writer_; });
      if (queue_.empty()) return;  // stopping, and nothing is left to write
      std::vector<PendingWrite*> batch;
      size_t n = std::min(queue_.size(), limits::kMaxWritesPerCommit);
      // A step of a write in steps commits alone: a write grouped with it would wait for
      // the step's work, which is what steps are there to spare it.
      for (size_t i = 0; i < n; ++i) {
        if (queue_[i]->step != nullptr || queue_[i]->undo) {
          n = i == 0 ? 1 : i;
          break;
        }
      }
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

  [[gnu::noinline]] void SyncLoop() {
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
    // An undo (alone in its batch) deletes rows that other rows reference by columns no
    // index leads with (notifications.episode_id, episodes.entity_id, ...): with foreign keys
    // on, each row deleted scans those tables whole (a cancelled 500-line ingest over a
    // store of 30,000 episodes: 48 s, the writer held). What references the batch's rows is
    // the batch's own rows, undone with them: the workspace is held meanwhile
    // (docs/ingest.md). The pragma is a no-op inside a transaction, so it goes around it.
    struct ForeignKeysOff {
      SqliteConn* conn = nullptr;
      ~ForeignKeysOff() {
        if (conn != nullptr) (void)conn->Exec("PRAGMA foreign_keys=ON");
      }
    } fk_off;
    if (batch.size() == 1 && batch[0]->undo && writer_->Exec("PRAGMA foreign_keys=OFF").ok()) {
      fk_off.conn = writer_.get();
    }
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
          std::optional<StepRecorder> recorder;
          if (w->step != nullptr) recorder.emplace(*writer_);
          w->result = (*w->fn)(tx);
          if (w->result.ok()) w->result = state.FinishWrite();
          if (w->result.ok() && recorder && !w->step->last) {
            w->result = recorder->SaveInverse(w->step->batch, w->step->number);
          }
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

  // Writes in steps that a stopped process left half done are undone, each in a
  // transaction of its own, before anything is served.
  Status UndoStrandedSteps() {
    auto stranded = StrandedSteps(*writer_);
    if (!stranded.ok()) return stranded.status();
    for (const std::string& batch : *stranded) {
      // Foreign keys off around it, as RunBatch does for an undo.
      CORTEX_RETURN_IF_ERROR(writer_->Exec("PRAGMA foreign_keys=OFF"));
      Status st = writer_->Exec("BEGIN IMMEDIATE");
      if (st.ok()) st = cortex::UndoSteps(*writer_, batch);
      if (st.ok()) st = writer_->Exec("COMMIT");
      if (!st.ok()) (void)writer_->Exec("ROLLBACK");
      Status on = writer_->Exec("PRAGMA foreign_keys=ON");
      if (st.ok()) st = on;
      if (!st.ok()) return st;
      spdlog::warn("undid an ingest batch left half written by a process that stopped");
    }
    return Status::Ok();
  }

  // A pooled reader inside a read transaction.
  Result<std::unique_ptr<SqliteConn>> BeginRead(bool remember) {
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
  Status EndRead(std::unique_ptr<SqliteConn> conn) noexcept {
    try {
      Status st = conn->Run("COMMIT");
      if (!conn->InTransaction()) ReleaseReader(std::move(conn));
      return st;
    } catch (...) {  // the connection is dropped (closed), not pooled
      return Status::Internal("ending a read transaction failed");
    }
  }

  Result<std::unique_ptr<SqliteConn>> AcquireReader() {
    {
      std::lock_guard<std::mutex> lock(readers_mu_);
      if (!readers_.empty()) {
        auto c = std::move(readers_.back());
        readers_.pop_back();
        return c;
      }
    }
    return SqliteConn::Open(path_, /*readonly=*/true);
  }

  void ReleaseReader(std::unique_ptr<SqliteConn> c) {
    std::lock_guard<std::mutex> lock(readers_mu_);
    if (readers_.size() < kMaxReaders) readers_.push_back(std::move(c));
  }

  // The open SharedReads scope of this thread, if any (at most one store's at a time).
  struct SharedRead {
    const SqliteStore* store = nullptr;
    int depth = 0;                     // nested scopes
    std::unique_ptr<SqliteConn> conn;  // in a read transaction, once the scope's first Read() ran
    uint64_t turns = 0;                // the gate's, as the transaction began
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
  std::unique_ptr<SqliteConn> writer_;
  Checkpointer checkpointer_;
  WriteAheadLog wal_;
  std::mutex readers_mu_;
  std::vector<std::unique_ptr<SqliteConn>> readers_;
  WorkspaceGate gate_;
  StoreOwner owner_;  // of this open's writes in steps
};

thread_local SqliteStore::SharedRead SqliteStore::shared_;

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& dir) {
  // The directory 0700, the database, its log and shared memory 0600 (docs/store.md).
  const std::string db = dir + "/cortex.db";
  CORTEX_RETURN_IF_ERROR(CreatePrivateDataFiles(dir, db));
  // Process-wide, and only before SQLite initializes: on the first store opened.
  // MEMSTATUS off: SQLite's memory statistics take one process-wide mutex on every
  // allocation, which the reader connections of all I/O threads then contend for. Both
  // are speed settings: if SQLite was already initialised (SQLITE_MISUSE) it runs without.
  static const int configured[] = {
      sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, kStatementJournalSpillBytes),
      sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0)};
  (void)configured;
  // Files an older version made, or a directory made with mkdir: made private before
  // SQLite opens them (a log and shared memory it creates then take the database's mode),
  // and said once; what this user does not own is said at every open.
  for (const std::string& line : MakeDataFilesPrivate(dir, db)) spdlog::warn("{}", line);
  auto store = std::make_unique<SqliteStore>(db);
  CORTEX_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace cortex
