// Data at rest: the SQLite data directory and its files are private to their owner whatever
// the umask, wider ones are reported and left alone, and MCP session ids are stored hashed.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <pqxx/pqxx>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/crypto.h"
#include "core/time.h"
#include "engines/auth/tokens.h"
#include "protocol/mcp_server.h"
#include "store/sessions.h"
#include "store/sqlite_conn.h"
#include "store/store.h"
#include "testing/temp_store.h"
#include "tools/registry.h"

namespace cortex {
namespace {

namespace fs = std::filesystem;

// A directory of the test's own, removed afterwards; the store's goes inside it.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("cortex-at-rest-" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Sets the process umask while it lives.
class Umask {
 public:
  explicit Umask(mode_t mask) : saved_(::umask(mask)) {}
  ~Umask() { ::umask(saved_); }

 private:
  mode_t saved_;
};

// What spdlog logs while it lives (the default logger's lines).
class CapturedLog {
 public:
  CapturedLog() : saved_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    auto logger = std::make_shared<spdlog::logger>("captured", sink);
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(saved_); }
  std::vector<std::string> Lines() const {
    std::vector<std::string> lines;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> saved_;
};

mode_t ModeOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    ADD_FAILURE() << "no " << path;
    return 0;
  }
  return st.st_mode & 07777;
}

// One committed write, so that the log and the shared-memory file exist.
void WriteSomething(Store& store, const std::string& workspace) {
  FixedClock clock(*ParseTime("2026-06-10T09:00:00Z"));
  ASSERT_TRUE(EnsureWorkspace(store, clock, workspace).ok());
}

TEST(DataAtRestTest, TheDirectoryAndTheDatabaseFilesArePrivateWhateverTheUmask) {
  for (mode_t mask : {0000, 0002, 0022, 0077, 0277}) {
    SCOPED_TRACE(::testing::Message() << "umask " << std::oct << mask);
    TempDir tmp;
    const std::string dir = tmp / "data";
    {
      Umask scoped(mask);
      auto store = OpenSqliteStore(dir);
      ASSERT_TRUE(store.ok()) << store.status().ToString();
      WriteSomething(**store, "alpha");
      EXPECT_EQ(ModeOf(dir), 0700u);
      for (const char* file : {"/cortex.db", "/cortex.db-wal", "/cortex.db-shm"}) {
        EXPECT_EQ(ModeOf(dir + file), 0600u) << file;
      }
    }
    EXPECT_TRUE(MakeDataFilesPrivate(dir, dir + "/cortex.db").empty());
  }
}

TEST(DataAtRestTest, MissingParentsAreCreatedAndOnlyTheDataDirectoryIsMadePrivate) {
  TempDir tmp;
  Umask scoped(0022);
  const std::string dir = tmp / "a/b/data/";  // a trailing slash names the same directory
  auto store = OpenSqliteStore(dir);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(ModeOf(tmp / "a"), 0755u);
  EXPECT_EQ(ModeOf(tmp / "a/b/data"), 0700u);
  EXPECT_EQ(ModeOf(tmp / "a/b/data/cortex.db"), 0600u);
}

// A directory made with mkdir under umask 022: Cortex's user owns it, so Cortex makes it
// private and says so once; the next open has nothing to say.
TEST(DataAtRestTest, AnExistingDirectoryOfThisUserIsMadePrivateOnce) {
  TempDir tmp;
  const std::string dir = tmp / "data";
  fs::create_directory(dir);
  ::chmod(dir.c_str(), 0750);
  {
    CapturedLog log;
    auto store = OpenSqliteStore(dir);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ(ModeOf(dir), 0700u);
    EXPECT_EQ(ModeOf(dir + "/cortex.db"), 0600u);
    ASSERT_EQ(log.Lines().size(), 1u);
    EXPECT_EQ(log.Lines()[0], "warning made data directory " + dir +
                                  " private to its owner: mode 0750 is now 0700");
  }
  CapturedLog log;
  auto store = OpenSqliteStore(dir);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE(log.Lines().empty()) << ::testing::PrintToString(log.Lines());
}

// Files an older version made with the umask's modes: each is made private before SQLite
// opens them (so the log and shared memory it makes anew are private too), named once.
TEST(DataAtRestTest, WiderFilesOfAnOlderVersionAreMadePrivateAndNamedOnce) {
  TempDir tmp;
  const std::string dir = tmp / "data";
  const std::string db = dir + "/cortex.db";
  {
    auto store = OpenSqliteStore(dir);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    WriteSomething(**store, "alpha");
  }  // closed: SQLite removes the log and the shared-memory file
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(db.c_str(), 0644), 0);
  for (int open = 0; open < 2; ++open) {
    CapturedLog log;
    auto store = OpenSqliteStore(dir);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    WriteSomething(**store, "beta" + std::to_string(open));
    std::vector<std::string> lines = log.Lines();
    if (open == 0) {
      ASSERT_EQ(lines.size(), 2u) << ::testing::PrintToString(lines);
      EXPECT_EQ(lines[0], "warning made data directory " + dir +
                              " private to its owner: mode 0755 is now 0700");
      EXPECT_EQ(lines[1],
                "warning made data file " + db + " private to its owner: mode 0644 is now 0600");
    } else {
      EXPECT_TRUE(lines.empty()) << ::testing::PrintToString(lines);
    }
    EXPECT_EQ(ModeOf(dir), 0700u);
    for (const char* suffix : {"", "-wal", "-shm"}) EXPECT_EQ(ModeOf(db + suffix), 0600u) << suffix;
  }
}

TEST(DataAtRestTest, AnUnusableDataDirectoryIsRefused) {
  TempDir tmp;
  const std::string file = tmp / "file";
  std::ofstream(file) << "not a directory";
  auto store = OpenSqliteStore(file + "/data");
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("cannot create data directory " + file + "/data"),
            std::string::npos)
      << store.status().ToString();
}

// The `id` column of mcp_sessions, read behind the store's back.
std::vector<std::string> StoredSessionIds(testing::TempStore& store) {
  std::vector<std::string> ids;
  const char* sql = "SELECT id FROM mcp_sessions ORDER BY id";
  if (store.is_postgres()) {
    pqxx::connection c(store.location());
    pqxx::nontransaction tx(c);
    for (const auto& row : tx.exec(sql)) ids.push_back(row[0].as<std::string>());
    return ids;
  }
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2((store.location() + "/cortex.db").c_str(), &db, SQLITE_OPEN_READONLY,
                            nullptr),
            SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (s != nullptr && sqlite3_step(s) == SQLITE_ROW) {
    ids.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return ids;
}

class SessionIdsAtRestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ws = EnsureWorkspace(*store_, clock_, "alpha");
    ASSERT_TRUE(ws.ok()) << ws.status().ToString();
    auth_ = AuthContext{ws->id, ws->name, "tok_x", kScopeRead};
  }

  std::string Initialize(McpServer& server) {
    const std::string body =
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":)"
        R"("2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";
    McpRequest req;
    req.body = body;
    req.transport = McpTransport::kHttp;  // stdio's session is the process's, not stored
    req.auth = &auth_;
    McpResponse r = server.Handle(req);
    EXPECT_FALSE(r.new_session_id.empty()) << r.body.dump();
    return r.new_session_id;
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T09:00:00Z")};
  AuthContext auth_;
};

TEST_F(SessionIdsAtRestTest, TheStoreKeepsOnlyTheHashOfASessionId) {
  ToolRegistry registry;
  McpServer server(registry, *store_, clock_, ServerInfo{});
  const std::string sid = Initialize(server);
  ASSERT_EQ(sid.size(), 32u);
  EXPECT_EQ(StoredSessionIds(store_), std::vector<std::string>{Sha256Hex(sid)});
  // What the client holds still names its session, and only that.
  EXPECT_TRUE(*server.SessionExists(sid, auth_));
  EXPECT_FALSE(*server.SessionExists(Sha256Hex(sid), auth_));
  clock_.Advance(std::chrono::minutes(5));  // SessionExists touches it
  EXPECT_TRUE(*server.SessionExists(sid, auth_));
  EXPECT_FALSE(*server.EndSession(Sha256Hex(sid), auth_));
  EXPECT_TRUE(*server.EndSession(sid, auth_));
  EXPECT_TRUE(StoredSessionIds(store_).empty());
  if (!store_.is_postgres()) {
    // Nowhere in the files either: the database and its log, as a copy would find them.
    const std::string second = Initialize(server);
    for (const char* file : {"/cortex.db", "/cortex.db-wal"}) {
      std::ifstream in(store_.location() + file, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_EQ(bytes.find(sid), std::string::npos) << file;
      EXPECT_EQ(bytes.find(second), std::string::npos) << file;
    }
  }
}

TEST_F(SessionIdsAtRestTest, TheAreaHashesEveryIdItIsGiven) {
  TimePoint t0 = clock_.Now();
  ASSERT_TRUE(store_
                  ->Write([&](WriteTx& tx) {
                    return tx.sessions().Insert(
                        McpSession{"clear-id", auth_.workspace_id, t0, t0, false, ""});
                  })
                  .ok());
  EXPECT_EQ(StoredSessionIds(store_), std::vector<std::string>{Sha256Hex("clear-id")});
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) -> Status {
                    auto found = tx.sessions().Get("clear-id");
                    EXPECT_TRUE(found.ok() && found->has_value());
                    if (found.ok() && found->has_value()) {
                      EXPECT_EQ((*found)->id, "clear-id");
                      EXPECT_EQ((*found)->workspace_id, auth_.workspace_id);
                    }
                    auto hashed = tx.sessions().Get(Sha256Hex("clear-id"));
                    EXPECT_TRUE(hashed.ok() && !hashed->has_value());
                    return Status::Ok();
                  })
                  .ok());
  ASSERT_TRUE(store_
                  ->Write([&](WriteTx& tx) -> Status {
                    CORTEX_RETURN_IF_ERROR(
                        tx.sessions().Touch("clear-id", t0 + std::chrono::hours(1)));
                    auto gone = tx.sessions().Delete(auth_.workspace_id, "clear-id");
                    EXPECT_TRUE(gone.ok() && *gone);
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_TRUE(StoredSessionIds(store_).empty());
}

// Sessions stored in clear by an earlier version are ended by the migration (a client then
// gets 404 and initializes again); sessions opened after it are kept.
TEST_F(SessionIdsAtRestTest, TheMigrationEndsSessionsStoredInClear) {
  constexpr int kHashedSessions = 12;
  const std::string clear(32, 'a');
  store_.ExecRaw("INSERT INTO mcp_sessions (id, workspace_id, created_at, last_used) VALUES ('" +
                 clear + "', '" + auth_.workspace_id + "', 0, 0)");
  store_.ExecRaw("DELETE FROM schema_migrations WHERE number = " + std::to_string(kHashedSessions));
  store_.Reopen();
  EXPECT_TRUE(StoredSessionIds(store_).empty());
  EXPECT_GE(*store_->SchemaVersion(), kHashedSessions);

  ToolRegistry registry;
  McpServer server(registry, *store_, clock_, ServerInfo{});
  const std::string sid = Initialize(server);
  store_.Reopen();
  EXPECT_EQ(StoredSessionIds(store_), std::vector<std::string>{Sha256Hex(sid)});
}

}  // namespace
}  // namespace cortex
