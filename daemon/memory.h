// The allocator's own view of the daemon's memory: jemalloc's statistics
// (stats.allocated, active, metadata, resident, mapped, retained), read
// through mallctl after an "epoch" refresh, for the status page, the JSON
// API and petrel_memory_bytes (docs/metrics.md).
//
// jemalloc is the allocator only in builds without the sanitizers (they
// bring their own): there read_memory() says "not available" and every
// figure is zero.
#pragma once

#include <cstdint>

namespace petrel::daemon {

struct MemoryStats {
  bool available = false;          // false: not built with jemalloc
  bool background_thread = false;  // jemalloc's purging thread is running
  uint64_t allocated = 0;          // bytes the program asked for and holds
  uint64_t active = 0;             // bytes in active pages (allocated + fragmentation)
  uint64_t metadata = 0;           // jemalloc's own bookkeeping
  uint64_t resident = 0;           // bytes in physically resident pages jemalloc maps
  uint64_t mapped = 0;             // bytes in active extents mapped by jemalloc
  uint64_t retained = 0;           // virtual memory kept for reuse, not returned
};

// One consistent set of figures (refreshes jemalloc's statistics epoch
// first). Thread-safe; costs a few microseconds.
MemoryStats read_memory();

// Returns the allocator's unused dirty pages to the kernel now (jemalloc's
// background thread would after dirty_decay_ms): after a large structure
// went, such as the buffers of an RTR cache's abandoned answer, so that the
// resident size falls at once. Costs milliseconds; call it rarely. No-op
// without jemalloc.
void release_free_memory();

}  // namespace petrel::daemon
