// Shared by the fuzz targets: one SQLite store for the whole fuzzing run, in /dev/shm
// (fsync is free there), with the demo workspace loaded, removed when the process exits.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/triage/rules.h"
#include "engines/world/demo_world.h"
#include "engines/world/ingest.h"
#include "store/store.h"

namespace cortex::fuzz {

struct FuzzWorld {
  std::filesystem::path dir;
  std::unique_ptr<Store> store;
  FixedClock clock{*ParseTime("2026-06-10T09:00:00Z")};
  Workspace demo;
};

inline FuzzWorld& World() {
  static FuzzWorld* world = [] {
    auto* w = new FuzzWorld;
    std::filesystem::path base =
        std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    w->dir = base / ("cortex-fuzz-" + std::to_string(::getpid()));
    std::filesystem::remove_all(w->dir);
    w->store = *OpenSqliteStore(w->dir.string());
    w->demo = *EnsureWorkspace(*w->store, w->clock, "demo");
    if (!IngestJsonl(*w->store, w->clock, w->demo.id, DemoWorldJsonl()).ok() ||
        !ImportRules(*w->store, w->clock, w->demo.id, DemoRulesYaml()).ok() ||
        !IngestJsonl(*w->store, w->clock, w->demo.id, DemoWeekJsonl()).ok()) {
      std::abort();
    }
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(World().dir, ec);
    });
    return w;
  }();
  return *world;
}

}  // namespace cortex::fuzz
