#include "store/sqlite_vfs.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <utility>

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

// A writer whose log goes through the coalescing VFS, with a page cache of a few pages so
// that transactions spill frames before they commit, rewrite spilled pages in place and
// roll back savepoints and whole transactions over spilled frames. After every commit a
// reader on another connection, and a copy of the files as a crash would leave them, have
// exactly the committed rows: no committed frame is still held in memory.
TEST(CoalescingWalVfsTest, EveryCommitIsInTheFileWhenItReturns) {
  ASSERT_NE(CoalescingWalVfs(), nullptr);
  fs::path dir = fs::temp_directory_path() / ("cortex-vfs-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string path = (dir / "db").string();
  Db writer(path, CoalescingWalVfs());
  writer.Exec(
      "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=8;"
      "PRAGMA wal_autocheckpoint=200;"
      "CREATE TABLE t (k INTEGER PRIMARY KEY, n INTEGER NOT NULL, pad BLOB NOT NULL)");
  Db reader(path, nullptr);
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
    EXPECT_EQ(SumAfterCrash(dir, dir.string() + "-copy"), std::make_pair(rows, total))
        << "round " << round;
  }
  fs::remove_all(dir);
  fs::remove_all(dir.string() + "-copy");
}

}  // namespace
}  // namespace cortex
