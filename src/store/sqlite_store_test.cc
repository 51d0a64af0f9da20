// The SQLite store's own machinery: group commit, the writer and its savepoints, the log's
// flushing and checkpoints, suspended writes. The areas' queries: store_areas_test.cc.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/suspend.h"
#include "core/time.h"
#include "store/entities.h"
#include "store/episodes.h"
#include "store/quotas.h"
#include "store/rules.h"
#include "store/sql_tx.h"
#include "store/tokens.h"
#include "store/workspaces.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

using testing::CountWorkspaces;
using testing::MakeWorkspace;

// Many threads writing at once share commits; each write still succeeds or fails alone.
TEST(GroupCommitTest, ConcurrentWritesCommitOrFailIndependently) {
  testing::TempStore store;
  constexpr int kThreads = 8, kEach = 40;
  std::atomic<int> ok{0}, failed{0}, thrown{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        int n = t * kEach + i;
        try {
          Status st = store->Write([&](WriteTx& tx) -> Status {
            CORTEX_RETURN_IF_ERROR(tx.workspaces().Insert(MakeWorkspace(n)));
            // Every 5th write fails after writing, every 7th throws: both must leave no row.
            if (n % 5 == 0) return Status::InvalidArgument("refused");
            if (n % 7 == 0) throw std::runtime_error("boom");
            return Status::Ok();
          });
          (st.ok() ? ok : failed)++;
          if (!st.ok()) {
            EXPECT_EQ(st.code(), Code::kInvalidArgument);
          }
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "boom");  // the writer's own exception, in its own thread
          thrown++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  int total = kThreads * kEach, fives = 0, sevens = 0;
  for (int n = 0; n < total; ++n) {
    if (n % 5 == 0) {
      ++fives;
    } else if (n % 7 == 0) {
      ++sevens;
    }
  }
  EXPECT_EQ(failed, fives);
  EXPECT_EQ(thrown, sevens);
  EXPECT_EQ(ok, total - fives - sevens);
  EXPECT_EQ(CountWorkspaces(*store), static_cast<size_t>(ok.load()));
  // Committed means durable: a reopened store has every acknowledged row.
  store.Reopen();
  EXPECT_EQ(CountWorkspaces(*store), static_cast<size_t>(ok.load()));
}

// A write in a batch sees the writes committed before it, as if they ran one by one.
TEST(GroupCommitTest, WritesInOneBatchSeeEarlierOnes) {
  testing::TempStore store;
  ASSERT_TRUE(
      store->Write([](WriteTx& tx) { return tx.workspaces().Insert(MakeWorkspace(0)); }).ok());
  std::vector<std::thread> threads;
  std::atomic<int> conflicts{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      Status st = store->Write([&](WriteTx& tx) -> Status {
        // Insert-if-absent: exactly one thread may create ws_1.
        if (tx.workspaces().Get("ws_1").ok()) return Status::Conflict("exists");
        return tx.workspaces().Insert(MakeWorkspace(1));
      });
      if (st.code() == Code::kConflict) conflicts++;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(conflicts, 5);
  EXPECT_EQ(CountWorkspaces(*store), 2u);
}

// Writes of ~20 pages each (a row of 40 KiB and its index entries), from `threads` threads
// at once so that they share commits.
void WriteBigRows(Store& store, int threads, int per_thread, int first = 0) {
  const std::string big(40 << 10, 'x');
  std::vector<std::thread> writers;
  for (int t = 0; t < threads; ++t) {
    writers.emplace_back([&, t] {
      for (int n = first + t * per_thread; n < first + (t + 1) * per_thread; ++n) {
        Workspace w = MakeWorkspace(n);
        w.name = big + std::to_string(n);
        EXPECT_TRUE(store.Write([&](WriteTx& tx) { return tx.workspaces().Insert(w); }).ok());
      }
    });
  }
  for (std::thread& w : writers) w.join();
}

// Checkpoints keep up with a steady stream of writes: the write-ahead log does not grow
// past the pages at which the writer checkpoints itself (32,000, ~132 MB with frame
// headers), plus one commit.
TEST(GroupCommitTest, TheWriteAheadLogIsCheckpointed) {
  testing::TempStore store;
  if (store.is_postgres()) GTEST_SKIP() << "SQLite's write-ahead log";
  WriteBigRows(*store, 8, 250);
  auto wal_bytes = std::filesystem::file_size(store.location() + "/cortex.db-wal");
  EXPECT_LT(wal_bytes, 140u << 20) << "40,000 pages were written; the log kept them all";
  EXPECT_EQ(CountWorkspaces(*store), 2000u);
}

// Waits up to 20 s for `path` to reach `bytes`; its size then.
uintmax_t WaitForSize(const std::string& path, uintmax_t bytes) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::filesystem::file_size(path) < bytes && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::filesystem::file_size(path);
}

// Before the writer's own checkpoint is due, the checkpointer thread copies the log into
// the database: its file grows while the writer goes on, and the log, which the writer
// has not checkpointed (SQLite's own automatic checkpoint would have, every 1,000 pages),
// holds more than 8,000 pages.
TEST(GroupCommitTest, ACheckpointRunsBesideTheWriter) {
  testing::TempStore store;
  if (store.is_postgres()) GTEST_SKIP() << "SQLite's write-ahead log";
  const std::string db = store.location() + "/cortex.db";
  auto before = std::filesystem::file_size(db);
  WriteBigRows(*store, 4, 150);  // ~12,000 pages: past 8,000, short of 32,000
  EXPECT_GE(WaitForSize(db, before + (16u << 20)), before + (16u << 20))
      << "the rows' pages are still only in the log";
  EXPECT_GT(std::filesystem::file_size(store.location() + "/cortex.db-wal"), 8000u * 4096)
      << "the writer checkpointed the log itself";
  EXPECT_EQ(CountWorkspaces(*store), 600u);
}

// A reader that began while the log was fully copied reads the database file alone, and
// no checkpoint may copy pages under it: SQLite copies nothing and still answers OK. The
// pass held back at 8,000 pages is tried again once the reader is gone, not at the
// writer's next 8,000 pages, which may never come. Passes have copied pages of an earlier
// log first, so a count of copied pages that went back to 0 must not pass for progress.
TEST(GroupCommitTest, ACheckpointHeldBackByAReaderIsTriedAgain) {
  testing::TempStore store;
  if (store.is_postgres()) GTEST_SKIP() << "SQLite's write-ahead log";
  const std::string db = store.location() + "/cortex.db";
  auto start = std::filesystem::file_size(db);
  WriteBigRows(*store, 4, 150);  // ~12,000 pages: a pass is asked for at 8,000
  auto before = WaitForSize(db, start + (16u << 20));
  ASSERT_GE(before, start + (16u << 20)) << "no pass copied the first rows";

  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> reader(raw, &sqlite3_close);
  sqlite3_busy_timeout(reader.get(), 5000);
  int busy = -1;
  ASSERT_EQ(sqlite3_exec(
                reader.get(), "PRAGMA wal_checkpoint(TRUNCATE)",
                [](void* out, int, char** row, char**) {
                  *static_cast<int*>(out) = std::atoi(row[0]);
                  return 0;
                },
                &busy, nullptr),
            SQLITE_OK);
  ASSERT_EQ(busy, 0) << "the log was not fully copied";
  before = std::filesystem::file_size(db);
  ASSERT_EQ(sqlite3_exec(reader.get(), "BEGIN; SELECT count(*) FROM workspaces", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  WriteBigRows(*store, 4, 150, /*first=*/600);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(std::filesystem::file_size(db), before + (1u << 20)) << "copied under the reader";
  ASSERT_EQ(sqlite3_exec(reader.get(), "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  reader.reset();
  EXPECT_GE(WaitForSize(db, before + (16u << 20)), before + (16u << 20))
      << "no checkpoint after the reader left";
  EXPECT_EQ(CountWorkspaces(*store), 1200u);
}

// A write is answered only once the log is synced, and a failed sync is final: a write it
// covered fails, and so does every write after it (its commits may rest on pages that never
// reached the disk). Here the log cannot be synced because its file is gone.
TEST(GroupCommitTest, NoWriteIsAcknowledgedOnceTheLogCannotBeSynced) {
  testing::TempStore store;
  if (store.is_postgres()) GTEST_SKIP() << "SQLite's write-ahead log";
  ASSERT_TRUE(
      store->Write([](WriteTx& tx) { return tx.workspaces().Insert(MakeWorkspace(0)); }).ok());
  std::filesystem::remove(store.location() + "/cortex.db-wal");
  for (int n = 1; n <= 3; ++n) {
    Status st = store->Write([&](WriteTx& tx) { return tx.workspaces().Insert(MakeWorkspace(n)); });
    EXPECT_EQ(st.code(), Code::kInternal) << "write " << n;
    EXPECT_NE(st.message().find("write-ahead log"), std::string::npos) << st.message();
    // A file at the log's path again: it could be synced, but the failure stands.
    std::ofstream(store.location() + "/cortex.db-wal").put('x');
  }
}

// What the HTTP server's request fibers do, with a thread standing in for the fiber: the
// caller "suspends" by waiting for its resume, which must come from the store's own threads
// once the write's outcome is final.
class WaitingSuspender final : public Suspender {
 public:
  void Suspend(const std::function<void(Resume)>& start) override {
    ++suspends;
    std::promise<std::thread::id> resumed;
    start([&resumed] { resumed.set_value(std::this_thread::get_id()); });
    resumed_on = resumed.get_future().get();
  }
  int suspends = 0;
  std::thread::id resumed_on;
};

// Under a suspender, a write suspends its caller instead of blocking it, and is resumed by
// the store's thread with the write's outcome: committed, refused, or the exception thrown.
// A store that cannot suspend (PostgreSQL) blocks as before and never calls the suspender.
TEST(GroupCommitTest, AWriteUnderASuspenderIsResumedWithItsOutcome) {
  testing::TempStore store;
  EXPECT_EQ(Suspender::Current(), nullptr);
  WaitingSuspender suspender;
  Suspender::Scope scope(&suspender);
  ASSERT_EQ(Suspender::Current(), &suspender);
  const int expected_suspends = store->SuspendsWrites() ? 1 : 0;

  EXPECT_TRUE(
      store->Write([](WriteTx& tx) { return tx.workspaces().Insert(MakeWorkspace(1)); }).ok());
  EXPECT_EQ(suspender.suspends, expected_suspends);
  if (expected_suspends) {
    EXPECT_NE(suspender.resumed_on, std::this_thread::get_id());
  }
  EXPECT_EQ(CountWorkspaces(*store), 1u);  // committed before the caller resumed

  Status refused = store->Write([](WriteTx& tx) -> Status {
    CORTEX_RETURN_IF_ERROR(tx.workspaces().Insert(MakeWorkspace(2)));
    return Status::InvalidArgument("refused");
  });
  EXPECT_EQ(refused.code(), Code::kInvalidArgument);
  auto throws = [](WriteTx& tx) -> Status {
    CORTEX_RETURN_IF_ERROR(tx.workspaces().Insert(MakeWorkspace(3)));
    throw std::runtime_error("boom");
  };
  EXPECT_THROW((void)store->Write(throws), std::runtime_error);
  EXPECT_EQ(suspender.suspends, 3 * expected_suspends);
  EXPECT_EQ(CountWorkspaces(*store), 1u);  // neither left a row
}

// The store's threads carry names an operator sees in `top -H`, `ps -L` and `perf`.
TEST(GroupCommitTest, TheStoresThreadsAreNamed) {
  testing::TempStore store;
  if (store.is_postgres()) GTEST_SKIP() << "the SQLite store's threads";
  std::multiset<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string name;
    std::getline(std::ifstream(task.path() / "comm"), name);
    names.insert(name);
  }
  for (const char* name : {"cortex-writer", "cortex-walsync", "cortex-ckpt"}) {
    EXPECT_GE(names.count(name), 1u) << name;
  }
}

// A write that changes many existing pages (a megabyte to keep for a rollback: when it is
// not first in its batch, its savepoint's journal outgrows memory and spills to a temp file
// in writes the VFS splits) commits like any other, alone or beside small writes.
TEST(GroupCommitTest, AWriteThatChangesMegabytesCommits) {
  testing::TempStore store;
  constexpr int kRows = 2000;
  const std::string name(500, 'n');
  ASSERT_TRUE(store
                  ->Write([&](WriteTx& tx) -> Status {
                    for (int n = 0; n < kRows; ++n) {
                      Workspace w = MakeWorkspace(n);
                      w.name = name + std::to_string(n);
                      CORTEX_RETURN_IF_ERROR(tx.workspaces().Insert(w));
                    }
                    return Status::Ok();
                  })
                  .ok());
  std::vector<std::thread> small;
  for (int t = 0; t < 4; ++t) {
    small.emplace_back([&, t] {
      EXPECT_TRUE(
          store
              ->Write([&](WriteTx& tx) { return tx.workspaces().Insert(MakeWorkspace(kRows + t)); })
              .ok());
    });
  }
  // Every row rewritten: about a megabyte of pages to keep for a rollback.
  Status big = store->Write([&](WriteTx& tx) -> Status {
    for (int n = 0; n < kRows; ++n) {
      CORTEX_RETURN_IF_ERROR(
          tx.workspaces().SetWorldVersion("ws_" + std::to_string(n), "wv_" + name));
    }
    return Status::Ok();
  });
  for (auto& th : small) th.join();
  EXPECT_TRUE(big.ok()) << big.message();
  EXPECT_EQ(CountWorkspaces(*store), static_cast<size_t>(kRows + 4));
}

}  // namespace
}  // namespace cortex
