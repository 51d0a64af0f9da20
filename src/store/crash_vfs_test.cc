// The simulated disk of the power-loss harness (store/crash_vfs.h): what it keeps and loses.
// The harness itself, which runs the store on it, is tests/crash/.
#include "store/crash_vfs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

namespace cortex::crash {
namespace {

ArmOptions Options(const std::string& dir) {
  ArmOptions o;
  o.dir = dir;
  return o;
}

Op WriteOp(int64_t offset, size_t n, char c) {
  Op op;
  op.offset = offset;
  op.bytes.assign(n, c);
  return op;
}

TEST(PowerLossImageTest, WhatWasSyncedAlwaysSurvives) {
  const std::string synced(4096, 's');
  std::vector<Op> ops = {WriteOp(4096, 3000, 'n'), WriteOp(5000, 100, 'm'),
                         WriteOp(9000, 700, 'x')};
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    std::mt19937_64 rng(seed);
    LossStats stats;
    std::string image = PowerLossImage(synced, ops, 512, rng, &stats);
    ASSERT_GE(image.size(), synced.size());
    ASSERT_EQ(image.substr(0, synced.size()), synced) << "seed " << seed;
    ASSERT_EQ(stats.unsynced, 3);
    ASSERT_EQ(stats.kept + stats.dropped + stats.torn, 3);
  }
}

TEST(PowerLossImageTest, AnyUnsyncedWriteMayBeKeptLostOrTornBySector) {
  const std::string synced(4096, 's');
  std::vector<Op> ops = {WriteOp(0, 1024, 'a'), WriteOp(2048, 1024, 'b')};
  std::set<std::string> states;  // per sector of the two writes: s(ynced), new, or ? (garbage)
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    std::mt19937_64 rng(seed);
    LossStats stats;
    std::string image = PowerLossImage(synced, ops, 512, rng, &stats);
    ASSERT_EQ(image.size(), synced.size());
    std::string state;
    for (int sector : {0, 1, 4, 5}) {
      std::string got = image.substr(static_cast<size_t>(sector) * 512, 512);
      char c = got == std::string(512, 's')   ? 's'
               : got == std::string(512, 'a') ? 'a'
               : got == std::string(512, 'b') ? 'b'
                                              : '?';
      state += c;
    }
    // Sectors the writes never touched are left as they were synced.
    ASSERT_EQ(image.substr(1024, 1024), std::string(1024, 's'));
    states.insert(state);
  }
  // Both, neither, either one, and torn writes (one sector new, its neighbour old).
  for (const char* s : {"aabb", "ssss", "aass", "ssbb", "asss", "sass", "ssbs", "sssb"}) {
    EXPECT_TRUE(states.count(s)) << s;
  }
  bool garbage = false;
  for (const std::string& s : states) garbage |= s.find('?') != std::string::npos;
  EXPECT_TRUE(garbage);
}

TEST(PowerLossImageTest, ATruncateIsKeptOrLost) {
  std::set<size_t> sizes;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    std::mt19937_64 rng(seed);
    LossStats stats;
    Op cut;
    cut.truncate = true;
    cut.offset = 100;
    sizes.insert(PowerLossImage(std::string(1000, 's'), {cut}, 512, rng, &stats).size());
  }
  EXPECT_EQ(sizes, (std::set<size_t>{100, 1000}));
}

// SQLite on the simulated disk: a commit it synced survives every crash; one it did not
// sync is lost by some. The store's log is synced by descriptor (SyncDescriptor).
class CrashVfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(RegisterCrashVfs(/*make_default=*/false), nullptr);
    dir_ =
        std::filesystem::temp_directory_path() / ("cortex-crash-vfs-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "live");
    std::filesystem::create_directories(dir_ / "crashed");
  }
  void TearDown() override {
    Disarm();
    std::filesystem::remove_all(dir_);
  }

  void Exec(sqlite3* db, const std::string& sql) {
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << err;
  }

  // Rows 1..n committed, each in its own transaction.
  void Insert(sqlite3* db, int from, int to) {
    for (int i = from; i <= to; ++i) Exec(db, "INSERT INTO t VALUES (" + std::to_string(i) + ")");
  }

  // The rows of the crashed copy made with `seed` (-1 if it is not a sound database).
  int RowsAfterCrash(uint64_t seed) {
    std::filesystem::remove(dir_ / "crashed" / "t.db-shm");
    EXPECT_TRUE(WriteCrashedFiles((dir_ / "crashed").string(), seed).ok());
    sqlite3* db = nullptr;
    int rows = -1;
    std::string path = (dir_ / "crashed" / "t.db").string();
    if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
      sqlite3_stmt* s = nullptr;
      if (sqlite3_prepare_v2(db, "SELECT count(*), coalesce(max(x), 0) FROM t", -1, &s, nullptr) ==
              SQLITE_OK &&
          sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) == sqlite3_column_int(s, 1)) {
        rows = sqlite3_column_int(s, 0);  // 1..rows, none missing in between
      }
      sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return rows;
  }

  std::filesystem::path dir_;
};

TEST_F(CrashVfsTest, SyncedCommitsSurviveAndUnsyncedOnesMayNot) {
  Arm(Options((dir_ / "live").string()));
  sqlite3* db = nullptr;
  std::string path = (dir_ / "live" / "t.db").string();
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                            "cortex-crash"),
            SQLITE_OK);
  Exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (x INTEGER)");
  Insert(db, 1, 20);                      // each commit synced by SQLite
  Exec(db, "PRAGMA synchronous=NORMAL");  // as the store's writer: not synced at commit
  Insert(db, 21, 40);
  CrashNow();
  std::set<int> seen;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    int rows = RowsAfterCrash(seed);
    ASSERT_GE(rows, 20) << "seed " << seed;
    ASSERT_LE(rows, 40);
    seen.insert(rows);
  }
  EXPECT_TRUE(seen.count(20));  // every unsynced commit lost
  EXPECT_GT(seen.size(), 2u);   // and some in between
  sqlite3_close(db);
}

TEST_F(CrashVfsTest, ASyncByDescriptorCountsAsTheFilesSync) {
  Arm(Options((dir_ / "live").string()));
  sqlite3* db = nullptr;
  std::string path = (dir_ / "live" / "t.db").string();
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                            "cortex-crash"),
            SQLITE_OK);
  Exec(db,
       "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (x INTEGER);"
       "PRAGMA synchronous=NORMAL");
  Insert(db, 1, 30);
  int fd = ::open((path + "-wal").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(SyncDescriptor(fd), 0);  // what WriteAheadLog::Sync does, on the simulated disk
  ::close(fd);
  Insert(db, 31, 35);
  CrashNow();
  EXPECT_NE(CrashPoint(), "");
  for (uint64_t seed = 0; seed < 40; ++seed) ASSERT_GE(RowsAfterCrash(seed), 30) << seed;
  sqlite3_close(db);
}

}  // namespace
}  // namespace cortex::crash
