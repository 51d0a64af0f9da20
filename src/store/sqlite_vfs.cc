#include "store/sqlite_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace cortex {
namespace {

constexpr int kFrameHeaderBytes = 24;
// The unix VFS writes at most 128 KiB - 1 bytes per call (it masks the length with
// 0x1ffff, and a multiple of 128 KiB fails as SQLITE_FULL): held frames go out in pieces
// no bigger, ~31 frames of 4 KiB each.
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

// A WAL file: ours first (SQLite sees `base`), the default VFS's file after it.
struct WalFile {
  sqlite3_file base;
  sqlite3_file* real;
  Held* held;
};
constexpr size_t kRealOffset = (sizeof(WalFile) + alignof(std::max_align_t) - 1) /
                               alignof(std::max_align_t) * alignof(std::max_align_t);

WalFile* Wal(sqlite3_file* f) { return reinterpret_cast<WalFile*>(f); }
const sqlite3_io_methods* Real(sqlite3_file* f) { return Wal(f)->real->pMethods; }

// Writes what is held. On failure what was held is dropped: it was the current
// transaction's own frames, and the error fails that transaction.
int Flush(WalFile* f) {
  if (f->held == nullptr) return SQLITE_OK;
  Held& h = *f->held;
  int rc = SQLITE_OK;
  for (size_t done = 0; done < h.bytes.size() && rc == SQLITE_OK;) {
    size_t n = std::min(kMaxWrite, h.bytes.size() - done);
    rc = f->real->pMethods->xWrite(f->real, h.bytes.data() + done, static_cast<int>(n),
                                   h.start + static_cast<sqlite3_int64>(done));
    done += n;
  }
  h.bytes.clear();
  h.commit_header = false;
  if (rc != SQLITE_OK) h.next = -1;  // hold nothing more until the log starts again
  return rc;
}

bool IsCommitFrameHeader(const void* buf, int n) {
  if (n != kFrameHeaderBytes) return false;
  // Bytes 4-7: the database's size in pages after a commit; zero in other frames.
  const auto* b = static_cast<const unsigned char*>(buf);
  return (b[4] | b[5] | b[6] | b[7]) != 0;
}

// A statement journal's write: SQLite writes one whose memory outgrew the spill threshold
// in one piece, which the unix VFS cannot take past 128 KiB - 1 bytes. Split.
int SplitWrite(WalFile* f, const void* buf, int n, sqlite3_int64 off) {
  const char* p = static_cast<const char*>(buf);
  int rc = SQLITE_OK;
  for (int done = 0; done < n && rc == SQLITE_OK;) {
    int piece = std::min(static_cast<int>(kMaxWrite), n - done);
    rc = f->real->pMethods->xWrite(f->real, p + done, piece, off + done);
    done += piece;
  }
  return rc;
}

int WalWrite(sqlite3_file* file, const void* buf, int n, sqlite3_int64 off) {
  WalFile* f = Wal(file);
  if (f->held == nullptr) return SplitWrite(f, buf, n, off);
  Held& h = *f->held;
  if (off == 0) {  // the log's header: a new log begins at the start of the file
    int rc = Flush(f);
    if (rc == SQLITE_OK) rc = Real(file)->xWrite(f->real, buf, n, off);
    h.next = rc == SQLITE_OK ? n : -1;
    return rc;
  }
  if (h.next < 0 || off != h.next) {
    // Not an append: a frame of this transaction rewritten in place. Written through, after
    // what is held, so writes reach the file in SQLite's order.
    int rc = Flush(f);
    return rc == SQLITE_OK ? Real(file)->xWrite(f->real, buf, n, off) : rc;
  }
  bool completes_commit = h.commit_header;  // this is the commit frame's page
  if (h.bytes.size() + static_cast<size_t>(n) > kMaxWrite) {
    if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  }
  if (h.bytes.empty()) h.start = off;
  h.bytes.append(static_cast<const char*>(buf), static_cast<size_t>(n));
  h.next = off + n;
  h.commit_header = IsCommitFrameHeader(buf, n);
  return completes_commit ? Flush(f) : SQLITE_OK;
}

int WalClose(sqlite3_file* file) {
  WalFile* f = Wal(file);
  int rc = Flush(f);
  int closed = Real(file)->xClose(f->real);
  delete f->held;
  f->held = nullptr;
  return rc == SQLITE_OK ? closed : rc;
}

int WalRead(sqlite3_file* file, void* buf, int n, sqlite3_int64 off) {
  int rc = Flush(Wal(file));
  return rc == SQLITE_OK ? Real(file)->xRead(Wal(file)->real, buf, n, off) : rc;
}

int WalTruncate(sqlite3_file* file, sqlite3_int64 size) {
  int rc = Flush(Wal(file));
  if (Wal(file)->held != nullptr) Wal(file)->held->next = -1;
  return rc == SQLITE_OK ? Real(file)->xTruncate(Wal(file)->real, size) : rc;
}

int WalSync(sqlite3_file* file, int flags) {
  int rc = Flush(Wal(file));
  return rc == SQLITE_OK ? Real(file)->xSync(Wal(file)->real, flags) : rc;
}

int WalFileSize(sqlite3_file* file, sqlite3_int64* size) {
  int rc = Flush(Wal(file));
  return rc == SQLITE_OK ? Real(file)->xFileSize(Wal(file)->real, size) : rc;
}

int WalFileControl(sqlite3_file* file, int op, void* arg) {
  int rc = Flush(Wal(file));
  return rc == SQLITE_OK ? Real(file)->xFileControl(Wal(file)->real, op, arg) : rc;
}

int WalFetch(sqlite3_file* file, sqlite3_int64 off, int n, void** out) {
  *out = nullptr;
  int rc = Flush(Wal(file));
  if (rc != SQLITE_OK || Real(file)->iVersion < 3) return rc;
  return Real(file)->xFetch(Wal(file)->real, off, n, out);
}

// The rest passes straight through.
int WalLock(sqlite3_file* f, int lock) { return Real(f)->xLock(Wal(f)->real, lock); }
int WalUnlock(sqlite3_file* f, int lock) { return Real(f)->xUnlock(Wal(f)->real, lock); }
int WalCheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->xCheckReservedLock(Wal(f)->real, out);
}
int WalSectorSize(sqlite3_file* f) { return Real(f)->xSectorSize(Wal(f)->real); }
int WalDeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->xDeviceCharacteristics(Wal(f)->real);
}
int WalShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
  return Real(f)->iVersion < 2 ? SQLITE_IOERR
                               : Real(f)->xShmMap(Wal(f)->real, page, size, extend, out);
}
int WalShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->iVersion < 2 ? SQLITE_IOERR : Real(f)->xShmLock(Wal(f)->real, offset, n, flags);
}
void WalShmBarrier(sqlite3_file* f) {
  if (Real(f)->iVersion >= 2) Real(f)->xShmBarrier(Wal(f)->real);
}
int WalShmUnmap(sqlite3_file* f, int del) {
  return Real(f)->iVersion < 2 ? SQLITE_OK : Real(f)->xShmUnmap(Wal(f)->real, del);
}
int WalUnfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return Real(f)->iVersion < 3 ? SQLITE_OK : Real(f)->xUnfetch(Wal(f)->real, off, p);
}

const sqlite3_io_methods kWalMethods = {
    3,
    WalClose,
    WalRead,
    WalWrite,
    WalTruncate,
    WalSync,
    WalFileSize,
    WalLock,
    WalUnlock,
    WalCheckReservedLock,
    WalFileControl,
    WalSectorSize,
    WalDeviceCharacteristics,
    WalShmMap,
    WalShmLock,
    WalShmBarrier,
    WalShmUnmap,
    WalFetch,
    WalUnfetch,
};

int Open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  // The database itself and temporary files other than statement journals are the default
  // VFS's own files, in the space SQLite allocated.
  bool wal = (flags & SQLITE_OPEN_WAL) != 0;
  if (!wal && (flags & SQLITE_OPEN_SUBJOURNAL) == 0) {
    return g_base->xOpen(g_base, name, file, flags, out_flags);
  }
  WalFile* f = Wal(file);
  f->base.pMethods = nullptr;  // until the real file is open: SQLite then skips xClose
  f->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + kRealOffset);
  f->held = nullptr;
  int rc = g_base->xOpen(g_base, name, f->real, flags, out_flags);
  if (rc != SQLITE_OK) return rc;
  if (wal) f->held = new Held;
  f->base.pMethods = &kWalMethods;
  return SQLITE_OK;
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

}  // namespace cortex
