// Asking the CPU for a cache line ahead of its use: the one prefetch helper
// of the hash maps and tables that read memory at random (table/, rpki/).
// A hint: p need not be valid, and nothing is read or faulted in. Pure: no
// I/O.
#pragma once

namespace petrel::cpu {

// Prefetches the cache line at p into every level (prefetcht0 / pldl1keep).
// gcc 12 drops a __builtin_prefetch whose address it loaded from memory
// inside an inlined callback (the table's PrefixMap::sweep look-ahead lost
// both of its prefetches), so x86-64 and AArch64 get the instruction
// itself.
inline void prefetch_line(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 (%0)" : : "r"(p));
#elif defined(__aarch64__)
  asm volatile("prfm pldl1keep, [%0]" : : "r"(p));
#else
  __builtin_prefetch(p);
#endif
}

// rpki/vrp_table.cpp's batch lookups keep __builtin_prefetch written out
// in the loop (not a helper function: gcc 12 deleted a lambda that only
// prefetched, with its prefetch, before inlining it): prefetch_line there
// measured 1.6% slower over vrp_bench's cases and up to 7% on its in-cache
// lookups (2026-12-06, two alternated runs each, taskset -c 1 vrp_bench
// 600000 2000000), where the asm statement's ordering costs more than it
// saves.

}  // namespace petrel::cpu
