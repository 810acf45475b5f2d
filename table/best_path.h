// Best-path selection, RFC 4271 section 9.1.2 (phase 2), as elimination
// over the candidates of one prefix. Each step removes every candidate
// that is worse than the best remaining one by that step's measure; the
// first step that leaves one candidate decides. MED (step c) compares only
// routes from the same neighbouring AS, so it is not a sort order: done as
// elimination, the result is the same whatever order the routes came in.
//
//   0. Routes whose NEXT_HOP cannot be resolved are not eligible
//      (9.1.2.1; the caller marks them: the table asks its
//      NexthopResolver, table/nexthop.h, and keeps Route::kIneligible).
//   L. A route that carries the LLGR_STALE community (RFC 9494: a
//      long-lived stale route, kept by Petrel or received so) is "treated
//      as the least preferred" (RFC 9494 sections 1 and 4.3): it loses to
//      every route without it, before the degree of preference.
//   1. Highest degree of preference (9.1.1): the route's LOCAL_PREF, else
//      the default. From an internal peer that is the LOCAL_PREF it sent
//      (or one import policy set). For a route from an external peer the
//      degree is computed by local policy: a LOCAL_PREF the peer sent never
//      reaches the table (the decoder discards it, RFC 4271 5.1.5, RFC 7606
//      7.5), so one in the stored set is the import filter's, and that is
//      the degree. The same holds for a route this router originates
//      ([[originate]] local_pref). It is also what export sends to internal
//      peers as LOCAL_PREF (table/export.cpp), so they rank it alike.
//   a. Shortest AS_PATH (9.1.2.2 a): an AS_SET counts one, confederation
//      segments none (codec::summarize_as_path).
//   b. Lowest ORIGIN (9.1.2.2 b): IGP < EGP < INCOMPLETE.
//   c. Lowest MULTI_EXIT_DISC among routes from the same neighbouring AS
//      (9.1.2.2 c); an absent MED is the lowest value, 0; with
//      always_compare_med, among all routes.
//   d. A route from an external peer over one from an internal peer
//      (9.1.2.2 d).
//   e. Lowest interior cost to the NEXT_HOP (9.1.2.2 e): Candidate::cost,
//      the resolver's cost for the route's next hop (the kernel route's
//      metric); 0 without a resolver and for this router's own routes.
//   f. Lowest BGP identifier of the advertising router (9.1.2.2 f), the
//      ORIGINATOR_ID in its place when present (RFC 4456 section 9).
//   -  Shortest CLUSTER_LIST (RFC 4456 section 9).
//   g. Lowest peer address (9.1.2.2 g).
//   -  Lowest ADD-PATH path identifier (RFC 7911: several paths from one
//      peer), then the lowest peer slot, so the result is always one route.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "crates/net/ip.h"
#include "table/attrs.h"

namespace petrel::table {

// What the table knows of a peer for best-path selection. Set when its
// session comes up, unchanged while it has routes in the table.
// Which ASPA verification procedure (draft-ietf-sidrops-aspa-verification)
// a peer's routes get, by its relation to us (RFC 9234 roles): upstream for
// routes from a customer, a lateral peer, a route server or its client;
// downstream for routes from a provider; none for internal peers and peers
// without a role.
enum class AspaCheck : uint8_t { kNone, kUpstream, kDownstream };

struct PeerInfo {
  net::IpAddress address;
  uint32_t router_id = 0;  // BGP identifier, host order
  uint32_t asn = 0;
  bool internal = false;   // iBGP
  bool rr_client = false;  // a route reflection client of ours (RFC 4456)
  bool local = false;      // not a peer: the routes this router originates
  std::string name;        // for people: logs and the API
  // Paths (ADD-PATH identifiers, RFC 7911) the table keeps per prefix from
  // this peer: an announcement of a further identifier for a prefix that
  // has this many from the peer is refused (treat-as-withdraw for that
  // path) and counted (Table::peer_paths_refused). 0: no bound.
  uint32_t max_paths_per_prefix = 64;
  AspaCheck aspa = AspaCheck::kNone;
};

struct BestPathOptions {
  bool always_compare_med = false;
  uint32_t default_local_pref = 100;
};

struct Candidate {
  const Attrs* attrs = nullptr;
  const PeerInfo* peer = nullptr;
  uint32_t path_id = 0;
  uint32_t slot = 0;       // the peer's slot in the table
  bool eligible = true;    // false: NEXT_HOP unresolvable
  uint32_t cost = 0;       // interior cost to the NEXT_HOP (step e)
};

// The degree of preference of step 1, whoever the peer: the stored set's
// LOCAL_PREF, else the default (see step 1 above for why that is right for
// external routes too). It reads only the set: no peer lookup per
// comparison.
inline uint32_t degree_of_preference(const Candidate& c, const BestPathOptions& o) {
  return c.attrs->has_local_pref() ? c.attrs->local_pref() : o.default_local_pref;
}

// True when `c` reaches step c (MED) beside `best`: it ties with it on
// steps L, 1, a and b. Only such a candidate can change the choice by going
// away without being the best (it may have been removing another by MED).
bool reaches_med_step(const Candidate& c, const Candidate& best, const BestPathOptions& o);

// For two eligible candidates that differ before the MED step (the
// second does not reach_med_step beside the first): whether `a` wins
// there. Then a set's best is decided by steps L, 1, a and b alone: a new
// candidate either beats the best there (and is the new best) or loses
// (and the best stays), whatever the other candidates are.
bool wins_before_med(const Candidate& a, const Candidate& b, const BestPathOptions& o);

// Whether `a` and `b` are compared at step c: always_compare_med, or the
// same neighbouring AS.
bool same_med_group(const Candidate& a, const Candidate& b, const BestPathOptions& o);

// For two candidates that both survive step c: whether `a` wins at the
// steps after it (d, e, f, the cluster list, g, then path identifier and
// slot). These steps are
// one lexicographic order, total over candidates of distinct (slot,
// path_id), so the best of a set's survivors of step c is their minimum.
bool wins_after_med(const Candidate& a, const Candidate& b, const BestPathOptions& o);

// The table's shortcuts when one candidate joins or leaves a set whose
// best is `best`, so that a prefix with many paths (an ADD-PATH flood) is
// not chosen again from all of them at each change.
//
// Joining (`added`, not yet in the set): kBestStays or kAddedIsBest when
// that follows from the two alone, kChooseAgain when the other candidates
// matter. That is when `added` ties with the best before step c and has a
// lower MED in the best's group (it removes the best at step c, and a
// candidate of another group that lost to the best may win now; with
// always_compare_med there is one group, and it wins), or belongs to
// another group (whose lowest MED only the others know). With
// the same MED in the best's group it survives step c beside the best and
// removes nothing, so the two decide after step c.
enum class Beside : uint8_t { kBestStays, kAddedIsBest, kChooseAgain };
Beside added_beside_best(const Candidate& added, const Candidate& best, const BestPathOptions& o);
// Leaving (`gone`, not the best): true when the best stays the best of
// the rest. It does unless `gone` reached step c beside the best and was
// the lowest MED of another group, or of the best's group below the best
// (then it may have been removing a candidate that would win now).
bool removal_keeps_best(const Candidate& gone, const Candidate& best, const BestPathOptions& o);

// Steps 1, a and b as one number, where it can be exact: lower wins, and
// two candidates tie on those steps exactly when their ranks are equal.
// 0 when it cannot be exact (an LLGR_STALE route, a degree of preference
// other than the default, or an AS_PATH length of kMaxRankedPathLength or more): then
// the sets themselves are compared. Fits 12 bits, so the table keeps it in
// each route and settles most comparisons before the MED step without
// reading either route's set (a cache miss each in a full table).
inline constexpr uint32_t kMaxRankedPathLength = 255;
inline uint16_t pre_med_rank(const Candidate& c, const BestPathOptions& o) {
  if (c.attrs->llgr_stale()) return 0;  // step L comes first: the sets decide
  const uint32_t len = c.attrs->as_path_length();
  const uint32_t origin = c.attrs->origin();  // 0-2, 3 absent
  if (degree_of_preference(c, o) != o.default_local_pref || len >= kMaxRankedPathLength || origin > 3) return 0;
  return static_cast<uint16_t>(1 + len * 4 + origin);  // at most 1020: Route's 10 bits
}

// Index into `c` of the best candidate, or -1 when none is eligible.
int select_best(std::span<const Candidate> c, const BestPathOptions& o);

// Which step decided between the best and the runner-up (for "explain").
enum class Decision : uint8_t {
  kOnly, kLongLivedStale, kLocalPref, kAsPathLength, kOrigin, kMed, kExternal, kIgpCost, kRouterId,
  kClusterList, kPeerAddress, kPathId, kPeerSlot,
};
std::string_view decision_name(Decision d);

// The step that removed candidate `loser` in favour of `winner` when only
// these two are compared (the explanation an operator reads).
Decision compare_pair(const Candidate& winner, const Candidate& loser, const BestPathOptions& o);

}  // namespace petrel::table
