// Benchmark of rpki/aspa_table.h against origin validation of the same
// routes (rpki/vrp_table.h): 1,000,000 synthetic routes, each with an
// AS_PATH, verified by the upstream and by the downstream procedure
// against a synthetic ASPA set, and their origins validated against a
// synthetic VRP table (800,000 VRPs, the size of today's RPKI). The ASPA
// set is given on the command line (default 1,500 customers, then ten
// times that); see docs/performance.md for the sizes and why.
//
// Paths: 2 to 7 distinct ASes (mean about 4.4, the DFZ's today), one in
// five with a prepended AS, drawn from 80,000 ASes (the DFZ's count);
// "attested" runs draw every AS from the ASPA customers instead, so every
// hop looks up a provider set (most such random paths are Invalid, found
// at the first bad hop); "climb" runs follow providers up from an
// attested origin, so every hop is Provider+ and the whole path is read
// (the worst case: a future where everyone publishes and paths are
// valid). Providers per ASPA: 1 to 4 mostly, one in twenty
// up to 24, one in fifty AS 0. Prints one JSON line per run: thread-CPU
// and wall ns per route, best of three passes over the routes, and the
// count of each outcome.
// Usage: aspa_bench [routes] [aspa customers...]

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tools/bench/cpu_time.h"
#include "tools/bench/synth_vrps.h"
#include "rpki/aspa_table.h"
#include "rpki/vrp_table.h"

namespace {

using petrel::rpki::Aspa;
using petrel::rpki::AspaDirection;
using petrel::rpki::AspaState;
using petrel::rpki::AspaTable;
using petrel::rpki::bench::thread_cpu_ns;

constexpr uint32_t kAses = 80000;

struct Path {
  uint32_t offset;  // into the flat array of ASes
  uint32_t len;
};

std::vector<Aspa> synth_aspas(size_t count, std::mt19937_64& rng) {
  std::vector<uint32_t> customers;
  while (customers.size() < count) customers.push_back(1 + static_cast<uint32_t>(rng() % kAses));
  std::sort(customers.begin(), customers.end());
  customers.erase(std::unique(customers.begin(), customers.end()), customers.end());
  std::vector<Aspa> out;
  for (uint32_t c : customers) {
    Aspa a{c, {}};
    const int r = static_cast<int>(rng() % 100);
    const size_t n = r < 2 ? 0 : r < 7 ? 5 + rng() % 20 : 1 + rng() % 4;
    if (n == 0) a.providers.push_back(0);
    while (a.providers.size() < n) a.providers.push_back(1 + static_cast<uint32_t>(rng() % kAses));
    std::sort(a.providers.begin(), a.providers.end());
    a.providers.erase(std::unique(a.providers.begin(), a.providers.end()), a.providers.end());
    out.push_back(std::move(a));
  }
  return out;
}

// Paths that climb from a customer through its providers (each AS's
// ASPA names the next), wire order, 2 to 7 distinct ASes where the
// providers go on that long.
void climb_paths(const std::vector<Aspa>& aspas, size_t n, std::mt19937_64& rng, std::vector<uint32_t>& ases,
                 std::vector<Path>& paths) {
  auto find = [&](uint32_t c) -> const Aspa* {
    auto it = std::lower_bound(aspas.begin(), aspas.end(), c, [](const Aspa& a, uint32_t x) { return a.customer < x; });
    return it != aspas.end() && it->customer == c ? &*it : nullptr;
  };
  std::vector<uint32_t> up;
  while (paths.size() < n) {
    up.assign(1, aspas[rng() % aspas.size()].customer);
    const size_t want = 2 + rng() % 6;
    while (up.size() < want) {
      const Aspa* a = find(up.back());
      if (a == nullptr || a->providers.empty() || a->providers[0] == 0) break;
      const uint32_t next = a->providers[rng() % a->providers.size()];
      if (std::find(up.begin(), up.end(), next) != up.end()) break;
      up.push_back(next);
    }
    Path p{static_cast<uint32_t>(ases.size()), static_cast<uint32_t>(up.size())};
    ases.insert(ases.end(), up.rbegin(), up.rend());
    paths.push_back(p);
  }
}

// Paths in wire order (neighbour first, origin last), the origin given.
void synth_paths(const std::vector<uint32_t>& origins, const std::vector<uint32_t>& pool, std::mt19937_64& rng,
                 std::vector<uint32_t>& ases, std::vector<Path>& paths) {
  for (uint32_t origin : origins) {
    const int r = static_cast<int>(rng() % 100);
    const uint32_t distinct = r < 10 ? 2 : r < 45 ? 3 : r < 75 ? 4 : r < 90 ? 5 : r < 97 ? 6 : 7;
    Path p{static_cast<uint32_t>(ases.size()), 0};
    for (uint32_t i = 0; i + 1 < distinct; ++i) ases.push_back(pool[rng() % pool.size()]);
    ases.push_back(origin);
    if (rng() % 5 == 0) ases.push_back(origin);  // the origin prepends
    p.len = static_cast<uint32_t>(ases.size()) - p.offset;
    paths.push_back(p);
  }
}

void report(const char* what, const char* run, size_t aspas, size_t routes, double cpu, double wall,
            const size_t counts[3]) {
  std::printf("{\"bench\":\"aspa\",\"what\":\"%s\",\"run\":\"%s\",\"aspas\":%zu,\"routes\":%zu,"
              "\"cpu_ns_per_route\":%.2f,\"ns_per_route\":%.2f,\"s0\":%zu,\"s1\":%zu,\"s2\":%zu}\n",
              what, run, aspas, routes, cpu, wall, counts[0], counts[1], counts[2]);
  std::fflush(stdout);
}

// Best of three passes of `one(i)` over n routes: thread-CPU and wall ns.
template <typename F>
void timed(const char* what, const char* run, size_t aspas, size_t n, F one) {
  double best_cpu = 1e30, best_wall = 1e30;
  size_t counts[3] = {};
  for (int pass = 0; pass < 3; ++pass) {
    size_t c[3] = {};
    const double c0 = thread_cpu_ns();
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) ++c[one(i)];
    const double cpu = (thread_cpu_ns() - c0) / static_cast<double>(n);
    const double wall =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / static_cast<double>(n);
    best_cpu = std::min(best_cpu, cpu);
    best_wall = std::min(best_wall, wall);
    std::copy(c, c + 3, counts);
  }
  report(what, run, aspas, n, best_cpu, best_wall, counts);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  std::vector<size_t> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {1500, 15000};

  std::mt19937_64 rng(26);
  const auto vrps = petrel::rpki::bench::synth(800000, rng);
  auto sorted = vrps;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  const auto vrp_table = petrel::rpki::VrpTable::build(sorted);
  const auto routes = petrel::rpki::bench::synth_routes(vrps, n, rng);

  // Origin validation of the same routes: the figure ASPA is held to.
  timed("origin-validation", "vrps-800000", 0, n, [&](size_t i) {
    return static_cast<size_t>(vrp_table.validate(routes[i].route, routes[i].origin));
  });

  for (size_t size : sizes) {
    const auto aspas = synth_aspas(size, rng);
    const auto table = AspaTable::build(aspas);
    std::vector<uint32_t> customers;
    for (const Aspa& a : aspas) customers.push_back(a.customer);
    std::vector<uint32_t> universe(kAses);
    for (uint32_t i = 0; i < kAses; ++i) universe[i] = i + 1;

    // Climbing paths need providers that publish too: in this set, ASPA
    // customers name other customers one time in two.
    auto climbing = aspas;
    for (Aspa& a : climbing) {
      for (uint32_t& p : a.providers) {
        if (p != 0 && rng() % 2 == 0) p = customers[rng() % customers.size()];
      }
      std::sort(a.providers.begin(), a.providers.end());
      a.providers.erase(std::unique(a.providers.begin(), a.providers.end()), a.providers.end());
    }
    const auto climbing_table = AspaTable::build(climbing);

    for (const char* run : {"dfz", "attested", "climb"}) {
      const bool attested = std::string(run) == "attested";
      const bool climb = std::string(run) == "climb";
      const auto& pool = attested ? customers : universe;
      std::vector<uint32_t> ases;
      std::vector<Path> paths;
      ases.reserve(n * 5);
      paths.reserve(n);
      if (climb) {
        climb_paths(climbing, n, rng, ases, paths);
      } else {
        std::vector<uint32_t> origins;
        origins.reserve(n);
        for (size_t i = 0; i < n; ++i) origins.push_back(pool[rng() % pool.size()]);
        synth_paths(origins, pool, rng, ases, paths);
      }
      const AspaTable& t = climb ? climbing_table : table;
      auto verify = [&](AspaDirection dir) {
        return [&, dir](size_t i) {
          const Path& p = paths[i];
          return static_cast<size_t>(t.verify(std::span(ases).subspan(p.offset, p.len), false, dir));
        };
      };
      timed("aspa-upstream", run, table.size(), n, verify(AspaDirection::kUpstream));
      timed("aspa-downstream", run, table.size(), n, verify(AspaDirection::kDownstream));
    }
    std::printf("{\"bench\":\"aspa_table\",\"aspas\":%zu,\"bytes\":%zu}\n", table.size(), table.memory_bytes());
  }
  return 0;
}
