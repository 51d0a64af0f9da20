// The SQLite driver for store/sql.h: a connection with its cache of prepared statements,
// opened as the SQLite store's writer or as one of its readers. Internal to the store
// (sqlite_store.cc, sqlite_wal.cc): nothing outside src/store/ includes it.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "store/sql.h"

namespace cortex {

// The data directory is private to its owner (docs/store.md): creates `dir` 0700 if it is
// missing (its missing parents get the umask's modes) and an empty database file `db` 0600
// in it, whatever the process umask; SQLite then creates the write-ahead log and the
// shared-memory file with the database file's mode. What exists already is left to
// MakeDataFilesPrivate.
Status CreatePrivateDataFiles(const std::string& dir, const std::string& db);

// Takes group's and others' permissions off each of `dir`, `db`, its -wal and its -shm
// that exists and has any (a directory made with mkdir, files of an older version) and
// that this process's user owns: they are Cortex's files. One line for each such path,
// saying what changed, or for a path it may not change, its mode and the chmod that
// makes it private.
std::vector<std::string> MakeDataFilesPrivate(const std::string& dir, const std::string& db);

// How long a connection waits for a lock another process (e.g. `cortex ingest`) holds.
constexpr int kSqliteBusyTimeoutMs = 5000;

class SqliteStatement;  // a cached prepared statement (sqlite_conn.cc)

// One connection with its statement cache. Used by one thread at a time. The writer
// commits with synchronous=NORMAL: syncing the log is left to the store (WriteAheadLog,
// store/sqlite_wal.h). Readers are query-only.
class SqliteConn final : public SqlConn {
 public:
  ~SqliteConn() override;

  // Opens `path` read-only, or as the writer (created if missing), and sets its pragmas.
  static Result<std::unique_ptr<SqliteConn>> Open(const std::string& path, bool readonly);

  // Runs `sql` (one or more statements) without caching it.
  Status Exec(const char* sql);

  // Runs one statement from the cache: for the BEGIN/COMMIT/SAVEPOINT of every
  // transaction, which sqlite3_exec would parse again each time.
  Status Run(std::string_view sql) { return Prepare(sql).Run(); }

  // False once SQLite has rolled the open transaction back by itself (after an I/O or
  // out-of-memory error, for instance).
  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

  Stmt Prepare(std::string_view sql) override;

  int64_t Changes() override { return sqlite3_changes64(db_); }

  // SQLite calls `hook` after each commit, with the number of pages the log holds (this
  // replaces SQLite's own automatic checkpoint).
  void SetCommitHook(int (*hook)(void*, sqlite3*, const char*, int), void* arg) {
    sqlite3_wal_hook(db_, hook, arg);
  }

  // The write-ahead log's path (the file exists once the connection has run a statement).
  std::string WalPath() const { return sqlite3_filename_wal(sqlite3_db_filename(db_, "main")); }

  // For SQLite's own extensions that take the connection (sessions, sqlite_steps.h).
  sqlite3* Handle() const { return db_; }

  // One process writes at a time: there is nothing to lock per workspace.
  Status Enter(const std::string&) override { return Status::Ok(); }

  // Starts a read transaction (a reader's snapshot begins at its first statement);
  // `remember`: whether it may use remembered rows (Stable).
  Status BeginRead(bool remember);

  // A reader keeps its remembered rows for as long as the database's data version stays
  // where it was when they were read: any commit, by any connection of any process, moves
  // it. Read inside the transaction, the version is that of the transaction's snapshot,
  // so the rows are exactly what the transaction would read. The writer keeps none (its
  // own uncommitted changes would not move the version). Only a read-only request's
  // transaction (SharedReads) uses them: a request that writes sees a new version almost
  // every time under write load, and there checking and refilling cost more than a look-up
  // (docs/performance.md).
  StableRows* Stable() override;

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

}  // namespace cortex
