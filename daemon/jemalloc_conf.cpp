// jemalloc's options for the daemon, read by jemalloc at start (the
// MALLOC_CONF environment variable still overrides them). Transparent huge
// pages for the heap: the routing table is hundreds of megabytes read at
// random, and with 4 KiB pages nearly every access also misses the TLB
// (table-bench: one peer's table 1.45 -> 1.74 M routes/s, docs/performance.md).
// The background thread purges unused dirty pages on its own schedule
// instead of inside whichever thread happens to free memory (a session's
// worker), and keeps the resident figure of daemon/memory.h honest.
// Linked only where jemalloc is the allocator (not under the sanitizers).
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface.
extern const char* malloc_conf;
const char* malloc_conf = "thp:always,metadata_thp:auto,background_thread:true";
}
