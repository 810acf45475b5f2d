// Benchmark of the daemon's revalidation after a VRP change: the thread
// CPU of Table::revalidate over a full table with daemon::RpkiValidator
// (one VrpTable::validate_batch call per shard and family map, the
// covered routes of the map). The VRPs and routes are vrp_bench's
// (tools/bench/synth_vrps.h; distinct prefixes of `routes` drawn, each in
// an UPDATE of its own with its own origin), stored in a table of the
// default shard count. Each round publishes the VRPs less one in ten,
// revalidates every route, publishes them all again and revalidates
// again; one JSON line per revalidation, with the routes whose state
// changed (the same in every round, and for any correct validator).
// Usage: revalidate_bench [vrps] [routes] [rounds]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <unordered_map>
#include <vector>

#include "codec/attribute_set.h"
#include "daemon/rpki.h"
#include "tools/bench/cpu_time.h"
#include "tools/bench/synth_vrps.h"
#include "table/table.h"
#include "tests/rpki/table_testing.h"
#include "tests/table/attrs_testing.h"

namespace {

namespace table = petrel::table;
namespace codec = petrel::codec;
namespace net = petrel::net;
using petrel::rpki::Vrp;

constexpr uint32_t kLocalAs = 65000;
constexpr size_t kUpdatesPerBatch = 256;

std::vector<Vrp> sorted_distinct(std::vector<Vrp> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t count = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 600000;
  const size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1048576;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  std::mt19937_64 rng(42);
  const auto vrps = petrel::rpki::bench::synth(count, rng);
  auto drawn = petrel::rpki::bench::synth_routes(vrps, n, rng);
  std::sort(drawn.begin(), drawn.end(), [](const auto& a, const auto& b) { return a.route < b.route; });
  drawn.erase(std::unique(drawn.begin(), drawn.end(), [](const auto& a, const auto& b) { return a.route == b.route; }),
              drawn.end());
  std::shuffle(drawn.begin(), drawn.end(), rng);

  const std::vector<Vrp> all = sorted_distinct(vrps);
  std::vector<Vrp> fewer;
  for (size_t i = 0; i < all.size(); ++i)
    if (i % 10 != 0) fewer.push_back(all[i]);

  petrel::daemon::VrpStore store;
  (void)store.publish(all, "bench", 1, 0);
  const petrel::daemon::RpkiValidator validator(store, kLocalAs);
  table::TableOptions o;
  o.validator = &validator;
  table::Table t(o);
  const uint16_t slot = petrel::rpki::testing::add_peer(t);

  // One attribute set per origin, kept for the table's life.
  std::unordered_map<uint32_t, codec::AttributeSet> sets;
  for (const auto& r : drawn) {
    if (!sets.count(r.origin))
      sets.emplace(r.origin, codec::AttributeSet::from(
                                 table::testing::attrs_of(table::testing::sequence({64999, r.origin}))));
  }
  std::vector<codec::NlriPrefix> one(1);
  for (size_t i = 0; i < drawn.size(); i += kUpdatesPerBatch) {
    table::Batch b(t);
    for (size_t k = i; k < std::min(drawn.size(), i + kUpdatesPerBatch); ++k) {
      const auto f = drawn[k].route.family() == net::IpFamily::V4 ? table::FamilyIndex{0} : table::FamilyIndex{1};
      one[0] = {drawn[k].route, 0};
      b.add(f, &sets.at(drawn[k].origin), one, {});
    }
    (void)t.apply(slot, b);
  }

  uint32_t serial = 2;
  for (int r = 0; r < rounds; ++r) {
    for (const std::vector<Vrp>* v : {static_cast<const std::vector<Vrp>*>(&fewer), &all}) {
      (void)store.publish(*v, "bench", serial++, 0);
      const double c0 = petrel::rpki::bench::thread_cpu_ns();
      const uint64_t changed = t.revalidate([](const net::Prefix&) { return true; });
      const double ms = (petrel::rpki::bench::thread_cpu_ns() - c0) / 1e6;
      std::printf("{\"bench\":\"revalidate\",\"vrps\":%zu,\"routes\":%zu,\"shards\":%zu,\"changed\":%llu,\"cpu_ms\":%.1f}\n",
                  v->size(), drawn.size(), t.shard_count(), static_cast<unsigned long long>(changed), ms);
      std::fflush(stdout);
    }
  }
  return 0;
}
