#include "store/sqlite_vfs.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace cortex {
namespace {

namespace fs = std::filesystem;

class Db {
 public:
  Db(const std::string& path, const char* vfs) {
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs),
              SQLITE_OK);
  }
  ~Db() { sqlite3_close(db_); }
  sqlite3* get() { return db_; }
  void Exec(const std::string& sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << sql << ": " << (err ? err : "");
    sqlite3_free(err);
  }
  // count(*) and total(v) of table t.
  std::pair<int64_t, double> Sum() {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, "SELECT count(*), total(n) FROM t", -1, &s, nullptr),
              SQLITE_OK);
    EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
    std::pair<int64_t, double> out{sqlite3_column_int64(s, 0), sqlite3_column_double(s, 1)};
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

// The database as a crash would leave it: the files as they are in the OS now, copied while
// the writer still holds whatever it holds in memory, then opened afresh (SQLite recovers
// the log from its frames' checksums; the shared-memory index is not copied).
std::pair<int64_t, double> SumAfterCrash(const fs::path& dir, const fs::path& copy) {
  fs::remove_all(copy);
  fs::create_directories(copy);
  for (const char* name : {"db", "db-wal"}) {
    if (fs::exists(dir / name)) fs::copy_file(dir / name, copy / name);
  }
  Db reopened((copy / "db").string(), nullptr);
  return reopened.Sum();
}

// A directory of its own per test, removed afterwards, and a writer on `path_` whose log
// goes through the coalescing VFS, with a page cache of 8 pages so that transactions spill.
class CoalescingWalVfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(CoalescingWalVfs(), nullptr);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    fs::remove_all(copy_);
  }

  std::unique_ptr<Db> OpenWriter(int autocheckpoint_pages) {
    auto writer = std::make_unique<Db>(path_, CoalescingWalVfs());
    DropUncommittedFramesOnRollback(writer->get());
    writer->Exec(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=8;"
        "PRAGMA wal_autocheckpoint=" +
        std::to_string(autocheckpoint_pages) +
        ";"
        "CREATE TABLE t (k INTEGER PRIMARY KEY, n INTEGER NOT NULL, pad BLOB NOT NULL)");
    return writer;
  }
  std::pair<int64_t, double> SumAfterCrash() { return cortex::SumAfterCrash(dir_, copy_); }

  const fs::path dir_ =
      fs::temp_directory_path() / ("cortex-vfs-" + std::to_string(::getpid()) + "-" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  const fs::path copy_ = dir_.string() + "-copy";
  const std::string path_ = (dir_ / "db").string();
};

// A writer whose log goes through the coalescing VFS, with a page cache of a few pages so
// that transactions spill frames before they commit, rewrite spilled pages in place and
// roll back savepoints and whole transactions over spilled frames. After every commit a
// reader on another connection, and a copy of the files as a crash would leave them, have
// exactly the committed rows: no committed frame is still held in memory.
TEST_F(CoalescingWalVfsTest, EveryCommitIsInTheFileWhenItReturns) {
  std::unique_ptr<Db> w = OpenWriter(/*autocheckpoint_pages=*/200);
  Db& writer = *w;
  Db reader(path_, nullptr);
  std::mt19937 rng(7);
  int64_t rows = 0, next_key = 0;
  double total = 0;
  for (int round = 0; round < 60; ++round) {
    int inserts = 1 + static_cast<int>(rng() % 40);  // up to ~40 pages: spills past 8
    bool rollback = round % 5 == 3;
    int64_t first = next_key;
    writer.Exec("BEGIN");
    double added = 0;
    for (int i = 0; i < inserts; ++i, ++next_key) {
      writer.Exec("INSERT INTO t VALUES (" + std::to_string(next_key) + ", " +
                  std::to_string(next_key) + ", randomblob(3000))");
      added += static_cast<double>(next_key);
    }
    if (round % 3 == 1) {
      // Rewrite pages this transaction may already have spilled (written in place in the
      // log, then the frames' checksums rewritten at commit).
      writer.Exec("UPDATE t SET pad = randomblob(3000) WHERE k >= " + std::to_string(first));
    } else if (round % 3 == 2) {
      // A savepoint rolled back over spilled frames.
      writer.Exec("SAVEPOINT s");
      for (int i = 0; i < 12; ++i) {
        writer.Exec("INSERT INTO t VALUES (" + std::to_string(1000000 + round * 100 + i) +
                    ", 1, randomblob(3000))");
      }
      writer.Exec("ROLLBACK TO s; RELEASE s");
    }  // else only appends
    writer.Exec(rollback ? "ROLLBACK" : "COMMIT");
    if (!rollback) {
      rows += inserts;
      total += added;
    }
    EXPECT_EQ(reader.Sum(), std::make_pair(rows, total)) << "round " << round;
    EXPECT_EQ(SumAfterCrash(), std::make_pair(rows, total)) << "round " << round;
  }
}

// A transaction that spilled frames and rolled back leaves nothing to write: another
// connection (another process, say) commits at the offsets those frames had, and the
// writer's next transaction must not write them over its commit.
TEST_F(CoalescingWalVfsTest, ARolledBackTransactionsFramesAreNeverWritten) {
  std::unique_ptr<Db> w = OpenWriter(/*autocheckpoint_pages=*/0);
  Db& writer = *w;
  writer.Exec("INSERT INTO t VALUES (1, 1, randomblob(3000))");
  // Spilled, then rolled back.
  writer.Exec("BEGIN");
  for (int k = 100; k < 116; ++k) {  // fewer frames than one write holds
    writer.Exec("INSERT INTO t VALUES (" + std::to_string(k) + ", 1000, randomblob(3000))");
  }
  writer.Exec("ROLLBACK");
  {
    Db other(path_, nullptr);
    other.Exec("BEGIN");
    for (int k = 2; k < 32; ++k) {  // more frames, from the same offset
      other.Exec("INSERT INTO t VALUES (" + std::to_string(k) + ", " + std::to_string(k) +
                 ", randomblob(3000))");
    }
    other.Exec("COMMIT");
  }
  writer.Exec("INSERT INTO t VALUES (50, 50, randomblob(3000))");
  const std::pair<int64_t, double> expected{32, 1 + (2 + 31) * 30 / 2 + 50};
  EXPECT_EQ(writer.Sum(), expected);
  Db reader(path_, nullptr);
  EXPECT_EQ(reader.Sum(), expected);
  EXPECT_EQ(SumAfterCrash(), expected);
}

// SQLite spills a statement journal in one write as long as its spill threshold (512 KiB
// in SqliteStore); the unix VFS fails writes of 128 KiB or more (SQLITE_FULL).
TEST_F(CoalescingWalVfsTest, LongWritesToOtherFilesAreSplit) {
  sqlite3_vfs* vfs = sqlite3_vfs_find(CoalescingWalVfs());
  ASSERT_NE(vfs, nullptr);
  std::string path = (dir_ / "journal").string();
  std::vector<char> space(static_cast<size_t>(vfs->szOsFile));
  auto* file = reinterpret_cast<sqlite3_file*>(space.data());
  int flags = SQLITE_OPEN_SUBJOURNAL | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
              SQLITE_OPEN_DELETEONCLOSE;
  ASSERT_EQ(vfs->xOpen(vfs, path.c_str(), file, flags, nullptr), SQLITE_OK);
  std::string data(300000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 % 251);
  EXPECT_EQ(file->pMethods->xWrite(file, data.data(), static_cast<int>(data.size()), 4096),
            SQLITE_OK);
  std::string back(data.size(), 'x');
  EXPECT_EQ(file->pMethods->xRead(file, back.data(), static_cast<int>(back.size()), 4096),
            SQLITE_OK);
  EXPECT_EQ(back, data);
  EXPECT_EQ(file->pMethods->xClose(file), SQLITE_OK);
}

}  // namespace
}  // namespace cortex
