// synth-stats: generates a synthetic table (tools/synth) and prints its
// shape, to check it against today's table and to time the generator:
// prefix length histograms, AS path lengths, AS number widths, origins,
// attribute set contents, distinct sets, and how many prefixes each set
// and group carries. docs/synthetic-table.md shows its output.
//
//   synth-stats [--seed N] [--peer N] [--v4 N] [--v6 N] [--sets N] [--max-group N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tools/synth/synth.h"

namespace {

using petrel::synth::Attributes;
using petrel::synth::Group;
using petrel::synth::Table;

int usage() {
  std::fprintf(stderr,
               "usage: synth-stats [--seed N] [--peer N] [--v4 N] [--v6 N] [--sets N] [--max-group N]\n"
               "  generates a synthetic table and prints its distributions and the time taken\n");
  return 2;
}

double pct(size_t part, size_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

void length_histogram(const char* name, const std::vector<Group>& groups) {
  std::map<unsigned, size_t> by_len;
  size_t total = 0;
  for (const Group& g : groups) {
    for (const auto& p : g.prefixes) ++by_len[p.len()];
    total += g.prefixes.size();
  }
  std::printf("%s prefix lengths (%zu prefixes)\n", name, total);
  for (const auto& [len, n] : by_len) std::printf("  /%-3u %9zu  %6.2f %%\n", len, n, pct(n, total));
}

// Buckets 1, 2-3, 4-7, ...: how many sets or groups carry that many prefixes.
void size_histogram(const char* name, const std::vector<size_t>& sizes) {
  std::map<size_t, size_t> buckets;
  size_t biggest = 0;
  for (size_t s : sizes) {
    size_t low = 1;
    while (low * 2 <= s) low *= 2;
    ++buckets[low];
    biggest = std::max(biggest, s);
  }
  std::printf("%s: %zu, most prefixes in one: %zu\n", name, sizes.size(), biggest);
  for (const auto& [low, n] : buckets) {
    std::printf("  %5zu-%-5zu %8zu  %6.2f %%\n", low, low * 2 - 1, n, pct(n, sizes.size()));
  }
}

bool less(const Attributes& a, const Attributes& b) {
  return std::tie(a.origin, a.as_path, a.as_set, a.med, a.communities, a.large_communities) <
         std::tie(b.origin, b.as_path, b.as_set, b.med, b.communities, b.large_communities);
}

size_t distinct_sets(const Table& t) {
  std::vector<const Attributes*> sorted;
  for (const Attributes& a : t.attrs) sorted.push_back(&a);
  std::sort(sorted.begin(), sorted.end(), [](const Attributes* a, const Attributes* b) { return less(*a, *b); });
  const auto same = [](const Attributes* a, const Attributes* b) { return *a == *b; };
  return static_cast<size_t>(std::unique(sorted.begin(), sorted.end(), same) - sorted.begin());
}

void attribute_stats(const Table& t) {
  std::printf("attribute sets: %zu, distinct: %zu\n", t.attrs.size(), distinct_sets(t));
  std::map<size_t, size_t> path_lens;
  size_t hops = 0, prepending = 0, as_sets = 0, meds = 0, with_comms = 0, comms = 0, large = 0;
  std::map<uint8_t, size_t> origins;
  std::unordered_map<uint32_t, bool> ases;  // AS -> is an origin
  for (const Attributes& a : t.attrs) {
    ++path_lens[a.as_path.size()];
    hops += a.as_path.size();
    if (std::adjacent_find(a.as_path.begin(), a.as_path.end()) != a.as_path.end()) ++prepending;
    as_sets += !a.as_set.empty();
    meds += a.med.has_value();
    with_comms += !a.communities.empty();
    comms += a.communities.size();
    large += !a.large_communities.empty();
    ++origins[a.origin];
    for (uint32_t asn : a.as_path) ases.try_emplace(asn, false);
    ases[a.as_path.back()] = true;
  }
  const size_t n = t.attrs.size();
  std::printf("  AS path length (AS_SEQUENCE entries, prepends counted): mean %.2f\n",
              n == 0 ? 0.0 : static_cast<double>(hops) / static_cast<double>(n));
  for (const auto& [len, count] : path_lens) std::printf("    %2zu %9zu  %6.2f %%\n", len, count, pct(count, n));
  std::printf("  prepending %.1f %%, AS_SET %zu sets, MED %.1f %%\n", pct(prepending, n), as_sets, pct(meds, n));
  std::printf("  communities on %.1f %% (%.2f each on those), large communities on %.1f %%\n",
              pct(with_comms, n), with_comms == 0 ? 0.0 : static_cast<double>(comms) / static_cast<double>(with_comms),
              pct(large, n));
  std::printf("  ORIGIN IGP %.1f %%, EGP %.2f %%, INCOMPLETE %.1f %%\n", pct(origins[0], n), pct(origins[1], n),
              pct(origins[2], n));
  size_t origin_ases = 0, origin_wide = 0, wide = 0;
  for (const auto& [asn, is_origin] : ases) {
    wide += asn > 0xffff;
    origin_ases += is_origin;
    origin_wide += is_origin && asn > 0xffff;
  }
  std::printf("  ASes: %zu, 4-octet %.1f %%; origin ASes: %zu, 4-octet %.1f %%\n", ases.size(),
              pct(wide, ases.size()), origin_ases, pct(origin_wide, origin_ases));
}

void origin_stats(const Table& t) {
  std::unordered_map<uint32_t, size_t> per_origin;
  for (const auto* groups : {&t.v4, &t.v6}) {
    for (const Group& g : *groups) per_origin[t.attrs[g.attrs].as_path.back()] += g.prefixes.size();
  }
  std::vector<size_t> counts;
  for (const auto& [asn, n] : per_origin) counts.push_back(n);
  std::sort(counts.begin(), counts.end(), std::greater<>());
  std::printf("prefixes per origin AS (both families): %zu origins, median %zu, top:", counts.size(),
              counts.empty() ? 0 : counts[counts.size() / 2]);
  for (size_t i = 0; i < std::min<size_t>(8, counts.size()); ++i) std::printf(" %zu", counts[i]);
  std::printf("\n");
}

void group_stats(const Table& t) {
  std::vector<size_t> per_set(t.attrs.size());
  std::vector<size_t> per_group;
  for (const auto* groups : {&t.v4, &t.v6}) {
    for (const Group& g : *groups) {
      per_set[g.attrs] += g.prefixes.size();
      per_group.push_back(g.prefixes.size());
    }
  }
  size_histogram("prefixes per attribute set; sets", per_set);
  std::printf("groups: IPv4 %zu, IPv6 %zu\n", t.v4.size(), t.v6.size());
  size_histogram("prefixes per group; groups", per_group);
}

}  // namespace

int main(int argc, char** argv) {
  petrel::synth::Params p;
  uint32_t peer = 0;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 >= argc) return usage();
    char* end = nullptr;
    const unsigned long long v = std::strtoull(argv[i + 1], &end, 10);
    if (*end != '\0' || end == argv[i + 1]) return usage();
    const auto u32 = static_cast<uint32_t>(std::min<unsigned long long>(v, UINT32_MAX));
    const char* opt = argv[i++];
    if (std::strcmp(opt, "--seed") == 0) p.seed = v;
    else if (std::strcmp(opt, "--peer") == 0) peer = u32;
    else if (std::strcmp(opt, "--v4") == 0) p.v4_prefixes = u32;
    else if (std::strcmp(opt, "--v6") == 0) p.v6_prefixes = u32;
    else if (std::strcmp(opt, "--sets") == 0) p.attr_sets = u32;
    else if (std::strcmp(opt, "--max-group") == 0) p.max_group = u32;
    else return usage();
  }

  const auto start = std::chrono::steady_clock::now();
  const Table t = petrel::synth::generate(p, peer);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;

  std::printf("seed %llu, peer %u: %zu IPv4 + %zu IPv6 prefixes, %zu attribute sets (target %u), max group %u\n",
              static_cast<unsigned long long>(p.seed), peer, t.v4_count(), t.v6_count(), t.attrs.size(),
              p.attr_sets, p.max_group);
  std::printf("generated in %.3f s\n\n", took.count());
  length_histogram("IPv4", t.v4);
  length_histogram("IPv6", t.v6);
  std::printf("\n");
  attribute_stats(t);
  origin_stats(t);
  std::printf("\n");
  group_stats(t);
  return 0;
}
