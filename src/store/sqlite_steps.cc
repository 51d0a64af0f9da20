#include "store/sqlite_steps.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include "core/crypto.h"
#include "core/time.h"

namespace cortex {
namespace {

// A statement of this file's few, prepared each time (a step runs them once or twice).
class Query {
 public:
  Query(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Query() { sqlite3_finalize(stmt_); }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  Query& Text(int i, const std::string& v) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_text(stmt_, i, v.data(), v.size(), SQLITE_STATIC);
    return *this;
  }
  Query& Int(int i, int64_t v) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Query& Blob(int i, const void* p, int n) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_blob(stmt_, i, p, n, SQLITE_STATIC);
    return *this;
  }
  // True while a row is there; on an error, false and `error()` says.
  bool Next() {
    if (rc_ != SQLITE_OK && rc_ != SQLITE_ROW) return false;
    rc_ = sqlite3_step(stmt_);
    if (rc_ == SQLITE_ROW) return true;
    if (rc_ == SQLITE_DONE) rc_ = SQLITE_OK;
    return false;
  }
  Status Run() {
    while (Next()) {
    }
    return error();
  }
  Status error() const {
    return rc_ == SQLITE_OK || rc_ == SQLITE_ROW
               ? Status::Ok()
               : Status::Internal(std::string("sqlite (write in steps): ") + sqlite3_errmsg(db_));
  }
  sqlite3_stmt* get() { return stmt_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

bool IsUndoLog(const char* table) { return std::strncmp(table, "staged_", 7) == 0; }

// Undo puts back what a step found: a row it inserted goes, a row it changed gets its
// earlier values. A patchset carries no values to compare, so the only conflicts are a row
// already gone (it stays gone) and a key taken again (the step's earlier row wins).
int OnUndoConflict(void*, int conflict, sqlite3_changeset_iter*) {
  switch (conflict) {
    case SQLITE_CHANGESET_DATA:
    case SQLITE_CHANGESET_CONFLICT:
      return SQLITE_CHANGESET_REPLACE;
    default:  // NOTFOUND, CONSTRAINT, FOREIGN_KEY
      return SQLITE_CHANGESET_OMIT;
  }
}

std::string ReadFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot.
std::string StartTime(pid_t pid) {
  std::string stat = ReadFirstLine(("/proc/" + std::to_string(pid) + "/stat").c_str());
  size_t end = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (end == std::string::npos) return "";
  std::istringstream rest(stat.substr(end + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
  }
  return field;
}

std::string ThisProcess() {
  static const std::string self = ReadFirstLine("/proc/sys/kernel/random/boot_id") + " " +
                                  std::to_string(getpid()) + " " + StartTime(getpid());
  return self;
}

std::mutex open_mu;
std::set<std::string>& OpenHere() {  // this process's open stores, by StoreOwner name
  static std::set<std::string> open;
  return open;
}

bool StillOpen(const std::string& owner) {
  std::istringstream in(owner);
  std::string boot, start, instance;
  long long pid = 0;
  if (!(in >> boot >> pid >> start >> instance)) return false;
  if (owner.rfind(ThisProcess() + " ", 0) == 0) {
    std::lock_guard<std::mutex> lock(open_mu);
    return OpenHere().count(owner) > 0;
  }
  if (boot != ReadFirstLine("/proc/sys/kernel/random/boot_id")) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  return StartTime(static_cast<pid_t>(pid)) == start;
}

// The inverse of a changeset, as a patchset (the session extension's format, documented in
// its sqlite3session.c): what undoes a row the step inserted is its primary key alone, where
// sqlite3changeset_invert would keep the whole row (an ingest step inserts ~5 rows a line:
// the undo log would be as large as the data).
class PatchsetWriter {
 public:
  void Table(const char* name, int columns, const unsigned char* pk) {
    if (table_ == name) return;
    table_ = name;
    out_.push_back('P');
    Varint(static_cast<uint64_t>(columns));
    out_.append(reinterpret_cast<const char*>(pk), static_cast<size_t>(columns));
    out_.append(name);
    out_.push_back('\0');
  }
  void Change(int op) {
    out_.push_back(static_cast<char>(op));
    out_.push_back('\0');  // not indirect
  }
  void Value(sqlite3_value* v) {
    if (v == nullptr) {
      out_.push_back('\0');  // undefined: a column an UPDATE leaves alone
      return;
    }
    int type = sqlite3_value_type(v);
    out_.push_back(static_cast<char>(type));
    switch (type) {
      case SQLITE_INTEGER:
      case SQLITE_FLOAT: {
        uint64_t bits;
        if (type == SQLITE_INTEGER) {
          bits = static_cast<uint64_t>(sqlite3_value_int64(v));
        } else {
          double d = sqlite3_value_double(v);
          std::memcpy(&bits, &d, sizeof bits);
        }
        for (int shift = 56; shift >= 0; shift -= 8)
          out_.push_back(static_cast<char>(bits >> shift));
        break;
      }
      case SQLITE_TEXT:
      case SQLITE_BLOB: {
        const void* p = type == SQLITE_TEXT ? static_cast<const void*>(sqlite3_value_text(v))
                                            : sqlite3_value_blob(v);
        int bytes = sqlite3_value_bytes(v);
        Varint(static_cast<uint64_t>(bytes));
        if (bytes > 0) out_.append(static_cast<const char*>(p), static_cast<size_t>(bytes));
        break;
      }
      default:  // SQLITE_NULL: the type alone
        break;
    }
  }
  std::string Take() { return std::move(out_); }

 private:
  // SQLite's varint: big-endian groups of 7 bits, the high bit set on all but the last.
  // (Lengths and column counts: never the 9-byte form, which needs 2^56.)
  void Varint(uint64_t v) {
    char groups[10];
    int n = 0;
    do {
      groups[n++] = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    } while (v != 0);
    groups[0] = static_cast<char>(groups[0] & 0x7f);
    while (n > 0) out_.push_back(groups[--n]);
  }

  std::string out_;
  std::string table_;
};

Result<std::string> InversePatchset(int n, void* changes) {
  sqlite3_changeset_iter* it = nullptr;
  if (sqlite3changeset_start(&it, n, changes) != SQLITE_OK) {
    return Status::Internal("sqlite: cannot read a step's changes");
  }
  PatchsetWriter out;
  int rc;
  while ((rc = sqlite3changeset_next(it)) == SQLITE_ROW) {
    const char* table = nullptr;
    int columns = 0, op = 0, indirect = 0;
    unsigned char* pk = nullptr;
    sqlite3changeset_op(it, &table, &columns, &op, &indirect);
    sqlite3changeset_pk(it, &pk, &columns);
    out.Table(table, columns, pk);
    sqlite3_value* v = nullptr;
    switch (op) {
      case SQLITE_INSERT:  // undone by deleting the row: its primary key
        out.Change(SQLITE_DELETE);
        for (int i = 0; i < columns; ++i) {
          if (!pk[i]) continue;
          sqlite3changeset_new(it, i, &v);
          out.Value(v);
        }
        break;
      case SQLITE_UPDATE:  // by setting what it changed back: the key, the earlier values
        out.Change(SQLITE_UPDATE);
        for (int i = 0; i < columns; ++i) {
          v = nullptr;
          sqlite3changeset_old(it, i, &v);  // the key, and the columns it changed
          out.Value(v);
        }
        break;
      default:  // SQLITE_DELETE: by inserting the row again
        out.Change(SQLITE_INSERT);
        for (int i = 0; i < columns; ++i) {
          sqlite3changeset_old(it, i, &v);
          out.Value(v);
        }
        break;
    }
  }
  int finalized = sqlite3changeset_finalize(it);
  if (rc != SQLITE_DONE || finalized != SQLITE_OK) {
    return Status::Internal("sqlite: cannot read a step's changes");
  }
  return out.Take();
}

}  // namespace

StepRecorder::StepRecorder(SqliteConn& conn) : conn_(conn) {
  created_ = sqlite3session_create(conn.Handle(), "main", &session_);
  if (created_ != SQLITE_OK) return;
  sqlite3session_table_filter(
      session_, [](void*, const char* table) { return IsUndoLog(table) ? 0 : 1; }, nullptr);
  created_ = sqlite3session_attach(session_, nullptr);
}

StepRecorder::~StepRecorder() {
  if (session_ != nullptr) sqlite3session_delete(session_);
}

Status StepRecorder::SaveInverse(const std::string& batch, int step) {
  if (created_ != SQLITE_OK) return Status::Internal("sqlite: cannot record a step's changes");
  int n = 0;
  void* changes = nullptr;
  int rc = sqlite3session_changeset(session_, &n, &changes);
  std::unique_ptr<void, decltype(&sqlite3_free)> owned(changes, &sqlite3_free);
  if (rc != SQLITE_OK) return Status::Internal("sqlite: cannot read a step's changes");
  auto inverse = InversePatchset(n, changes);
  if (!inverse.ok()) return inverse.status();
  if (inverse->empty()) return Status::Ok();  // the step changed nothing
  Query save(conn_.Handle(), "INSERT INTO staged_undo (batch_id, step, changes) VALUES (?, ?, ?)");
  return save.Text(1, batch)
      .Int(2, step)
      .Blob(3, inverse->data(), static_cast<int>(inverse->size()))
      .Run();
}

StoreOwner::StoreOwner() : name_(ThisProcess() + " " + RandomHex(8)) {
  std::lock_guard<std::mutex> lock(open_mu);
  OpenHere().insert(name_);
}

StoreOwner::~StoreOwner() {
  std::lock_guard<std::mutex> lock(open_mu);
  OpenHere().erase(name_);
}

Status BeginSteps(SqliteConn& conn, const std::string& batch, const std::string& ws_id,
                  const StoreOwner& owner) {
  Query q(conn.Handle(),
          "INSERT INTO staged_batches (id, workspace_id, owner, started_at) VALUES (?, ?, ?, ?)");
  return q.Text(1, batch)
      .Text(2, ws_id)
      .Text(3, owner.name())
      .Int(4, ToUnixMillis(std::chrono::system_clock::now()))
      .Run();
}

namespace {

// The batch's rows in the log, gone; how many staged_batches rows went (0 or 1).
Result<int> DropLog(SqliteConn& conn, const std::string& batch) {
  Query undo(conn.Handle(), "DELETE FROM staged_undo WHERE batch_id = ?");
  CORTEX_RETURN_IF_ERROR(undo.Text(1, batch).Run());
  Query q(conn.Handle(), "DELETE FROM staged_batches WHERE id = ?");
  CORTEX_RETURN_IF_ERROR(q.Text(1, batch).Run());
  return sqlite3_changes(conn.Handle());
}

}  // namespace

Status EndSteps(SqliteConn& conn, const std::string& batch) {
  auto dropped = DropLog(conn, batch);
  if (!dropped.ok()) return dropped.status();
  // Gone already: another process took the batch for stranded and undid its steps. The
  // last step must not commit on its own then.
  if (*dropped != 1) {
    return Status::Unavailable("an ingest batch's earlier steps were undone meanwhile; retry");
  }
  return Status::Ok();
}

Status AbandonSteps(SqliteConn& conn, const std::string& batch) {
  Query q(conn.Handle(), "UPDATE staged_batches SET owner = '' WHERE id = ?");
  return q.Text(1, batch).Run();
}

Status UndoSteps(SqliteConn& conn, const std::string& batch) {
  std::string ws;
  {
    Query owner(conn.Handle(), "SELECT workspace_id FROM staged_batches WHERE id = ?");
    if (owner.Text(1, batch).Next()) {
      ws = reinterpret_cast<const char*>(sqlite3_column_text(owner.get(), 0));
    }
    CORTEX_RETURN_IF_ERROR(owner.error());
  }
  // One step at a time, newest first, each deleted once applied (a changeset is not applied
  // while a statement of the same connection still reads).
  for (;;) {
    std::string changes;
    int64_t step = 0;
    {
      Query newest(conn.Handle(),
                   "SELECT step, changes FROM staged_undo WHERE batch_id = ? "
                   "ORDER BY step DESC LIMIT 1");
      if (!newest.Text(1, batch).Next()) {
        CORTEX_RETURN_IF_ERROR(newest.error());
        break;
      }
      step = sqlite3_column_int64(newest.get(), 0);
      changes.assign(static_cast<const char*>(sqlite3_column_blob(newest.get(), 1)),
                     sqlite3_column_bytes(newest.get(), 1));
    }
    int rc = sqlite3changeset_apply(conn.Handle(), static_cast<int>(changes.size()), changes.data(),
                                    nullptr, &OnUndoConflict, nullptr);
    if (rc != SQLITE_OK) {
      return Status::Internal(std::string("sqlite: undoing a write in steps: ") +
                              sqlite3_errmsg(conn.Handle()));
    }
    Query done(conn.Handle(), "DELETE FROM staged_undo WHERE batch_id = ? AND step = ?");
    CORTEX_RETURN_IF_ERROR(done.Text(1, batch).Int(2, step).Run());
  }
  // The counts kept on the workspace's row went back to what each step found; work that
  // is not the workspace's requests (a delivery, another process) may have counted since.
  Query recount(conn.Handle(),
                "UPDATE workspaces SET"
                " entity_count = (SELECT count(*) FROM entities WHERE workspace_id = ?1),"
                " episode_count = (SELECT count(*) FROM episodes WHERE workspace_id = ?1)"
                " WHERE id = ?1");
  CORTEX_RETURN_IF_ERROR(recount.Text(1, ws).Run());
  return DropLog(conn, batch).status();
}

Result<std::vector<std::string>> StrandedSteps(SqliteConn& conn) {
  // Newest first: a batch started later may have built on rows an earlier one wrote.
  Query q(conn.Handle(), "SELECT id, owner FROM staged_batches ORDER BY started_at DESC");
  std::vector<std::string> stranded;
  while (q.Next()) {
    auto text = [&](int col) {
      const unsigned char* p = sqlite3_column_text(q.get(), col);
      return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
    };
    if (!StillOpen(text(1))) stranded.push_back(text(0));
  }
  CORTEX_RETURN_IF_ERROR(q.error());
  return stranded;
}

}  // namespace cortex
