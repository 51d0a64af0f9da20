// A SQLite VFS that writes the write-ahead log in one write(2) per commit.
//
// SQLite appends a WAL frame with two writes, its 24-byte header and then its page, so a
// commit of 45 pages took 90 pwrite calls; on this project's VMs a small pwrite costs
// ~1.5 µs of kernel entry and file-system bookkeeping before it copies anything. This VFS
// is SQLite's own default VFS with two changes:
//  - In a WAL, frames appended one after another collect in memory and reach the file in
//    one pwrite when the commit frame (the last frame of a transaction, whose header
//    carries the database's size) is complete. Any other write to the log, a sync, a
//    truncate, its size or a file control first writes what is held; reads are served
//    from what is held where they fall in it.
//  - Writes to other files (statement journals above all, which SQLite spills in one
//    write) are split into pieces the unix VFS takes: at most 128 KiB - 1 bytes.
//
// Why a committed transaction is never held: SQLite makes a transaction visible to other
// connections, and COMMIT returns, only after its commit frame is written, and the write
// that completes the commit frame sends the held frames out (if that fails, the commit
// fails). So every commit is in the file (the OS's cache) before anyone looks for it,
// SqliteStore's own fdatasync of the log included.
// What may be held is a transaction's pages spilled before it commits. If it rolls back
// they must never be written: the write lock is released, and another process (`cortex
// ingest`) may append its commits at the same offsets. DropUncommittedFramesOnRollback
// forgets them when the transaction is rolled back.
//
// Requires synchronous=NORMAL (or OFF) on the connection: with FULL, SQLite pads the commit
// frame to a sector boundary and splits writes around a sync, which the commit detection
// above does not follow.
#pragma once

#include <sqlite3.h>

namespace cortex {

// Registers the VFS with SQLite on first use (thread-safe) and returns its name, for
// sqlite3_open_v2. Null if it could not be registered.
const char* CoalescingWalVfs();

// Installs the rollback hook a connection opened with CoalescingWalVfs() needs (it takes
// the connection's one rollback hook).
void DropUncommittedFramesOnRollback(sqlite3* db);

}  // namespace cortex
