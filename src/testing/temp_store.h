// Test helper: a SQLite store in a fresh temporary directory, removed afterwards.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "store/store.h"

namespace cortex::testing {

class TempStore {
 public:
  TempStore() {
    std::random_device rd;
    dir_ = std::filesystem::temp_directory_path() /
           ("cortex-test-" + std::to_string(rd()) + std::to_string(rd()));
    auto s = OpenSqliteStore(dir_.string());
    if (!s.ok()) ADD_FAILURE() << s.status().ToString();
    store_ = std::move(*s);
  }
  ~TempStore() {
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Store& operator*() { return *store_; }
  Store* operator->() { return store_.get(); }
  std::string dir() const { return dir_.string(); }
  // Closes and reopens the store (as a restart would).
  void Reopen() {
    store_.reset();
    auto s = OpenSqliteStore(dir_.string());
    if (!s.ok()) ADD_FAILURE() << s.status().ToString();
    store_ = std::move(*s);
  }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
};

}  // namespace cortex::testing
