// jemalloc's options for the daemon, read by jemalloc at start (the
// MALLOC_CONF environment variable still overrides them). In crates/ (it
// knows nothing of BGP) so that table-bench (tools/bench) measures the
// daemon's heap without compiling a daemon/ source.
//
// No transparent huge pages for the heap as a whole (thp:never): the
// routing table's big maps ask for them themselves (table/prefix_map.h,
// MADV_HUGEPAGE on arrays of 2 MiB and more), which is where they pay, and
// huge pages everywhere else only rounded every arena's memory up to 2 MiB
// pieces. Measured on 2026-12-06 (docs/performance.md, "Update groups end
// to end"): a 1M-route table through the daemon to one neighbour, peak RSS
// 305-307 -> 265-266 MiB at the same speed (1.91-1.96 s -> 1.90-2.02 s);
// 200 route-server members, settled RSS 46 -> 36 MB; table-bench's insert
// within its noise (3.45-3.60 M routes/s with, 3.38-3.50 without).
//
// The background thread purges unused dirty pages on its own schedule
// instead of inside whichever thread happens to free memory (a session's
// worker), and keeps the resident figure of daemon/memory.h honest. It
// returns them after a second (jemalloc's default: ten), at once to the
// kernel (no "muzzy" stage): what a burst freed (an initial table's
// queue, 200 members' send buffers) otherwise stayed resident for ten
// seconds after it. Measured on 2026-12-06 with MALLOC_CONF (one run
// each, docs/performance.md, "One neighbour to another"): 200
// route-server members settled at 33 MiB instead of 77-84, and a 1M-route
// table to one neighbour peaked at 184 MiB instead of 189.
// Linked only where jemalloc is the allocator (not under the sanitizers).
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface.
extern const char* malloc_conf;
const char* malloc_conf = "thp:never,metadata_thp:disabled,background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
