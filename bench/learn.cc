// cortex-learn-bench: how long a learning pass takes (docs/learning.md), on a SQLite store
// filled with a planted world (src/testing/planted_world.h) of about --episodes messages
// (default 100,000) from ~230 counterparties over a year, ingested and triaged untimed.
//
//   build/cortex-learn-bench [--episodes N] [--rounds N] [DIR]
//
// Prints, as medians of --rounds (default 5) runs:
//   full pass      Learn() over the whole history (the first pass proposes; later ones
//                  re-measure and change nothing);
//   after 100      a batch of 100 new episodes ingested (untimed), then Learn() (timed) with
//                  the memory of the pass before (incremental, as while serving);
//   read only      reading the messages a pass reads (one read transaction);
//   find only      FindPatterns() over the same messages in memory, without the store.
// The store is deleted afterwards.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/learning/learning.h"
#include "engines/world/ingest.h"
#include "store/episodes.h"
#include "store/store.h"
#include "testing/planted_world.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

[[noreturn]] void Die(const std::string& what, const cortex::Status& st) {
  std::fprintf(stderr, "cortex-learn-bench: %s: %s\n", what.c_str(), st.message().c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int episodes = 100000, rounds = 5;
  std::string dir = "/tmp";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--episodes" && i + 1 < argc) {
      episodes = std::atoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      dir = a;
    }
  }
  cortex::FixedClock clock(*cortex::ParseTime("2026-06-30T12:00:00Z"));
  cortex::testing::PlantedWorldOptions o;
  o.now = clock.Now();
  o.weeks = 52;
  // Planted counterparties give ~5,100 episodes a year; the rest are filler exchanges
  // (two episodes each, nearly all).
  o.filler_per_week = std::max(0, static_cast<int>((episodes - 5100) / 2.0 / o.weeks));
  cortex::testing::PlantedWorld world = cortex::testing::MakePlantedWorld(o);

  std::string path = dir + "/cortex-learn-bench-" + std::to_string(getpid());
  auto store = cortex::OpenStore(path);
  if (!store.ok()) Die("open " + path, store.status());
  auto ws = cortex::EnsureWorkspace(**store, clock, "bench");
  if (!ws.ok()) Die("workspace", ws.status());
  auto t0 = Clock::now();
  // In batches of 10,000 lines (a batch holds at most 100,000).
  std::string all = world.Jsonl(), batch;
  size_t added = 0, lines = 0, pos = 0;
  while (pos < all.size()) {
    size_t end = all.find('\n', pos);
    batch.append(all, pos, end - pos + 1);
    pos = end + 1;
    if (++lines % 10000 == 0 || pos >= all.size()) {
      auto ingested = cortex::IngestJsonl(**store, clock, ws->id, batch);
      if (!ingested.ok()) Die("ingest", ingested.status());
      added += ingested->episodes_added;
      batch.clear();
    }
  }
  std::printf("world: %zu episodes, %zu counterparties, ingested and triaged in %.1f s\n", added,
              world.entities.size(), Ms(Clock::now() - t0) / 1000);

  cortex::LearningConfig config;
  std::vector<double> full, after, find, read;
  for (int r = 0; r < rounds; ++r) {
    auto t = Clock::now();
    auto report = cortex::Learn(**store, clock, ws->id, config);
    if (!report.ok()) Die("learn", report.status());
    full.push_back(Ms(Clock::now() - t));
    if (r == 0) {
      std::printf("first pass: %d proposed, %d updated, %d retired\n", report->proposed,
                  report->updated, report->retired);
    }
  }
  // Batches of 100 new episodes, each followed by a pass that remembers the last (as the
  // serve loop does): the first pass with the memory reads everything, the next only the
  // batch.
  cortex::LearnMemory memory;
  if (auto first = cortex::Learn(**store, clock, ws->id, config, &memory); !first.ok()) {
    Die("learn", first.status());
  }
  int incremental = 0;
  for (int r = 0; r < rounds; ++r) {
    clock.Advance(std::chrono::hours(1));
    std::string batch;
    for (int i = 0; i < 100; ++i) {
      const cortex::Entity& e = world.entities[static_cast<size_t>(i) % world.entities.size()];
      batch += "{\"type\":\"episode\",\"kind\":\"message_received\",\"occurred_at\":\"" +
               cortex::FormatTime(clock.Now() - std::chrono::minutes(i)) +
               "\",\"counterparty\":\"" + e.identifiers[0] +
               "\",\"subject\":\"New\",\"summary\":\"New\",\"thread\":\"bench-" +
               std::to_string(r) + "-" + std::to_string(i) + "\"}\n";
    }
    auto added = cortex::IngestJsonl(**store, clock, ws->id, batch);
    if (!added.ok()) Die("ingest batch", added.status());
    auto t = Clock::now();
    auto report = cortex::Learn(**store, clock, ws->id, config, &memory);
    if (!report.ok()) Die("learn", report.status());
    after.push_back(Ms(Clock::now() - t));
    incremental += memory.last_incremental() ? 1 : 0;
  }
  for (int r = 0; r < rounds; ++r) {
    auto t = Clock::now();
    cortex::Status st = (*store)->Read([&](cortex::ReadTx& tx) -> cortex::Status {
      auto m = tx.episodes().MessagesSince(ws->id, clock.Now() - std::chrono::days(365));
      return m.status();
    });
    if (!st.ok()) Die("read", st);
    read.push_back(Ms(Clock::now() - t));
  }
  std::map<std::string, cortex::Entity> entities;
  for (const cortex::Entity& e : world.entities) entities[e.id] = e;
  for (int r = 0; r < rounds; ++r) {
    auto t = Clock::now();
    auto found = cortex::FindPatterns(world.messages, entities, {}, clock.Now(), config);
    find.push_back(Ms(Clock::now() - t));
    if (found.empty()) std::printf("(no findings)\n");
  }
  std::printf("incremental passes: %d of %d\n", incremental, rounds);
  std::printf("full pass: %.0f ms\nafter 100: %.0f ms\nread only: %.0f ms\nfind only: %.0f ms\n",
              Median(full), Median(after), Median(read), Median(find));
  store->reset();
  std::filesystem::remove_all(path);
  return 0;
}
