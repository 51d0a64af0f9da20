// A SQLite VFS that writes the write-ahead log in one write(2) per commit.
//
// SQLite appends a WAL frame with two writes, its 24-byte header and then its page, so a
// commit of 45 pages took 90 pwrite calls; on this project's VMs a small pwrite costs
// ~1.5 µs of kernel entry and file-system bookkeeping before it copies anything. This VFS
// is SQLite's own default VFS with one change for files opened as a WAL: frames appended
// one after another collect in memory and reach the file in one pwrite when the commit
// frame (the last frame of a transaction) is complete. Every other access to the log (a
// read, a sync, a write anywhere but its end, a truncate, its size, closing it) first
// writes what is held, so SQLite never sees the file differ from what it wrote.
//
// Why that is enough: SQLite makes a transaction visible to other connections only after
// its commit frame is written (it then publishes the new end of the log in shared memory),
// and the write that completes the commit frame is the one that sends the frames out. So
// a committed transaction is in the file (the OS's cache) before anyone, SqliteStore's
// own sync of the log included, can look for it. Frames of a transaction still in
// progress (pages spilled from a full cache) may wait in memory: they are nobody's yet,
// and a crash loses them as it would lose the transaction.
#pragma once

namespace cortex {

// Registers the VFS with SQLite on first use (thread-safe) and returns its name, for
// sqlite3_open_v2. Null if it could not be registered.
const char* CoalescingWalVfs();

}  // namespace cortex
