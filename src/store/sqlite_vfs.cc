#include "store/sqlite_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

namespace cortex {
namespace {

constexpr int kFrameHeaderBytes = 24;
// The unix VFS masks a write's length with 0x1ffff: a write of 128 KiB or more writes only
// its low 17 bits' worth, then fails as SQLITE_FULL. Held frames go out in one write of at
// most this (~31 frames of 4 KiB), and longer writes to other files are split.
constexpr size_t kMaxWrite = 0x1ffff;

sqlite3_vfs* g_base = nullptr;  // the default VFS, which does all the real work

// What a WAL file holds back: frames appended since the last write to the file.
struct Held {
  std::string bytes;
  sqlite3_int64 start = 0;  // the file offset of bytes[0]
  // Where the next frame of the log goes, once the log's header has been written through
  // this file; -1 when not known (then nothing is held).
  sqlite3_int64 next = -1;
  bool commit_header = false;  // the last bytes held are a commit frame's header
};

// A file of ours: `base` first (what SQLite sees), the default VFS's file after it. `held`
// is set for a WAL only; other files only have their long writes split.
struct File {
  sqlite3_file base;
  sqlite3_file* real;
  Held* held;
};
constexpr size_t kRealOffset = (sizeof(File) + alignof(std::max_align_t) - 1) /
                               alignof(std::max_align_t) * alignof(std::max_align_t);

File* Ours(sqlite3_file* f) { return reinterpret_cast<File*>(f); }
sqlite3_file* RealFile(sqlite3_file* f) { return Ours(f)->real; }
const sqlite3_io_methods* Real(sqlite3_file* f) { return RealFile(f)->pMethods; }

// Writes `n` bytes at `off` in pieces the default VFS accepts.
int WriteThrough(sqlite3_file* real, const char* p, size_t n, sqlite3_int64 off) {
  int rc = SQLITE_OK;
  for (size_t done = 0; done < n && rc == SQLITE_OK;) {
    size_t piece = std::min(kMaxWrite, n - done);
    rc = real->pMethods->xWrite(real, p + done, static_cast<int>(piece),
                                off + static_cast<sqlite3_int64>(done));
    done += piece;
  }
  return rc;
}

// Writes what is held. On failure it stays held, to be written again in order by the next
// flush: SQLite goes on as if it had been written until its transaction ends. A rollback
// forgets it (OnRollback); a commit needs its commit frame written, and if that flush fails
// the commit fails and what is held is dropped (Write).
int Flush(File* f) {
  if (f->held == nullptr || f->held->bytes.empty()) return SQLITE_OK;
  Held& h = *f->held;
  int rc = WriteThrough(f->real, h.bytes.data(), h.bytes.size(), h.start);
  if (rc == SQLITE_OK) h.bytes.clear();
  return rc;
}

bool IsCommitFrameHeader(const void* buf, int n) {
  if (n != kFrameHeaderBytes) return false;
  // Bytes 4-7: the database's size in pages after a commit; zero in other frames.
  const auto* b = static_cast<const unsigned char*>(buf);
  return (b[4] | b[5] | b[6] | b[7]) != 0;
}

int Write(sqlite3_file* file, const void* buf, int n, sqlite3_int64 off) {
  File* f = Ours(file);
  const char* p = static_cast<const char*>(buf);
  if (f->held == nullptr) return WriteThrough(f->real, p, static_cast<size_t>(n), off);
  Held& h = *f->held;
  if (off == 0) {  // the log's header: a new log begins at the start of the file
    int rc = Flush(f);
    if (rc == SQLITE_OK) rc = WriteThrough(f->real, p, static_cast<size_t>(n), off);
    h.next = rc == SQLITE_OK ? n : -1;
    h.commit_header = false;
    return rc;
  }
  if (h.next < 0 || off != h.next) {
    // Not an append: a frame of this transaction rewritten in place. Written through, after
    // what is held, so writes reach the file in SQLite's order.
    int rc = Flush(f);
    return rc == SQLITE_OK ? WriteThrough(f->real, p, static_cast<size_t>(n), off) : rc;
  }
  const bool completes_commit = h.commit_header;  // this is the commit frame's page
  if (h.bytes.size() + static_cast<size_t>(n) > kMaxWrite) {
    if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  }
  try {
    if (h.bytes.empty()) h.start = off;
    h.bytes.append(p, static_cast<size_t>(n));
  } catch (const std::bad_alloc&) {
    return SQLITE_IOERR_NOMEM;
  }
  h.next = off + n;
  h.commit_header = IsCommitFrameHeader(buf, n);
  if (!completes_commit) return SQLITE_OK;
  int rc = Flush(f);
  if (rc != SQLITE_OK) {
    // The commit failed, and SQLite rolls the transaction back: its frames, commit frame
    // included, must not reach the file later and make it durable after a crash.
    h.bytes.clear();
    h.next = -1;
  }
  return rc;
}

int Close(sqlite3_file* file) {
  File* f = Ours(file);
  int rc = Flush(f);
  int closed = Real(file)->xClose(f->real);
  delete f->held;
  f->held = nullptr;
  return rc == SQLITE_OK ? closed : rc;
}

// Reads are served from what is held where they fall in it (SQLite reads back frames it
// spilled), from the file where they do not, so a read never has to write.
int Read(sqlite3_file* file, void* buf, int n, sqlite3_int64 off) {
  File* f = Ours(file);
  if (f->held != nullptr && !f->held->bytes.empty()) {
    const Held& h = *f->held;
    const sqlite3_int64 end = h.start + static_cast<sqlite3_int64>(h.bytes.size());
    if (off >= h.start && off + n <= end) {
      std::memcpy(buf, h.bytes.data() + (off - h.start), static_cast<size_t>(n));
      return SQLITE_OK;
    }
    if (off < end && off + n > h.start) {  // partly held: not a read SQLite makes
      if (int rc = Flush(f); rc != SQLITE_OK) return rc;
    }
  }
  return Real(file)->xRead(f->real, buf, n, off);
}

int Truncate(sqlite3_file* file, sqlite3_int64 size) {
  File* f = Ours(file);
  int rc = Flush(f);
  if (f->held != nullptr) f->held->next = -1;
  return rc == SQLITE_OK ? Real(file)->xTruncate(f->real, size) : rc;
}

int Sync(sqlite3_file* file, int flags) {
  int rc = Flush(Ours(file));
  return rc == SQLITE_OK ? Real(file)->xSync(RealFile(file), flags) : rc;
}

int FileSize(sqlite3_file* file, sqlite3_int64* size) {
  int rc = Flush(Ours(file));
  return rc == SQLITE_OK ? Real(file)->xFileSize(RealFile(file), size) : rc;
}

int FileControl(sqlite3_file* file, int op, void* arg) {
  int rc = Flush(Ours(file));
  return rc == SQLITE_OK ? Real(file)->xFileControl(RealFile(file), op, arg) : rc;
}

int Fetch(sqlite3_file* file, sqlite3_int64 off, int n, void** out) {
  *out = nullptr;
  int rc = Flush(Ours(file));
  if (rc != SQLITE_OK || Real(file)->iVersion < 3) return rc;
  return Real(file)->xFetch(RealFile(file), off, n, out);
}

// The rest passes straight through.
int Lock(sqlite3_file* f, int lock) { return Real(f)->xLock(RealFile(f), lock); }
int Unlock(sqlite3_file* f, int lock) { return Real(f)->xUnlock(RealFile(f), lock); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->xCheckReservedLock(RealFile(f), out);
}
int SectorSize(sqlite3_file* f) { return Real(f)->xSectorSize(RealFile(f)); }
int DeviceCharacteristics(sqlite3_file* f) { return Real(f)->xDeviceCharacteristics(RealFile(f)); }
int ShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
  return Real(f)->iVersion < 2 ? SQLITE_IOERR
                               : Real(f)->xShmMap(RealFile(f), page, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->iVersion < 2 ? SQLITE_IOERR : Real(f)->xShmLock(RealFile(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) {
  if (Real(f)->iVersion >= 2) Real(f)->xShmBarrier(RealFile(f));
}
int ShmUnmap(sqlite3_file* f, int del) {
  return Real(f)->iVersion < 2 ? SQLITE_OK : Real(f)->xShmUnmap(RealFile(f), del);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return Real(f)->iVersion < 3 ? SQLITE_OK : Real(f)->xUnfetch(RealFile(f), off, p);
}

const sqlite3_io_methods kMethods = {
    3,
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
    Fetch,
    Unfetch,
};

int Open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  // The database itself is the default VFS's own file, in the space SQLite allocated.
  if ((flags & SQLITE_OPEN_MAIN_DB) != 0)
    return g_base->xOpen(g_base, name, file, flags, out_flags);
  File* f = Ours(file);
  f->base.pMethods = nullptr;  // until the real file is open: SQLite then skips xClose
  f->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + kRealOffset);
  f->held = nullptr;
  if ((flags & SQLITE_OPEN_WAL) != 0) {
    f->held = new (std::nothrow) Held;
    if (f->held == nullptr) return SQLITE_NOMEM;
  }
  int rc = g_base->xOpen(g_base, name, f->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    delete f->held;
    f->held = nullptr;
    return rc;
  }
  f->base.pMethods = &kMethods;
  return SQLITE_OK;
}

// The rollback hook: a transaction that did not commit may have left frames held (pages it
// spilled). They must never be written: with the write lock released, another process may
// append its own commits at the same offsets.
void OnRollback(void* arg) {
  auto* db = static_cast<sqlite3*>(arg);
  sqlite3_file* log = nullptr;
  // The write-ahead log, in WAL mode (the rollback journal otherwise).
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &log) != SQLITE_OK ||
      log == nullptr || log->pMethods != &kMethods) {
    return;
  }
  Held* h = Ours(log)->held;
  if (h == nullptr) return;
  h->bytes.clear();
  h->commit_header = false;
  h->next = -1;  // the log's end is back where the transaction found it
}

}  // namespace

const char* CoalescingWalVfs() {
  static const char* name = []() -> const char* {
    g_base = sqlite3_vfs_find(nullptr);
    if (g_base == nullptr) return nullptr;
    // The default VFS's other methods (delete, access, full path, randomness, time, ...)
    // are used as they are: they read nothing of the VFS object but its pAppData, which
    // the copy keeps.
    static sqlite3_vfs vfs = *g_base;
    vfs.zName = "cortex-coalescing-wal";
    vfs.szOsFile = static_cast<int>(kRealOffset) + g_base->szOsFile;
    vfs.xOpen = Open;
    vfs.pNext = nullptr;
    return sqlite3_vfs_register(&vfs, /*makeDflt=*/0) == SQLITE_OK ? vfs.zName : nullptr;
  }();
  return name;
}

void DropUncommittedFramesOnRollback(sqlite3* db) { sqlite3_rollback_hook(db, OnRollback, db); }

}  // namespace cortex
