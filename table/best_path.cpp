#include "table/best_path.h"

#include <algorithm>
#include <array>
#include <vector>

namespace petrel::table {
namespace {

// The measures of the steps after 1, each "lower wins" (step 1 and d are
// turned around so that they are too).
uint64_t long_lived_stale(const Candidate& c, const BestPathOptions&) { return c.attrs->llgr_stale() ? 1 : 0; }
uint64_t inverted_preference(const Candidate& c, const BestPathOptions& o) {
  return ~uint64_t{degree_of_preference(c, o)};
}
uint64_t as_path_length(const Candidate& c, const BestPathOptions&) { return c.attrs->as_path_length(); }
uint64_t origin(const Candidate& c, const BestPathOptions&) { return c.attrs->origin(); }
uint64_t internal(const Candidate& c, const BestPathOptions&) { return c.peer->internal ? 1 : 0; }
uint64_t igp_cost(const Candidate& c, const BestPathOptions&) { return c.cost; }
uint64_t router_id(const Candidate& c, const BestPathOptions&) {
  return c.attrs->has_originator_id() ? c.attrs->originator_id() : c.peer->router_id;
}
uint64_t cluster_list(const Candidate& c, const BestPathOptions&) { return c.attrs->cluster_list_length(); }
uint64_t path_id(const Candidate& c, const BestPathOptions&) { return c.path_id; }
uint64_t slot(const Candidate& c, const BestPathOptions&) { return c.slot; }

// Candidates still in the running; inline for the usual few routes.
class Alive {
 public:
  explicit Alive(size_t n) : n_(n) {
    if (n > kInline) heap_.assign(n, 1);
    else std::fill_n(inline_.begin(), n, uint8_t{1});
  }
  [[nodiscard]] bool operator[](size_t i) const { return data()[i] != 0; }
  void kill(size_t i) { data()[i] = 0; }
  [[nodiscard]] size_t count() const {
    return static_cast<size_t>(std::count(data(), data() + n_, uint8_t{1}));
  }
  [[nodiscard]] int first() const {
    for (size_t i = 0; i < n_; ++i) if (data()[i]) return static_cast<int>(i);
    return -1;
  }

 private:
  static constexpr size_t kInline = 32;
  [[nodiscard]] const uint8_t* data() const { return n_ > kInline ? heap_.data() : inline_.data(); }
  uint8_t* data() { return n_ > kInline ? heap_.data() : inline_.data(); }
  size_t n_;
  std::array<uint8_t, kInline> inline_{};
  std::vector<uint8_t> heap_;
};

using Measure = uint64_t (*)(const Candidate&, const BestPathOptions&);

// Removes every candidate whose measure is above the lowest; true when one
// is left.
bool keep_lowest(std::span<const Candidate> c, Alive& alive, Measure m, const BestPathOptions& o) {
  uint64_t best = UINT64_MAX;
  for (size_t i = 0; i < c.size(); ++i) if (alive[i]) best = std::min(best, m(c[i], o));
  for (size_t i = 0; i < c.size(); ++i) if (alive[i] && m(c[i], o) != best) alive.kill(i);
  return alive.count() == 1;
}

// Step c: a candidate goes when another from the same neighbouring AS
// (still in the running at the start of the step) has a lower MED, that
// is, when its MED is above the lowest of its group. The candidates are
// grouped by neighbouring AS with a sort (n log n; comparing every pair
// was quadratic, and a flood of ADD-PATH paths from one AS made each
// insert cost that). Each candidate's neighbouring AS is read once (Attrs
// reads it from its bytes), and its MED (further into the bytes) only
// when another candidate shares that AS.
bool keep_lowest_med(std::span<const Candidate> c, Alive& alive, const BestPathOptions& o) {
  struct Member {
    uint32_t neighbour;
    uint32_t index;
    uint32_t med;
  };
  constexpr size_t kInline = 16;
  std::array<Member, kInline> inline_members;
  std::vector<Member> heap;
  Member* g = inline_members.data();
  if (c.size() > kInline) {
    heap.resize(c.size());
    g = heap.data();
  }
  // Paths alike (one peer's flood) share a set: its AS and MED are read
  // once for a run of candidates holding it.
  size_t n = 0;
  const Attrs* last = nullptr;
  uint32_t last_as = 0;
  bool one_group = true;
  for (size_t i = 0; i < c.size(); ++i) {
    if (!alive[i]) continue;
    if (!o.always_compare_med && c[i].attrs != last) {
      last = c[i].attrs;
      last_as = last->neighbour_as();
    }
    if (n > 0 && last_as != g[0].neighbour) one_group = false;
    g[n++] = {last_as, static_cast<uint32_t>(i), 0};
  }
  if (!one_group)  // (one group, the usual case with many paths: no sort)
    std::sort(g, g + n, [](const Member& x, const Member& y) {
      return x.neighbour != y.neighbour ? x.neighbour < y.neighbour : x.index < y.index;
    });
  for (size_t from = 0; from < n;) {
    size_t to = from + 1;
    while (to < n && g[to].neighbour == g[from].neighbour) ++to;
    if (to - from > 1) {
      uint32_t lowest = UINT32_MAX;
      const Attrs* read = nullptr;
      uint32_t med = 0;
      for (size_t k = from; k < to; ++k) {
        if (c[g[k].index].attrs != read) {
          read = c[g[k].index].attrs;
          med = read->med();
        }
        g[k].med = med;
        lowest = std::min(lowest, med);
      }
      for (size_t k = from; k < to; ++k)
        if (g[k].med != lowest) alive.kill(g[k].index);
    }
    from = to;
  }
  return alive.count() == 1;
}

int peer_address_cmp(const Candidate& a, const Candidate& b) {
  auto r = a.peer->address <=> b.peer->address;
  return r < 0 ? -1 : r > 0 ? 1 : 0;
}

bool keep_lowest_address(std::span<const Candidate> c, Alive& alive) {
  int best = -1;
  for (size_t i = 0; i < c.size(); ++i)
    if (alive[i] && (best < 0 || peer_address_cmp(c[i], c[static_cast<size_t>(best)]) < 0)) best = static_cast<int>(i);
  for (size_t i = 0; i < c.size(); ++i)
    if (alive[i] && peer_address_cmp(c[i], c[static_cast<size_t>(best)]) != 0) alive.kill(i);
  return alive.count() == 1;
}

}  // namespace

bool same_med_group(const Candidate& a, const Candidate& b, const BestPathOptions& o) {
  return o.always_compare_med || a.attrs->neighbour_as() == b.attrs->neighbour_as();
}

bool reaches_med_step(const Candidate& c, const Candidate& best, const BestPathOptions& o) {
  return c.eligible && c.attrs->llgr_stale() == best.attrs->llgr_stale() &&
         degree_of_preference(c, o) == degree_of_preference(best, o) &&
         c.attrs->as_path_length() == best.attrs->as_path_length() && c.attrs->origin() == best.attrs->origin();
}

bool wins_before_med(const Candidate& a, const Candidate& b, const BestPathOptions& o) {
  for (Measure m : {long_lived_stale, inverted_preference, as_path_length, origin}) {
    const uint64_t x = m(a, o), y = m(b, o);
    if (x != y) return x < y;
  }
  return false;  // they tie: the caller should not have asked
}

bool wins_after_med(const Candidate& a, const Candidate& b, const BestPathOptions& o) {
  for (Measure m : {internal, igp_cost, router_id, cluster_list}) {
    const uint64_t x = m(a, o), y = m(b, o);
    if (x != y) return x < y;
  }
  if (const int r = peer_address_cmp(a, b); r != 0) return r < 0;
  if (a.path_id != b.path_id) return a.path_id < b.path_id;
  return a.slot < b.slot;
}

Beside added_beside_best(const Candidate& added, const Candidate& best, const BestPathOptions& o) {
  if (!added.eligible) return Beside::kBestStays;
  if (!reaches_med_step(added, best, o))
    return wins_before_med(added, best, o) ? Beside::kAddedIsBest : Beside::kBestStays;
  if (!same_med_group(added, best, o)) return Beside::kChooseAgain;
  const uint32_t a = added.attrs->med(), b = best.attrs->med();
  if (a > b) return Beside::kBestStays;  // the best removes it at step c
  // Below: it removes the best at step c. With always_compare_med every
  // candidate that reaches step c is in one group, so it removes them all.
  if (a < b) return o.always_compare_med ? Beside::kAddedIsBest : Beside::kChooseAgain;
  return wins_after_med(added, best, o) ? Beside::kAddedIsBest : Beside::kBestStays;
}

bool removal_keeps_best(const Candidate& gone, const Candidate& best, const BestPathOptions& o) {
  if (!gone.eligible || !reaches_med_step(gone, best, o)) return true;
  return same_med_group(gone, best, o) && gone.attrs->med() >= best.attrs->med();
}

int select_best(std::span<const Candidate> c, const BestPathOptions& o) {
  Alive alive(c.size());
  for (size_t i = 0; i < c.size(); ++i) if (!c[i].eligible) alive.kill(i);
  size_t n = alive.count();
  if (n <= 1) return alive.first();
  if (keep_lowest(c, alive, long_lived_stale, o)) return alive.first();      // L
  if (keep_lowest(c, alive, inverted_preference, o)) return alive.first();   // 1
  if (keep_lowest(c, alive, as_path_length, o)) return alive.first();        // a
  if (keep_lowest(c, alive, origin, o)) return alive.first();                // b
  if (keep_lowest_med(c, alive, o)) return alive.first();                    // c
  if (keep_lowest(c, alive, internal, o)) return alive.first();              // d
  if (keep_lowest(c, alive, igp_cost, o)) return alive.first();              // e
  if (keep_lowest(c, alive, router_id, o)) return alive.first();             // f
  if (keep_lowest(c, alive, cluster_list, o)) return alive.first();          // RFC 4456
  if (keep_lowest_address(c, alive)) return alive.first();                   // g
  if (keep_lowest(c, alive, path_id, o)) return alive.first();
  keep_lowest(c, alive, slot, o);
  return alive.first();
}

std::string_view decision_name(Decision d) {
  switch (d) {
    case Decision::kOnly: return "only route";
    case Decision::kLongLivedStale: return "long-lived stale";
    case Decision::kLocalPref: return "local preference";
    case Decision::kAsPathLength: return "AS path length";
    case Decision::kOrigin: return "origin";
    case Decision::kMed: return "MED";
    case Decision::kExternal: return "external over internal";
    case Decision::kIgpCost: return "IGP cost";
    case Decision::kRouterId: return "router ID";
    case Decision::kClusterList: return "cluster list length";
    case Decision::kPeerAddress: return "peer address";
    case Decision::kPathId: return "path identifier";
    case Decision::kPeerSlot: return "peer slot";
  }
  return "?";
}

Decision compare_pair(const Candidate& w, const Candidate& l, const BestPathOptions& o) {
  struct Step { Measure m; Decision d; };
  const Step before_med[] = {{long_lived_stale, Decision::kLongLivedStale},
                             {inverted_preference, Decision::kLocalPref},
                             {as_path_length, Decision::kAsPathLength},
                             {origin, Decision::kOrigin}};
  for (const auto& s : before_med)
    if (s.m(w, o) != s.m(l, o)) return s.d;
  if (same_med_group(w, l, o) && w.attrs->med() != l.attrs->med()) return Decision::kMed;
  const Step after_med[] = {{internal, Decision::kExternal},
                            {igp_cost, Decision::kIgpCost},
                            {router_id, Decision::kRouterId},
                            {cluster_list, Decision::kClusterList}};
  for (const auto& s : after_med)
    if (s.m(w, o) != s.m(l, o)) return s.d;
  if (peer_address_cmp(w, l) != 0) return Decision::kPeerAddress;
  if (w.path_id != l.path_id) return Decision::kPathId;
  return Decision::kPeerSlot;
}

}  // namespace petrel::table
