// A simulated disk for power-loss tests (tests/crash/, docs/store.md "Power loss, simulated").
//
// A SQLite VFS over the default one that passes every call through to the real files (so the
// process sees its own writes, as it would in the page cache) and also records, for the
// database and log files under one directory, every write, truncate and sync. At the crash
// point it freezes that record; WriteCrashedFiles then builds what a disk could hold after
// a power loss at that instant: per file, everything up to its last sync, plus any subset of
// the writes made since, each one whole, missing, or torn at sector granularity (some of its
// sectors new, some old, rarely some garbage), in whatever order the OS flushed them.
//
// This follows SQLite's own crash-test VFS (src/test6.c in SQLite's tree), with two
// differences: the live process never stops (the crash is a snapshot; the harness then
// abandons the live files), and garbage stays within the bytes a write covered, since
// SQLite's unix VFS declares SQLITE_IOCAP_POWERSAFE_OVERWRITE (a write never damages the
// bytes around it).
//
// The store's log is synced through a descriptor of its own, not through SQLite
// (WriteAheadLog): SyncDescriptor is that sync (set as WalTestSeams::sync_log), so that only
// what the store really synced counts as synced.
//
// Not modelled: directory entries (a file created or deleted is taken as durable at once),
// the shared-memory file (SQLite rebuilds it after a crash), I/O errors, and a disk that
// lies about syncs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/status.h"

namespace cortex::crash {

// One recorded change to a file: `bytes` written at `offset`, or a truncate to `offset`.
struct Op {
  bool truncate = false;
  int64_t offset = 0;
  std::string bytes;
};

// What a power loss did to the unsynced writes.
struct LossStats {
  int64_t unsynced = 0;  // writes and truncates after the files' last syncs
  int64_t kept = 0;      // reached the disk whole
  int64_t dropped = 0;   // never reached it
  int64_t torn = 0;      // reached it in part (some sectors)
  int64_t garbage = 0;   // sectors left as garbage
  // Set by WriteCrashedFiles: the log's header was rewritten (the log started over) and
  // not synced since; the database had writes not synced (a checkpoint's copy).
  bool log_header_unsynced = false;
  bool database_unsynced = false;
};

// What a disk could hold after a power loss: `synced` with a random choice of `unsynced`
// applied over it, in their order, each whole, not at all or torn at `sector` bytes. How
// the choice is made varies from crash to crash (independent, a prefix in order, none,
// all), so that both likely and unlikely states come up.
std::string PowerLossImage(const std::string& synced, const std::vector<Op>& unsynced, int sector,
                           std::mt19937_64& rng, LossStats* stats);

// Registers the VFS "cortex-crash" over the VFS that is the default at the first call, and
// makes it the default if `make_default`. A store's writer reaches it through the
// coalescing VFS (store/sqlite_vfs.h), which wraps the default VFS as it is when first used:
// make it the default before any store is opened. Returns its name, or null.
const char* RegisterCrashVfs(bool make_default);

struct ArmOptions {
  std::string dir;  // the database, log and journal files in it are recorded
  // The crash happens just before the crash_at'th recorded event (a write, truncate or
  // sync of one of those files) that crash_on matches takes effect; 0: only at
  // CrashNow(). Events are named "write cortex.db-wal @4152", "sync cortex.db",
  // "truncate cortex.db @8192" (CrashPoint): crash_on is a part of the name ("" any event,
  // "sync cortex.db-wal" a sync of the log, "cortex.db-wal @0" the log's header).
  uint64_t crash_at = 0;
  std::string crash_on;
  int sector = 512;
  // Runs at the crash, under the disk's lock (so no sync can be recorded meanwhile); must
  // not touch SQLite or the files. The harness takes its list of acknowledged writes here.
  std::function<void()> at_crash;
};

// Starts recording the files under options.dir, forgetting any earlier recording. Recorded
// files are never synced for real (what reaches the machine's disk does not matter).
void Arm(ArmOptions options);
// Stops recording; files opened from now on are passed through untouched.
void Disarm();
// Whether the crash has happened; the events recorded so far.
bool Crashed();
uint64_t Events();
// Crashes now if it has not happened yet.
void CrashNow();
// What the crash came before: "write cortex.db-wal @4152", "sync cortex.db", or "end of
// load" (CrashNow).
std::string CrashPoint();
// How many events of each kind ("write cortex.db-wal") were recorded since Arm().
std::map<std::string, uint64_t> EventKinds();

// Writes into `to_dir` (which must exist) each recorded file as the crash left it (after
// CrashNow if needed), named as it was. `seed` picks the lost writes.
Result<LossStats> WriteCrashedFiles(const std::string& to_dir, uint64_t seed);

// A sync of the file open at `fd`: recorded as a sync if it is a recorded file, else
// fdatasync(2).
int SyncDescriptor(int fd);

}  // namespace cortex::crash
