// The PostgreSQL store when its server goes away and comes back (CORTEX_TEST_POSTGRES;
// skipped on SQLite). tests/fault/pg_crash.py crashes a real server under load.
#include <gtest/gtest.h>

#include <chrono>
#include <latch>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "store/workspaces.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

using testing::CountWorkspaces;
using testing::MakeWorkspace;

// Ends every backend of `url`'s database but the caller's, as a server restart does, and
// waits until they are gone.
void EndOtherBackends(const std::string& url) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  const std::string others =
      " FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()";
  tx.exec("SELECT pg_terminate_backend(pid)" + others);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (tx.exec("SELECT count(*)" + others)[0][0].as<int>() > 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "backends still there";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// A restart of the server kills every pooled connection, and libpq learns of it only when
// it next sends something. The first requests once the server is back must not fail for
// that: a transaction whose BEGIN finds its connection dead takes another.
TEST(PgStoreTest, ConnectionsThatDiedWithTheServerAreReplacedNotFailed) {
  testing::TempStore store;
  if (!store.is_postgres()) GTEST_SKIP() << "PostgreSQL only";
  ASSERT_TRUE(
      store->Write([&](WriteTx& tx) { return tx.workspaces().Insert(MakeWorkspace(1)); }).ok());

  // Eight reads at once: eight pooled connections.
  constexpr int kReaders = 8;
  std::latch inside(kReaders);
  std::vector<std::thread> readers;
  for (int i = 0; i < kReaders; ++i) {
    readers.emplace_back([&] {
      EXPECT_TRUE(store
                      ->Read([&](ReadTx& tx) -> Status {
                        inside.arrive_and_wait();
                        return tx.workspaces().List().status();
                      })
                      .ok());
    });
  }
  for (auto& t : readers) t.join();

  EndOtherBackends(store.location());
  for (int i = 0; i < kReaders + 2; ++i) EXPECT_EQ(CountWorkspaces(*store), 1u) << "read " << i;
  EndOtherBackends(store.location());
  EXPECT_TRUE(
      store->Write([&](WriteTx& tx) { return tx.workspaces().Insert(MakeWorkspace(2)); }).ok());
  EXPECT_EQ(CountWorkspaces(*store), 2u);
}

}  // namespace
}  // namespace cortex
