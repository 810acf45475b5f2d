// addpath-bench: one prefix, many paths from one peer (an ADD-PATH flood,
// issue 19), through Table::apply as a session applies its UPDATEs.
//
// Cases, for each count N of paths (--paths, default 1000,10000,100000):
//   flood     N path identifiers announced with one attribute set (one
//             neighbouring AS, one MED: every path reaches the MED step
//             beside the best), --batch paths per apply
//   withdraw  the same N withdrawn, in the order they came
//   med-down  N paths, each with its own set and a MED below every earlier
//             one (each new path removes the best at step c, so the table
//             chooses again from all: the case the shortcuts do not cover);
//             only for N <= --med-down-max (default 10000)
// The peer's bound (PeerInfo::max_paths_per_prefix) is lifted for the run.
// A case stops after --max-seconds of wall time (default 60) and says how
// far it got: the old table needed hours for 100,000.
//
// Prints one line per case: N, the case, wall and thread CPU seconds,
// paths per second. The program compiles against tables without the
// bound too (to measure the code before it, same source).
//
// Usage: addpath-bench [--paths N,N,...] [--batch N] [--max-seconds S] [--med-down-max N]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "codec/attribute_set.h"
#include "codec/types.h"
#include "tools/bench/proc.h"
#include "table/table.h"

namespace {

using namespace petrel;

using bench::thread_cpu_s;
using bench::wall_s;

codec::AttributeSet set_with_med(uint32_t med) {
  codec::PathAttributes a;
  a.origin = codec::Origin::kIgp;
  a.as_path = codec::AsPath{{codec::AsSegment{codec::SegmentType::kAsSequence, {65001, 65002, 65003}}}};
  a.next_hop = net::IpAddress::v4(0xC0000201);
  a.med = med;
  return codec::AttributeSet::from(a);
}

template <typename P>
void lift_bound(P& p) {
  if constexpr (requires { p.max_paths_per_prefix; }) p.max_paths_per_prefix = 0;
}

struct Options {
  std::vector<uint32_t> paths{1000, 10000, 100000};
  uint32_t batch = 100;
  double max_seconds = 60;
  uint32_t med_down_max = 10000;
};

enum class Case { kFlood, kMedDown };

void report(uint32_t n, const char* what, uint32_t done, double wall, double cpu) {
  std::printf("%7u  %-9s %s wall %8.3f s  cpu %8.3f s  %10.0f paths/s\n", n, what,
              done == n ? "done            " : "STOPPED", wall, cpu, done / (wall > 0 ? wall : 1e-9));
  if (done != n) std::printf("%7s  %-9s stopped after %u of %u paths\n", "", "", done, n);
  std::fflush(stdout);
}

void run(uint32_t n, Case which, const Options& o) {
  table::TableOptions topt;
  topt.shards = 1;
  table::Table t(topt);
  table::PeerInfo info;
  info.address = net::IpAddress::v4(0x0A000001);
  info.router_id = 1;
  info.asn = 65001;
  lift_bound(info);
  const uint16_t slot = *t.add_peer(info);
  const net::Prefix prefix = *net::Prefix::parse("192.0.2.0/24");
  std::vector<codec::AttributeSet> sets;
  if (which == Case::kFlood) sets.push_back(set_with_med(10));
  else
    for (uint32_t i = 0; i < n; ++i) sets.push_back(set_with_med(n - i));
  std::vector<codec::NlriPrefix> list;
  const double w0 = wall_s(), c0 = thread_cpu_s();
  uint32_t done = 0;
  for (; done < n && wall_s() - w0 < o.max_seconds;) {
    if (which == Case::kFlood) {
      list.clear();
      for (uint32_t i = 0; i < o.batch && done + i < n; ++i) list.push_back({prefix, done + i + 1});
      (void)t.apply(slot, 0, &sets[0], list, {});
      done += static_cast<uint32_t>(list.size());
    } else {  // one path a set: one apply each
      const std::vector<codec::NlriPrefix> one{{prefix, done + 1}};
      (void)t.apply(slot, 0, &sets[done], one, {});
      ++done;
    }
  }
  report(n, which == Case::kFlood ? "flood" : "med-down", done, wall_s() - w0, thread_cpu_s() - c0);
  if (which != Case::kFlood || done != n) return;
  const double w1 = wall_s(), c1 = thread_cpu_s();
  uint32_t gone = 0;
  for (; gone < n && wall_s() - w1 < o.max_seconds;) {
    list.clear();
    for (uint32_t i = 0; i < o.batch && gone + i < n; ++i) list.push_back({prefix, gone + i + 1});
    (void)t.apply(slot, 0, nullptr, {}, list);
    gone += static_cast<uint32_t>(list.size());
  }
  report(n, "withdraw", gone, wall_s() - w1, thread_cpu_s() - c1);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--paths") {
      o.paths.clear();
      for (size_t at = 0; at < v.size();) {
        size_t end = v.find(',', at);
        if (end == std::string::npos) end = v.size();
        o.paths.push_back(static_cast<uint32_t>(std::strtoul(v.substr(at, end - at).c_str(), nullptr, 10)));
        at = end + 1;
      }
    } else if (k == "--batch") {
      o.batch = std::max<uint32_t>(1, static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10)));
    } else if (k == "--max-seconds") {
      o.max_seconds = std::strtod(v.c_str(), nullptr);
    } else if (k == "--med-down-max") {
      o.med_down_max = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
    } else {
      std::fprintf(stderr, "usage: addpath-bench [--paths N,N,...] [--batch N] [--max-seconds S] [--med-down-max N]\n");
      return 2;
    }
  }
  std::printf("  paths  case      result           wall            cpu             rate\n");
  for (uint32_t n : o.paths) {
    run(n, Case::kFlood, o);
    if (n <= o.med_down_max) run(n, Case::kMedDown, o);
  }
  return 0;
}
