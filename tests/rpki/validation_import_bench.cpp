// Benchmark of RPKI validation on import: the thread-CPU ns per route that
// Table::apply spends storing a feed of routes into an empty table with no
// validator, with daemon::RpkiValidator asked route by route (a wrapper
// that only forwards validate(), so the table's default validate_batch
// loops over it), with RpkiValidator itself (one VrpTable::validate_batch
// call per shard and batch), and with a validator that asks no VRP table
// ("no-vrp-table": the table's validation path alone). The VRPs and
// routes are vrp_bench's (tools/bench/synth_vrps.h), each in an UPDATE of
// its own (so with its own origin: an UPDATE carries one AS_PATH), 256
// UPDATEs per Batch as a socket read gathers them. The four run
// alternately, `rounds` times; one JSON line per run, with the counts of
// each validation state (the two RpkiValidator ways' must agree).
// Usage: validation_import_bench [vrps] [routes] [rounds]
#include <time.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "codec/attribute_set.h"
#include "daemon/rpki.h"
#include "tools/bench/synth_vrps.h"
#include "table/table.h"
#include "tests/rpki/table_testing.h"
#include "tests/table/attrs_testing.h"

namespace {

using petrel::daemon::RpkiValidator;
using petrel::daemon::VrpStore;
namespace table = petrel::table;
namespace codec = petrel::codec;
namespace net = petrel::net;

constexpr size_t kPerUpdate = 1;
constexpr size_t kUpdatesPerBatch = 256;
constexpr uint32_t kLocalAs = 65000;

double cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// RpkiValidator seen only through validate(): the table's route-by-route way.
class RouteByRoute : public table::Validator {
 public:
  explicit RouteByRoute(const RpkiValidator& v) : v_(v) {}
  [[nodiscard]] table::Validation validate(const net::Prefix& p, const table::Attrs& a) const override {
    return v_.validate(p, a);
  }

 private:
  const RpkiValidator& v_;
};

// A validator that asks no VRP table: each route's state from its
// origin's low bit. What the table's validation path costs around the
// lookups (the queries, the states stored in the routes), measured
// beside the real one.
class NoTable : public table::Validator {
 public:
  [[nodiscard]] table::Validation validate(const net::Prefix& /*p*/, const table::Attrs& a) const override {
    return (a.origin_as() & 1) != 0 ? table::Validation::kInvalid : table::Validation::kValid;
  }
  void validate_batch(std::span<const Query> routes, std::span<table::Validation> out) const override {
    for (size_t i = 0; i < routes.size(); ++i) out[i] = validate(*routes[i].prefix, *routes[i].attrs);
  }
};

codec::AttributeSet attrs_from(uint32_t origin) {
  return codec::AttributeSet::from(table::testing::attrs_of(table::testing::sequence({64999, origin})));
}

struct Update {
  table::FamilyIndex family;
  codec::AttributeSet attrs;
  std::vector<codec::NlriPrefix> prefixes;
};

// UPDATEs of up to kPerUpdate routes of one family, each with the origin
// of its first route, and no prefix twice.
std::vector<Update> updates_of(const std::vector<petrel::rpki::bench::Route>& routes) {
  std::vector<Update> out;
  std::array<std::vector<codec::NlriPrefix>, 2> open;
  std::array<uint32_t, 2> origin{};
  std::vector<net::Prefix> seen;
  seen.reserve(routes.size());
  for (const auto& r : routes) seen.push_back(r.route);
  std::sort(seen.begin(), seen.end());
  std::vector<bool> taken(seen.size(), false);
  for (const auto& r : routes) {
    const auto at = static_cast<size_t>(std::lower_bound(seen.begin(), seen.end(), r.route) - seen.begin());
    if (taken[at]) continue;
    taken[at] = true;
    const size_t f = r.route.family() == net::IpFamily::V4 ? 0 : 1;
    if (open[f].empty()) origin[f] = r.origin;
    open[f].push_back({r.route, 0});
    if (open[f].size() == kPerUpdate) {
      out.push_back({static_cast<table::FamilyIndex>(f), attrs_from(origin[f]), std::move(open[f])});
      open[f].clear();
    }
  }
  return out;
}

void run(const char* name, const table::Validator* v, const std::vector<Update>& updates, size_t vrps) {
  table::TableOptions o;
  o.validator = v;
  table::Table t(o);
  const uint16_t slot = petrel::rpki::testing::add_peer(t);
  size_t routes = 0;
  const double c0 = cpu_ns();
  for (size_t i = 0; i < updates.size(); i += kUpdatesPerBatch) {
    table::Batch b(t);
    for (size_t k = i; k < std::min(updates.size(), i + kUpdatesPerBatch); ++k) {
      b.add(updates[k].family, &updates[k].attrs, updates[k].prefixes, {});
      routes += updates[k].prefixes.size();
    }
    (void)t.apply(slot, b);
  }
  const double spent = cpu_ns() - c0;
  std::array<size_t, 4> states{};
  for (const Update& u : updates) {
    for (const auto& p : u.prefixes) {
      t.lookup_all(u.family, p.prefix, [&](std::span<const table::RouteView> rs, int) {
        for (const auto& r : rs) ++states[static_cast<size_t>(r.validation)];
      });
    }
  }
  std::printf("{\"bench\":\"validation_import\",\"run\":\"%s\",\"vrps\":%zu,\"routes\":%zu,\"cpu_ns_per_route\":%.1f,"
              "\"unchecked\":%zu,\"not_found\":%zu,\"valid\":%zu,\"invalid\":%zu}\n",
              name, vrps, routes, spent / static_cast<double>(routes), states[0], states[1], states[2], states[3]);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t count = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 600000;
  const size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  std::mt19937_64 rng(42);
  auto vrps = petrel::rpki::bench::synth(count, rng);
  const auto updates = updates_of(petrel::rpki::bench::synth_routes(vrps, n, rng));
  std::sort(vrps.begin(), vrps.end());
  vrps.erase(std::unique(vrps.begin(), vrps.end()), vrps.end());
  VrpStore store;
  (void)store.publish(std::move(vrps), "bench", 1, 0);
  const RpkiValidator batched(store, kLocalAs);
  const RouteByRoute single(batched);
  const NoTable no_table;
  for (int r = 0; r < rounds; ++r) {
    run("no-validator", nullptr, updates, count);
    run("route-by-route", &single, updates, count);
    run("batched", &batched, updates, count);
    run("no-vrp-table", &no_table, updates, count);
  }
  return 0;
}
