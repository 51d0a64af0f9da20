// jemalloc's settings for `cortex`, read once at the first allocation (docs/performance.md).
// Two arenas, whatever `--threads` says: measured with the default two I/O threads, where
// reads run, and writes queue for one writer anyway; more arenas would only keep more
// memory, and each thread's cache takes most of the contention away. Freed pages
// go back to the OS about a second after they fall idle (by jemalloc's own background
// thread), so a 10,000-line ingest does not leave its peak behind.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface.
const char* malloc_conf = "narenas:2,background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
