// The PostgreSQL store: the driver for store/sql.h over libpqxx, with a pool of
// connections shared by every thread. Several `cortex serve` instances may run on one
// database (docs/deploy.md):
//   - Read() is a REPEATABLE READ, READ ONLY transaction: one consistent snapshot, never
//     waiting behind writers.
//   - Write() is a READ COMMITTED transaction that locks each workspace row it touches
//     before its first statement on that workspace (SqlConn::Enter). Writes to one
//     workspace therefore run one at a time across all instances, each seeing everything
//     committed before it, as in SQLite's single writer; writes to different workspaces run
//     in parallel. Conditional updates (TransitionAction, LeaseOutbox) make scheduled work
//     execute once whichever instance gets there first.
//   - Commits are durable when they return: every connection runs with synchronous_commit
//     on (set if the server's default is off), except writes asking for
//     Durability::kRelaxed (tool-call counts, a session's last use).
#include <condition_variable>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/limits.h"
#include "store/migrations.h"
#include "store/sql.h"
#include "store/sql_tx.h"
#include "store/store.h"

namespace cortex {
namespace {

constexpr size_t kMaxConnections = 16;  // per process; each is a PostgreSQL backend
// At most this many of them in write transactions. Writes to one workspace queue on its row
// lock holding their connections (and HTTP runs up to limits::kWriteThreads writes at
// once): the rest stay free for reads, which never wait on a lock, and for bookkeeping
// writes (Durability::kRelaxed: call counts), which lock no workspace.
constexpr size_t kMaxWriting = 12;
// The key of the advisory lock that lets one instance at a time apply migrations.
constexpr int64_t kMigrationLock = 0x636f72746578;  // "cortex"

// A database error as a Status: constraint violations are conflicts, transient failures
// (lost connection, serialization failure, deadlock, cancel) say "try again".
Status FromSqlError(const pqxx::sql_error& e) {
  const std::string& state = e.sqlstate();
  std::string msg = std::string("postgresql: ") + e.what();
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  if (state.rfind("23", 0) == 0) return Status::Conflict(msg);
  if (state == "40001" || state == "40P01" || state == "55P03" || state == "57014" ||
      state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0) {
    return Status::Unavailable(msg);
  }
  return Status::Internal(msg);
}

// Rewrites `?` and `?N` placeholders as PostgreSQL's `$N`. Our SQL has no `?` inside
// string literals (it is fixed in the source), so a plain scan is enough.
std::string ToDollarParams(std::string_view sql, int* count) {
  std::string out;
  out.reserve(sql.size() + 16);
  int next = 0, highest = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    if (sql[i] != '?') {
      out += sql[i];
      continue;
    }
    size_t j = i + 1;
    while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') ++j;
    int n = j > i + 1 ? std::stoi(std::string(sql.substr(i + 1, j - i - 1))) : ++next;
    highest = std::max(highest, n);
    out += '$' + std::to_string(n);
    i = j - 1;
  }
  *count = highest;
  return out;
}

class PgConn;

class PgStatement final : public SqlStatement {
 public:
  PgStatement(PgConn& conn, std::string name, int params)
      : conn_(conn), name_(std::move(name)), values_(params), null_(params, true) {}

  void BindText(int i, std::string_view v) override {
    values_[i - 1].assign(v);
    null_[i - 1] = false;
  }
  void BindInt(int i, int64_t v) override { BindText(i, std::to_string(v)); }
  void BindNull(int i) override { null_[i - 1] = true; }

  bool Step(Status* status) override;
  std::string Text(int col) const override {
    const pqxx::field f = result_[row_][col];
    return std::string(f.c_str(), f.size());
  }
  int64_t Int(int col) const override { return result_[row_][col].as<int64_t>(); }
  bool IsNull(int col) const override { return result_[row_][col].is_null(); }
  void Reset() override {
    std::fill(null_.begin(), null_.end(), true);
    result_ = pqxx::result();
    ran_ = false;
  }

 private:
  PgConn& conn_;
  std::string name_;
  std::vector<std::string> values_;
  std::vector<bool> null_;
  pqxx::result result_;
  pqxx::result::size_type row_ = 0;
  bool ran_ = false;
};

class PgConn final : public SqlConn {
 public:
  explicit PgConn(const std::string& url) : conn_(url) {
    // Session settings go through set_variable: libpqxx (6.x) may reconnect a connection
    // whose backend died (a server restart) by itself, at a later transaction's start, and
    // then sets again only what was set this way; a plain SET would be gone with the old
    // backend. (The pool drops a connection that broke, but nothing should depend on it.)
    // A writer that stalls (a paused instance holding a workspace lock) must not stall
    // every instance forever: waits for a lock end after 30 s with "try again", and a
    // transaction left idle for a minute is ended by the server.
    conn_.set_variable("lock_timeout", "'30s'");
    conn_.set_variable("idle_in_transaction_session_timeout", "'60s'");
    // A commit Cortex acknowledges must be flushed when it returns. A server, database or
    // role configured with synchronous_commit = off would lose the last moment's
    // acknowledged writes in a crash; every other value (local, remote_write, on,
    // remote_apply) flushes the local WAL first and is kept.
    if (conn_.get_variable("synchronous_commit") == "off") {
      conn_.set_variable("synchronous_commit", "on");
    }
  }

  // Begins a transaction: a read-only snapshot, or a write that locks workspaces.
  void Begin(bool write) {
    entered_.clear();
    failed_ = Status::Ok();
    write_ = write;
    if (write) {
      tx_ = std::make_unique<pqxx::transaction<pqxx::read_committed>>(conn_);
    } else {
      tx_ = std::make_unique<pqxx::transaction<pqxx::repeatable_read, pqxx::read_only>>(conn_);
    }
  }
  Status Commit() {
    Status st = Guard([&] { tx_->commit(); });
    tx_.reset();
    return st;
  }
  void Abort() {
    if (!tx_) return;
    try {
      tx_->abort();
    } catch (const std::exception&) {
      broken_ = true;  // the connection cannot be trusted with the next transaction
    }
    tx_.reset();
  }
  bool usable() const { return !broken_ && conn_.is_open(); }

  Stmt Prepare(std::string_view sql) override {
    auto it = cache_.find(sql);
    if (it == cache_.end()) {
      int params = 0;
      std::string pg_sql = ToDollarParams(sql, &params);
      std::string name = "q" + std::to_string(cache_.size() + 1);
      conn_.prepare(name, pg_sql);
      it = cache_.emplace(std::string(sql), std::make_unique<PgStatement>(*this, name, params))
               .first;
    }
    return Stmt(*it->second);
  }

  int64_t Changes() override { return changes_; }

  Status Enter(const std::string& ws) override {
    if (!write_ || !entered_.insert(ws).second) return Status::Ok();
    return Prepare("SELECT 1 FROM workspaces WHERE id = ? FOR NO KEY UPDATE").Bind(1, ws).Run();
  }

  // Runs `fn`, turning libpqxx's exceptions into a Status.
  template <typename Fn>
  Status Guard(Fn&& fn) {
    try {
      fn();
      return Status::Ok();
    } catch (const pqxx::broken_connection& e) {
      broken_ = true;
      return Status::Unavailable(std::string("postgresql: connection lost: ") + e.what());
    } catch (const pqxx::sql_error& e) {
      return FromSqlError(e);
    } catch (const pqxx::in_doubt_error& e) {
      broken_ = true;
      return Status::Unavailable("postgresql: " + std::string(kCommitOutcomeUnknown) + ": " +
                                 e.what());
    }
  }

  // Runs prepared statement `name`. After a failed statement PostgreSQL refuses the rest
  // of the transaction ("current transaction is aborted"): later statements report the
  // first failure instead, so the caller sees what actually went wrong.
  Status Exec(const std::string& name, const std::vector<const char*>& params, pqxx::result* out) {
    if (!failed_.ok()) return failed_;
    failed_ = Guard([&] {
      *out = tx_->exec_prepared(name, pqxx::prepare::make_dynamic_params(params));
      changes_ = out->affected_rows();
    });
    return failed_;
  }

  // Statements outside the prepared cache (migrations).
  pqxx::transaction_base& tx() { return *tx_; }

 private:
  pqxx::connection conn_;
  std::unique_ptr<pqxx::transaction_base> tx_;
  bool write_ = false;
  bool broken_ = false;
  int64_t changes_ = 0;
  Status failed_;  // the first failed statement of the open transaction
  std::set<std::string> entered_;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<PgStatement>, Hash, std::equal_to<>> cache_;
};

bool PgStatement::Step(Status* status) {
  if (ran_) return ++row_ < result_.size();
  ran_ = true;
  row_ = 0;
  std::vector<const char*> params(values_.size());
  for (size_t i = 0; i < values_.size(); ++i) params[i] = null_[i] ? nullptr : values_[i].c_str();
  Status st = conn_.Exec(name_, params, &result_);
  if (!st.ok()) {
    *status = st;
    return false;
  }
  return !result_.empty();
}

class PgStore final : public Store {
 public:
  explicit PgStore(std::string url) : url_(std::move(url)) {}

  Status Init() {
    CORTEX_RETURN_IF_ERROR(Migrate());
    // fsync = off is server-wide and cannot be overridden per session: a crash of the
    // machine may then lose or corrupt anything. Said once, at open.
    return Transaction(/*write=*/false, [&](PgConn& c) {
      return c.Guard([&] {
        if (c.tx().exec("SELECT current_setting('fsync')")[0][0].as<std::string>() == "off") {
          spdlog::warn(
              "postgresql: the server runs with fsync = off: a crash of its machine may lose "
              "writes Cortex has acknowledged (turn fsync on in postgresql.conf)");
        }
      });
    });
  }

  Status Read(const std::function<Status(ReadTx&)>& fn) override {
    return Transaction(/*write=*/false, [&](PgConn& c) {
      TxState state(c);
      ReadTx tx(state);
      return fn(tx);
    });
  }

  Status Write(const std::function<Status(WriteTx&)>& fn, Durability durability) override {
    return Transaction(/*write=*/true,
                       [&](PgConn& c) -> Status {
                         if (durability == Durability::kRelaxed) {
                           // The commit returns before its WAL record is flushed (PostgreSQL's
                           // asynchronous commit): no fsync wait for bookkeeping such as call
                           // counts.
                           CORTEX_RETURN_IF_ERROR(c.Guard(
                               [&] { c.tx().exec("SET LOCAL synchronous_commit TO OFF"); }));
                         }
                         TxState state(c);
                         WriteTx tx(state);
                         CORTEX_RETURN_IF_ERROR(fn(tx));
                         return state.FinishWrite();
                       },
                       /*slot=*/durability != Durability::kRelaxed);
  }

  Result<int> SchemaVersion() override {
    int version = 0;
    Status st = Transaction(false, [&](PgConn& c) {
      Stmt s = c.Prepare("SELECT coalesce(max(number), 0) FROM schema_migrations");
      Status step;
      if (s.Step(&step)) version = static_cast<int>(s.Int(0));
      return step;
    });
    if (!st.ok()) return st;
    return version;
  }

  bool MultiInstance() const override { return true; }

 private:
  // A pooled connection, returned to the pool (or dropped, if it broke) however the
  // transaction ends; an open transaction is rolled back first.
  class Lease {
   public:
    Lease(PgStore& store, std::unique_ptr<PgConn> conn) : store_(store), conn_(std::move(conn)) {}
    ~Lease() {
      conn_->Abort();
      store_.Release(std::move(conn_));
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    PgConn& operator*() { return *conn_; }

   private:
    PgStore& store_;
    std::unique_ptr<PgConn> conn_;
  };

  // A place among the kMaxWriting write transactions, held for one transaction.
  class WriteSlot {
   public:
    explicit WriteSlot(PgStore& store) : store_(store) {
      std::unique_lock<std::mutex> lock(store_.mu_);
      store_.slot_cv_.wait(lock, [&] { return store_.writing_ < kMaxWriting; });
      ++store_.writing_;
    }
    ~WriteSlot() {
      {
        std::lock_guard<std::mutex> lock(store_.mu_);
        --store_.writing_;
      }
      store_.slot_cv_.notify_one();
    }
    WriteSlot(const WriteSlot&) = delete;
    WriteSlot& operator=(const WriteSlot&) = delete;

   private:
    PgStore& store_;
  };

  // `slot`: whether a write takes one of the kMaxWriting places.
  template <typename Fn>
  Status Transaction(bool write, Fn&& fn, bool slot = true) {
    std::optional<WriteSlot> writing;
    if (write && slot) writing.emplace(*this);
    // An idle pooled connection may have died with its server (a restart): its BEGIN fails
    // before anything ran, so the transaction is begun again on another one (each dead one
    // is dropped, then a new one is opened) rather than failing a request once the server
    // is back. A server still down fails the new connection: "cannot connect".
    for (size_t attempt = 0;; ++attempt) {
      auto conn = Acquire();
      if (!conn.ok()) return conn.status();
      Lease lease(*this, std::move(*conn));
      PgConn& c = *lease;
      Status begun = c.Guard([&] { c.Begin(write); });
      if (!begun.ok()) {
        if (!c.usable() && attempt < kMaxConnections) continue;
        return begun;
      }
      CORTEX_RETURN_IF_ERROR(fn(c));
      return c.Commit();
    }
  }

  Result<std::unique_ptr<PgConn>> Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !idle_.empty() || open_ < kMaxConnections; });
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
    ++open_;
    lock.unlock();
    try {
      return std::make_unique<PgConn>(url_);
    } catch (const std::exception& e) {
      lock.lock();
      --open_;
      cv_.notify_one();
      std::string msg = e.what();
      while (!msg.empty() && msg.back() == '\n') msg.pop_back();
      return Status::Unavailable("postgresql: cannot connect: " + msg);
    }
  }

  void Release(std::unique_ptr<PgConn> c) {
    std::lock_guard<std::mutex> lock(mu_);
    if (c->usable()) {
      idle_.push_back(std::move(c));
    } else {
      --open_;  // dropped: the next Acquire opens a fresh one
    }
    cv_.notify_one();
  }

  // Applies pending migrations, each in its own transaction, holding an advisory lock so
  // that instances starting together apply each migration once.
  Status Migrate() {
    auto create = Transaction(true, [&](PgConn& c) {
      return c.Guard([&] {
        c.tx().exec("SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLock) + ")");
        c.tx().exec(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " number BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)");
      });
    });
    if (!create.ok()) return create;
    for (const Migration& m : Migrations()) {
      Status st = Transaction(true, [&](PgConn& c) {
        return c.Guard([&] {
          c.tx().exec("SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLock) + ")");
          pqxx::result done =
              c.tx().exec_params("SELECT 1 FROM schema_migrations WHERE number = $1", m.number);
          if (!done.empty()) return;
          c.tx().exec(PostgresMigrationSql(m));
          c.tx().exec_params(
              "INSERT INTO schema_migrations (number, name, applied_at) VALUES ($1, $2, $3)",
              m.number, std::string(m.name),
              static_cast<int64_t>(ToUnixMillis(std::chrono::system_clock::now())));
        });
      });
      if (!st.ok()) {
        return Status::Internal("migration " + std::to_string(m.number) +
                                " failed: " + st.message());
      }
    }
    return Status::Ok();
  }

  std::string url_;
  std::mutex mu_;
  std::condition_variable cv_;       // a connection was released
  std::condition_variable slot_cv_;  // a write slot was released
  std::vector<std::unique_ptr<PgConn>> idle_;
  size_t open_ = 0;
  size_t writing_ = 0;
};

}  // namespace

Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& url) {
  auto store = std::make_unique<PgStore>(url);
  CORTEX_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace cortex
