// Multipath (see multipath.h).
#include "table/multipath.h"

namespace petrel::table {

bool multipath_equal(const Candidate& best, const Candidate& c, const BestPathOptions& o) {
  if (!c.eligible || !best.eligible || c.peer->local || best.peer->local) return false;
  if (c.attrs->neighbour_as() != best.attrs->neighbour_as()) return false;
  if (c.attrs->med() != best.attrs->med()) return false;
  switch (compare_pair(best, c, o)) {
    case Decision::kOnly:
    case Decision::kLongLivedStale:
    case Decision::kLocalPref:
    case Decision::kAsPathLength:
    case Decision::kOrigin:
    case Decision::kMed:
    case Decision::kExternal:
    case Decision::kIgpCost: return false;
    case Decision::kRouterId:
    case Decision::kClusterList:
    case Decision::kPeerAddress:
    case Decision::kPathId:
    case Decision::kPeerSlot: return true;
  }
  return false;
}

std::vector<size_t> multipath_set(std::span<const Candidate> c, int best, const BestPathOptions& o) {
  std::vector<size_t> out;
  if (best < 0 || static_cast<size_t>(best) >= c.size()) return out;
  const Candidate& b = c[static_cast<size_t>(best)];
  for (size_t i = 0; i < c.size(); ++i)
    if (static_cast<int>(i) == best || multipath_equal(b, c[i], o)) out.push_back(i);
  return out;
}

}  // namespace petrel::table
