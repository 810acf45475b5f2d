// What /proc and getrusage say about the running benchmark, for the lines
// the benchmarks print beside their figures: whether a slow run met 4 KiB
// pages or had to fault its memory in. Header only; Linux.
#pragma once

#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>

namespace petrel::bench {

// The process's anonymous memory on transparent huge pages
// (AnonHugePages of /proc/self/smaps_rollup, kB; -1 when unknown).
inline long anon_huge_kb() {
  FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (kb < 0 && std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "AnonHugePages: %ld", &kb) != 1) kb = -1;
  }
  std::fclose(f);
  return kb;
}

// The calling thread's CPU time, seconds.
inline double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Wall time (the steady clock), seconds.
inline double wall_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The calling thread's minor page faults so far: pages the kernel had to
// find (and zero) on first touch.
inline long minor_faults() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

}  // namespace petrel::bench
