#include "testing/temp_store.h"

#include <sqlite3.h>

#include <cstdlib>
#include <pqxx/pqxx>
#include <random>

#include "core/time.h"
#include "store/workspaces.h"

namespace cortex::testing {
namespace {

std::string RandomSuffix() {
  std::random_device rd;
  return std::to_string(rd()) + std::to_string(rd());
}

// Runs one statement outside a transaction (CREATE/DROP DATABASE cannot run inside one).
void Admin(const std::string& server, const std::string& sql) {
  pqxx::connection c(server + "/postgres");
  pqxx::nontransaction tx(c);
  tx.exec(sql);
}

// A database holding every migration, made once per test process and dropped at its
// exit: each test's database is a copy of it, much quicker than migrating each one.
class MigratedTemplate {
 public:
  explicit MigratedTemplate(std::string server)
      : server_(std::move(server)), name_("cortex_unit_template_" + RandomSuffix()) {
    Admin(server_, "CREATE DATABASE " + name_);
    auto store = OpenStore(server_ + "/" + name_);
    if (!store.ok()) ADD_FAILURE() << store.status().ToString();
  }
  ~MigratedTemplate() {
    try {
      Admin(server_, "DROP DATABASE " + name_ + " WITH (FORCE)");
    } catch (const std::exception&) {
      // The cluster is going away with the test run anyway.
    }
  }
  const std::string& name() const { return name_; }

 private:
  std::string server_, name_;
};

}  // namespace

TempStore::TempStore() {
  if (const char* pg = std::getenv("CORTEX_TEST_POSTGRES"); pg != nullptr && *pg != '\0') {
    server_ = pg;
    database_ = "cortex_unit_" + RandomSuffix();
    static MigratedTemplate migrated(server_);
    Admin(server_, "CREATE DATABASE " + database_ + " TEMPLATE " + migrated.name());
    location_ = server_ + "/" + database_;
  } else {
    location_ = (std::filesystem::temp_directory_path() / ("cortex-test-" + RandomSuffix()));
  }
  Reopen();
}

TempStore::~TempStore() {
  store_.reset();
  if (!database_.empty()) {
    try {
      Admin(server_, "DROP DATABASE " + database_ + " WITH (FORCE)");
    } catch (const std::exception& e) {
      ADD_FAILURE() << "dropping " << database_ << ": " << e.what();
    }
  } else {
    std::error_code ec;
    std::filesystem::remove_all(location_, ec);
  }
}

void TempStore::Reopen() {
  store_.reset();
  auto s = OpenStore(location_);
  if (!s.ok()) {
    ADD_FAILURE() << s.status().ToString();
    return;
  }
  store_ = std::move(*s);
}

void TempStore::ExecRaw(const std::string& sql) {
  if (is_postgres()) {
    pqxx::connection c(location_);
    pqxx::nontransaction tx(c);
    tx.exec(sql);
    return;
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((location_ + "/cortex.db").c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

std::string TempStore::QueryPlan(const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2((location_ + "/cortex.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) !=
      SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << location_;
  }
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &s, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sqlite3_errmsg(db) << " in: " << sql;
  }
  while (s != nullptr && sqlite3_step(s) == SQLITE_ROW) {
    out += reinterpret_cast<const char*>(sqlite3_column_text(s, 3));
    out += "\n";
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

Workspace MakeWorkspace(int i) {
  return Workspace{"ws_" + std::to_string(i), "w" + std::to_string(i), "wv_0", "av_0",
                   *ParseTime("2026-06-10T09:00:00Z")};
}

size_t CountWorkspaces(Store& store) {
  size_t n = 0;
  EXPECT_TRUE(store
                  .Read([&](ReadTx& tx) -> Status {
                    auto all = tx.workspaces().List();
                    if (!all.ok()) return all.status();
                    n = all->size();
                    return Status::Ok();
                  })
                  .ok());
  return n;
}

}  // namespace cortex::testing
