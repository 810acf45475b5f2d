// Benchmark of rpki/vrp_table.h: build time and ns per lookup for a
// synthetic table shaped like today's RPKI (default 600,000 VRPs, four in
// five IPv4, mostly /24 and /48 with some nesting and max length > length),
// looked up with random routes: half drawn from the VRPs (valid, or invalid
// by origin or length), half random addresses. Prints one JSON line per
// measurement, among them the machine's cost of a dependent and of an
// independent random read over as much memory as the table holds (the
// floor under a lookup, measured in the same run), and how much of the
// process is on transparent huge pages; then the same lookups against a
// table of 2,000 such VRPs that stays in cache ("in-cache-" runs): the
// cost of the code without memory misses. "vrp_table_batch" lines give
// validate_batch's ns per route, sort included, for batches of the sizes
// the daemon asks for and of round sizes (256 to 2^20), looked up as
// given and sorted (BatchOrder), alternated; the last of them in cache.
// Usage: vrp_bench [vrp count] [lookups]

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "tools/bench/proc.h"
#include "tools/bench/cpu_time.h"
#include "tools/bench/synth_vrps.h"
#include "rpki/vrp_table.h"

namespace {

double cpu_ns() { return petrel::rpki::bench::thread_cpu_ns(); }

using petrel::net::IpFamily;
using petrel::net::Prefix;
using petrel::rpki::Vrp;
using petrel::rpki::bench::random_prefix;
using petrel::rpki::bench::synth;

using Query = petrel::rpki::bench::Route;

// The count of each state among the answers of a run, kept as two sums
// (the states are 0, 1 and 2) so that tallying adds no chain of
// dependent stores to the timed loop: counts[v]++ over every answer cost
// about 1.3 ns a route of the lookups' time (eighth round, a test
// program of 256-route batches, three runs each way).
struct Tally {
  size_t n = 0;
  size_t sum = 0;      // n1 + 2 n2
  size_t squares = 0;  // n1 + 4 n2
  void add(petrel::rpki::Validity v) {
    const auto x = static_cast<size_t>(v);
    ++n, sum += x, squares += x * x;
  }
  void add(std::span<const petrel::rpki::Validity> vs) {
    for (auto v : vs) add(v);
  }
  void into(size_t counts[3]) const {
    counts[2] = (squares - sum) / 2;
    counts[1] = sum - 2 * counts[2];
    counts[0] = n - counts[1] - counts[2];
  }
};

// One JSON line for a lookup run: wall and thread-CPU ns per lookup.
void report(const char* run, size_t vrps, size_t lookups, double cpu_ns_spent,
            std::chrono::steady_clock::duration wall, const size_t counts[3]) {
  double cpu = cpu_ns_spent / static_cast<double>(lookups);
  double ns = std::chrono::duration<double, std::nano>(wall).count() / static_cast<double>(lookups);
  std::printf("{\"bench\":\"vrp_table_lookup\",\"run\":\"%s\",\"vrps\":%zu,\"lookups\":%zu,\"ns_per_lookup\":%.2f,\"cpu_ns_per_lookup\":%.2f,"
              "\"not_found\":%zu,\"valid\":%zu,\"invalid\":%zu}\n",
              run, vrps, lookups, ns, cpu, counts[0], counts[1], counts[2]);
}

// The floor under a lookup on this machine, in the same run: thread-CPU
// ns per dependent read (a chase through the 64-byte lines of a buffer
// the table's size, in random order) and per independent random read of
// the same buffer.
void memory_floor(size_t bytes, std::mt19937_64& rng) {
  const size_t lines = std::max<size_t>(bytes / 64, 2);
  std::vector<uint64_t> order(lines);
  for (size_t i = 0; i < lines; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<uint64_t> next(lines * 8);
  for (size_t i = 0; i < lines; ++i) next[order[i] * 8] = order[(i + 1) % lines] * 8;
  constexpr size_t kSteps = 2000000;
  uint64_t at = 0;
  double c0 = cpu_ns();
  for (size_t i = 0; i < kSteps; ++i) at = next[at];
  const double chase = (cpu_ns() - c0) / kSteps;
  uint64_t sum = 0;
  c0 = cpu_ns();
  // The order wraps without a division (i % lines cost a 64-bit division
  // a read, measured in the floor up to the eighth round).
  for (size_t i = 0, j = 0; i < kSteps; ++i, j = j + 1 == lines ? 0 : j + 1) sum += next[order[j] * 8];
  const double independent = (cpu_ns() - c0) / kSteps;
  std::printf("{\"bench\":\"memory_floor\",\"bytes\":%zu,\"cpu_ns_dependent_read\":%.2f,"
              "\"cpu_ns_independent_read\":%.2f,\"check\":%llu}\n",
              lines * 64, chase, independent, static_cast<unsigned long long>((at + sum) & 1));
}

// validate() in a loop over `queries`, then validate_batch() 256 at a
// time (an UPDATE's worth of prefixes) over the same routes (`batch`),
// two runs each, in the same process.
void lookup_runs(const petrel::rpki::VrpTable& table, size_t vrps, const std::vector<Query>& queries,
                 const std::vector<petrel::rpki::RouteOrigin>& batch, size_t lookups, const std::string& prefix) {
  using Clock = std::chrono::steady_clock;
  for (const char* mix : {"mixed", "mixed-again"}) {
    Tally tally;
    double c0 = cpu_ns();
    auto t0 = Clock::now();
    for (size_t i = 0; i < lookups; ++i) {
      const Query& q = queries[i & ((1u << 20) - 1)];
      tally.add(table.validate(q.route, q.origin));
    }
    size_t counts[3];
    tally.into(counts);
    report((prefix + mix).c_str(), vrps, lookups, cpu_ns() - c0, Clock::now() - t0, counts);
  }
  std::vector<petrel::rpki::Validity> answers(256);
  constexpr size_t kChunk = 256;
  const size_t total = (lookups + kChunk - 1) / kChunk * kChunk;
  for (const char* mix : {"batched", "batched-again"}) {
    Tally tally;
    double c0 = cpu_ns();
    auto t0 = Clock::now();
    for (size_t done = 0; done < total; done += kChunk) {
      size_t from = done & ((1u << 20) - 1);
      std::span<const petrel::rpki::RouteOrigin> in(batch.data() + from, kChunk);
      table.validate_batch(in, answers);
      tally.add(answers);
    }
    size_t counts[3];
    tally.into(counts);
    report((prefix + mix).c_str(), vrps, total, cpu_ns() - c0, Clock::now() - t0, counts);
  }
}

// One way of looking up batches of `size` routes taken in turn from
// `pool`, about `lookups` routes in all (at least two batches): thread-CPU
// and wall ns per route, everything validate_batch does included (for
// the sorted way, the sort). `label` says where the daemon uses the size.
void batch_run(const petrel::rpki::VrpTable& table, const std::vector<petrel::rpki::RouteOrigin>& pool,
               size_t size, size_t lookups, petrel::rpki::BatchOrder order, const char* label, const char* family) {
  size = std::min(size, pool.size());
  std::vector<petrel::rpki::Validity> answers(size);
  const size_t batches = std::max<size_t>(2, lookups / size);
  Tally tally;
  const double c0 = cpu_ns();
  const auto t0 = std::chrono::steady_clock::now();
  size_t from = 0;
  for (size_t b = 0; b < batches; ++b) {
    if (from + size > pool.size()) from = 0;
    table.validate_batch(std::span(pool.data() + from, size), answers, order);
    tally.add(answers);
    from += size;
  }
  const double cpu = (cpu_ns() - c0) / static_cast<double>(batches * size);
  size_t counts[3];
  tally.into(counts);
  const double wall = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
                      static_cast<double>(batches * size);
  std::printf("{\"bench\":\"vrp_table_batch\",\"order\":\"%s\",\"batch\":%zu,\"family\":\"%s\",\"use\":\"%s\","
              "\"routes\":%zu,\"ns_per_route\":%.2f,\"cpu_ns_per_route\":%.2f,\"not_found\":%zu,\"valid\":%zu,\"invalid\":%zu}\n",
              order == petrel::rpki::BatchOrder::kSorted ? "sorted" : "as-given", size, family, label, batches * size, wall,
              cpu, counts[0], counts[1], counts[2]);
  std::fflush(stdout);
}

// The batch sizes the daemon asks for, and round sizes, each looked up
// as given (the chunked pipeline) and sorted, alternated.
// - Table::revalidate asks once per shard and family for the covered
//   routes: on a change covering all of a full table (1M routes; 8
//   shards, table::TableOptions' default), a shard's IPv4 or IPv6 routes
//   (4:1 here as in the benchmark's routes).
// - Table::apply asks once per shard for a Batch's routes, a Batch being
//   what one 64 KiB socket read holds (daemon/peer.cpp kReadChunk): about
//   16,000 packed IPv4 /24s (4 octets each) or 1,100 UPDATEs of one
//   prefix each, over 8 shards.
void batch_sizes(const petrel::rpki::VrpTable& table, const std::vector<petrel::rpki::RouteOrigin>& pool,
                 size_t lookups) {
  constexpr size_t kShards = 8;
  constexpr size_t kFullTable = 1000000;
  std::vector<petrel::rpki::RouteOrigin> v4;
  std::vector<petrel::rpki::RouteOrigin> v6;
  for (const auto& r : pool) (r.route.family() == IpFamily::V4 ? v4 : v6).push_back(r);
  struct Size {
    size_t n;
    const char* label;
    const std::vector<petrel::rpki::RouteOrigin>* from;
    const char* family;
  };
  const Size sizes[] = {
      {256, "round", &pool, "mixed"},
      {1100 / kShards, "apply-shard, one prefix an UPDATE", &pool, "mixed"},
      {16000 / kShards, "apply-shard, packed /24s", &pool, "mixed"},
      {4096, "round", &pool, "mixed"},
      {16384, "round", &pool, "mixed"},
      {kFullTable * 4 / 5 / kShards, "revalidate-shard, full table", &v4, "v4"},
      {kFullTable / 5 / kShards, "revalidate-shard, full table", &v6, "v6"},
      {65536, "round", &pool, "mixed"},
      {size_t{1} << 20, "round", &pool, "mixed"},
  };
  for (const Size& z : sizes) {
    for (int round = 0; round < 2; ++round) {
      batch_run(table, *z.from, z.n, lookups, petrel::rpki::BatchOrder::kAsGiven, z.label, z.family);
      batch_run(table, *z.from, z.n, lookups, petrel::rpki::BatchOrder::kSorted, z.label, z.family);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t count = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 600000;
  size_t lookups = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20000000;
  std::mt19937_64 rng(42);
  std::vector<Vrp> vrps = synth(count, rng);

  using Clock = std::chrono::steady_clock;
  double best_build_ms = 1e9;
  double best_build_cpu_ms = 1e9;
  petrel::rpki::VrpTable table;
  for (int round = 0; round < 3; ++round) {
    double c0 = cpu_ns();
    auto t0 = Clock::now();
    table = petrel::rpki::VrpTable::build(vrps);
    auto t1 = Clock::now();
    best_build_cpu_ms = std::min(best_build_cpu_ms, (cpu_ns() - c0) / 1e6);
    best_build_ms = std::min(best_build_ms, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::printf("{\"bench\":\"vrp_table_build\",\"vrps\":%zu,\"distinct\":%zu,\"build_ms\":%.1f,\"build_cpu_ms\":%.1f,\"memory_bytes\":%zu,"
              "\"anon_huge_kb\":%ld}\n",
              vrps.size(), table.size(), best_build_ms, best_build_cpu_ms, table.memory_bytes(), petrel::bench::anon_huge_kb());

  std::mt19937_64 floor_rng(7);  // not rng: the routes stay those of earlier versions
  memory_floor(table.memory_bytes(), floor_rng);

  std::vector<Query> queries = petrel::rpki::bench::synth_routes(vrps, size_t{1} << 20, rng);
  // Shuffle so consecutive lookups touch unrelated parts of the table.
  std::shuffle(queries.begin(), queries.end(), rng);

  std::vector<petrel::rpki::RouteOrigin> batch(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) batch[i] = {queries[i].route, queries[i].origin};
  lookup_runs(table, vrps.size(), queries, batch, lookups, "");
  batch_sizes(table, batch, lookups);

  // The cost of the code alone: a table of kInCache of the same kind of
  // VRPs (tens of KB, every read a cache hit) and routes drawn as above.
  constexpr size_t kInCache = 2000;
  std::mt19937_64 small_rng(11);
  std::vector<Vrp> small = synth(kInCache, small_rng);
  const petrel::rpki::VrpTable small_table = petrel::rpki::VrpTable::build(small);
  std::vector<Query> small_queries = petrel::rpki::bench::synth_routes(small, size_t{1} << 20, small_rng);
  std::shuffle(small_queries.begin(), small_queries.end(), small_rng);
  for (size_t i = 0; i < small_queries.size(); ++i) batch[i] = {small_queries[i].route, small_queries[i].origin};
  std::printf("{\"bench\":\"vrp_table_in_cache\",\"vrps\":%zu,\"memory_bytes\":%zu}\n", kInCache,
              small_table.memory_bytes());
  lookup_runs(small_table, kInCache, small_queries, batch, lookups, "in-cache-");
  // The code alone for a large batch: sorted against as given, in cache.
  for (const size_t size : {size_t{256}, size_t{65536}, size_t{1} << 20}) {
    for (int round = 0; round < 2; ++round) {
      batch_run(small_table, batch, size, lookups, petrel::rpki::BatchOrder::kAsGiven, "in-cache", "mixed");
      batch_run(small_table, batch, size, lookups, petrel::rpki::BatchOrder::kSorted, "in-cache", "mixed");
    }
  }
  return 0;
}
