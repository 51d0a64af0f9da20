// The SQLite store: one writer connection (writes are serialised by a mutex and run as
// BEGIN IMMEDIATE transactions) and a pool of reader connections. In WAL mode readers see
// the last committed snapshot and never wait behind the writer.
#include <sqlite3.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "core/time.h"
#include "store/migrations.h"
#include "store/store.h"

namespace cortex {
namespace {

constexpr int kBusyTimeoutMs = 5000;  // another process (e.g. `cortex ingest`) holds the lock
constexpr size_t kMaxReaders = 8;

// A prepared statement, reset on destruction so it can be reused from the cache.
class Stmt {
 public:
  Stmt(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  ~Stmt() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& Bind(int i, TimePoint t) { return Bind(i, static_cast<int64_t>(ToUnixMillis(t))); }
  Stmt& BindNull(int i) {
    sqlite3_bind_null(s_, i);
    return *this;
  }
  template <typename T>
  Stmt& Bind(int i, const std::optional<T>& v) {
    return v ? Bind(i, *v) : BindNull(i);
  }

  // Steps once: true if a row is available, false when done. Errors go to *status.
  bool Step(Status* status) {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) *status = Error(rc);
    return false;
  }
  // Runs a statement that returns no rows.
  Status Run() {
    Status st;
    while (Step(&st)) {
    }
    return st;
  }

  std::string Text(int col) const {
    const unsigned char* p = sqlite3_column_text(s_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(s_, col)))
             : std::string();
  }
  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  TimePoint Time(int col) const { return FromUnixMillis(Int(col)); }
  std::optional<TimePoint> OptTime(int col) const {
    return IsNull(col) ? std::nullopt : std::optional<TimePoint>(Time(col));
  }
  std::optional<std::string> OptText(int col) const {
    return IsNull(col) ? std::nullopt : std::optional<std::string>(Text(col));
  }

  Status Error(int rc) const {
    std::string msg = std::string("sqlite: ") + sqlite3_errmsg(db_);
    int primary = rc & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return Status::Unavailable(msg);
    if (primary == SQLITE_CONSTRAINT) return Status::Conflict(msg);
    return Status::Internal(msg);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_;
};

// One connection with its statement cache. Used by one thread at a time.
class Conn {
 public:
  ~Conn() {
    for (auto& [sql, s] : cache_) sqlite3_finalize(s);
    if (db_) sqlite3_close_v2(db_);
  }

  static Result<std::unique_ptr<Conn>> Open(const std::string& path, bool readonly) {
    auto c = std::make_unique<Conn>();
    int flags = SQLITE_OPEN_NOMUTEX |
                (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    if (sqlite3_open_v2(path.c_str(), &c->db_, flags, nullptr) != SQLITE_OK) {
      return Status::Internal("cannot open " + path + ": " +
                              (c->db_ ? sqlite3_errmsg(c->db_) : "out of memory"));
    }
    sqlite3_busy_timeout(c->db_, kBusyTimeoutMs);
    sqlite3_extended_result_codes(c->db_, 1);
    // WAL: readers never block the writer nor wait for it. synchronous=FULL: a commit is on
    // disk (fsync of the WAL) before Write() returns, so acknowledged work survives a crash
    // or power loss.
    const char* pragmas = readonly ? "PRAGMA foreign_keys=ON; PRAGMA query_only=ON;"
                                   : "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                                     "PRAGMA foreign_keys=ON;";
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

  // REQUIRES: `sql` is a string literal (the cache is keyed by its address).
  Stmt Prepare(const char* sql) {
    auto it = cache_.find(sql);
    if (it == cache_.end()) {
      sqlite3_stmt* s = nullptr;
      if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) {
        // Our SQL is fixed at compile time: failing to prepare it is a bug.
        throw std::runtime_error(std::string("prepare failed: ") + sqlite3_errmsg(db_) +
                                 " in: " + sql);
      }
      it = cache_.emplace(sql, s).first;
    }
    return Stmt(db_, it->second);
  }

 private:
  sqlite3* db_ = nullptr;
  std::unordered_map<const char*, sqlite3_stmt*> cache_;
};


class SqliteTx final : public WriteTx {
 public:
  explicit SqliteTx(Conn& c) : c_(c) {}

  // --- reads ---

  Result<Workspace> FindWorkspaceByName(const std::string& name) override {
    Stmt s = c_.Prepare(
        "SELECT id, name, world_version, agent_version, created_at FROM workspaces "
        "WHERE name = ?");
    s.Bind(1, name);
    return ReadWorkspace(s, "workspace '" + name + "'");
  }

  Result<Workspace> GetWorkspace(const std::string& id) override {
    Stmt s = c_.Prepare(
        "SELECT id, name, world_version, agent_version, created_at FROM workspaces "
        "WHERE id = ?");
    s.Bind(1, id);
    return ReadWorkspace(s, "workspace " + id);
  }

  Result<std::vector<Workspace>> ListWorkspaces() override {
    Stmt s = c_.Prepare(
        "SELECT id, name, world_version, agent_version, created_at FROM workspaces "
        "ORDER BY name");
    std::vector<Workspace> out;
    Status st;
    while (s.Step(&st)) out.push_back(WorkspaceRow(s));
    if (!st.ok()) return st;
    return out;
  }

  Result<TokenRecord> FindTokenByHash(const std::string& hash) override {
    Stmt s = c_.Prepare(
        "SELECT id, workspace_id, hash, label, scopes, created_at, revoked_at FROM tokens "
        "WHERE hash = ?");
    s.Bind(1, hash);
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("unknown token") : st;
    return TokenRow(s);
  }

  Result<std::vector<TokenRecord>> ListTokens(const std::string& ws) override {
    Stmt s = c_.Prepare(
        "SELECT id, workspace_id, hash, label, scopes, created_at, revoked_at FROM tokens "
        "WHERE workspace_id = ? ORDER BY id");
    s.Bind(1, ws);
    std::vector<TokenRecord> out;
    Status st;
    while (s.Step(&st)) out.push_back(TokenRow(s));
    if (!st.ok()) return st;
    return out;
  }

  Result<Entity> GetEntity(const std::string& ws, const std::string& entity_id) override {
    Stmt s = c_.Prepare(
        "SELECT id, workspace_id, kind, name, created_at FROM entities "
        "WHERE workspace_id = ? AND id = ?");
    s.Bind(1, ws).Bind(2, entity_id);
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("no entity " + entity_id) : st;
    Entity e{s.Text(0), s.Text(1), s.Text(2), s.Text(3), {}, {}, s.Time(4)};
    CORTEX_RETURN_IF_ERROR(LoadEntityDetails(&e));
    return e;
  }

  Result<Entity> FindEntityByIdentifier(const std::string& ws,
                                        const std::string& identifier) override {
    Stmt s = c_.Prepare(
        "SELECT entity_id FROM entity_identifiers WHERE workspace_id = ? AND identifier = ?");
    s.Bind(1, ws).Bind(2, identifier);
    Status st;
    if (!s.Step(&st)) {
      return st.ok() ? Status::NotFound("no entity with identifier '" + identifier + "'") : st;
    }
    std::string id = s.Text(0);
    return GetEntity(ws, id);
  }

  Result<bool> EpisodeExternalIdExists(const std::string& ws,
                                       const std::string& external_id) override {
    Stmt s = c_.Prepare("SELECT 1 FROM episodes WHERE workspace_id = ? AND external_id = ?");
    s.Bind(1, ws).Bind(2, external_id);
    Status st;
    bool found = s.Step(&st);
    if (!st.ok()) return st;
    return found;
  }

  Result<WorldCounts> CountWorld(const std::string& ws) override {
    Stmt s = c_.Prepare(
        "SELECT (SELECT count(*) FROM entities WHERE workspace_id = ?1),"
        "       (SELECT count(*) FROM episodes WHERE workspace_id = ?1),"
        "       (SELECT count(*) FROM tokens WHERE workspace_id = ?1 AND revoked_at IS NULL)");
    s.Bind(1, ws);
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::Internal("count returned no row") : st;
    return WorldCounts{s.Int(0), s.Int(1), s.Int(2)};
  }

  // --- writes ---

  Status InsertWorkspace(const Workspace& w) override {
    Stmt s = c_.Prepare(
        "INSERT INTO workspaces (id, name, world_version, agent_version, created_at) "
        "VALUES (?, ?, ?, ?, ?)");
    return s.Bind(1, w.id)
        .Bind(2, w.name)
        .Bind(3, w.world_version)
        .Bind(4, w.agent_version)
        .Bind(5, w.created_at)
        .Run();
  }

  Status SetWorldVersion(const std::string& ws, const std::string& wv) override {
    Stmt s = c_.Prepare("UPDATE workspaces SET world_version = ? WHERE id = ?");
    return s.Bind(1, wv).Bind(2, ws).Run();
  }

  Status SetAgentVersion(const std::string& ws, const std::string& av) override {
    Stmt s = c_.Prepare("UPDATE workspaces SET agent_version = ? WHERE id = ?");
    return s.Bind(1, av).Bind(2, ws).Run();
  }

  Status InsertToken(const TokenRecord& t) override {
    Stmt s = c_.Prepare(
        "INSERT INTO tokens (id, workspace_id, hash, label, scopes, created_at, revoked_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)");
    return s.Bind(1, t.id)
        .Bind(2, t.workspace_id)
        .Bind(3, t.hash)
        .Bind(4, t.label)
        .Bind(5, static_cast<int64_t>(t.scopes))
        .Bind(6, t.created_at)
        .Bind(7, t.revoked_at)
        .Run();
  }

  Status RevokeToken(const std::string& ws, const std::string& token_id, TimePoint at) override {
    Stmt s = c_.Prepare(
        "UPDATE tokens SET revoked_at = ? "
        "WHERE workspace_id = ? AND id = ? AND revoked_at IS NULL");
    CORTEX_RETURN_IF_ERROR(s.Bind(1, at).Bind(2, ws).Bind(3, token_id).Run());
    return Changes() == 1 ? Status::Ok()
                          : Status::NotFound("no active token " + token_id + " in workspace");
  }

  Status InsertEntity(const Entity& e) override {
    Stmt s = c_.Prepare(
        "INSERT INTO entities (id, workspace_id, kind, name, created_at) VALUES (?, ?, ?, ?, ?)");
    CORTEX_RETURN_IF_ERROR(
        s.Bind(1, e.id).Bind(2, e.workspace_id).Bind(3, e.kind).Bind(4, e.name).Bind(5, e.created_at)
            .Run());
    for (const std::string& ident : e.identifiers) {
      CORTEX_RETURN_IF_ERROR(AddEntityIdentifier(e.workspace_id, e.id, ident));
    }
    for (const std::string& tag : e.tags) {
      CORTEX_RETURN_IF_ERROR(AddEntityTag(e.workspace_id, e.id, tag));
    }
    return Status::Ok();
  }

  Status AddEntityIdentifier(const std::string& ws, const std::string& entity_id,
                             const std::string& identifier) override {
    Stmt s = c_.Prepare(
        "INSERT INTO entity_identifiers (workspace_id, identifier, entity_id) VALUES (?, ?, ?)");
    return s.Bind(1, ws).Bind(2, identifier).Bind(3, entity_id).Run();
  }

  Status AddEntityTag(const std::string& ws, const std::string& entity_id,
                      const std::string& tag) override {
    // The workspace check keeps a caller from tagging another workspace's entity.
    Stmt s = c_.Prepare(
        "INSERT OR IGNORE INTO entity_tags (entity_id, tag) "
        "SELECT id, ? FROM entities WHERE workspace_id = ? AND id = ?");
    return s.Bind(1, tag).Bind(2, ws).Bind(3, entity_id).Run();
  }

  Status SetEntityName(const std::string& ws, const std::string& entity_id,
                       const std::string& name) override {
    Stmt s = c_.Prepare("UPDATE entities SET name = ? WHERE workspace_id = ? AND id = ?");
    return s.Bind(1, name).Bind(2, ws).Bind(3, entity_id).Run();
  }

  Status InsertEpisode(const Episode& e) override {
    Stmt s = c_.Prepare(
        "INSERT INTO episodes (id, workspace_id, kind, occurred_at, ends_at, entity_id, "
        "channel, subject, summary, body, thread, external_id, world_version, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    return s.Bind(1, e.id)
        .Bind(2, e.workspace_id)
        .Bind(3, e.kind)
        .Bind(4, e.occurred_at)
        .Bind(5, e.ends_at)
        .Bind(6, e.entity_id)
        .Bind(7, e.channel)
        .Bind(8, e.subject)
        .Bind(9, e.summary)
        .Bind(10, e.body)
        .Bind(11, e.thread)
        .Bind(12, e.external_id)
        .Bind(13, e.world_version)
        .Bind(14, e.created_at)
        .Run();
  }

 private:
  int64_t Changes() {
    Stmt s = c_.Prepare("SELECT changes()");
    Status st;
    return s.Step(&st) ? s.Int(0) : 0;
  }

  static Workspace WorkspaceRow(const Stmt& s) {
    return Workspace{s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Time(4)};
  }

  static Result<Workspace> ReadWorkspace(Stmt& s, const std::string& what) {
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::NotFound("no " + what) : st;
    return WorkspaceRow(s);
  }

  static TokenRecord TokenRow(const Stmt& s) {
    return TokenRecord{s.Text(0), s.Text(1), s.Text(2), s.Text(3),
                       static_cast<unsigned>(s.Int(4)), s.Time(5), s.OptTime(6)};
  }

  Status LoadEntityDetails(Entity* e) {
    Stmt ids = c_.Prepare(
        "SELECT identifier FROM entity_identifiers WHERE entity_id = ? ORDER BY identifier");
    ids.Bind(1, e->id);
    Status st;
    while (ids.Step(&st)) e->identifiers.push_back(ids.Text(0));
    CORTEX_RETURN_IF_ERROR(st);
    Stmt tags = c_.Prepare("SELECT tag FROM entity_tags WHERE entity_id = ? ORDER BY tag");
    tags.Bind(1, e->id);
    while (tags.Step(&st)) e->tags.push_back(tags.Text(0));
    return st;
  }

  Conn& c_;
};

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::string path) : path_(std::move(path)) {}

  Status Init() {
    auto w = Conn::Open(path_, /*readonly=*/false);
    if (!w.ok()) return w.status();
    writer_ = std::move(*w);
    return Migrate();
  }

  Status Read(const std::function<Status(ReadTx&)>& fn) override {
    auto conn = AcquireReader();
    if (!conn.ok()) return conn.status();
    Status st = (*conn)->Exec("BEGIN");
    if (st.ok()) {
      SqliteTx tx(**conn);
      st = fn(tx);
      Status end = (*conn)->Exec("COMMIT");  // a read transaction: commit just ends it
      if (st.ok()) st = end;
    }
    ReleaseReader(std::move(*conn));
    return st;
  }

  Status Write(const std::function<Status(WriteTx&)>& fn) override {
    std::lock_guard<std::mutex> lock(write_mu_);
    CORTEX_RETURN_IF_ERROR(writer_->Exec("BEGIN IMMEDIATE"));
    SqliteTx tx(*writer_);
    Status st = fn(tx);
    if (st.ok()) st = writer_->Exec("COMMIT");
    if (!st.ok()) (void)writer_->Exec("ROLLBACK");
    return st;
  }

  Result<int> SchemaVersion() override {
    std::lock_guard<std::mutex> lock(write_mu_);
    Stmt s = writer_->Prepare("SELECT coalesce(max(number), 0) FROM schema_migrations");
    Status st;
    if (!s.Step(&st)) return st.ok() ? Status::Internal("no schema version") : st;
    return static_cast<int>(s.Int(0));
  }

 private:
  Status Migrate() {
    std::lock_guard<std::mutex> lock(write_mu_);
    CORTEX_RETURN_IF_ERROR(writer_->Exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " number INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"));
    for (const Migration& m : SqliteMigrations()) {
      CORTEX_RETURN_IF_ERROR(writer_->Exec("BEGIN IMMEDIATE"));
      Stmt check = writer_->Prepare("SELECT 1 FROM schema_migrations WHERE number = ?");
      check.Bind(1, static_cast<int64_t>(m.number));
      Status st;
      bool applied = check.Step(&st);
      if (st.ok() && !applied) {
        st = writer_->Exec(m.sql);
        if (st.ok()) {
          Stmt rec = writer_->Prepare(
              "INSERT INTO schema_migrations (number, name, applied_at) VALUES (?, ?, ?)");
          st = rec.Bind(1, static_cast<int64_t>(m.number))
                   .Bind(2, std::string(m.name))
                   .Bind(3, std::chrono::system_clock::now())
                   .Run();
        }
      }
      if (st.ok()) st = writer_->Exec("COMMIT");
      if (!st.ok()) {
        (void)writer_->Exec("ROLLBACK");
        return Status::Internal("migration " + std::to_string(m.number) + " failed: " +
                                st.message());
      }
    }
    return Status::Ok();
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

  std::string path_;
  std::mutex write_mu_;
  std::unique_ptr<Conn> writer_;
  std::mutex readers_mu_;
  std::vector<std::unique_ptr<Conn>> readers_;
};

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::InvalidArgument("cannot create data directory " + dir + ": " + ec.message());
  auto store = std::make_unique<SqliteStore>(dir + "/cortex.db");
  CORTEX_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace cortex
