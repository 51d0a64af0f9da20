// What the areas' SQL (store/<area>_sql.cc) needs from a database driver: prepared
// statements with positional parameters and a row cursor. SQLite (sqlite_conn.cc) and
// PostgreSQL (pg_store.cc) each implement it once, so every query is written once, in the
// SQL both databases speak.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/model.h"
#include "store/states.h"

namespace cortex {

// A prepared statement of one connection. Parameters are numbered from 1, columns from 0.
class SqlStatement {
 public:
  virtual ~SqlStatement() = default;
  // `v` must stay valid until the statement is reset: SQLite reads it in place.
  virtual void BindText(int i, std::string_view v) = 0;
  virtual void BindInt(int i, int64_t v) = 0;
  virtual void BindNull(int i) = 0;
  // Runs the statement on the first call; true while a row is available. Errors go to
  // *status (Conflict for a constraint, Unavailable for a busy or lost database).
  virtual bool Step(Status* status) = 0;
  virtual std::string Text(int col) const = 0;
  virtual int64_t Int(int col) const = 0;
  virtual bool IsNull(int col) const = 0;
  // Forgets bindings and results, ready for the next use.
  virtual void Reset() = 0;
};

// A handle on a cached statement: typed binds that chain, typed column reads, and a reset
// when it goes out of scope.
//
// Text is bound without a copy (copying every bound string was ~5% of an ingested line's
// instructions), so what is bound must outlive the statement's steps: a named string
// does; binding a temporary does not compile.
class Stmt {
 public:
  explicit Stmt(SqlStatement& s) : s_(s) {}
  ~Stmt() { s_.Reset(); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Bind(int i, const std::string& v) {
    s_.BindText(i, v);
    return *this;
  }
  Stmt& Bind(int i, std::string&& v) = delete;
  Stmt& Bind(int i, const std::string&& v) = delete;
  Stmt& Bind(int i, int64_t v) {
    s_.BindInt(i, v);
    return *this;
  }
  Stmt& Bind(int i, TimePoint t) { return Bind(i, static_cast<int64_t>(ToUnixMillis(t))); }
  // A state is bound by its spelling, which lives as long as the program.
  template <State E>
  Stmt& Bind(int i, E e) {
    s_.BindText(i, Name(e));
    return *this;
  }
  Stmt& BindNull(int i) {
    s_.BindNull(i);
    return *this;
  }
  template <typename T>
  Stmt& Bind(int i, const std::optional<T>& v) {
    return v ? Bind(i, *v) : BindNull(i);
  }
  template <typename T>
  Stmt& Bind(int i, std::optional<T>&& v) = delete;
  template <typename T>
  Stmt& Bind(int i, const std::optional<T>&& v) = delete;

  bool Step(Status* status) { return s_.Step(status); }
  // Runs a statement that returns no rows.
  Status Run() {
    Status st;
    while (Step(&st)) {
    }
    return st;
  }

  std::string Text(int col) const { return s_.Text(col); }
  int64_t Int(int col) const { return s_.Int(col); }
  bool IsNull(int col) const { return s_.IsNull(col); }
  TimePoint Time(int col) const { return FromUnixMillis(Int(col)); }
  std::optional<TimePoint> OptTime(int col) const {
    return IsNull(col) ? std::nullopt : std::optional<TimePoint>(Time(col));
  }
  // The state a column spells (ParseStored: throws on a spelling no value has).
  template <State E>
  E As(int col) const {
    return ParseStored<E>(s_.Text(col));
  }
  std::optional<std::string> OptText(int col) const {
    return IsNull(col) ? std::nullopt : std::optional<std::string>(Text(col));
  }

 private:
  SqlStatement& s_;
};

// Rows every tool call reads and that seldom change (its token, workspace, settings and
// quota overrides), remembered by a connection between its transactions. Keyed by token
// hash or workspace id; only rows that exist are kept.
struct StableRows {
  static constexpr size_t kMaxPerMap = 256;  // beyond this a map starts over
  std::unordered_map<std::string, TokenRecord> tokens;
  std::unordered_map<std::string, Workspace> workspaces;
  std::unordered_map<std::string, WorkspaceSettings> settings;
  std::unordered_map<std::string, std::vector<std::pair<std::string, int64_t>>> quotas;
};

// One connection inside one transaction. Used by one thread at a time.
class SqlConn {
 public:
  virtual ~SqlConn() = default;
  // `sql` uses `?` (or `?N`) placeholders. Prepared once per connection and cached; a
  // statement must not be prepared again while a handle on it is alive. Throws on SQL
  // that does not prepare: our SQL is fixed in the source, so that is a bug.
  virtual Stmt Prepare(std::string_view sql) = 0;
  // Rows inserted, updated or deleted by the statement run last.
  virtual int64_t Changes() = 0;
  // Called before a transaction first touches workspace `ws`. In a PostgreSQL write
  // transaction it locks the workspace row, so writes to one workspace serialize across
  // instances as they do in SQLite's single writer; elsewhere it does nothing.
  virtual Status Enter(const std::string& ws) = 0;
  // The rows this connection remembers, valid for the transaction it is in: only where
  // the connection can tell that nothing has changed since they were read (SQLite's
  // readers in a read-only request, by the database's data version); nullptr elsewhere.
  virtual StableRows* Stable() { return nullptr; }
};

}  // namespace cortex
