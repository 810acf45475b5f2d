// Import of one UPDATE (table/import.h) against a real table, without
// sockets: NLRI of families the session did not negotiate, the external
// peer's AS_PATH checks (empty, first AS, on 2-octet sessions the merged
// path), loops, policy (a term's unless on a multi-prefix UPDATE),
// counting; and the max_prefixes watch against a naive model.
#include "table/import.h"
#include "tests/table/chain_of.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "codec/update.h"
#include "codec/update_builder.h"
#include "table/export.h"
#include "tests/table/attrs_gen.h"

namespace petrel::table {
namespace {

constexpr uint32_t kLocalAs = 65001;
constexpr uint32_t kPeerAs = 65010;
constexpr size_t kV4 = 0, kV6 = 1;  // kKnownFamilyList indexes

void put16(std::vector<std::byte>& b, uint32_t v) {
  b.push_back(std::byte(v >> 8));
  b.push_back(std::byte(v & 0xff));
}
void put32(std::vector<std::byte>& b, uint32_t v) {
  put16(b, v >> 16);
  put16(b, v & 0xffff);
}
void attr(std::vector<std::byte>& b, uint8_t flags, uint8_t type, const std::vector<std::byte>& v) {
  b.push_back(std::byte(flags));
  b.push_back(std::byte(type));
  b.push_back(std::byte(v.size()));
  b.insert(b.end(), v.begin(), v.end());
}
std::vector<std::byte> bytes_of(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int x : v) out.push_back(std::byte(x));
  return out;
}

// An UPDATE body written by hand (4-octet ASes): ORIGIN IGP, an AS_PATH of
// one AS_SEQUENCE (none when `path` is empty), and any of 198.51.100.0/24
// in the classic NLRI field, 2001:db8::/32 in MP_REACH_NLRI and
// 2001:db8:1::/48 in MP_UNREACH_NLRI.
struct Parts {
  std::vector<uint32_t> path{kPeerAs, 65020};
  bool v4 = true;
  bool v6_reach = false;
  bool v6_unreach = false;
  std::optional<uint32_t> local_pref;  // a LOCAL_PREF the peer sends
  std::optional<uint32_t> otc;         // an OTC the peer sends (RFC 9234)
  std::vector<net::Prefix> more_v4;    // IPv4 prefixes after 198.51.100.0/24 (with v4)
};
std::vector<std::byte> raw_update(const Parts& p) {
  std::vector<std::byte> attrs;
  attr(attrs, 0x40, 1, bytes_of({0}));
  std::vector<std::byte> path;
  if (!p.path.empty()) {
    path.push_back(std::byte{2});
    path.push_back(std::byte(p.path.size()));
    for (uint32_t a : p.path) put32(path, a);
  }
  attr(attrs, 0x40, 2, path);
  if (p.v4) attr(attrs, 0x40, 3, bytes_of({192, 0, 2, 1}));
  if (p.local_pref) {
    std::vector<std::byte> v;
    put32(v, *p.local_pref);
    attr(attrs, 0x40, 5, v);
  }
  if (p.otc) {
    std::vector<std::byte> v;
    put32(v, *p.otc);
    attr(attrs, 0xC0, 35, v);  // optional transitive
  }
  if (p.v6_reach)
    attr(attrs, 0x80, 14,
         bytes_of({0, 2, 1, 16, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 32, 0x20, 0x01, 0x0d,
                   0xb8}));
  if (p.v6_unreach) attr(attrs, 0x80, 15, bytes_of({0, 2, 1, 48, 0x20, 0x01, 0x0d, 0xb8, 0, 1}));
  std::vector<std::byte> body;
  put16(body, 0);
  put16(body, static_cast<uint32_t>(attrs.size()));
  body.insert(body.end(), attrs.begin(), attrs.end());
  if (p.v4) {
    auto n = bytes_of({24, 198, 51, 100});
    body.insert(body.end(), n.begin(), n.end());
    for (const net::Prefix& x : p.more_v4) {
      body.push_back(std::byte(x.len()));
      for (unsigned i = 0; i < (x.len() + 7u) / 8; ++i) body.push_back(std::byte(x.addr().bytes()[i]));
    }
  }
  return body;
}

// A table with one peer whose UPDATEs go through import_update.
struct Session {
  Table table;
  uint16_t slot = 0;
  ImportRules rules;
  codec::SessionParams params;

  explicit Session(codec::FamilySet families = {codec::kIpv4Unicast, codec::kIpv6Unicast}, bool internal = false) {
    rules.local_as = kLocalAs;
    rules.router_id = 0x01010101;
    rules.cluster_id = 0x01010101;
    rules.peer_as = internal ? kLocalAs : kPeerAs;
    rules.internal = internal;
    rules.families = families;
    PeerInfo info;
    info.asn = rules.peer_as;
    info.internal = internal;
    info.router_id = 0x02020202;
    slot = *table.add_peer(info);
  }
  ImportOutcome import(const std::vector<std::byte>& body, bool treat_as_withdraw = false) {
    const auto u = codec::UpdateView::decode(
        body, params, rules.internal ? codec::PeerType::kInternal : codec::PeerType::kExternal);
    EXPECT_NE(u.action(), codec::ErrorAction::kSessionReset);
    Batch b(table);
    ImportOutcome out = import_update(u, treat_as_withdraw || u.action() == codec::ErrorAction::kTreatAsWithdraw,
                                      rules, b);
    table.apply(slot, b);
    return out;
  }
  [[nodiscard]] uint64_t routes(size_t f) const { return table.peer_routes(slot, static_cast<FamilyIndex>(f)); }
};

// ---- families the session did not negotiate (RFC 4760)

TEST(Import, MpReachOfAnUnnegotiatedFamilyNeverEntersTheTable) {
  Session s({codec::kIpv4Unicast});
  Parts p;
  p.v6_reach = true;
  const ImportOutcome out = s.import(raw_update(p));
  EXPECT_TRUE(out.unnegotiated);
  EXPECT_EQ(out.unnegotiated_family, codec::kIpv6Unicast);
  EXPECT_EQ(out.unnegotiated_prefixes, 1u);
  EXPECT_EQ(s.routes(kV4), 1u);  // the negotiated family's route goes in
  EXPECT_EQ(s.routes(kV6), 0u);
  EXPECT_EQ(out.announced[kV4], 1u);
  EXPECT_EQ(out.announced[kV6], 0u);
  EXPECT_EQ(s.table.prefixes(static_cast<FamilyIndex>(kV6)), 0u);
}

TEST(Import, AnUpdateOfOnlyAnUnnegotiatedFamilyChangesNothing) {
  Session s({codec::kIpv4Unicast});
  Parts p;
  p.v4 = false;
  p.v6_reach = true;
  p.v6_unreach = true;
  const ImportOutcome out = s.import(raw_update(p));
  EXPECT_TRUE(out.unnegotiated);
  EXPECT_EQ(out.unnegotiated_prefixes, 2u);
  EXPECT_EQ(s.routes(kV6), 0u);
  EXPECT_EQ(out.announced, (std::array<uint32_t, kFamilies>{}));
  EXPECT_EQ(out.withdrawn, (std::array<uint32_t, kFamilies>{}));
}

TEST(Import, ClassicNlriIsUnnegotiatedOnAnIpv6OnlySession) {
  Session s({codec::kIpv6Unicast});
  Parts p;
  p.v6_reach = true;
  const ImportOutcome out = s.import(raw_update(p));
  EXPECT_TRUE(out.unnegotiated);
  EXPECT_EQ(out.unnegotiated_family, codec::kIpv4Unicast);
  EXPECT_EQ(s.routes(kV4), 0u);
  EXPECT_EQ(s.routes(kV6), 1u);
}

TEST(Import, UnnegotiatedFamilyWithAFilterAndWithTreatAsWithdraw) {
  Session s({codec::kIpv4Unicast});
  Filter all{"all", {}, FilterAction::kAccept};
  s.rules.filter = kept(all);
  Parts p;
  p.v6_reach = true;
  EXPECT_TRUE(s.import(raw_update(p)).unnegotiated);
  EXPECT_EQ(s.routes(kV4), 1u);
  EXPECT_EQ(s.routes(kV6), 0u);
  s.rules.filter = nullptr;
  const ImportOutcome w = s.import(raw_update(p), true);  // the codec's treat-as-withdraw
  EXPECT_TRUE(w.unnegotiated);
  EXPECT_EQ(w.withdrawn[kV4], 1u);
  EXPECT_EQ(w.withdrawn[kV6], 0u);
  EXPECT_EQ(s.routes(kV4), 0u);
}

// ---- the external peer's AS_PATH (RFC 4271 6.3, RFC 7606 7.2)

TEST(Import, EmptyAsPathFromAnExternalPeerIsTreatedAsWithdraw) {
  Session s;
  EXPECT_EQ(s.import(raw_update({})).refusal, ImportRefusal::kNone);
  ASSERT_EQ(s.routes(kV4), 1u);
  Parts p;
  p.path = {};
  const ImportOutcome out = s.import(raw_update(p));
  EXPECT_EQ(out.refusal, ImportRefusal::kEmptyAsPath);
  EXPECT_EQ(s.routes(kV4), 0u);  // the earlier version went
  EXPECT_EQ(out.announced[kV4], 1u);
  EXPECT_EQ(out.refused[kV4], 1u);
  EXPECT_EQ(out.withdrawn[kV4], 0u);
  s.rules.enforce_first_as = false;  // a route server's session: still malformed
  EXPECT_EQ(s.import(raw_update(p)).refusal, ImportRefusal::kEmptyAsPath);
}

TEST(Import, EmptyAsPathFromAnInternalPeerIsFine) {
  Session s({codec::kIpv4Unicast}, true);
  Parts p;
  p.path = {};
  EXPECT_EQ(s.import(raw_update(p)).refusal, ImportRefusal::kNone);
  EXPECT_EQ(s.routes(kV4), 1u);
}

TEST(Import, FirstAsMustBeThePeers) {
  Session s;
  Parts p;
  p.path = {65099, kPeerAs};
  ImportOutcome out = s.import(raw_update(p));
  EXPECT_EQ(out.refusal, ImportRefusal::kFirstAs);
  EXPECT_EQ(out.first_as, 65099u);
  EXPECT_EQ(s.routes(kV4), 0u);
  // With an import filter (the AttributeSet's way) the same.
  Filter all{"all", {}, FilterAction::kAccept};
  s.rules.filter = kept(all);
  EXPECT_EQ(s.import(raw_update(p)).refusal, ImportRefusal::kFirstAs);
  EXPECT_EQ(s.routes(kV4), 0u);
  // A route server does not prepend its AS.
  s.rules.enforce_first_as = false;
  out = s.import(raw_update(p));
  EXPECT_EQ(out.refusal, ImportRefusal::kNone);
  EXPECT_EQ(out.first_as, 0u);
  EXPECT_EQ(s.routes(kV4), 1u);
}

TEST(Import, FirstSegmentMustBeASequence) {
  Session s;
  codec::PathAttributes pa;
  pa.origin = codec::Origin::kIgp;
  pa.as_path = codec::AsPath{{{codec::SegmentType::kAsSet, {kPeerAs, 65020}}}};
  pa.next_hop = net::IpAddress::v4(0xC0000201u);
  std::vector<codec::NlriPrefix> prefixes{{*net::Prefix::make(net::IpAddress::v4(0xC6336400u), 24), 0}};
  std::vector<std::byte> msgs;
  ASSERT_TRUE(codec::UpdateBuilder(s.params).announce(codec::kIpv4Unicast, codec::AttributeSet::from(pa), prefixes,
                                                      msgs).ok());
  const std::vector<std::byte> body(msgs.begin() + codec::kHeaderLen, msgs.end());
  EXPECT_EQ(s.import(body).refusal, ImportRefusal::kFirstAs);
}

// On a 2-octet session the path checked is AS_PATH merged with AS4_PATH
// (RFC 6793 section 4.2.3).
std::vector<std::byte> two_octet_update(const std::vector<uint32_t>& as_path, const std::vector<uint32_t>& as4_path) {
  std::vector<std::byte> attrs;
  attr(attrs, 0x40, 1, bytes_of({0}));
  std::vector<std::byte> path{std::byte{2}, std::byte(as_path.size())};
  for (uint32_t a : as_path) put16(path, a);
  attr(attrs, 0x40, 2, path);
  attr(attrs, 0x40, 3, bytes_of({192, 0, 2, 1}));
  std::vector<std::byte> path4{std::byte{2}, std::byte(as4_path.size())};
  for (uint32_t a : as4_path) put32(path4, a);
  attr(attrs, 0xC0, 17, path4);  // AS4_PATH: optional transitive
  std::vector<std::byte> body;
  put16(body, 0);
  put16(body, static_cast<uint32_t>(attrs.size()));
  body.insert(body.end(), attrs.begin(), attrs.end());
  auto n = bytes_of({24, 198, 51, 100});
  body.insert(body.end(), n.begin(), n.end());
  return body;
}

TEST(Import, TwoOctetSessionChecksTheMergedPath) {
  Session s;
  s.params.four_octet_as = false;
  // The peer, then a 4-octet AS as AS_TRANS: accepted.
  EXPECT_EQ(s.import(two_octet_update({kPeerAs, codec::kAsTrans}, {kPeerAs, 4200000001u})).refusal,
            ImportRefusal::kNone);
  EXPECT_EQ(s.routes(kV4), 1u);
  // AS4_PATH as long as AS_PATH replaces all of it: its first AS is not
  // the peer's, though AS_PATH's is.
  EXPECT_EQ(s.import(two_octet_update({kPeerAs, 65020}, {4200000009u, 65020})).refusal, ImportRefusal::kFirstAs);
  EXPECT_EQ(s.routes(kV4), 0u);
}

// ---- loops and policy, as before the move

TEST(Import, OwnAsAndImportNoneCount) {
  Session s;
  Parts p;
  p.path = {kPeerAs, kLocalAs};
  ImportOutcome out = s.import(raw_update(p));
  EXPECT_EQ(out.refusal, ImportRefusal::kOwnAs);
  EXPECT_EQ(out.refused[kV4], 1u);
  s.rules.allow_own_as = 1;
  EXPECT_EQ(s.import(raw_update(p)).refusal, ImportRefusal::kNone);
  EXPECT_EQ(s.routes(kV4), 1u);
  s.rules.none = true;
  p.v6_unreach = true;
  out = s.import(raw_update(p));
  EXPECT_EQ(out.announced[kV4], 1u);
  EXPECT_EQ(out.refused[kV4], 1u);
  EXPECT_EQ(out.withdrawn[kV6], 1u);
  EXPECT_EQ(s.routes(kV4), 1u);  // "none" adds nothing and removes nothing of its own
}

// ---- refused routes kept for people (refused.h)

TEST(Import, RefusedRoutesAreKeptWithWhyUntilWithdrawnOrAccepted) {
  Session s;
  RefusedRoutes kept(10);
  s.rules.refused = &kept;
  const codec::NlriPrefix p{*net::Prefix::parse("198.51.100.0/24"), 0};
  // Refused as a whole UPDATE (our AS in the path): the check's name.
  Parts looped;
  looped.path = {kPeerAs, kLocalAs};
  s.import(raw_update(looped));
  auto got = kept.find(std::nullopt, 10);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].prefix, p.prefix);
  EXPECT_EQ(got[0].reason, "own-as");
  ASSERT_TRUE(got[0].attrs);
  EXPECT_EQ(got[0].attrs->first_as(), kPeerAs);
  // The same prefix accepted (without a policy: the fast path): forgotten.
  s.import(raw_update(Parts{}));
  EXPECT_TRUE(kept.empty());
  EXPECT_EQ(s.routes(kV4), 1u);
  // Refused by a policy term: its label; then withdrawn: forgotten.
  PolicyTerm no_65020{"no-65020", {}, {}, PolicyThen::kReject, {}};
  no_65020.match.origin_as = {{65020, 65020}};
  auto chain = PolicyChain::compile({PolicyDef{"edge", {no_65020}, PolicyThen::kAccept}});
  s.rules.filter = chain.get();
  s.import(raw_update(Parts{}));
  got = kept.find(p.prefix, 10);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].reason, "edge.no-65020");
  EXPECT_EQ(s.routes(kV4), 0u);
  Parts gone;
  gone.v4 = false;
  gone.v6_unreach = true;  // an UPDATE that withdraws another prefix leaves it
  s.import(raw_update(gone));
  EXPECT_EQ(kept.kept(), 1u);
  // A bound of 0 keeps nothing, and counts nothing either (nothing is asked).
  kept.set_max(0);
  EXPECT_TRUE(kept.empty());
  s.import(raw_update(Parts{}));
  EXPECT_TRUE(kept.empty());
}

// A term's `unless` on import: one UPDATE's prefixes share the attribute
// conditions (decided once), and the per-prefix part of the exception
// holds for some of them only.
TEST(Import, UnlessExceptsSomePrefixesOfOneUpdate) {
  Session s;
  RefusedRoutes kept(10);
  s.rules.refused = &kept;
  // From AS 65010 (first AS): refused, unless in the customer's prefixes
  // and originated by 65020.
  PolicyTerm cone{"outside-cone", {}, {}, PolicyThen::kReject, {}};
  cone.match.first_as = {{kPeerAs, kPeerAs}};
  cone.unless.prefix = {*PrefixRange::parse("198.51.100.0/23 le 24"), *PrefixRange::parse("203.0.113.0/24 le 25")};
  cone.unless.origin_as = {{65020, 65020}};
  auto chain = PolicyChain::compile({PolicyDef{"cust", {cone}, PolicyThen::kAccept}});
  ASSERT_TRUE(chain);
  s.rules.filter = chain.get();
  Parts p;  // 198.51.100.0/24, then the others
  p.more_v4 = {*net::Prefix::parse("198.51.101.0/24"), *net::Prefix::parse("203.0.113.0/25"),
               *net::Prefix::parse("203.0.113.0/26"), *net::Prefix::parse("192.0.2.0/24")};
  const auto in_table = [&](std::string_view prefix) {
    size_t n = 0;
    (void)s.table.lookup_all(static_cast<FamilyIndex>(kV4), *net::Prefix::parse(prefix),
                             [&](std::span<const RouteView> routes, int) { n = routes.size(); });
    return n == 1;
  };
  ImportOutcome out = s.import(raw_update(p));
  EXPECT_EQ(out.announced[kV4], 5u);  // refused ones too
  EXPECT_EQ(out.refused[kV4], 2u);
  EXPECT_TRUE(in_table("198.51.100.0/24"));
  EXPECT_TRUE(in_table("198.51.101.0/24"));
  EXPECT_TRUE(in_table("203.0.113.0/25"));
  EXPECT_FALSE(in_table("203.0.113.0/26"));  // too long for the set
  EXPECT_FALSE(in_table("192.0.2.0/24"));    // outside it
  auto got = kept.find(*net::Prefix::parse("192.0.2.0/24"), 10);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].reason, "cust.outside-cone");
  // Another origin: the attribute part of the exception fails, and every
  // prefix of the UPDATE is refused.
  p.path = {kPeerAs, 65030};
  out = s.import(raw_update(p));
  EXPECT_EQ(out.refused[kV4], 5u);
  EXPECT_EQ(s.routes(kV4), 0u);
  // Another first AS: the match fails, the term does not apply, all in.
  s.rules.enforce_first_as = false;
  p.path = {65040, 65030};
  out = s.import(raw_update(p));
  EXPECT_EQ(out.refused[kV4], 0u);
  EXPECT_EQ(s.routes(kV4), 5u);
}

// A policy that changes every route alike (a tag, a MED) puts the UPDATE
// in whole with the changed set (Decided::kUniform): every prefix of both
// families gets the one set, with the bytes decode/apply/from would give;
// one that sets a next hop goes prefix by prefix (apply()) to the same end.
TEST(Import, AChangeForEveryRouteGoesInWhole) {
  for (bool next_hop : {false, true}) {
    Session s;
    PolicyTerm tag{"tag", {}, {}, PolicyThen::kAccept, {}};
    tag.set.community_add = {*CommunityPattern::parse("65000:100")};
    tag.set.med_op = MedOp::kSet;
    tag.set.med = 5;
    if (next_hop) {
      tag.set.next_hop_op = NextHopOp::kAddress;
      tag.set.next_hop = net::IpAddress::parse("192.0.2.77");
    }
    auto chain = PolicyChain::compile({PolicyDef{"tag", {tag}, PolicyThen::kReject}});
    ASSERT_TRUE(chain);
    s.rules.filter = chain.get();
    Parts p;
    p.v6_reach = true;
    p.more_v4 = {*net::Prefix::parse("198.51.101.0/24"), *net::Prefix::parse("203.0.113.0/24")};
    const auto body = raw_update(p);
    const ImportOutcome out = s.import(body);
    EXPECT_EQ(out.announced[kV4], 3u);
    EXPECT_EQ(out.refused[kV4], 0u);
    EXPECT_EQ(s.routes(kV4), 3u);
    EXPECT_EQ(s.routes(kV6), 1u);
    // The model: the UPDATE's set decoded, changed by apply(), encoded.
    const auto u = codec::UpdateView::decode(body, s.params, codec::PeerType::kExternal);
    codec::PathAttributes pa = u.attribute_set().decode();
    ApplyContext ctx;
    ctx.local_as = kLocalAs;
    ctx.family = codec::kIpv4Unicast;
    ASSERT_TRUE(chain->apply(chain->decide({}, [&] {
      PolicyChain::Prepared pr;
      chain->prepare(u.attribute_set(), {}, pr);
      return pr;
    }()), pa, ctx));
    const codec::AttributeSet want = codec::AttributeSet::from(pa);
    for (const char* prefix : {"198.51.100.0/24", "198.51.101.0/24", "203.0.113.0/24"}) {
      bool found = false;
      (void)s.table.lookup_all(static_cast<FamilyIndex>(kV4), *net::Prefix::parse(prefix),
                               [&](std::span<const RouteView> routes, int) {
                                 ASSERT_EQ(routes.size(), 1u);
                                 found = true;
                                 const auto w = routes[0].attrs->wire();
                                 EXPECT_TRUE(std::equal(w.begin(), w.end(), want.wire().begin(), want.wire().end()))
                                     << prefix << (next_hop ? " (next hop)" : "");
                               });
      EXPECT_TRUE(found) << prefix;
    }
  }
}

TEST(RefusedRoutes, BoundedAndCounted) {
  RefusedRoutes kept(2);
  for (uint32_t i = 0; i < 5; ++i)
    kept.refuse({*net::Prefix::make(net::IpAddress::v4(0x0A000000u + (i << 8)), 24), 0}, "r", nullptr);
  EXPECT_EQ(kept.kept(), 2u);
  EXPECT_EQ(kept.not_kept(), 3u);
  EXPECT_EQ(kept.find(std::nullopt, 1).size(), 1u);  // the limit
  kept.clear();
  EXPECT_EQ(kept.kept(), 0u);
  EXPECT_EQ(kept.not_kept(), 0u);
}

// forget() passes its filter for every route kept, whatever else the
// filter lets through: each of 5,000 routes kept among 50,000 announced
// again is forgotten, the others leave nothing behind, and after clear()
// a new refusal is kept and forgotten the same way.
TEST(RefusedRoutes, ForgetFindsEveryRouteKept) {
  RefusedRoutes kept(100000);
  auto nlri = [](uint32_t i) {
    return codec::NlriPrefix{*net::Prefix::make(net::IpAddress::v4(0x0A000000u + (i << 8)), 24), i % 3};
  };
  for (uint32_t i = 0; i < 50000; i += 10) kept.refuse(nlri(i), "r", nullptr);
  EXPECT_EQ(kept.kept(), 5000u);
  for (uint32_t i = 1; i < 50000; i += 10) kept.forget(nlri(i));  // never kept
  EXPECT_EQ(kept.kept(), 5000u);
  for (uint32_t i = 0; i < 50000; ++i) kept.forget(nlri(i));
  EXPECT_EQ(kept.kept(), 0u);
  kept.clear();
  kept.refuse(nlri(7), "r", nullptr);
  EXPECT_EQ(kept.kept(), 1u);
  kept.forget(nlri(7));
  EXPECT_EQ(kept.kept(), 0u);
}

// ---- RFC 9234 section 5: OTC on import, by our role on the session

// The OTC of the peer's route to 198.51.100.0/24 in the table (nothing when
// the route is absent or has none); `present` says whether the route is.
std::optional<uint32_t> otc_in_table(const Session& s, bool& present) {
  std::optional<uint32_t> otc;
  present = false;
  (void)s.table.lookup_all(static_cast<FamilyIndex>(kV4), *net::Prefix::parse("198.51.100.0/24"),
                           [&](std::span<const RouteView> routes, int) {
                             for (const RouteView& r : routes) {
                               present = true;
                               auto set = codec::AttributeSet::from_canonical(r.attrs->wire());
                               ASSERT_TRUE(set.ok());
                               otc = set->otc();
                             }
                           });
  return otc;
}

TEST(Import, OtcFromACustomerOrRsClientIsALeak) {
  for (codec::Role ours : {codec::Role::kProvider, codec::Role::kRouteServer}) {
    Session s;
    s.rules.local_role = ours;
    Parts p;
    ImportOutcome out = s.import(raw_update(p));  // no OTC: taken as it is
    EXPECT_EQ(out.refusal, ImportRefusal::kNone);
    bool present = false;
    EXPECT_EQ(otc_in_table(s, present), std::nullopt);
    EXPECT_TRUE(present);
    p.otc = 65099;  // a leak: the earlier version of the route leaves the table
    out = s.import(raw_update(p));
    EXPECT_EQ(out.refusal, ImportRefusal::kRouteLeak) << role_name(ours);
    EXPECT_EQ(out.refused[kV4], 1u);
    EXPECT_EQ(s.routes(kV4), 0u);
  }
}

TEST(Import, OtcFromALateralPeerMustBeThePeersAs) {
  Session s;
  s.rules.local_role = codec::Role::kPeer;
  Parts p;
  p.otc = kPeerAs;  // the peer marked it: fine
  EXPECT_EQ(s.import(raw_update(p)).refusal, ImportRefusal::kNone);
  bool present = false;
  EXPECT_EQ(otc_in_table(s, present), kPeerAs);
  p.otc = 65020;  // someone else's mark: a leak
  EXPECT_EQ(s.import(raw_update(p)).refusal, ImportRefusal::kRouteLeak);
  EXPECT_EQ(s.routes(kV4), 0u);
  p.otc.reset();  // none: ours is added with the peer's AS (ingress 3)
  EXPECT_EQ(s.import(raw_update(p)).refusal, ImportRefusal::kNone);
  EXPECT_EQ(otc_in_table(s, present), kPeerAs);
  EXPECT_TRUE(present);
}

TEST(Import, OtcIsAddedFromAProviderOrRouteServerAndKept) {
  for (codec::Role ours : {codec::Role::kCustomer, codec::Role::kRsClient}) {
    for (bool with_filter : {false, true}) {
      Session s;
      s.rules.local_role = ours;
      const Filter all{"all", {}, FilterAction::kAccept};
      if (with_filter) s.rules.filter = kept(all);
      Parts p;
      EXPECT_EQ(s.import(raw_update(p)).refusal, ImportRefusal::kNone);
      bool present = false;
      EXPECT_EQ(otc_in_table(s, present), kPeerAs) << role_name(ours) << with_filter;
      p.otc = 65020;  // set upstream already: kept as it came
      EXPECT_EQ(s.import(raw_update(p)).refusal, ImportRefusal::kNone);
      EXPECT_EQ(otc_in_table(s, present), 65020u);
    }
  }
}

TEST(Import, NoRoleOrAnInternalPeerLeavesOtcAlone) {
  Session s;
  Parts p;
  p.otc = 65099;
  EXPECT_EQ(s.import(raw_update(p)).refusal, ImportRefusal::kNone);
  bool present = false;
  EXPECT_EQ(otc_in_table(s, present), 65099u);
  Session internal({codec::kIpv4Unicast}, true);
  internal.rules.local_role = codec::Role::kProvider;  // the daemon never sets it for one; ignored anyway
  Parts q;
  q.path = {};
  q.otc = 65099;
  EXPECT_EQ(internal.import(raw_update(q)).refusal, ImportRefusal::kNone);
  EXPECT_EQ(otc_in_table(internal, present), 65099u);
}

// ---- LOCAL_PREF on routes from external peers (RFC 4271 5.1.5, 9.1.1)

// Two upstreams announce 198.51.100.0/24 into one table: A with the longer
// path, B with the shorter and a LOCAL_PREF of its own, which the decoder
// discards (it never counts). Without policy B's route is the best; an
// import filter that sets LOCAL_PREF 200 on A's routes makes A's win, and
// the route keeps 200 as its LOCAL_PREF (what internal peers are sent).
TEST(Import, LocalPrefSetByAnExternalPeersImportFilterDecidesTheBest) {
  constexpr uint32_t kPeerB = 65011;
  Table table;
  const auto rules_of = [](uint32_t peer_as) {
    ImportRules r;
    r.local_as = kLocalAs;
    r.router_id = r.cluster_id = 0x01010101;
    r.peer_as = peer_as;
    r.families = {codec::kIpv4Unicast};
    return r;
  };
  const auto add = [&](uint32_t peer_as, uint32_t router_id) {
    PeerInfo info;
    info.asn = peer_as;
    info.router_id = router_id;
    info.address = net::IpAddress::v4(router_id);
    return *table.add_peer(info);
  };
  const uint16_t a = add(kPeerAs, 0x0A000002), b = add(kPeerB, 0x0A000001);
  ImportRules ra = rules_of(kPeerAs), rb = rules_of(kPeerB);
  const auto import = [&](uint16_t slot, const ImportRules& rules, const Parts& p) {
    const auto body = raw_update(p);  // the view reads it in place
    const auto u = codec::UpdateView::decode(body, {}, codec::PeerType::kExternal);
    ASSERT_EQ(u.action(), codec::ErrorAction::kAttributeDiscard);  // B's LOCAL_PREF, or none
    Batch batch(table);
    (void)import_update(u, false, rules, batch);
    table.apply(slot, batch);
  };
  Parts pa;
  pa.path = {kPeerAs, 65020, 65030, 65040};
  pa.local_pref = 7;  // discarded too: A's degree is the filter's alone
  Parts pb;
  pb.path = {kPeerB, 65040};
  pb.local_pref = 1000;
  const auto best = [&] {
    uint16_t slot = UINT16_MAX;
    std::optional<uint32_t> lp;
    EXPECT_TRUE(table.lookup_all(static_cast<FamilyIndex>(kV4), *net::Prefix::parse("198.51.100.0/24"),
                                 [&](std::span<const RouteView> routes, int i) {
                                   ASSERT_EQ(routes.size(), 2u);
                                   ASSERT_GE(i, 0);
                                   const RouteView& r = routes[static_cast<size_t>(i)];
                                   slot = r.slot;
                                   if (r.attrs->has_local_pref()) lp = r.attrs->local_pref();
                                 }));
    return std::pair(slot, lp);
  };

  import(a, ra, pa);
  import(b, rb, pb);
  EXPECT_EQ(best(), std::pair(b, std::optional<uint32_t>()));  // shorter path; B's 1000 is gone

  FilterRule lp200;
  lp200.set_local_pref = 200;
  const Filter prefer{"prefer-a", {lp200}, FilterAction::kReject};
  ra.filter = kept(prefer);
  import(a, ra, pa);  // as after a ROUTE-REFRESH under the new filter
  EXPECT_EQ(best(), std::pair(a, std::optional<uint32_t>(200)));

  // B's filter sets 200 too: the tie goes on to the AS_PATH, and B wins.
  rb.filter = kept(prefer);
  import(b, rb, pb);
  EXPECT_EQ(best(), std::pair(b, std::optional<uint32_t>(200)));

  // B's filter changes the MED alone: the set it builds from the UPDATE
  // has no LOCAL_PREF either (B's 1000 is still discarded), so B's degree
  // is the default and A's 200 wins again.
  FilterRule med5;
  med5.set_med = 5;
  const Filter med_only{"med-only", {med5}, FilterAction::kReject};
  rb.filter = kept(med_only);
  import(b, rb, pb);
  EXPECT_EQ(best(), std::pair(a, std::optional<uint32_t>(200)));
}

// ---- properties

// The refusal a naive reading of the attributes gives (4-octet session):
// step 3 on the path as written, then the loop checks.
ImportRefusal model(const codec::PathAttributes& pa, const ImportRules& r) {
  const auto& segs = pa.as_path ? pa.as_path->segments : std::vector<codec::AsSegment>{};
  if (!r.internal) {
    if (segs.empty()) return ImportRefusal::kEmptyAsPath;
    if (r.enforce_first_as && (segs[0].type != codec::SegmentType::kAsSequence || segs[0].asns.empty() ||
                               segs[0].asns[0] != r.peer_as))
      return ImportRefusal::kFirstAs;
  }
  uint32_t own = 0;
  for (const auto& seg : segs) own += static_cast<uint32_t>(std::count(seg.asns.begin(), seg.asns.end(), r.local_as));
  if (own > r.allow_own_as) return ImportRefusal::kOwnAs;
  if (r.internal && ((pa.originator_id && *pa.originator_id == r.router_id) ||
                     std::find(pa.cluster_list.begin(), pa.cluster_list.end(), r.cluster_id) != pa.cluster_list.end()))
    return ImportRefusal::kReflection;
  return ImportRefusal::kNone;
}

RC_GTEST_PROP(Import, RefusesExactlyWhatTheModelRefusesWithAndWithoutAFilter, ()) {
  const bool internal = *rc::gen::arbitrary<bool>();
  codec::PathAttributes pa = *testing::gen_attrs();
  Session plain({codec::kIpv4Unicast}, internal);
  Session filtered({codec::kIpv4Unicast}, internal);
  // The peer's AS first, most of the time; our AS and ids from the path
  // now and then.
  if (pa.as_path && !pa.as_path->segments.empty() && *rc::gen::inRange(0, 4) != 0) {
    auto& first = pa.as_path->segments.front();
    if (first.type == codec::SegmentType::kAsSequence && !first.asns.empty()) first.asns[0] = plain.rules.peer_as;
  }
  const bool enforce = *rc::gen::arbitrary<bool>();
  const auto allow = *rc::gen::inRange<uint8_t>(0, 2);
  Filter all{"all", {}, FilterAction::kAccept};
  for (Session* s : {&plain, &filtered}) {
    s->rules.enforce_first_as = enforce;
    s->rules.allow_own_as = allow;
    if (pa.originator_id && *rc::gen::inRange(0, 3) == 0) s->rules.router_id = *pa.originator_id;
  }
  filtered.rules.router_id = plain.rules.router_id;
  filtered.rules.filter = kept(all);
  std::vector<codec::NlriPrefix> prefixes{{*net::Prefix::make(net::IpAddress::v4(0x0A000000u), 8), 0},
                                          {*net::Prefix::make(net::IpAddress::v4(0xC6336400u), 24), 0}};
  std::vector<std::byte> msgs;
  RC_PRE(codec::UpdateBuilder(plain.params)
             .announce(codec::kIpv4Unicast, codec::AttributeSet::from(pa), prefixes, msgs)
             .ok());
  const size_t len = std::to_integer<size_t>(msgs[16]) << 8 | std::to_integer<size_t>(msgs[17]);
  RC_PRE(len == msgs.size());  // one message
  const std::vector<std::byte> body(msgs.begin() + codec::kHeaderLen, msgs.end());
  const auto u = codec::UpdateView::decode(body, plain.params,
                                           internal ? codec::PeerType::kInternal : codec::PeerType::kExternal);
  RC_PRE(u.action() < codec::ErrorAction::kTreatAsWithdraw);
  const ImportOutcome a = plain.import(body);
  const ImportOutcome b = filtered.import(body);
  const ImportRefusal want = model(pa, plain.rules);
  RC_ASSERT(a.refusal == want);
  RC_ASSERT(b.refusal == want);
  RC_ASSERT(a.announced == b.announced);
  RC_ASSERT(a.refused == b.refused);
  RC_ASSERT(a.first_as == b.first_as);
  RC_ASSERT(a.announced[kV4] == 2u);
  RC_ASSERT(a.refused[kV4] == (want == ImportRefusal::kNone ? 0u : 2u));
  RC_ASSERT(plain.routes(kV4) == (want == ImportRefusal::kNone ? 2u : 0u));
  RC_ASSERT(filtered.routes(kV4) == plain.routes(kV4));
  RC_TAG(import_refusal_name(want));
}

// An import policy with attribute conditions of every kind, on random
// UPDATEs of both families (NEXT_HOP and MP_REACH_NLRI): what enters the
// table is what the policy decides and applies on the UPDATE's canonical
// set, prefix by prefix, whichever way import_update takes it in (whole
// as it came, whole with the changes written in place, or prefix by
// prefix).
RC_GTEST_PROP(Import, APolicyGivesTheTableWhatItDecidesOnTheSet, ()) {
  codec::PathAttributes pa = *testing::gen_attrs();
  if (!pa.as_path) pa.as_path = codec::AsPath{};
  pa.as_path->segments.insert(pa.as_path->segments.begin(), {codec::SegmentType::kAsSequence, {kPeerAs}});
  if (*rc::gen::arbitrary<bool>()) pa.communities.push_back(65000u << 16 | 100);
  if (*rc::gen::arbitrary<bool>()) pa.large_communities.push_back({65000, 1, 2});
  if (*rc::gen::inRange(0, 4) == 0) pa.otc = 65020;
  const bool v6 = *rc::gen::arbitrary<bool>();
  if (v6) {
    pa.next_hop.reset();
    pa.mp_family = codec::kIpv6Unicast;
    pa.mp_next_hop = codec::NextHop{*net::IpAddress::parse(*rc::gen::element<std::string>("2001:db8::1", "2001:db9::1")),
                                    std::nullopt};
  } else if (*rc::gen::arbitrary<bool>()) {
    pa.next_hop = net::IpAddress::v4(0xCB007101u);  // 203.0.113.1
  }
  // Terms from a menu of every attribute condition and a route one.
  std::vector<PolicyTerm> terms(static_cast<size_t>(*rc::gen::inRange(1, 6)));
  for (auto& t : terms) {
    PolicyMatch& m = t.match;
    switch (*rc::gen::inRange(0, 14)) {  // 10 and above: the route's prefix length
      case 0: m.community = {*CommunityPattern::parse(*rc::gen::element<std::string>("65000:100", "65000:*", "1:*"))}; break;
      case 1: m.med = NumberRange{0, *rc::gen::element<uint32_t>(100u, 1u << 31)}; break;
      case 2: m.origin = static_cast<uint8_t>(*rc::gen::inRange(1, 8)); break;
      case 3: m.as_path = *rc::gen::element<std::string>("_65010_", "^65010$", "_6[0-9]+_", "^65010 [0-9]+"); break;
      case 4: m.as_path_length = NumberRange{1, *rc::gen::inRange(1u, 6u)}; break;
      case 5: m.next_hop = {*net::Prefix::parse(*rc::gen::element<std::string>("192.0.2.0/24", "2001:db8::/32"))}; break;
      case 6: m.local_pref = NumberRange{0, 1000}; break;
      case 7: m.community = {*CommunityPattern::parse("65000:1:*")}; break;
      case 8: m.otc = *rc::gen::arbitrary<bool>(); break;
      case 9: m.origin_as = {{1, 40000}}; break;
      default: m.prefix_length = NumberRange{8, *rc::gen::inRange(8u, 33u)}; break;
    }
    if (&t == &terms.front() && *rc::gen::arbitrary<bool>())  // some of the prefixes, not all
      m.prefix_length = v6 ? NumberRange{32, 40} : NumberRange{8, 20};
    t.then = static_cast<PolicyThen>(*rc::gen::inRange(0, 3));
    if (t.then != PolicyThen::kReject) {
      if (*rc::gen::arbitrary<bool>()) t.set.community_add = {*CommunityPattern::parse("64512:1")};
      if (*rc::gen::inRange(0, 3) == 0) t.set.local_pref = 50;
      if (*rc::gen::inRange(0, 3) == 0) {
        t.set.med_op = MedOp::kAdd;
        t.set.med = 10;
      }
    }
  }
  auto chain = PolicyChain::compile({PolicyDef{"p", terms, static_cast<PolicyThen>(*rc::gen::inRange(0, 3))}});
  RC_ASSERT(chain);
  Session s;
  s.params.four_octet_as = true;
  s.rules.enforce_first_as = false;
  s.rules.filter = chain.get();
  std::vector<codec::NlriPrefix> prefixes;
  const uint32_t first_len = *rc::gen::inRange(0u, 4u);
  for (uint32_t i = 0, n = *rc::gen::inRange(2, 6); i < n; ++i) {
    constexpr std::array<uint8_t, 4> kLens = {8, 24, 16, 28};  // inside and outside the ranges above, alternately
    const uint8_t len = kLens[(first_len + i) % kLens.size()];
    const std::string v6_base = "200" + std::to_string(i + 1) + ":db8::";  // distinct in the first 16 bits
    prefixes.push_back({v6 ? *net::Prefix::make(*net::IpAddress::parse(v6_base), static_cast<uint8_t>(len + 24))
                           : *net::Prefix::make(net::IpAddress::v4((10 + i) << 24), len),
                        0});
  }
  const codec::AttributeSet set = codec::AttributeSet::from(pa);
  std::vector<std::byte> msgs;
  RC_PRE(codec::UpdateBuilder(s.params).announce(v6 ? codec::kIpv6Unicast : codec::kIpv4Unicast, set, prefixes, msgs).ok());
  const size_t len = std::to_integer<size_t>(msgs[16]) << 8 | std::to_integer<size_t>(msgs[17]);
  RC_PRE(len == msgs.size());
  const std::vector<std::byte> body(msgs.begin() + codec::kHeaderLen, msgs.end());
  const auto u = codec::UpdateView::decode(body, s.params, codec::PeerType::kExternal);
  RC_PRE(u.action() < codec::ErrorAction::kTreatAsWithdraw);
  const ImportOutcome out = s.import(body);
  RC_PRE(out.refusal == ImportRefusal::kNone);

  // The model: the set the message gives, each prefix evaluated and the
  // verdict applied to the decoded set.
  const codec::AttributeSet canonical = u.attribute_set();
  std::vector<std::pair<std::string, std::vector<std::byte>>> want, got;
  PolicyChain::Prepared scratch;
  for (const auto& p : prefixes) {
    RouteFacts f;
    f.prefix = &p.prefix;
    f.peer_as = kPeerAs;
    const PolicyVerdict v = chain->evaluate(canonical, f, scratch);
    if (!v.accept) continue;
    codec::PathAttributes x = canonical.decode();
    ApplyContext ctx;
    ctx.local_as = kLocalAs;
    ctx.family = v6 ? codec::kIpv6Unicast : codec::kIpv4Unicast;
    RC_ASSERT(chain->apply(v, x, ctx));
    const codec::AttributeSet changed = codec::AttributeSet::from(x);
    const auto w = changed.wire();
    want.emplace_back(p.prefix.to_string(), std::vector<std::byte>(w.begin(), w.end()));
  }
  s.table.walk([&](const Change& c, const std::optional<RouteView>&, std::span<const Route> routes) {
    for (const Route& r : routes) {
      const auto w = r.attrs->wire();
      got.emplace_back(c.prefix.to_string(), std::vector<std::byte>(w.begin(), w.end()));
    }
  });
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  RC_ASSERT(got == want);
  RC_ASSERT(out.refused[v6 ? kV6 : kV4] == prefixes.size() - want.size());
  RC_TAG(want.size() == prefixes.size() ? "all accepted" : want.empty() ? "none accepted" : "some");
}

// Whatever is negotiated, a family outside it never has a route, and the
// negotiated ones get theirs.
RC_GTEST_PROP(Import, UnnegotiatedFamiliesNeverReachTheTable, ()) {
  codec::FamilySet fams;
  const bool v4 = *rc::gen::arbitrary<bool>(), v6 = *rc::gen::arbitrary<bool>();
  if (v4) fams.add(codec::kIpv4Unicast);
  if (v6) fams.add(codec::kIpv6Unicast);
  Session s(fams);
  Filter all{"all", {}, FilterAction::kAccept};
  if (*rc::gen::arbitrary<bool>()) s.rules.filter = kept(all);
  Parts p;
  p.v4 = *rc::gen::arbitrary<bool>();
  p.v6_reach = *rc::gen::arbitrary<bool>();
  p.v6_unreach = *rc::gen::arbitrary<bool>();
  const ImportOutcome out = s.import(raw_update(p));
  RC_ASSERT(s.routes(kV4) == (v4 && p.v4 ? 1u : 0u));
  RC_ASSERT(s.routes(kV6) == (v6 && p.v6_reach ? 1u : 0u));
  RC_ASSERT(out.unnegotiated == ((!v4 && p.v4) || (!v6 && (p.v6_reach || p.v6_unreach))));
  RC_ASSERT(out.unnegotiated_prefixes == (!v4 && p.v4 ? 1u : 0u) + (!v6 ? (p.v6_reach ? 1u : 0u) + (p.v6_unreach ? 1u : 0u) : 0u));
}

// ---- max_prefixes

TEST(PrefixLimit, NotificationDataIsAfiSafiAndTheLimit) {
  EXPECT_EQ(max_prefixes_data(static_cast<FamilyIndex>(kV6), 250000),
            bytes_of({0, 2, 1, 0x00, 0x03, 0xd0, 0x90}));
  EXPECT_EQ(max_prefixes_data(static_cast<FamilyIndex>(kV4), 1200000), bytes_of({0, 1, 1, 0x00, 0x12, 0x4f, 0x80}));
}

TEST(PrefixLimit, WarnsOnceAndExceedsPastTheLimit) {
  PrefixLimits l;
  l.max[kV4] = 100;
  PrefixLimitWatch w(l);
  std::array<uint64_t, kFamilies> r{};
  r[kV4] = 89;
  EXPECT_TRUE(w.check(r).empty());
  r[kV4] = 90;
  auto e = w.check(r);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kind, LimitEvent::Kind::kWarn);
  r[kV4] = 100;  // at the limit: not past it
  EXPECT_TRUE(w.check(r).empty());
  r[kV4] = 101;
  e = w.check(r);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kind, LimitEvent::Kind::kExceeded);
  EXPECT_EQ(e[0].routes, 101u);
  EXPECT_EQ(e[0].limit, 100u);
  EXPECT_TRUE(w.check(r).empty());
  r[kV6] = 1u << 30;  // no limit there
  EXPECT_TRUE(w.check(r).empty());
  w.reset();
  EXPECT_EQ(w.check(r).size(), 2u);
}

RC_GTEST_PROP(PrefixLimit, EventsAreTheCrossingsOfANaiveModel, ()) {
  PrefixLimits l;
  l.max[kV4] = *rc::gen::inRange<uint32_t>(1, 50);
  l.warn_percent = *rc::gen::inRange<uint8_t>(1, 101);
  PrefixLimitWatch w(l);
  const auto counts = *rc::gen::container<std::vector<uint64_t>>(rc::gen::inRange<uint64_t>(0, 60));
  bool was_warn = false, was_over = false;
  for (uint64_t n : counts) {
    std::array<uint64_t, kFamilies> r{};
    r[kV4] = n;
    const auto events = w.check(r);
    const uint64_t threshold = (uint64_t{l.max[kV4]} * l.warn_percent + 99) / 100;  // rounded up
    const bool is_warn = n >= threshold;
    const bool is_over = n > l.max[kV4];
    std::vector<LimitEvent::Kind> want;
    if (is_warn && !was_warn) want.push_back(LimitEvent::Kind::kWarn);
    if (is_over && !was_over) want.push_back(LimitEvent::Kind::kExceeded);
    RC_ASSERT(events.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) RC_ASSERT(events[i].kind == want[i]);
    was_warn = is_warn;
    was_over = is_over;
  }
}

}  // namespace
}  // namespace petrel::table
