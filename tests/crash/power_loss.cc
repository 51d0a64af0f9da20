// cortex-power-loss: the store through thousands of simulated power losses (docs/testing.md).
//
// Each crash is one seed: a fresh copy of a small world, the real store on the simulated
// disk (store/crash_vfs.h) under a load from several threads (workload.h), a crash just
// before a random write, truncate or sync of the database or its log, the files as a disk
// could hold them after it, the store reopened from them as a restart would, and the checks
// (checks.cc). The seed fixes the load, the crash's event and the writes lost; the threads'
// timing is the machine's, so a replay (--seed S, which runs it --repeat times) comes close
// to the failing run rather than repeating it byte for byte.
//
//   cortex-power-loss [--seconds N] [--crashes N] [--seed S] [--repeat N] [--events]
//
// Runs from a random first seed (printed) for --seconds (60) or --crashes, whichever ends
// first; --seed S runs seed S alone (--repeat times, 20 by default); CORTEX_CRASH_SEED=S does
// the same. The regression seeds below run first every time. --events prints how many
// events of each kind a load makes without a crash (what kTargets is set from). Exit status
// 1 when a crash lost an acknowledged write or broke the database; its files are kept.
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/time.h"
#include "store/crash_vfs.h"
#include "store/sqlite_wal.h"
#include "tests/crash/workload.h"

namespace cortex::crashtest {
namespace {

namespace fs = std::filesystem;

// Seeds that once failed (none yet): run first, every time.
const std::vector<uint64_t> kRegressionSeeds = {};

// Where a crash falls: just before the n'th event (a recorded write, truncate or sync) that
// `on` names, n uniform in 1..`events` (about how many a load makes, from --events; a load
// that opens a new directory, 1 in 10, also runs the migrations: `fresh`), or at the load's
// end if it made fewer. Most events are a checkpoint's page writes, so crashes aimed at the
// rarer ones come up as often as the rest.
struct Target {
  const char* on;
  uint64_t events, fresh;
  int weight;  // in 100
};
const Target kTargets[] = {
    {"", 1000, 1200, 25},                 // any event
    {"write cortex.db-wal", 50, 70, 25},  // a commit's frames
    {"sync", 75, 85, 20},                 // a sync of the log or of the database
    {"cortex.db-wal @0", 5, 6, 15},       // the log starting over: its new header
    {"write cortex.db @", 800, 950, 15},  // a checkpoint copying pages into the database
};

// Checkpoints every 24 pages of log and the writer's own (which lets SQLite start the log
// over) every 96, rather than 32 and 128 MiB: each load checkpoints and restarts the log
// several times.
constexpr int kCheckpointEvery = 24;
constexpr int kWriterCheckpoint = 96;

struct Totals {
  int64_t crashes = 0, acked = 0, episodes = 0, resumed = 0, failed = 0;
  int64_t batches = 0, proposals = 0, endings = 0, deliveries = 0;
  int64_t unsynced = 0, kept = 0, dropped = 0, torn = 0, garbage = 0;
  int64_t header_unsynced = 0, database_unsynced = 0;
  int64_t twice = 0;                      // crashes followed by a second during the restart
  std::map<std::string, int64_t> points;  // where the crashes fell
};

std::string Kind(const std::string& point) {
  if (point == "end of load") return "after the load";
  bool log = point.find("-wal") != std::string::npos;
  if (point.rfind("sync", 0) == 0) return log ? "syncing the log" : "syncing the database";
  if (point.rfind("truncate", 0) == 0)
    return log ? "truncating the log" : "truncating the database";
  if (log && point.size() > 3 && point.compare(point.size() - 3, 3, " @0") == 0)
    return "starting the log over (its header)";
  if (log) return "writing a commit's frames";
  if (point.find("-journal") != std::string::npos) return "writing a rollback journal";
  return "checkpointing (writing the database)";
}

Status MakeDir(const fs::path& p) {
  fs::remove_all(p);
  if (::mkdir(p.c_str(), 0700) != 0) return Status::Internal("cannot create " + p.string());
  return Status::Ok();
}

// One crash. Returns false if a check failed (reported on stderr).
bool RunOne(uint64_t seed, const fs::path& base, const fs::path& world, Totals* totals,
            bool measure = false) {
  std::mt19937_64 rng(seed);
  const bool fresh = rng() % 10 == 0;
  int pick = static_cast<int>(rng() % 100);
  const Target* target = kTargets;
  while (pick >= target->weight) pick -= target++->weight;
  const uint64_t crash_at = measure ? 0 : 1 + rng() % (fresh ? target->fresh : target->events);
  const fs::path live = base / "live", crashed = base / "crashed";
  auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "power loss: seed %llu: %s\n", static_cast<unsigned long long>(seed),
                 what.c_str());
    return false;
  };
  if (!MakeDir(live).ok() || !MakeDir(crashed).ok()) return fail("cannot make the directories");
  if (!fresh) fs::copy_file(world / "cortex.db", live / "cortex.db");

  SharedLog log;
  if (!fresh) log.Update([](LoadLog& l) { l.setup_acked = true; });
  FixedClock clock(*ParseTime("2026-06-10T09:00:00Z"));
  crash::ArmOptions arm;
  arm.dir = live.string();
  arm.crash_at = crash_at;
  arm.crash_on = target->on;
  arm.at_crash = [&] { log.Freeze(); };
  crash::Arm(arm);
  {
    auto store = OpenSqliteStore(live.string());
    if (!store.ok()) return fail("the live store did not open: " + store.status().ToString());
    if (fresh) {
      if (Status st = SetUpWorld(**store, clock, &log); !st.ok()) return fail(st.ToString());
    }
    LoadOptions options;
    options.seed = seed;
    RunLoad(**store, clock, options, &log, &crash::Crashed);
    crash::CrashNow();  // the load ended first
  }
  const std::string point = crash::CrashPoint();
  if (measure) {
    std::printf("seed %llu%s: %llu events:", static_cast<unsigned long long>(seed),
                fresh ? " (new directory)" : "", static_cast<unsigned long long>(crash::Events()));
    for (const auto& [kind, n] : crash::EventKinds())
      std::printf(" %s %llu;", kind.c_str(), static_cast<unsigned long long>(n));
    std::printf("\n");
  }
  auto stats = crash::WriteCrashedFiles(crashed.string(), seed * 0x9e3779b97f4a7c15ULL + 1);
  if (!stats.ok()) return fail(stats.status().ToString());

  // One crash in five is followed by a second during the restart: in the recovery, the
  // first checkpoint, or the scheduled work the restart resumes. What the first load had
  // acknowledged must survive both.
  fs::path checked = crashed;
  bool twice = !measure && rng() % 5 == 0;
  if (twice) {
    crash::ArmOptions again;
    again.dir = crashed.string();
    again.crash_at = 1 + rng() % 120;
    crash::Arm(again);
    {
      FixedClock restarted(clock.Now() + std::chrono::hours(48));
      auto store = OpenSqliteStore(crashed.string());
      std::vector<std::string> delivered;
      if (store.ok()) (void)DrainScheduledWork(**store, restarted, &delivered);
      crash::CrashNow();
    }
    checked = base / "crashed-again";
    if (!MakeDir(checked).ok()) return fail("cannot make the directories");
    auto second = crash::WriteCrashedFiles(checked.string(), seed * 0x9e3779b97f4a7c15ULL + 2);
    if (!second.ok()) return fail(second.status().ToString());
    ++totals->twice;
  }

  // The restart: the crashed files are recorded too (never crashing), so that nothing in
  // the checks is synced for real.
  crash::ArmOptions record;
  record.dir = checked.string();
  crash::Arm(record);
  // After a second crash, an hour past the clock of the restart that crashed (the checks
  // then move two more days): past any lease it took on an outbox row.
  FixedClock after(clock.Now() + std::chrono::hours(twice ? 49 : 0));
  CheckReport report;
  {
    auto store = OpenSqliteStore(checked.string());
    if (!store.ok()) {
      report.problems.push_back("the store did not reopen: " + store.status().ToString());
    } else {
      report = CheckAfterCrash(**store, checked.string(), after, log.frozen());
    }
  }
  crash::Disarm();

  ++totals->crashes;
  totals->acked += report.acked_checked;
  totals->episodes += report.episodes;
  totals->batches += report.batches;
  totals->proposals += report.proposals;
  totals->endings += report.endings;
  totals->deliveries += report.deliveries;
  totals->resumed += report.resumed;
  totals->unsynced += stats->unsynced;
  totals->kept += stats->kept;
  totals->dropped += stats->dropped;
  totals->torn += stats->torn;
  totals->garbage += stats->garbage;
  totals->header_unsynced += stats->log_header_unsynced;
  totals->database_unsynced += stats->database_unsynced;
  ++totals->points[Kind(point)];
  if (report.problems.empty()) return true;
  ++totals->failed;
  fs::path kept = base / ("failed-" + std::to_string(seed));
  fs::remove_all(kept);
  fs::rename(checked, kept);
  std::string all = "crash before \"" + point + "\", " + (fresh ? "new directory, " : "") +
                    (twice ? "crashed again in the restart, " : "") +
                    std::to_string(report.problems.size()) + " problem(s):";
  for (const std::string& p : report.problems) all += "\n  " + p;
  all += "\n  files kept in " + kept.string() + "\n  replay: cortex-power-loss --seed " +
         std::to_string(seed);
  return fail(all);
}

void Print(const Totals& t, double seconds) {
  std::printf(
      "power loss: %lld crashes in %.0f s, %lld acknowledged writes checked (%lld episodes of "
      "acknowledged batches), %lld crashed again while restarting; lost: %lld\n",
      static_cast<long long>(t.crashes), seconds, static_cast<long long>(t.acked),
      static_cast<long long>(t.episodes), static_cast<long long>(t.twice),
      static_cast<long long>(t.failed));
  std::printf(
      "  of which %lld ingest batches, %lld proposals, %lld approvals and rejections, %lld "
      "deliveries\n"
      "  unsynced writes at the crashes: %lld (%lld kept, %lld lost, %lld torn, %lld sectors of "
      "garbage); %lld crashes with the log's new header unsynced, %lld with a checkpoint's "
      "copy unsynced; %lld scheduled steps and deliveries resumed after restarts\n",
      static_cast<long long>(t.batches), static_cast<long long>(t.proposals),
      static_cast<long long>(t.endings), static_cast<long long>(t.deliveries),
      static_cast<long long>(t.unsynced), static_cast<long long>(t.kept),
      static_cast<long long>(t.dropped), static_cast<long long>(t.torn),
      static_cast<long long>(t.garbage), static_cast<long long>(t.header_unsynced),
      static_cast<long long>(t.database_unsynced), static_cast<long long>(t.resumed));
  for (const auto& [kind, n] : t.points)
    std::printf("  crashed while %s: %lld\n", kind.c_str(), static_cast<long long>(n));
}

int Main(int argc, char** argv) {
  double seconds = 60;
  int64_t max_crashes = 0, repeat = 20;
  bool replay = false, events = false;
  uint64_t seed = std::random_device{}() % 1000000000;
  if (const char* s = std::getenv("CORTEX_CRASH_SEED"); s != nullptr && *s != '\0') {
    seed = std::strtoull(s, nullptr, 10);
    replay = true;
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--seconds")
      seconds = std::atof(v), ++i;
    else if (a == "--crashes")
      max_crashes = std::atoll(v), ++i;
    else if (a == "--seed")
      seed = std::strtoull(v, nullptr, 10), replay = true, ++i;
    else if (a == "--repeat")
      repeat = std::atoll(v), ++i;
    else if (a == "--events")
      events = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--seconds N] [--crashes N] [--seed S] [--repeat N] [--events]\n",
                   argv[0]);
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::err);  // the store's warnings, by the thousand
  // Before any store opens: the writer's coalescing VFS wraps the default VFS of then.
  if (crash::RegisterCrashVfs(/*make_default=*/true) == nullptr) {
    std::fprintf(stderr, "cannot register the crash VFS\n");
    return 1;
  }
  WalTestSeams seams;
  seams.sync_log = &crash::SyncDescriptor;
  seams.checkpoint_every_frames = kCheckpointEvery;
  seams.writer_checkpoint_frames = kWriterCheckpoint;
  SetWalTestSeams(seams);

  fs::path base = fs::temp_directory_path() / ("cortex-power-loss-" + std::to_string(::getpid()));
  if (!MakeDir(base).ok() || !MakeDir(base / "world").ok()) return 1;
  {
    // The world each crash starts from (unless it starts from nothing), made without crashes.
    auto store = OpenSqliteStore((base / "world").string());
    SharedLog log;
    FixedClock clock(*ParseTime("2026-06-10T08:00:00Z"));
    if (!store.ok() || !SetUpWorld(**store, clock, &log).ok()) {
      std::fprintf(stderr, "cannot set up the world\n");
      return 1;
    }
  }

  Totals totals;
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  bool ok = true;
  if (events) {
    for (uint64_t s = seed; s < seed + 20; ++s)
      ok &= RunOne(s, base, base / "world", &totals, true);
  } else if (replay) {
    std::printf("power loss: replaying seed %llu %lld times\n",
                static_cast<unsigned long long>(seed), static_cast<long long>(repeat));
    for (int64_t i = 0; i < repeat; ++i) ok &= RunOne(seed, base, base / "world", &totals);
  } else {
    for (uint64_t s : kRegressionSeeds) ok &= RunOne(s, base, base / "world", &totals);
    std::printf("power loss: seeds from %llu\n", static_cast<unsigned long long>(seed));
    for (uint64_t s = seed;
         elapsed() < seconds && (max_crashes == 0 || totals.crashes < max_crashes); ++s) {
      ok &= RunOne(s, base, base / "world", &totals);
    }
  }
  Print(totals, elapsed());
  if (ok) fs::remove_all(base);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace cortex::crashtest

int main(int argc, char** argv) { return cortex::crashtest::Main(argc, argv); }
