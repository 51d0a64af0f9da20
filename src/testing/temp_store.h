// Test helper: a fresh, empty store, removed afterwards. SQLite in a temporary directory;
// or, when CORTEX_TEST_POSTGRES names a PostgreSQL server (postgresql://user@host:port),
// a new database on it. scripts/test runs the unit tests both ways.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "store/store.h"

namespace cortex::testing {

class TempStore {
 public:
  TempStore();
  ~TempStore();
  Store& operator*() { return *store_; }
  Store* operator->() { return store_.get(); }
  // Where the store lives: a directory or a postgresql:// URL (for OpenStore).
  const std::string& location() const { return location_; }
  bool is_postgres() const { return !database_.empty(); }
  // Closes and reopens the store (as a restart would).
  void Reopen();
  // Runs `sql` on the database behind the store's back (a tampering user, say).
  void ExecRaw(const std::string& sql);
  // SQLite's EXPLAIN QUERY PLAN of `sql`, one step per line (REQUIRES: !is_postgres()).
  std::string QueryPlan(const std::string& sql);

 private:
  std::string server_;  // the PostgreSQL server, if any
  std::string database_;
  std::string location_;
  std::unique_ptr<Store> store_;
};

// Workspace `i`: id ws_<i>, name w<i>, fixed versions and time (not yet stored).
Workspace MakeWorkspace(int i);
// How many workspaces `store` holds.
size_t CountWorkspaces(Store& store);

}  // namespace cortex::testing
