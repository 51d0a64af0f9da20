// The SQLite driver for store/sql.h (sqlite_conn.h): statements and connections.
#include "store/sqlite_conn.h"

#include <sqlite3.h>

#include <stdexcept>
#include <string>

#include "store/sqlite_vfs.h"

namespace cortex {

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

SqliteConn::~SqliteConn() {
  cache_.clear();  // finalizes every statement before the close
  if (db_) sqlite3_close_v2(db_);
}

Result<std::unique_ptr<SqliteConn>> SqliteConn::Open(const std::string& path, bool readonly) {
  auto c = std::make_unique<SqliteConn>();
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
  sqlite3_busy_timeout(c->db_, kSqliteBusyTimeoutMs);
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

Status SqliteConn::Exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string msg = std::string("sqlite: ") + (err ? err : sqlite3_errstr(rc));
  sqlite3_free(err);
  if ((rc & 0xff) == SQLITE_BUSY) return Status::Unavailable(msg);
  return Status::Internal(msg);
}

Stmt SqliteConn::Prepare(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                           &s, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("prepare failed: ") + sqlite3_errmsg(db_) +
                               " in: " + std::string(sql));
    }
    it = cache_.emplace(std::string(sql), std::make_unique<SqliteStatement>(db_, s)).first;
  }
  return Stmt(*it->second);
}

Status SqliteConn::BeginRead(bool remember) {
  remember_ = remember;
  version_known_ = false;
  return Run("BEGIN");
}

StableRows* SqliteConn::Stable() {
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

}  // namespace cortex
