// The SQLite driver for store/sql.h (sqlite_conn.h): statements and connections.
#include "store/sqlite_conn.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include "store/sqlite_vfs.h"

namespace cortex {
namespace {

constexpr mode_t kPrivateDir = 0700;
constexpr mode_t kPrivateFile = 0600;

Status CannotCreate(const std::string& what, const std::string& path, int err) {
  return Status::InvalidArgument("cannot create " + what + " " + path + ": " +
                                 std::error_code(err, std::generic_category()).message());
}

}  // namespace

Status CreatePrivateDataFiles(const std::string& dir, const std::string& db) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();  // "data/" is "data"
  std::error_code ec;
  if (!std::filesystem::exists(d, ec)) {
    std::filesystem::path parent = std::filesystem::path(d).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) return CannotCreate("data directory", d, ec.value());
    // mkdir's mode goes through the umask (which may also take the owner's bits): the chmod
    // makes it exactly 0700. Only a directory made here is changed.
    if (::mkdir(d.c_str(), kPrivateDir) == 0) {
      if (::chmod(d.c_str(), kPrivateDir) != 0) return CannotCreate("data directory", d, errno);
      // The new directory's own entry is durable only once its parent is synced (the store
      // syncs the directory itself later, which covers the files in it, not this entry).
      std::string p = parent.empty() ? "." : parent.string();
      int pfd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      int rc = pfd < 0 ? -1 : ::fsync(pfd);
      int err = errno;
      if (pfd >= 0) ::close(pfd);
      if (rc != 0) return CannotCreate("data directory (syncing its parent)", d, err);
    } else if (errno != EEXIST) {
      return CannotCreate("data directory", d, errno);
    }
  }
  // An empty file is an empty database to SQLite, which then gives the log and the
  // shared-memory file this file's mode (and sets it on them whatever the umask).
  int fd = ::open(db.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, kPrivateFile);
  if (fd < 0) return errno == EEXIST ? Status::Ok() : CannotCreate("database", db, errno);
  int rc = ::fchmod(fd, kPrivateFile);
  int err = errno;
  ::close(fd);
  return rc == 0 ? Status::Ok() : CannotCreate("database", db, err);
}

std::vector<std::string> MakeDataFilesPrivate(const std::string& dir, const std::string& db) {
  std::vector<std::string> said;
  auto fix = [&](const char* what, const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || (st.st_mode & 077) == 0) return;
    auto octal = [](mode_t m) {
      char text[8];
      std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(m & 07777));
      return std::string(text);
    };
    const mode_t private_mode = st.st_mode & 07700;
    if (st.st_uid == ::geteuid() && ::chmod(path.c_str(), private_mode) == 0) {
      said.push_back("made " + std::string(what) + " " + path + " private to its owner: mode " +
                     octal(st.st_mode) + " is now " + octal(private_mode));
      return;
    }
    said.push_back(std::string(what) + " " + path + " has mode " + octal(st.st_mode) +
                   ": group or others have access to it; `chmod go-rwx " + path +
                   "` makes it private to its owner");
  };
  fix("data directory", dir);
  for (const char* suffix : {"", "-wal", "-shm"}) fix("data file", db + suffix);
  return said;
}

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
