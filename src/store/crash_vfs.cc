#include "store/crash_vfs.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace cortex::crash {
namespace {

// A file of the simulated disk.
struct DiskFile {
  std::string synced;        // its content as of its last sync
  std::vector<Op> unsynced;  // changes since, in order
  dev_t dev = 0;
  ino_t ino = 0;
  bool deleted = false;
};

// The one simulated disk: what is recorded, under one lock. Leaked on purpose: files may be
// closed by static destructors after main returns.
struct Disk {
  std::mutex mu;
  bool armed = false, crashed = false;
  uint64_t generation = 0;  // files opened under an earlier Arm() are no longer recorded
  uint64_t events = 0;
  uint64_t matched = 0;  // events that options.crash_on matched
  std::map<std::string, uint64_t> kinds;
  std::string crash_point;  // the event the crash came before
  ArmOptions options;
  std::map<std::string, DiskFile> files;     // by path
  std::map<std::string, DiskFile> at_crash;  // frozen at the crash
};
Disk& TheDisk() {
  static Disk* disk = new Disk;
  return *disk;
}

sqlite3_vfs* g_base = nullptr;

void CrashLocked(Disk& d) {
  if (d.crashed) return;
  if (d.options.at_crash) d.options.at_crash();
  d.at_crash = d.files;
  d.crashed = true;
}

// Counts an event of a recorded file opened in `generation`; false if it is not to be
// recorded (not armed any more, or the crash has happened, possibly just now).
bool CountEvent(Disk& d, uint64_t generation, const char* what, const std::string& path,
                int64_t offset = -1) {
  if (!d.armed || d.crashed || generation != d.generation) return false;
  ++d.events;
  std::string kind = std::string(what) + " " + path.substr(path.rfind('/') + 1);
  ++d.kinds[kind];
  if (d.options.crash_at == 0) return true;
  std::string event = offset >= 0 ? kind + " @" + std::to_string(offset) : kind;
  if (event.find(d.options.crash_on) != std::string::npos && ++d.matched >= d.options.crash_at) {
    d.crash_point = event;
    CrashLocked(d);
    return false;
  }
  return true;
}

void Apply(std::string& image, const Op& op) {
  if (op.truncate) {
    if (static_cast<int64_t>(image.size()) > op.offset)
      image.resize(static_cast<size_t>(op.offset));
    return;
  }
  size_t end = static_cast<size_t>(op.offset) + op.bytes.size();
  if (image.size() < end) image.resize(end, '\0');  // a hole reads as zeros
  image.replace(static_cast<size_t>(op.offset), op.bytes.size(), op.bytes);
}

void SyncLocked(DiskFile& f) {
  for (const Op& op : f.unsynced) Apply(f.synced, op);
  f.unsynced.clear();
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A recorded file: `base` first (what SQLite sees), the wrapped VFS's file after it.
struct File {
  sqlite3_file base;
  sqlite3_file* real;
  std::string* path;
  uint64_t generation;
};
constexpr size_t kRealOffset = (sizeof(File) + alignof(std::max_align_t) - 1) /
                               alignof(std::max_align_t) * alignof(std::max_align_t);

File* Ours(sqlite3_file* f) { return reinterpret_cast<File*>(f); }
sqlite3_file* RealFile(sqlite3_file* f) { return Ours(f)->real; }
const sqlite3_io_methods* Real(sqlite3_file* f) { return RealFile(f)->pMethods; }

// Records `op` on the file; false if it is not recorded.
bool Record(File* f, Op op) {
  Disk& d = TheDisk();
  std::lock_guard<std::mutex> lock(d.mu);
  if (!CountEvent(d, f->generation, op.truncate ? "truncate" : "write", *f->path, op.offset)) {
    return false;
  }
  d.files[*f->path].unsynced.push_back(std::move(op));
  return true;
}

// A write or truncate is recorded once the real one has returned: a sync counts it as
// synced only if it was made before the sync began, as fdatasync(2) promises no more. A
// crash at its event leaves it out.
int Write(sqlite3_file* file, const void* buf, int n, sqlite3_int64 off) {
  int rc = Real(file)->xWrite(RealFile(file), buf, n, off);
  if (rc != SQLITE_OK) return rc;
  Op op;
  op.offset = off;
  op.bytes.assign(static_cast<const char*>(buf), static_cast<size_t>(n));
  Record(Ours(file), std::move(op));
  return SQLITE_OK;
}

int Truncate(sqlite3_file* file, sqlite3_int64 size) {
  int rc = Real(file)->xTruncate(RealFile(file), size);
  if (rc != SQLITE_OK) return rc;
  Op op;
  op.truncate = true;
  op.offset = size;
  Record(Ours(file), std::move(op));
  return SQLITE_OK;
}

int Sync(sqlite3_file* file, int) {
  File* f = Ours(file);
  Disk& d = TheDisk();
  std::lock_guard<std::mutex> lock(d.mu);
  if (CountEvent(d, f->generation, "sync", *f->path)) SyncLocked(d.files[*f->path]);
  return SQLITE_OK;  // a recorded file is never synced for real
}

int Close(sqlite3_file* file) {
  File* f = Ours(file);
  int rc = Real(file)->xClose(f->real);
  delete f->path;
  f->path = nullptr;
  return rc;
}

int Read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return Real(f)->xRead(RealFile(f), buf, n, off);
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) { return Real(f)->xFileSize(RealFile(f), size); }
int Lock(sqlite3_file* f, int lock) { return Real(f)->xLock(RealFile(f), lock); }
int Unlock(sqlite3_file* f, int lock) { return Real(f)->xUnlock(RealFile(f), lock); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->xCheckReservedLock(RealFile(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->xFileControl(RealFile(f), op, arg);
}
int SectorSize(sqlite3_file* f) { return Real(f)->xSectorSize(RealFile(f)); }
int DeviceCharacteristics(sqlite3_file* f) { return Real(f)->xDeviceCharacteristics(RealFile(f)); }
int ShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
  return Real(f)->xShmMap(RealFile(f), page, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->xShmLock(RealFile(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->xShmBarrier(RealFile(f)); }
int ShmUnmap(sqlite3_file* f, int del) { return Real(f)->xShmUnmap(RealFile(f), del); }
// No memory-mapped reads (version 2 methods): every read goes through Read.

const sqlite3_io_methods kMethods = {
    2,
    Close,
    Read,
    Write,
    Truncate,
    Sync,
    FileSize,
    Lock,
    Unlock,
    CheckReservedLock,
    FileControl,
    SectorSize,
    DeviceCharacteristics,
    ShmMap,
    ShmLock,
    ShmBarrier,
    ShmUnmap,
    nullptr,
    nullptr,
};

// The database, its log and a rollback journal under the armed directory are recorded.
bool Recorded(const Disk& d, const char* name, int flags) {
  if (name == nullptr || !d.armed || d.crashed) return false;
  if ((flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL)) == 0)
    return false;
  const std::string& dir = d.options.dir;
  return std::strncmp(name, dir.c_str(), dir.size()) == 0 && name[dir.size()] == '/';
}

int Open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  uint64_t generation;
  {
    Disk& d = TheDisk();
    std::lock_guard<std::mutex> lock(d.mu);
    if (!Recorded(d, name, flags)) return g_base->xOpen(vfs, name, file, flags, out_flags);
    generation = d.generation;
  }
  File* f = Ours(file);
  f->base.pMethods = nullptr;  // until the real file is open: SQLite then skips xClose
  f->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + kRealOffset);
  int rc = g_base->xOpen(vfs, name, f->real, flags, out_flags);
  if (rc != SQLITE_OK) return rc;
  f->path = new std::string(name);
  f->generation = generation;
  f->base.pMethods = &kMethods;
  struct stat st;
  if (::stat(name, &st) != 0) return SQLITE_OK;
  Disk& d = TheDisk();
  std::lock_guard<std::mutex> lock(d.mu);
  if (generation != d.generation) return SQLITE_OK;
  auto [it, added] = d.files.try_emplace(*f->path);
  DiskFile& df = it->second;
  if (added || df.deleted || df.ino != st.st_ino || df.dev != st.st_dev) {
    // First seen (or made anew): what it holds now is on the disk (it was there before
    // the recording began, or was just created empty).
    df = DiskFile{};
    df.synced = ReadWhole(*f->path);
    df.dev = st.st_dev;
    df.ino = st.st_ino;
  }
  return SQLITE_OK;
}

int Delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  {
    Disk& d = TheDisk();
    std::lock_guard<std::mutex> lock(d.mu);
    auto it = d.files.find(name);
    if (it != d.files.end() && d.armed && !d.crashed) {
      it->second = DiskFile{};  // taken as durable at once (directories are not modelled)
      it->second.deleted = true;
    }
  }
  return g_base->xDelete(vfs, name, sync_dir);
}

// Picks how one crash treats a file's unsynced writes.
enum class Fate { kIndependent, kPrefix, kNone, kAllButLastTorn };

// Applies `op` torn: each sector-aligned piece new, old, or (rarely) garbage.
void ApplyTorn(std::string& image, const Op& op, int sector, std::mt19937_64& rng,
               LossStats* stats) {
  std::uniform_int_distribution<int> pct(0, 99);
  std::uniform_int_distribution<int> byte(0, 255);
  int64_t start = op.offset, end = op.offset + static_cast<int64_t>(op.bytes.size());
  for (int64_t at = start; at < end;) {
    int64_t next = std::min(end, (at / sector + 1) * sector);
    int roll = pct(rng);
    Op piece;
    piece.offset = at;
    if (roll < 45) {
      piece.bytes =
          op.bytes.substr(static_cast<size_t>(at - start), static_cast<size_t>(next - at));
      Apply(image, piece);
    } else if (roll >= 92) {
      piece.bytes.resize(static_cast<size_t>(next - at));
      for (char& c : piece.bytes) c = static_cast<char>(byte(rng));
      Apply(image, piece);
      ++stats->garbage;
    }
    at = next;
  }
}

}  // namespace

std::string PowerLossImage(const std::string& synced, const std::vector<Op>& unsynced, int sector,
                           std::mt19937_64& rng, LossStats* stats) {
  std::string image = synced;
  if (unsynced.empty()) return image;
  stats->unsynced += static_cast<int64_t>(unsynced.size());
  std::uniform_int_distribution<int> pct(0, 99);
  int roll = pct(rng);
  Fate fate = roll < 55   ? Fate::kIndependent
              : roll < 80 ? Fate::kPrefix
              : roll < 90 ? Fate::kNone
                          : Fate::kAllButLastTorn;
  size_t prefix = std::uniform_int_distribution<size_t>(0, unsynced.size())(rng);
  for (size_t i = 0; i < unsynced.size(); ++i) {
    const Op& op = unsynced[i];
    enum { kKeep, kDrop, kTear } what = kDrop;
    switch (fate) {
      case Fate::kIndependent: {
        int r = pct(rng);
        what = r < 40 ? kKeep : r < 70 ? kDrop : kTear;
        break;
      }
      case Fate::kPrefix:
        what = i < prefix ? kKeep : i == prefix ? kTear : kDrop;
        break;
      case Fate::kNone:
        what = kDrop;
        break;
      case Fate::kAllButLastTorn:
        what = i + 1 < unsynced.size() ? kKeep : kTear;
        break;
    }
    if (op.truncate && what == kTear) what = pct(rng) < 50 ? kKeep : kDrop;
    if (what == kKeep) {
      Apply(image, op);
      ++stats->kept;
    } else if (what == kTear) {
      ApplyTorn(image, op, sector, rng, stats);
      ++stats->torn;
    } else {
      ++stats->dropped;
    }
  }
  return image;
}

const char* RegisterCrashVfs(bool make_default) {
  static const char* name = []() -> const char* {
    g_base = sqlite3_vfs_find(nullptr);
    if (g_base == nullptr) return nullptr;
    // The wrapped VFS's other methods (access, full path, randomness, time, ...) are used
    // as they are: they read nothing of the VFS object but its pAppData, which the copy
    // keeps (as in store/sqlite_vfs.cc).
    static sqlite3_vfs vfs = *g_base;
    vfs.zName = "cortex-crash";
    vfs.szOsFile = static_cast<int>(kRealOffset) + g_base->szOsFile;
    vfs.xOpen = Open;
    vfs.xDelete = Delete;
    vfs.pNext = nullptr;
    return sqlite3_vfs_register(&vfs, 0) == SQLITE_OK ? vfs.zName : nullptr;
  }();
  if (name != nullptr && make_default) sqlite3_vfs_register(sqlite3_vfs_find(name), 1);
  return name;
}

void Arm(ArmOptions options) {
  Disk& d = TheDisk();
  std::lock_guard<std::mutex> lock(d.mu);
  while (options.dir.size() > 1 && options.dir.back() == '/') options.dir.pop_back();
  d.options = std::move(options);
  d.armed = true;
  d.crashed = false;
  d.events = 0;
  d.matched = 0;
  d.kinds.clear();
  d.crash_point = "end of load";
  ++d.generation;
  d.files.clear();
  d.at_crash.clear();
}

void Disarm() {
  Disk& d = TheDisk();
  std::lock_guard<std::mutex> lock(d.mu);
  d.armed = false;
  ++d.generation;
  d.options.at_crash = nullptr;
  d.files.clear();
  d.at_crash.clear();
}

bool Crashed() {
  Disk& d = TheDisk();
  std::lock_guard<std::mutex> lock(d.mu);
  return d.crashed;
}

uint64_t Events() {
  Disk& d = TheDisk();
  std::lock_guard<std::mutex> lock(d.mu);
  return d.events;
}

std::map<std::string, uint64_t> EventKinds() {
  Disk& d = TheDisk();
  std::lock_guard<std::mutex> lock(d.mu);
  return d.kinds;
}

std::string CrashPoint() {
  Disk& d = TheDisk();
  std::lock_guard<std::mutex> lock(d.mu);
  return d.crash_point;
}

void CrashNow() {
  Disk& d = TheDisk();
  std::lock_guard<std::mutex> lock(d.mu);
  if (d.armed) CrashLocked(d);
}

Result<LossStats> WriteCrashedFiles(const std::string& to_dir, uint64_t seed) {
  CrashNow();
  Disk& d = TheDisk();
  std::map<std::string, DiskFile> files;
  int sector;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (!d.crashed) return Status::Internal("the simulated disk is not armed");
    files = d.at_crash;
    sector = d.options.sector;
  }
  std::mt19937_64 rng(seed);
  LossStats stats;
  for (const auto& [path, file] : files) {
    if (file.deleted) continue;
    const bool log = path.size() > 4 && path.compare(path.size() - 4, 4, "-wal") == 0;
    for (const Op& op : file.unsynced) {
      if (log && !op.truncate && op.offset == 0) stats.log_header_unsynced = true;
      if (!log) stats.database_unsynced = true;
    }
    std::string image = PowerLossImage(file.synced, file.unsynced, sector, rng, &stats);
    std::string to = to_dir + path.substr(path.rfind('/'));
    std::ofstream out(to, std::ios::binary | std::ios::trunc);
    out.write(image.data(), static_cast<std::streamsize>(image.size()));
    if (!out) return Status::Internal("cannot write " + to);
  }
  return stats;
}

int SyncDescriptor(int fd) {
  struct stat st;
  if (::fstat(fd, &st) == 0) {
    Disk& d = TheDisk();
    std::lock_guard<std::mutex> lock(d.mu);
    for (auto& [path, file] : d.files) {
      if (file.deleted || file.dev != st.st_dev || file.ino != st.st_ino) continue;
      if (CountEvent(d, d.generation, "sync", path)) SyncLocked(file);
      return 0;  // a recorded file is never synced for real
    }
  }
  return ::fdatasync(fd);
}

}  // namespace cortex::crash
