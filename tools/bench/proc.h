// What /proc and getrusage say about the running benchmark, for the lines
// the benchmarks print beside their figures: whether a slow run met 4 KiB
// pages or had to fault its memory in; and what /proc says about another
// process (the daemon under load: its memory and CPU seconds, with its
// children's). Header only; Linux.
#pragma once

#include <dirent.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

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

// Resident memory now (VmRSS), its peak (VmHWM), both KiB, and user plus
// system CPU seconds of a set of processes, added up.
struct ProcSample {
  long rss_kb = 0, peak_kb = 0;
  double cpu_s = 0;
  int processes = 0;  // how many were found
};

// What /proc/PID/stat says after the process's name (which may hold
// spaces and parentheses), empty when the process is gone.
inline std::string stat_fields(const std::string& pid) {
  FILE* f = std::fopen(("/proc/" + pid + "/stat").c_str(), "r");
  if (!f) return {};
  char buf[1024];
  size_t r = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[r] = '\0';
  const char* close = std::strrchr(buf, ')');
  return close ? std::string(close + 1) : std::string();
}

// The processes whose parent is `pid` (from /proc/PID/task/*/children
// would need a kernel option; /proc/*/stat always has the parent).
inline std::vector<int> children_of(int pid) {
  std::vector<int> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  for (int n = 0; n < 1'000'000; ++n) {
    dirent* e = readdir(d);
    if (!e) break;
    char* end = nullptr;
    long child = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    std::string fields = stat_fields(e->d_name);
    int ppid = 0;
    char state = 0;
    if (std::sscanf(fields.c_str(), " %c %d", &state, &ppid) == 2 && ppid == pid)
      out.push_back(static_cast<int>(child));
  }
  closedir(d);
  return out;
}

// One process's figures added to s; false when it is gone.
inline bool add_process(int pid, ProcSample& s) {
  std::string base = "/proc/" + std::to_string(pid);
  FILE* f = std::fopen((base + "/status").c_str(), "r");
  if (!f) return false;
  char line[256];
  long kb = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "VmRSS: %ld", &kb) == 1) s.rss_kb += kb;
    else if (std::sscanf(line, "VmHWM: %ld", &kb) == 1) s.peak_kb += kb;
  }
  std::fclose(f);
  std::string fields = stat_fields(std::to_string(pid));
  if (fields.empty()) return false;
  unsigned long long ut = 0, st = 0;
  // after the name: state ppid pgrp session tty tpgid flags minflt cminflt
  // majflt cmajflt utime stime
  if (std::sscanf(fields.c_str(), " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
    s.cpu_s += static_cast<double>(ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
  ++s.processes;
  return true;
}

// The figures of each pid and all its descendants (a daemon that forks
// workers, as OpenBGPD does), at most 256 processes.
inline ProcSample sample_processes(const std::vector<int>& pids) {
  ProcSample s;
  std::vector<int> queue = pids;  // the processes, then their children (at most 256)
  for (size_t i = 0; i < queue.size() && i < 256; ++i) {
    if (!add_process(queue[i], s)) continue;
    for (int c : children_of(queue[i])) queue.push_back(c);
  }
  return s;
}

}  // namespace petrel::bench
