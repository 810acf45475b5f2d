// A plain model of best-path selection (table/best_path.h) for the
// property tests: each step of RFC 4271 9.1.2.2 as written, read from the
// decoded attribute sets, MED as every candidate compared with every other
// (quadratic). best_path_test checks select_best against it; table and
// next-hop tests check the table's incremental choice against it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "codec/communities.h"
#include "table/best_path.h"

namespace petrel::table::testing {

// select_best as it was before the MED step grouped by neighbouring AS:
// every candidate compared with every other at step c. The model for
// small inputs.
inline int naive_select_best(std::span<const Candidate> c, const BestPathOptions& o) {
  std::vector<bool> alive(c.size());
  for (size_t i = 0; i < c.size(); ++i) alive[i] = c[i].eligible;
  const auto count = [&] { return std::count(alive.begin(), alive.end(), true); };
  const auto first = [&] {
    for (size_t i = 0; i < c.size(); ++i)
      if (alive[i]) return static_cast<int>(i);
    return -1;
  };
  const auto keep_lowest = [&](auto measure) {
    bool any = false;
    decltype(measure(c[0])) best{};
    for (size_t i = 0; i < c.size(); ++i)
      if (alive[i] && (!any || measure(c[i]) < best)) {
        best = measure(c[i]);
        any = true;
      }
    for (size_t i = 0; i < c.size(); ++i)
      if (alive[i] && measure(c[i]) != best) alive[i] = false;
    return count() == 1;
  };
  if (count() <= 1) return first();
  // Step L (RFC 9494): from the decoded set's communities.
  if (keep_lowest([](const Candidate& x) { return x.attrs->decode().has_community(codec::community::kLlgrStale); }))
    return first();
  // Step 1 as RFC 4271 9.1.1 and import policy put it, from the decoded
  // set (not Attrs' flags) and whoever the peer: the LOCAL_PREF, else the
  // default.
  if (keep_lowest([&](const Candidate& x) { return ~uint64_t{x.attrs->decode().local_pref().value_or(o.default_local_pref)}; }))
    return first();
  if (keep_lowest([](const Candidate& x) { return x.attrs->as_path_length(); })) return first();
  if (keep_lowest([](const Candidate& x) { return x.attrs->origin(); })) return first();
  const std::vector<bool> before = alive;
  for (size_t i = 0; i < c.size(); ++i) {
    if (!before[i]) continue;
    for (size_t j = 0; j < c.size(); ++j)
      if (j != i && before[j] &&
          (o.always_compare_med || c[i].attrs->neighbour_as() == c[j].attrs->neighbour_as()) &&
          c[j].attrs->med() < c[i].attrs->med()) {
        alive[i] = false;
        break;
      }
  }
  if (count() == 1) return first();
  if (keep_lowest([](const Candidate& x) { return x.peer->internal ? 1 : 0; })) return first();
  if (keep_lowest([](const Candidate& x) { return x.cost; })) return first();  // e
  if (keep_lowest([](const Candidate& x) {
        return x.attrs->has_originator_id() ? x.attrs->originator_id() : x.peer->router_id;
      }))
    return first();
  if (keep_lowest([](const Candidate& x) { return x.attrs->cluster_list_length(); })) return first();
  if (keep_lowest([](const Candidate& x) { return x.peer->address; })) return first();
  if (keep_lowest([](const Candidate& x) { return x.path_id; })) return first();
  keep_lowest([](const Candidate& x) { return x.slot; });
  return first();
}

}  // namespace petrel::table::testing
