// RPKI validation state in the table (table/table.h, Validator): the
// state each route gets when it is stored, Table::revalidate re-marking
// only the routes under a changed VRP prefix and journalling only those
// prefixes, and reject_invalid keeping invalid routes out of best path.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>

#include "codec/attribute_set.h"
#include "table/table.h"

namespace petrel::table {
namespace {

using codec::NlriPrefix;

constexpr FamilyIndex kV4 = 0;  // codec::kKnownFamilyList order
constexpr FamilyIndex kV6 = 1;

net::Prefix P(const char* s) { return *net::Prefix::parse(s); }
NlriPrefix N(const char* s) { return NlriPrefix{P(s), 0}; }

codec::AttributeSet attrs(std::vector<uint32_t> path) {
  codec::PathAttributes a;
  a.origin = codec::Origin::kIgp;
  codec::AsPath as_path;
  codec::AsSegment seg;
  seg.type = codec::SegmentType::kAsSequence;
  seg.asns = std::move(path);
  if (!seg.asns.empty()) as_path.segments.push_back(seg);
  a.as_path = as_path;
  a.next_hop = net::IpAddress::v4(0xC0000201);
  return codec::AttributeSet::from(a);
}

TableOptions with_validator(const Validator* v, bool reject_invalid = false) {
  TableOptions o;
  o.validator = v;
  o.reject_invalid = reject_invalid;
  return o;
}

PeerInfo peer_info(uint32_t id) {
  PeerInfo p;
  p.address = net::IpAddress::v4(0x0A000000 + id);
  p.router_id = id;
  p.asn = 65000 + id;
  return p;
}

// A validator by rule: (prefix, origin AS) -> state; everything else is
// not found. Counts its calls.
class RuleValidator : public Validator {
 public:
  std::map<std::pair<net::Prefix, uint32_t>, Validation> rules;
  mutable size_t calls = 0;
  Validation validate(const net::Prefix& p, const Attrs& a) const override {
    ++calls;
    auto it = rules.find({p, a.origin_as()});
    return it == rules.end() ? Validation::kNotFound : it->second;
  }
};

// (peer slot -> state) of the routes to a prefix, and the best's slot.
struct Marks {
  std::map<uint16_t, Validation> by_slot;
  int best_slot = -1;
};
Marks marks(const Table& t, FamilyIndex f, const char* prefix) {
  Marks m;
  t.lookup_all(f, P(prefix), [&](std::span<const RouteView> routes, int best) {
    for (const RouteView& r : routes) m.by_slot[r.slot] = r.validation;
    if (best >= 0) m.best_slot = routes[static_cast<size_t>(best)].slot;
  });
  return m;
}

// The prefixes journalled since the follower's last read.
std::set<std::pair<net::Prefix, bool>> journalled(const Table& t, Follower& fo) {
  std::set<std::pair<net::Prefix, bool>> out;
  t.read(fo, 1000, [&](const FollowEvent& ev) {
    if (!ev.resync && ev.change.family != UINT8_MAX) out.insert({ev.change.prefix, ev.change.best_changed});
  });
  return out;
}

TEST(Validation, UncheckedWithoutValidator) {
  Table t;
  uint16_t a = *t.add_peer(peer_info(1));
  auto s = attrs({65001, 64500});
  NlriPrefix n[] = {N("192.0.2.0/24")};
  t.apply(a, kV4, &s, n, {});
  EXPECT_EQ(marks(t, kV4, "192.0.2.0/24").by_slot.at(a), Validation::kUnchecked);
  EXPECT_EQ(t.revalidate([](const net::Prefix&) { return true; }), 0u);
}

TEST(Validation, StateOnImportAndOnReplacement) {
  RuleValidator v;
  v.rules[{P("192.0.2.0/24"), 64500}] = Validation::kValid;
  v.rules[{P("192.0.2.0/24"), 64666}] = Validation::kInvalid;
  v.rules[{P("2001:db8::/32"), 64500}] = Validation::kInvalid;
  Table t(with_validator(&v));
  uint16_t a = *t.add_peer(peer_info(1));
  auto good = attrs({65001, 64500});
  auto bad = attrs({65001, 64666});
  NlriPrefix n4[] = {N("192.0.2.0/24")}, other[] = {N("198.51.100.0/24")}, n6[] = {N("2001:db8::/32")};
  t.apply(a, kV4, &good, n4, {});
  t.apply(a, kV4, &good, other, {});
  t.apply(a, kV6, &good, n6, {});
  EXPECT_EQ(marks(t, kV4, "192.0.2.0/24").by_slot.at(a), Validation::kValid);
  EXPECT_EQ(marks(t, kV4, "198.51.100.0/24").by_slot.at(a), Validation::kNotFound);
  EXPECT_EQ(marks(t, kV6, "2001:db8::/32").by_slot.at(a), Validation::kInvalid);
  // An implicit withdrawal with another origin is validated again.
  t.apply(a, kV4, &bad, n4, {});
  EXPECT_EQ(marks(t, kV4, "192.0.2.0/24").by_slot.at(a), Validation::kInvalid);
  // Without reject_invalid an invalid route is still the best.
  EXPECT_EQ(marks(t, kV4, "192.0.2.0/24").best_slot, a);
}

TEST(Validation, RevalidateTouchesOnlyCoveredPrefixes) {
  RuleValidator v;
  Table t(with_validator(&v));
  uint16_t a = *t.add_peer(peer_info(1));
  auto s = attrs({65001, 64500});
  NlriPrefix n[] = {N("192.0.2.0/24"), N("192.0.2.128/25"), N("198.51.100.0/24")};
  t.apply(a, kV4, &s, n, {});
  Follower fo = t.follow();
  (void)journalled(t, fo);  // the initial resync

  v.rules[{P("192.0.2.0/24"), 64500}] = Validation::kValid;
  v.rules[{P("192.0.2.128/25"), 64500}] = Validation::kInvalid;
  v.rules[{P("198.51.100.0/24"), 64500}] = Validation::kValid;  // not covered below: stays
  v.calls = 0;
  auto covered = [](const net::Prefix& p) { return P("192.0.2.0/24").contains(p); };
  EXPECT_EQ(t.revalidate(covered), 2u);
  EXPECT_EQ(v.calls, 2u);  // asked about the covered routes only
  EXPECT_EQ(marks(t, kV4, "192.0.2.0/24").by_slot.at(a), Validation::kValid);
  EXPECT_EQ(marks(t, kV4, "192.0.2.128/25").by_slot.at(a), Validation::kInvalid);
  EXPECT_EQ(marks(t, kV4, "198.51.100.0/24").by_slot.at(a), Validation::kNotFound);
  auto j = journalled(t, fo);
  EXPECT_EQ(j, (std::set<std::pair<net::Prefix, bool>>{{P("192.0.2.0/24"), false}, {P("192.0.2.128/25"), false}}));

  // Nothing changed: nothing journalled, nothing counted.
  EXPECT_EQ(t.revalidate(covered), 0u);
  EXPECT_TRUE(journalled(t, fo).empty());
}

TEST(Validation, RejectInvalidTakesInvalidOutOfBestPath) {
  RuleValidator v;
  v.rules[{P("192.0.2.0/24"), 64666}] = Validation::kInvalid;
  Table t(with_validator(&v, true));
  uint16_t a = *t.add_peer(peer_info(1));
  uint16_t b = *t.add_peer(peer_info(2));
  auto shorter = attrs({65001, 64666});       // preferred by AS path length, but invalid
  auto longer = attrs({65002, 65003, 64500});  // not found
  NlriPrefix n[] = {N("192.0.2.0/24")}, lone[] = {N("203.0.113.0/24")};
  t.apply(a, kV4, &shorter, n, {});
  EXPECT_EQ(marks(t, kV4, "192.0.2.0/24").best_slot, -1);  // a lone invalid route: no best
  t.apply(b, kV4, &longer, n, {});
  EXPECT_EQ(marks(t, kV4, "192.0.2.0/24").best_slot, b);
  v.rules[{P("203.0.113.0/24"), 64666}] = Validation::kInvalid;
  t.apply(a, kV4, &shorter, lone, {});
  EXPECT_EQ(marks(t, kV4, "203.0.113.0/24").best_slot, -1);
  // The route stays in the table (counted), so revalidation can bring it back.
  EXPECT_EQ(t.peer_routes(a, kV4), 2u);

  Follower fo = t.follow();
  (void)journalled(t, fo);
  v.rules[{P("192.0.2.0/24"), 64666}] = Validation::kValid;
  EXPECT_EQ(t.revalidate([](const net::Prefix& p) { return P("192.0.2.0/24").contains(p); }), 1u);
  auto m = marks(t, kV4, "192.0.2.0/24");
  EXPECT_EQ(m.by_slot.at(a), Validation::kValid);
  EXPECT_EQ(m.best_slot, a);
  EXPECT_EQ(journalled(t, fo), (std::set<std::pair<net::Prefix, bool>>{{P("192.0.2.0/24"), true}}));
  EXPECT_EQ(marks(t, kV4, "203.0.113.0/24").best_slot, -1);  // not covered: unchanged
}

// reject_invalid changed on a running table (a reload): best path is
// chosen again where a route is invalid, and only those prefixes whose
// best changed are journalled; setting it to what it is does nothing.
TEST(Validation, RejectInvalidChangedLive) {
  RuleValidator v;
  v.rules[{P("192.0.2.0/24"), 64666}] = Validation::kInvalid;
  v.rules[{P("203.0.113.0/24"), 64666}] = Validation::kInvalid;
  Table t(with_validator(&v));
  uint16_t a = *t.add_peer(peer_info(1));
  uint16_t b = *t.add_peer(peer_info(2));
  auto shorter = attrs({65001, 64666});        // preferred by AS path length, but invalid
  auto longer = attrs({65002, 65003, 64500});  // not found
  NlriPrefix n[] = {N("192.0.2.0/24")}, lone[] = {N("203.0.113.0/24")}, fine[] = {N("198.51.100.0/24")};
  t.apply(a, kV4, &shorter, n, {});
  t.apply(b, kV4, &longer, n, {});
  t.apply(a, kV4, &shorter, lone, {});
  t.apply(b, kV4, &longer, fine, {});
  EXPECT_FALSE(t.reject_invalid());
  EXPECT_EQ(marks(t, kV4, "192.0.2.0/24").best_slot, a);
  EXPECT_EQ(marks(t, kV4, "203.0.113.0/24").best_slot, a);
  Follower fo = t.follow();
  (void)journalled(t, fo);

  EXPECT_EQ(t.set_reject_invalid(true), 2u);
  EXPECT_TRUE(t.reject_invalid());
  EXPECT_EQ(marks(t, kV4, "192.0.2.0/24").best_slot, b);
  EXPECT_EQ(marks(t, kV4, "203.0.113.0/24").best_slot, -1);
  EXPECT_EQ(marks(t, kV4, "198.51.100.0/24").best_slot, b);
  EXPECT_EQ(journalled(t, fo), (std::set<std::pair<net::Prefix, bool>>{{P("192.0.2.0/24"), true},
                                                                        {P("203.0.113.0/24"), true}}));
  EXPECT_EQ(t.set_reject_invalid(true), 0u);
  EXPECT_TRUE(journalled(t, fo).empty());
  // Routes arriving now follow the new setting.
  NlriPrefix later[] = {N("192.0.2.0/25")};
  v.rules[{P("192.0.2.0/25"), 64666}] = Validation::kInvalid;
  t.apply(a, kV4, &shorter, later, {});
  EXPECT_EQ(marks(t, kV4, "192.0.2.0/25").best_slot, -1);

  EXPECT_EQ(t.set_reject_invalid(false), 3u);
  EXPECT_EQ(marks(t, kV4, "192.0.2.0/24").best_slot, a);
  EXPECT_EQ(marks(t, kV4, "203.0.113.0/24").best_slot, a);
  EXPECT_EQ(marks(t, kV4, "192.0.2.0/25").best_slot, a);
}

TEST(Validation, FlagsKeepOtherBits) {
  RuleValidator v;
  v.rules[{P("192.0.2.0/24"), 64500}] = Validation::kInvalid;
  Table t(with_validator(&v));
  uint16_t a = *t.add_peer(peer_info(1));
  auto s = attrs({65001, 64500});
  NlriPrefix n[] = {N("192.0.2.0/24")};
  t.apply(a, kV4, &s, n, {});
  EXPECT_EQ(t.mark_stale(a, kV4), 1u);
  v.rules[{P("192.0.2.0/24"), 64500}] = Validation::kValid;
  EXPECT_EQ(t.revalidate([](const net::Prefix&) { return true; }), 1u);
  bool stale = false;
  Validation state = Validation::kUnchecked;
  t.lookup(kV4, P("192.0.2.0/24"), [&](const RouteView& r, bool) {
    stale = r.stale;
    state = r.validation;
  });
  EXPECT_TRUE(stale);
  EXPECT_EQ(state, Validation::kValid);
  EXPECT_EQ(t.sweep_stale(a, kV4), 1u);
}

// ---- ASPA (Validator::verify_path, PeerInfo::aspa)

// A path verifier by rule: a path with AS 64666 is invalid, one with AS
// 64777 valid, the rest unknown; under `flip`, 64666 is valid. Counts its
// calls and says which procedure it was asked for.
class PathValidator : public Validator {
 public:
  bool flip = false;
  mutable size_t calls = 0;
  mutable AspaCheck last = AspaCheck::kNone;
  Validation validate(const net::Prefix&, const Attrs&) const override { return Validation::kNotFound; }
  AspaState verify_path(const Attrs& a, AspaCheck check) const override {
    ++calls;
    last = check;
    auto set = codec::AttributeSet::from_canonical(a.wire());
    if (!set.ok()) return AspaState::kUnknown;
    const codec::PathAttributes pa = set->decode();
    for (const auto& seg : pa.as_path->segments)
      for (uint32_t asn : seg.asns) {
        if (asn == 64666) return flip ? AspaState::kValid : AspaState::kInvalid;
        if (asn == 64777) return AspaState::kValid;
      }
    return AspaState::kUnknown;
  }
};

std::map<uint16_t, AspaState> aspa_marks(const Table& t, FamilyIndex f, const char* prefix, int* best = nullptr) {
  std::map<uint16_t, AspaState> m;
  t.lookup_all(f, P(prefix), [&](std::span<const RouteView> routes, int b) {
    for (const RouteView& r : routes) m[r.slot] = r.aspa;
    if (best) *best = b >= 0 ? routes[static_cast<size_t>(b)].slot : -1;
  });
  return m;
}

PeerInfo checked(uint32_t id, AspaCheck c) {
  PeerInfo p = peer_info(id);
  p.aspa = c;
  return p;
}

TEST(Aspa, StateByThePeersProcedureOncePerShardOfAnUpdate) {
  PathValidator v;
  Table t(with_validator(&v));
  const uint16_t up = *t.add_peer(checked(1, AspaCheck::kUpstream));
  const uint16_t down = *t.add_peer(checked(2, AspaCheck::kDownstream));
  const uint16_t none = *t.add_peer(peer_info(3));  // no role: never asked
  auto leak = attrs({65001, 64666});
  auto fine = attrs({65002, 64777});
  NlriPrefix many[] = {N("192.0.2.0/24"), N("198.51.100.0/24"), N("203.0.113.0/24")};
  t.apply(up, kV4, &leak, many, {});
  EXPECT_EQ(v.last, AspaCheck::kUpstream);
  // An UPDATE's prefixes share one set: asked once per shard they fall in
  // (under each shard's lock, as the VRP lookups), not once per prefix.
  std::vector<NlriPrefix> hundred;
  for (uint32_t i = 0; i < 100; ++i) hundred.push_back({*net::Prefix::make(net::IpAddress::v4(0x0A000000 + (i << 8)), 24), 0});
  v.calls = 0;
  t.apply(up, kV4, &leak, hundred, {});
  EXPECT_GE(v.calls, 1u);
  EXPECT_LE(v.calls, t.shard_count());
  t.apply(down, kV4, &fine, many, {});
  EXPECT_EQ(v.last, AspaCheck::kDownstream);
  const size_t before = v.calls;
  t.apply(none, kV4, &leak, many, {});
  EXPECT_EQ(v.calls, before);
  auto m = aspa_marks(t, kV4, "198.51.100.0/24");
  EXPECT_EQ(m.at(up), AspaState::kInvalid);
  EXPECT_EQ(m.at(down), AspaState::kValid);
  EXPECT_EQ(m.at(none), AspaState::kUnchecked);
}

TEST(Aspa, UncheckedWithoutValidator) {
  Table t;
  const uint16_t up = *t.add_peer(checked(1, AspaCheck::kUpstream));
  auto leak = attrs({65001, 64666});
  NlriPrefix n[] = {N("192.0.2.0/24")};
  t.apply(up, kV4, &leak, n, {});
  EXPECT_EQ(aspa_marks(t, kV4, "192.0.2.0/24").at(up), AspaState::kUnchecked);
  EXPECT_EQ(t.reverify_paths([](const Attrs&) { return true; }), 0u);
}

TEST(Aspa, RejectAspaInvalidAndReverify) {
  PathValidator v;
  TableOptions o = with_validator(&v);
  o.reject_aspa_invalid = true;
  Table t(o);
  const uint16_t a = *t.add_peer(checked(1, AspaCheck::kUpstream));
  const uint16_t b = *t.add_peer(checked(2, AspaCheck::kUpstream));
  auto shorter = attrs({65001, 64666});         // preferred by AS path length, but a leak
  auto longer = attrs({65002, 65003, 64500});  // unknown
  NlriPrefix n[] = {N("192.0.2.0/24")}, other[] = {N("198.51.100.0/24")};
  t.apply(a, kV4, &shorter, n, {});
  int best = 0;
  (void)aspa_marks(t, kV4, "192.0.2.0/24", &best);
  EXPECT_EQ(best, -1);  // a lone invalid route: no best
  t.apply(b, kV4, &longer, n, {});
  t.apply(b, kV4, &longer, other, {});
  (void)aspa_marks(t, kV4, "192.0.2.0/24", &best);
  EXPECT_EQ(best, b);
  EXPECT_EQ(t.peer_routes(a, kV4), 1u);  // kept, so that a change can bring it back

  // The ASPAs change: only the routes `affected` names are asked again.
  Follower fo = t.follow();
  (void)journalled(t, fo);
  v.flip = true;
  v.calls = 0;
  auto holds_64666 = [](const Attrs& x) { return x.origin_as() == 64666; };
  EXPECT_EQ(t.reverify_paths(holds_64666), 1u);
  EXPECT_EQ(v.calls, 1u);
  auto m = aspa_marks(t, kV4, "192.0.2.0/24", &best);
  EXPECT_EQ(m.at(a), AspaState::kValid);
  EXPECT_EQ(best, a);
  EXPECT_EQ(journalled(t, fo), (std::set<std::pair<net::Prefix, bool>>{{P("192.0.2.0/24"), true}}));
  EXPECT_EQ(t.reverify_paths(holds_64666), 0u);  // nothing changed: nothing journalled
  EXPECT_TRUE(journalled(t, fo).empty());

  // reject_aspa_invalid off and on again, live.
  v.flip = false;
  EXPECT_EQ(t.reverify_paths(holds_64666), 1u);
  (void)aspa_marks(t, kV4, "192.0.2.0/24", &best);
  EXPECT_EQ(best, b);
  EXPECT_EQ(t.set_reject_aspa_invalid(false), 1u);
  (void)aspa_marks(t, kV4, "192.0.2.0/24", &best);
  EXPECT_EQ(best, a);
  EXPECT_EQ(t.set_reject_aspa_invalid(false), 0u);
  EXPECT_EQ(t.set_reject_aspa_invalid(true), 1u);
  (void)aspa_marks(t, kV4, "192.0.2.0/24", &best);
  EXPECT_EQ(best, b);
}

}  // namespace
}  // namespace petrel::table
