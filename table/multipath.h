// Multipath: which of a prefix's routes are as good as the best one, so
// that the kernel may spread traffic over all of their next hops (ECMP,
// docs/kernel.md "ECMP"). Pure; uses best-path selection's measures
// (table/best_path.h) so the two cannot disagree.
//
// A route is multipath-equal to the best when it is eligible, neither it
// nor the best is one this router originates, and it ties with the best on
// every step of RFC 4271 section 9.1.2.2 before the tie-breakers:
//   1. the degree of preference (LOCAL_PREF, else the default),
//   a. AS_PATH length, b. ORIGIN,
//   c. MULTI_EXIT_DISC: equal, and from the same neighbouring AS (the
//      leftmost AS of the AS_PATH; routes through different neighbouring
//      ASes are never combined, whatever always_compare_med says: their
//      MEDs mean different things and their paths differ past the first
//      hop),
//   d. both external or both internal,
//   e. the same interior cost to the next hop (Candidate::cost).
// The steps after e (router ID, CLUSTER_LIST length, peer address, path
// identifier) only break the tie; they do not keep a route out.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "table/best_path.h"

namespace petrel::table {

// Whether `c` is multipath-equal to `best` (the rule above).
bool multipath_equal(const Candidate& best, const Candidate& c, const BestPathOptions& o);

// Indices into `c` of the routes multipath-equal to c[best], in order
// (best among them); empty when best is -1.
std::vector<size_t> multipath_set(std::span<const Candidate> c, int best, const BestPathOptions& o);

}  // namespace petrel::table
