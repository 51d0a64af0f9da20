#include "testing/temp_store.h"

#include <sqlite3.h>

#include <cstdlib>
#include <pqxx/pqxx>
#include <random>

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

}  // namespace cortex::testing
