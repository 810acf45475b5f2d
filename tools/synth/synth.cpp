// The synthetic table generator (synth.h).
//
// Two random streams from one seed: the shared one decides everything every
// peer agrees on (the transit ASes, the origins and their upstreams, how
// many prefixes each attribute set carries, the prefixes, each set's
// ORIGIN, prepending and AS_SET); the peer's own decides what the peer
// adds (the path from the neighbour down to the origin's upstream, MED,
// communities). Paths are RFC 4271 AS_SEQUENCEs of 4-octet numbers
// (RFC 6793) without loops; prepending repeats the origin AS.
//
// The shares below are rounded from public reports (the CIDR Report,
// bgp.potaroo.net, APNIC's yearly BGP reviews, RIPE RIS and RouteViews
// summaries, 2023-2024): approximate by design, docs/synthetic-table.md
// lists them.
#include "tools/synth/synth.h"

#include <algorithm>
#include <bit>
#include <span>
#include <utility>

#include "tools/synth/internal/key_set.h"
#include "tools/synth/internal/prefixes.h"
#include "tools/synth/internal/rng.h"

namespace petrel::synth {
namespace {

using internal::Rng;

// AS path length before prepending, the neighbour and the origin included
// (index = length): mean about 4.5.
constexpr std::array<uint32_t, 13> kPathLen = {
    0, 0, 50'000, 220'000, 320'000, 210'000, 110'000, 50'000, 20'000, 10'000, 5'000, 3'000, 2'000};
// Extra copies of the origin AS on a set that prepends (index = copies).
constexpr std::array<uint32_t, 10> kPrepends = {
    0, 450'000, 250'000, 130'000, 70'000, 40'000, 25'000, 15'000, 10'000, 10'000};
// Communities on a set that carries some (index = count).
constexpr std::array<uint32_t, 11> kCommunityCount = {
    0, 200'000, 200'000, 150'000, 120'000, 100'000, 80'000, 60'000, 40'000, 30'000, 20'000};

// Shares of attribute sets, in parts per million.
constexpr uint32_t kPrependPpm = 100'000;
constexpr uint32_t kIncompletePpm = 140'000;
constexpr uint32_t kEgpPpm = 1'000;
constexpr uint32_t kAsSetPpm = 1'000;  // aggregates: more than today's table, to exercise AS_SET
constexpr uint32_t kCommunitiesPpm = 500'000;
constexpr uint32_t kLargeCommunitiesPpm = 40'000;
constexpr uint32_t kMedPpm = 250'000;
constexpr uint32_t kUsualPathPpm = 750'000;  // sets that take their origin's usual path from this peer
constexpr uint32_t kSecondUpstreamPpm = 300'000;
// Shares of ASes.
constexpr uint32_t kMultihomedPpm = 500'000;
constexpr uint32_t kOrigin4OctetPpm = 380'000;
constexpr uint32_t kTransit4OctetPpm = 120'000;
constexpr uint32_t kDualStackPpm = 850'000;  // IPv6 origins that also originate IPv4

// Set sizes: 1 + a share of the remaining prefixes in proportion to a
// Pareto weight (alpha 1, minus one) up to this: most sets carry one
// prefix, the biggest a few thousand.
constexpr uint64_t kSetWeightCap = 5'000;
// A MED above every drawn one, counted up, makes a set distinct when its
// draws repeated another set of the same origin.
constexpr uint32_t kDistinctMed = 100'000;

// AS numbers: 1..64495 without AS_TRANS (RFC 6793); 64496.. are for
// documentation and private use (RFC 5398, RFC 6996); 4-octet numbers
// start at 131072 as the RIRs' do.
constexpr uint32_t kAsTrans = 23'456;
constexpr uint32_t kLast2Octet = 64'495;
constexpr uint32_t kFirst4Octet = 131'072;

class AsnPool {
 public:
  explicit AsnPool(size_t expected)
      : taken_(expected),
        span4_(static_cast<uint32_t>(std::max<size_t>(270'000, 2 * expected))) {}

  // A number not handed out before, 4-octet with the given share (always,
  // once 85 % of the 2-octet numbers are gone).
  uint32_t fresh(Rng& g, uint32_t four_octet_ppm) {
    const bool four = two_octet_taken_ * 20 >= kLast2Octet * 17 || g.chance_ppm(four_octet_ppm);
    for (;;) {
      const uint32_t asn = four ? kFirst4Octet + g.below(span4_) : 1 + g.below(kLast2Octet);
      if (asn == kAsTrans || !taken_.insert(asn)) continue;
      if (!four) ++two_octet_taken_;
      return asn;
    }
  }
  // The first number above every one fresh() hands out.
  [[nodiscard]] uint32_t beyond() const { return kFirst4Octet + span4_; }

 private:
  internal::KeySet taken_;
  uint32_t span4_;
  uint32_t two_octet_taken_ = 0;
};

struct Origin {
  uint32_t asn = 0;
  std::array<uint32_t, 2> upstreams{};  // equal when single-homed
  uint32_t sets = 0;                    // the next `sets` of the family's set sizes
};

struct Family {
  std::vector<uint32_t> set_sizes;
  std::vector<Origin> origins;
};

// A transit AS, the popular ones (the front of the list) far more often:
// Pareto with alpha 4/3, the smaller `scale` the steeper.
uint32_t transit(std::span<const uint32_t> transits, double scale, Rng& rng) {
  return transits[rng.pareto43(scale, uint64_t{1} << 40) % transits.size()];
}

// Exactly `sets` sizes adding up to exactly `prefixes`: each set's share of
// the prefixes beyond one per set is its weight's, rounded so that the
// running total is exact. Half the weights are 0: those sets carry one
// prefix.
std::vector<uint32_t> plan_set_sizes(uint32_t prefixes, uint32_t sets, Rng& g) {
  std::vector<uint32_t> sizes(sets);
  uint64_t weights = 0;
  for (uint32_t& s : sizes) {
    s = static_cast<uint32_t>(g.pareto1(kSetWeightCap) - 1);
    weights += s;
  }
  if (weights == 0) {  // a few sets, all drawn 0: share evenly
    std::fill(sizes.begin(), sizes.end(), 1);
    weights = sets;
  }
  const uint64_t extra = prefixes - sets;
  uint64_t running = 0;
  uint64_t given = 0;
  for (uint32_t& s : sizes) {
    running += s;
    const uint64_t upto = extra * running / weights;
    s = 1 + static_cast<uint32_t>(upto - given);
    given = upto;
  }
  return sizes;
}

// Origins owning `sets` sets: most own one, a few own thousands (Pareto,
// alpha 4/3, at most 1 % of the family's sets each). IPv6 origins are
// mostly IPv4 origins too, with the same upstreams.
std::vector<Origin> plan_origins(uint32_t sets, std::span<const Origin> dual_stack,
                                 std::span<const uint32_t> transits, AsnPool& asns, Rng& g) {
  const uint64_t cap = std::max<uint32_t>(4, sets / 100);
  std::vector<Origin> origins;
  for (uint32_t left = sets; left > 0;) {
    Origin o;
    o.sets = std::min(left, 1 + static_cast<uint32_t>(g.pareto43(1.0, cap - 1)));
    left -= o.sets;
    if (!dual_stack.empty() && g.chance_ppm(kDualStackPpm)) {
      const Origin& v4 = dual_stack[g.below(static_cast<uint32_t>(dual_stack.size()))];
      o.asn = v4.asn;
      o.upstreams = v4.upstreams;
    } else {
      o.asn = asns.fresh(g, kOrigin4OctetPpm);
      o.upstreams[0] = o.upstreams[1] = transit(transits, 64.0, g);
      if (g.chance_ppm(kMultihomedPpm)) {
        while (o.upstreams[1] == o.upstreams[0]) o.upstreams[1] = transit(transits, 64.0, g);
      }
    }
    origins.push_back(o);
  }
  return origins;
}

uint64_t hash(const Attributes& a) {
  uint64_t h = internal::mix64(a.origin | (a.med ? (uint64_t{*a.med} << 8) | 0x80 : 0));
  const auto add = [&h](uint64_t v) { h = internal::mix64(h ^ v); };
  add(a.as_path.size());
  for (uint32_t asn : a.as_path) add(asn);
  add(a.as_set.size() << 32 | a.communities.size());
  for (uint32_t asn : a.as_set) add(asn);
  for (uint32_t c : a.communities) add(c);
  add(a.large_communities.size());
  for (const auto& l : a.large_communities) add((uint64_t{l[0]} << 32 | l[1]) ^ (uint64_t{l[2]} << 16));
  return h;
}

// Table::attrs with a hash index, so that every set added is distinct.
class AttrIndex {
 public:
  AttrIndex(std::vector<Attributes>& attrs, size_t expected)
      : attrs_(attrs), slots_(std::bit_ceil(expected * 2 + 16)) {}

  // Moves a to the end of attrs and returns its index; if an equal set is
  // there already, leaves a as it is and returns nothing.
  std::optional<uint32_t> add(Attributes& a) {
    if ((attrs_.size() + 1) * 2 > slots_.size()) grow();
    const uint64_t h = hash(a);
    const size_t mask = slots_.size() - 1;
    size_t i = h & mask;
    for (; slots_[i].index != 0; i = (i + 1) & mask) {
      if (slots_[i].hash == h && attrs_[slots_[i].index - 1] == a) return std::nullopt;
    }
    slots_[i] = {h, static_cast<uint32_t>(attrs_.size() + 1)};
    attrs_.push_back(std::move(a));
    return static_cast<uint32_t>(attrs_.size() - 1);
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t index = 0;  // into attrs_, plus one; 0 is empty
  };

  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.index == 0) continue;
      size_t i = s.hash & mask;
      while (slots_[i].index != 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  std::vector<Attributes>& attrs_;
  std::vector<Slot> slots_;
};

// Builds one family's groups and attribute sets, origin by origin.
class Builder {
 public:
  Builder(AttrIndex& index, std::span<const uint32_t> transits, uint32_t peer_as, uint32_t max_group,
          Rng& g, Rng& q)
      : index_(index), transits_(transits), peer_as_(peer_as),
        max_group_(max_group), g_(g), q_(q) {}

  void family(net::IpFamily f, const Family& fam, uint32_t prefix_count, std::vector<Group>& out) {
    const std::vector<uint8_t> lengths = internal::shuffled_lengths(f, prefix_count, g_);
    internal::Placer placer(f, prefix_count);
    std::vector<net::Prefix> prefixes;
    out.reserve(fam.set_sizes.size() + fam.set_sizes.size() / 16);
    size_t next_length = 0;
    size_t next_set = 0;
    for (const Origin& o : fam.origins) {
      const std::span<const uint32_t> sizes(fam.set_sizes.data() + next_set, o.sets);
      next_set += o.sets;
      uint32_t count = 0;
      for (uint32_t s : sizes) count += s;
      const internal::Home home = placer.home(count, g_);
      prefixes.clear();
      for (uint32_t i = 0; i < count; ++i) prefixes.push_back(placer.place(home, lengths[next_length++], g_));

      head(o, usual_);
      auto from = prefixes.cbegin();
      for (uint32_t size : sizes) {
        const uint32_t attrs = add_set(o, fam.origins);
        for (uint32_t done = 0; done < size;) {
          const uint32_t n = std::min(max_group_, size - done);
          out.push_back(Group{attrs, std::vector<net::Prefix>(from, from + n)});
          from += n;
          done += n;
        }
      }
    }
  }

 private:
  // The path from the neighbour down to the origin's upstream (the
  // neighbour alone for its own customers), drawn by the peer.
  void head(const Origin& o, std::vector<uint32_t>& out) {
    out.assign(1, peer_as_);
    const uint32_t up = o.upstreams[q_.chance_ppm(kSecondUpstreamPpm) ? 1 : 0];
    const size_t len = q_.pick(kPathLen);
    if (len == 2 || up == peer_as_) return;
    const size_t middle = std::min(len - 3, transits_.size() - 2);
    while (out.size() < 1 + middle) {
      const uint32_t t = transit(transits_, 8.0, q_);
      if (t != up && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    }
    out.push_back(up);
  }

  void set_path(Attributes& a, std::span<const uint32_t> head_path, uint32_t origin_asn,
                uint32_t prepends) {
    a.as_path.assign(head_path.begin(), head_path.end());
    a.as_path.insert(a.as_path.end(), 1 + prepends, origin_asn);
  }

  // One attribute set of origin o, distinct from every earlier one.
  uint32_t add_set(const Origin& o, std::span<const Origin> origins) {
    // What every peer agrees on.
    Attributes a;
    const uint32_t r = g_.below(1'000'000);
    a.origin = r < kEgpPpm ? 1 : r < kEgpPpm + kIncompletePpm ? 2 : 0;
    const uint32_t prepends = g_.chance_ppm(kPrependPpm) ? static_cast<uint32_t>(g_.pick(kPrepends)) : 0;
    if (g_.chance_ppm(kAsSetPpm)) {
      for (uint32_t n = 2 + g_.below(4); n > 0; --n) {
        const uint32_t asn = origins[g_.below(static_cast<uint32_t>(origins.size()))].asn;
        if (asn != o.asn) a.as_set.push_back(asn);
      }
      sort_unique(a.as_set);
    }
    // What this peer adds.
    if (q_.chance_ppm(kUsualPathPpm)) {
      set_path(a, usual_, o.asn, prepends);
    } else {
      head(o, other_);
      set_path(a, other_, o.asn, prepends);
    }
    if (q_.chance_ppm(kMedPpm)) {
      const uint32_t kind = q_.below(10);
      a.med = kind < 3 ? 0 : kind < 6 ? 1 + q_.below(100) : q_.below(10'001);
    }
    if (q_.chance_ppm(kCommunitiesPpm)) communities(a, o.asn);
    if (q_.chance_ppm(kLargeCommunitiesPpm)) large_communities(a, o.asn);

    // Draws that repeat an earlier set get other paths, then a MED of
    // their own.
    for (int attempt = 0;; ++attempt) {
      if (std::optional<uint32_t> at = index_.add(a)) return *at;
      if (attempt < 3) {
        head(o, other_);
        set_path(a, other_, o.asn, prepends);
      } else {
        a.med = kDistinctMed + distinct_meds_++;
      }
    }
  }

  // RFC 1997 values from the neighbour (most), an AS on the path, or the
  // origin, each AS with its own small vocabulary, as operators tag routes
  // with location and relationship codes. 4-octet ASes cannot: they use
  // large communities.
  void communities(Attributes& a, uint32_t origin_asn) {
    for (size_t n = q_.pick(kCommunityCount); n > 0; --n) {
      const uint32_t who = q_.below(4);
      uint32_t asn = who < 2 ? a.as_path.front()
                     : who == 2 ? a.as_path[q_.below(static_cast<uint32_t>(a.as_path.size()))]
                                : origin_asn;
      if (asn > 0xffff) asn = a.as_path.front();
      if (asn > 0xffff) continue;
      const uint64_t code = q_.pareto43(4.0, 255);
      a.communities.push_back(asn << 16 | static_cast<uint32_t>(1 + internal::mix64(uint64_t{asn} << 8 | code) % 9'999));
    }
    sort_unique(a.communities);
  }

  // RFC 8092 values: global administrator the neighbour or the origin,
  // then a function and a parameter.
  void large_communities(Attributes& a, uint32_t origin_asn) {
    for (uint32_t n = 1 + q_.below(3); n > 0; --n) {
      const uint32_t admin = q_.below(2) == 0 ? a.as_path.front() : origin_asn;
      a.large_communities.push_back({admin, 1 + q_.below(8), q_.below(1'000)});
    }
    sort_unique(a.large_communities);
  }

  template <typename T>
  static void sort_unique(std::vector<T>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }

  AttrIndex& index_;
  std::span<const uint32_t> transits_;
  uint32_t peer_as_;
  uint32_t max_group_;
  Rng& g_;
  Rng& q_;
  std::vector<uint32_t> usual_;  // the current origin's usual head from this peer
  std::vector<uint32_t> other_;
  uint32_t distinct_meds_ = 0;
};

uint32_t family_sets(uint64_t sets, uint32_t prefixes, uint64_t total) {
  if (prefixes == 0) return 0;
  return static_cast<uint32_t>(std::clamp<uint64_t>((sets * prefixes + total / 2) / total, 1, prefixes));
}

}  // namespace

size_t Table::v4_count() const {
  size_t n = 0;
  for (const Group& g : v4) n += g.prefixes.size();
  return n;
}

size_t Table::v6_count() const {
  size_t n = 0;
  for (const Group& g : v6) n += g.prefixes.size();
  return n;
}

Table generate(const Params& p, uint32_t peer) {
  const uint32_t n4 = std::min(p.v4_prefixes, kMaxV4Prefixes);
  const uint32_t n6 = std::min(p.v6_prefixes, kMaxV6Prefixes);
  const uint64_t total = uint64_t{n4} + n6;
  Table table;
  if (total == 0) return table;
  const uint64_t sets = std::min<uint64_t>(p.attr_sets, total);
  const uint32_t s4 = family_sets(sets, n4, total);
  const uint32_t s6 = n6 == 0 ? 0 : std::clamp<uint32_t>(static_cast<uint32_t>(sets - std::min<uint64_t>(sets, s4)), 1, n6);

  Rng g(p.seed, 0);
  Rng q(p.seed, uint64_t{1} + peer);
  const uint32_t transit_count = std::clamp<uint32_t>((s4 + s6) / 40, 16, 8'000);
  AsnPool asns(size_t{s4} + s6 + transit_count);
  std::vector<uint32_t> transits(transit_count);
  for (uint32_t& t : transits) t = asns.fresh(g, kTransit4OctetPpm);
  const uint32_t peer_as = peer < transit_count ? transits[peer] : asns.beyond() + (peer - transit_count);

  Family v4{plan_set_sizes(n4, s4, g), {}};
  v4.origins = plan_origins(s4, {}, transits, asns, g);
  Family v6{plan_set_sizes(n6, s6, g), {}};
  v6.origins = plan_origins(s6, v4.origins, transits, asns, g);

  table.attrs.reserve(size_t{s4} + s6);
  AttrIndex index(table.attrs, size_t{s4} + s6);
  const uint32_t max_group = std::max<uint32_t>(p.max_group, 1);
  Builder builder(index, transits, peer_as, max_group, g, q);
  builder.family(net::IpFamily::V4, v4, n4, table.v4);
  builder.family(net::IpFamily::V6, v6, n6, table.v6);
  return table;
}

}  // namespace petrel::synth
