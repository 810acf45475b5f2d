// Thread CPU time for the VRP table's benchmarks (vrp_bench,
// tests/rpki/revalidate_bench): the machine is shared, so wall time
// alone overstates what a run cost.
#pragma once

#include <time.h>

namespace petrel::rpki::bench {

inline double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

}  // namespace petrel::rpki::bench
