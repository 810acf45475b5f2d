// The export rules (table/export.h) and the import/export filters
// (table/filter.h): one test per rule of export.h's list, the RFC 4456
// reflection matrix, the own-AS and reflection-loop checks on import, and
// the filter's prefix ranges, community conditions and first-match order.
#include "codec/as_path.h"
#include "table/export.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "codec/communities.h"
#include "table/filter.h"

namespace petrel::table {
namespace {

using codec::AsPath;
using codec::AsSegment;
using codec::PathAttributes;
using codec::SegmentType;

const codec::Family kV4{1, 1};
const codec::Family kV6{2, 1};

net::IpAddress ip(const char* s) { return *net::IpAddress::parse(s); }
net::Prefix pfx(const char* s) { return *net::Prefix::parse(s); }

PathAttributes learned(std::vector<uint32_t> path) {
  PathAttributes p;
  p.origin = codec::Origin::kIgp;
  p.as_path = AsPath{{AsSegment{SegmentType::kAsSequence, std::move(path)}}};
  p.next_hop = ip("198.18.0.2");
  p.med = 50;
  return p;
}

// An IPv6 route from a peer: its next hop in MP_REACH_NLRI.
PathAttributes learned_v6(std::vector<uint32_t> path, const char* next_hop) {
  PathAttributes p = learned(std::move(path));
  p.next_hop.reset();
  p.mp_family = kV6;
  p.mp_next_hop = codec::NextHop{ip(next_hop), std::nullopt};
  return p;
}

ExportTarget external_target() {
  ExportTarget t;
  t.local_as = 64500;
  t.cluster_id = 0x0A000001;
  t.slot = 7;
  t.next_hop_v4 = ip("198.18.1.1");
  t.next_hop_v6 = codec::NextHop{ip("fd00:1::1"), ip("fe80::1")};
  return t;
}

ExportTarget internal_target(bool client = false) {
  ExportTarget t = external_target();
  t.internal = true;
  t.rr_client = client;
  return t;
}

ExportTarget route_server_client_target() {
  ExportTarget t = external_target();
  t.route_server_client = true;
  return t;
}

PeerInfo peer(bool internal, bool client = false) {
  PeerInfo p;
  p.internal = internal;
  p.rr_client = client;
  p.asn = internal ? 64500 : 64496;
  p.router_id = 0xC6120002;
  return p;
}

Exported run(const ExportTarget& to, const PeerInfo& from, const PathAttributes& pa, codec::Family f = kV4,
             uint32_t slot = 3) {
  return export_route(to, ExportSource{&from, slot}, f, codec::AttributeSet::from(pa));
}

TEST(Export, NeverBackToTheSender) {
  PeerInfo from = peer(false);
  EXPECT_EQ(run(external_target(), from, learned({64496}), kV4, 7).verdict, ExportVerdict::kToSender);
  EXPECT_EQ(run(external_target(), from, learned({64496}), kV4, 6).verdict, ExportVerdict::kSend);
}

TEST(Export, ToExternalPrependsSetsNextHopDropsLocalPrefMedAndReflection) {
  PathAttributes pa = learned({64496, 64511});
  pa.local_pref = 300;
  pa.originator_id = 1;
  pa.cluster_list = {2, 3};
  pa.communities = {0x00010002};
  auto out = run(external_target(), peer(true), pa);
  ASSERT_EQ(out.verdict, ExportVerdict::kSend);
  PathAttributes got = out.attrs.decode();
  ASSERT_TRUE(got.as_path);
  EXPECT_EQ(got.as_path->segments.size(), 1u);
  EXPECT_EQ(got.as_path->segments[0].asns, (std::vector<uint32_t>{64500, 64496, 64511}));
  EXPECT_EQ(got.next_hop, ip("198.18.1.1"));
  EXPECT_FALSE(got.local_pref);
  EXPECT_FALSE(got.med);
  EXPECT_FALSE(got.originator_id);
  EXPECT_TRUE(got.cluster_list.empty());
  EXPECT_EQ(got.communities, pa.communities);  // carried unchanged
}

// RFC 9234 section 5, egress: by our role on the target session.
TEST(Export, OtcEgressByRole) {
  using codec::Role;
  PathAttributes plain = learned({64496});
  PathAttributes marked = plain;
  marked.otc = 64496;
  const auto to = [](std::optional<Role> role) {
    ExportTarget t = external_target();
    t.local_role = role;
    return t;
  };
  // A route that carries OTC goes to no provider, lateral peer or route
  // server (our roles customer, peer, rs-client) ...
  for (Role ours : {Role::kCustomer, Role::kPeer, Role::kRsClient})
    EXPECT_EQ(run(to(ours), peer(false), marked).verdict, ExportVerdict::kOnlyToCustomer) << role_name(ours);
  // ... and goes unchanged to a customer or route-server client.
  for (Role ours : {Role::kProvider, Role::kRouteServer}) {
    auto out = run(to(ours), peer(false), marked);
    ASSERT_EQ(out.verdict, ExportVerdict::kSend) << role_name(ours);
    EXPECT_EQ(out.attrs.otc(), 64496u);
  }
  // Without OTC: ours added towards a customer, a lateral peer, an RS client.
  for (Role ours : {Role::kProvider, Role::kPeer, Role::kRouteServer}) {
    auto out = run(to(ours), peer(false), plain);
    ASSERT_EQ(out.verdict, ExportVerdict::kSend) << role_name(ours);
    EXPECT_EQ(out.attrs.otc(), 64500u) << role_name(ours);
  }
  // Towards a provider or a route server: sent, no OTC added.
  for (Role ours : {Role::kCustomer, Role::kRsClient}) {
    auto out = run(to(ours), peer(false), plain);
    ASSERT_EQ(out.verdict, ExportVerdict::kSend) << role_name(ours);
    EXPECT_FALSE(out.attrs.otc()) << role_name(ours);
  }
  // No role, or an internal peer: OTC passes as it is, none added.
  EXPECT_EQ(run(to(std::nullopt), peer(false), marked).attrs.otc(), 64496u);
  EXPECT_FALSE(run(to(std::nullopt), peer(false), plain).attrs.otc());
  ExportTarget internal = internal_target();
  internal.local_role = Role::kCustomer;
  EXPECT_EQ(run(internal, peer(false), marked).attrs.otc(), 64496u);
}

TEST(Export, RoleNamesRoundTrip) {
  for (codec::Role r : {codec::Role::kProvider, codec::Role::kRouteServer, codec::Role::kRsClient,
                        codec::Role::kCustomer, codec::Role::kPeer})
    EXPECT_EQ(parse_role(role_name(r)), r);
  EXPECT_FALSE(parse_role("upstream"));
  EXPECT_FALSE(parse_role(""));
}

TEST(Export, ToExternalRemovesConfederationSegmentsAndStartsANewSequenceBeforeASet) {
  PathAttributes pa = learned({});
  pa.as_path = AsPath{{AsSegment{SegmentType::kConfedSequence, {65001}}, AsSegment{SegmentType::kAsSet, {1, 2}}}};
  auto got = run(external_target(), peer(true), pa).attrs.decode();
  ASSERT_EQ(got.as_path->segments.size(), 2u);
  EXPECT_EQ(got.as_path->segments[0], (AsSegment{SegmentType::kAsSequence, {64500}}));
  EXPECT_EQ(got.as_path->segments[1], (AsSegment{SegmentType::kAsSet, {1, 2}}));
}

TEST(Export, AFullLeadingSequenceGetsANewSegment) {
  std::vector<uint32_t> full(255, 64496);
  auto got = run(external_target(), peer(false), learned(full)).attrs.decode();
  ASSERT_EQ(got.as_path->segments.size(), 2u);
  EXPECT_EQ(got.as_path->segments[0].asns, std::vector<uint32_t>{64500});
  EXPECT_EQ(got.as_path->length(), 256u);
}

TEST(Export, APathThatOurAsWouldOverflowIsNotSent) {
  // 64 full sequences and one of 31: 65,534 octets, the most a peer can
  // send. Our AS needs a new segment (6 octets): 65,540 would not fit the
  // 16-bit length, and the set's builder would leave AS_PATH out.
  PathAttributes pa = learned(std::vector<uint32_t>(255, 64496));
  for (int i = 0; i < 63; ++i) pa.as_path->segments.push_back(pa.as_path->segments.front());
  pa.as_path->segments.push_back(AsSegment{SegmentType::kAsSequence, std::vector<uint32_t>(31, 64497)});
  ASSERT_EQ(codec::as_path_value_size(*pa.as_path, codec::AsWidth::k4), 65534u);
  EXPECT_EQ(run(external_target(), peer(false), pa).verdict, ExportVerdict::kOversized);
  // To an internal peer the path goes as received.
  auto in = run(internal_target(), peer(false), pa);
  ASSERT_EQ(in.verdict, ExportVerdict::kSend);
  EXPECT_EQ(in.attrs.decode().as_path, pa.as_path);
  // Two ASes shorter (65,526 + 6 octets) still goes out, with ours in front.
  pa.as_path->segments.back().asns.resize(29);
  auto out = run(external_target(), peer(false), pa);
  ASSERT_EQ(out.verdict, ExportVerdict::kSend);
  EXPECT_EQ(out.attrs.decode().as_path->first_as(), 64500u);
}

// (A route-server client gets routes of our own AS as any external peer.)
TEST(Export, MedOfOriginatedRoutesGoesOut) {
  PeerInfo local;
  local.local = true;
  PathAttributes pa;
  pa.origin = codec::Origin::kIgp;
  pa.as_path = AsPath{};
  pa.med = 10;
  for (const ExportTarget& t : {external_target(), route_server_client_target()}) {
    auto got = run(t, local, pa).attrs.decode();
    EXPECT_EQ(got.med, 10u);
    EXPECT_EQ(got.as_path->segments[0].asns, std::vector<uint32_t>{64500});
    EXPECT_EQ(got.next_hop, ip("198.18.1.1"));
  }
}

TEST(Export, ToInternalKeepsPathAndNextHopAndSendsLocalPref) {
  auto got = run(internal_target(), peer(false), learned({64496})).attrs.decode();
  EXPECT_EQ(got.as_path->segments[0].asns, std::vector<uint32_t>{64496});
  EXPECT_EQ(got.next_hop, ip("198.18.0.2"));
  EXPECT_EQ(got.local_pref, 100u);
  EXPECT_EQ(got.med, 50u);
  EXPECT_FALSE(got.originator_id);
  PathAttributes pa = learned({64496});
  pa.local_pref = 250;  // set by import policy
  EXPECT_EQ(run(internal_target(), peer(false), pa).attrs.decode().local_pref, 250u);
}

TEST(Export, OriginatedWithoutNextHopGetsOursToInternalPeers) {
  PeerInfo local;
  local.local = true;
  PathAttributes pa;
  pa.origin = codec::Origin::kIgp;
  auto got = run(internal_target(), local, pa).attrs.decode();
  EXPECT_EQ(got.next_hop, ip("198.18.1.1"));
  pa.next_hop = ip("192.0.2.9");
  EXPECT_EQ(run(internal_target(), local, pa).attrs.decode().next_hop, ip("192.0.2.9"));
}

TEST(Export, NextHopSelfToInternalPeersButNotOnReflectedRoutes) {
  ExportTarget to = internal_target(true);
  to.next_hop = NextHopMode::kSelf;
  // Learned from an external peer: ours.
  EXPECT_EQ(run(to, peer(false), learned({64496})).attrs.decode().next_hop, ip("198.18.1.1"));
  // Originated here with a next hop of its own: ours as well.
  PeerInfo local;
  local.local = true;
  PathAttributes own;
  own.origin = codec::Origin::kIgp;
  own.next_hop = ip("192.0.2.9");
  EXPECT_EQ(run(to, local, own).attrs.decode().next_hop, ip("198.18.1.1"));
  // Reflected (from an internal client): the next hop is not changed (RFC 4456 section 10).
  auto reflected = run(to, peer(true, true), learned({64496})).attrs.decode();
  EXPECT_EQ(reflected.next_hop, ip("198.18.0.2"));
  EXPECT_EQ(reflected.cluster_list.size(), 1u);
  // IPv6: our global and link-local addresses.
  PathAttributes v6 = learned_v6({64496}, "2001:db8:9::2");
  auto got6 = run(to, peer(false), v6, kV6).attrs.decode();
  ASSERT_TRUE(got6.mp_next_hop);
  EXPECT_EQ(got6.mp_next_hop->global, ip("fd00:1::1"));
  // Without the mode, the default: unchanged.
  EXPECT_EQ(run(internal_target(), peer(false), learned({64496})).attrs.decode().next_hop, ip("198.18.0.2"));
}

TEST(Export, NextHopUnchangedToExternalPeersOnlyOnTheSharedNetwork) {
  ExportTarget to = external_target();
  to.next_hop = NextHopMode::kUnchanged;
  to.shared_v4 = pfx("198.18.0.0/24");
  // The route's next hop is on the network we share with the peer: kept
  // (RFC 4271 section 5.1.3's third-party next hop); the rest of the
  // rules still apply (our AS prepended, MED dropped).
  auto kept = run(to, peer(false), learned({64496})).attrs.decode();
  EXPECT_EQ(kept.next_hop, ip("198.18.0.2"));
  EXPECT_EQ(kept.as_path->segments[0].asns, (std::vector<uint32_t>{64500, 64496}));
  EXPECT_FALSE(kept.med);
  // Elsewhere: ours, as without the mode.
  PathAttributes far = learned({64496});
  far.next_hop = ip("203.0.113.7");
  EXPECT_EQ(run(to, peer(false), far).attrs.decode().next_hop, ip("198.18.1.1"));
  // No shared network known: ours.
  to.shared_v4.reset();
  EXPECT_EQ(run(to, peer(false), learned({64496})).attrs.decode().next_hop, ip("198.18.1.1"));
  // An IPv6 one on the shared IPv6 network, in MP_REACH_NLRI.
  to.shared_v6 = pfx("2001:db8:9::/64");
  PathAttributes v6 = learned_v6({64496}, "2001:db8:9::2");
  auto got6 = run(to, peer(false), v6, kV6).attrs.decode();
  ASSERT_TRUE(got6.mp_next_hop);
  EXPECT_EQ(got6.mp_next_hop->global, ip("2001:db8:9::2"));
}

TEST(Export, ReflectionMatrix) {
  // RFC 4456 section 6: from a client to everyone, from a non-client to
  // clients only; from an external peer to every internal peer.
  struct Case {
    bool from_internal, from_client, to_client;
    ExportVerdict want;
  } cases[] = {
      {true, false, false, ExportVerdict::kInternalToInternal},
      {true, false, true, ExportVerdict::kSend},
      {true, true, false, ExportVerdict::kSend},
      {true, true, true, ExportVerdict::kSend},
      {false, false, false, ExportVerdict::kSend},
  };
  for (const auto& c : cases) {
    auto out = run(internal_target(c.to_client), peer(c.from_internal, c.from_client), learned({}));
    EXPECT_EQ(out.verdict, c.want) << c.from_internal << c.from_client << c.to_client;
    if (out.verdict == ExportVerdict::kSend && c.from_internal) {
      auto got = out.attrs.decode();
      EXPECT_EQ(got.originator_id, 0xC6120002u);
      EXPECT_EQ(got.cluster_list, std::vector<uint32_t>{0x0A000001});
    }
  }
}

TEST(Export, ReflectionKeepsAnOriginatorIdAndPrependsTheCluster) {
  PathAttributes pa = learned({});
  pa.originator_id = 42;
  pa.cluster_list = {9};
  auto got = run(internal_target(true), peer(true), pa).attrs.decode();
  EXPECT_EQ(got.originator_id, 42u);
  EXPECT_EQ(got.cluster_list, (std::vector<uint32_t>{0x0A000001, 9}));
}

TEST(Export, WellKnownCommunities) {
  PathAttributes pa = learned({64496});
  pa.communities = {codec::community::kNoExport};
  EXPECT_EQ(run(external_target(), peer(false), pa).verdict, ExportVerdict::kNoExport);
  EXPECT_EQ(run(internal_target(), peer(false), pa).verdict, ExportVerdict::kSend);
  pa.communities = {codec::community::kNoExportSubconfed};
  EXPECT_EQ(run(external_target(), peer(false), pa).verdict, ExportVerdict::kNoExport);
  EXPECT_EQ(run(internal_target(), peer(false), pa).verdict, ExportVerdict::kSend);
  pa.communities = {codec::community::kNoAdvertise};
  EXPECT_EQ(run(external_target(), peer(false), pa).verdict, ExportVerdict::kNoAdvertise);
  EXPECT_EQ(run(internal_target(), peer(false), pa).verdict, ExportVerdict::kNoAdvertise);
}

TEST(Export, Ipv6NextHopIsGlobalAndLinkLocal) {
  PathAttributes pa = learned({64496});
  pa.next_hop.reset();
  pa.mp_family = kV6;
  pa.mp_next_hop = codec::NextHop{ip("fd00::2"), std::nullopt};
  auto got = run(external_target(), peer(false), pa, kV6).attrs.decode();
  ASSERT_TRUE(got.mp_next_hop);
  EXPECT_EQ(got.mp_next_hop->global, ip("fd00:1::1"));
  EXPECT_EQ(got.mp_next_hop->link_local, ip("fe80::1"));
  EXPECT_FALSE(got.next_hop);
  // To an internal peer the next hop stays.
  auto in = run(internal_target(), peer(false), pa, kV6).attrs.decode();
  EXPECT_EQ(in.mp_next_hop->global, ip("fd00::2"));
}

TEST(Export, NoAddressOfTheFamilyMeansNotSent) {
  ExportTarget t = external_target();
  t.next_hop_v4.reset();
  EXPECT_EQ(run(t, peer(false), learned({64496})).verdict, ExportVerdict::kNoNextHop);
  t.extended_next_hop_v4 = true;  // RFC 8950: an IPv6 next hop for IPv4
  auto out = run(t, peer(false), learned({64496}));
  ASSERT_EQ(out.verdict, ExportVerdict::kSend);
  EXPECT_EQ(out.attrs.decode().mp_next_hop->global, ip("fd00:1::1"));
}

// RFC 7947 section 2.2: to a route-server client, a route from another AS
// goes as it came: AS_PATH (2.2.2.1), NEXT_HOP (2.2.1), MED (2.2.3) and
// communities (2.2.4); what is for our AS alone goes as to any external peer.
TEST(Export, RouteServerClientGetsPathNextHopMedAndCommunitiesUnchanged) {
  PathAttributes pa = learned({64496, 64511});
  pa.communities = {0x00010002, 0xFDE90001};
  pa.local_pref = 300;  // set by our import policy
  pa.originator_id = 1;
  pa.cluster_list = {2};
  auto out = run(route_server_client_target(), peer(false), pa);
  ASSERT_EQ(out.verdict, ExportVerdict::kSend);
  PathAttributes got = out.attrs.decode();
  ASSERT_EQ(got.as_path->segments.size(), 1u);
  EXPECT_EQ(got.as_path->segments[0].asns, (std::vector<uint32_t>{64496, 64511}));
  EXPECT_EQ(got.next_hop, ip("198.18.0.2"));
  EXPECT_EQ(got.med, 50u);
  EXPECT_EQ(got.communities, pa.communities);
  EXPECT_FALSE(got.local_pref);
  EXPECT_FALSE(got.originator_id);
  EXPECT_TRUE(got.cluster_list.empty());
  // The same route to an external peer that is not a client is changed.
  auto plain = run(external_target(), peer(false), pa).attrs.decode();
  EXPECT_EQ(plain.as_path->first_as(), 64500u);
  EXPECT_EQ(plain.next_hop, ip("198.18.1.1"));
  EXPECT_FALSE(plain.med);
}

TEST(Export, RouteServerClientKeepsTheSenderAndWellKnownCommunityRules) {
  PathAttributes pa = learned({64496});
  EXPECT_EQ(run(route_server_client_target(), peer(false), pa, kV4, 7).verdict, ExportVerdict::kToSender);
  pa.communities = {codec::community::kNoExport};
  EXPECT_EQ(run(route_server_client_target(), peer(false), pa).verdict, ExportVerdict::kNoExport);
  pa.communities = {codec::community::kNoAdvertise};
  EXPECT_EQ(run(route_server_client_target(), peer(false), pa).verdict, ExportVerdict::kNoAdvertise);
}

// Originated routes: MedOfOriginatedRoutesGoesOut.
TEST(Export, RouteServerClientGetsRoutesOfInternalPeersAsAnyExternalPeer) {
  auto internal = run(route_server_client_target(), peer(true), learned({64511})).attrs.decode();
  EXPECT_EQ(internal.as_path->segments[0].asns, (std::vector<uint32_t>{64500, 64511}));
  EXPECT_EQ(internal.next_hop, ip("198.18.1.1"));
  EXPECT_FALSE(internal.med);
}

// RFC 2545 section 3 with RFC 7947 section 2.2.1: the global next hop
// unchanged; its link-local companion only to a client on our link (where
// the route server's clients meet); a link-local next hop alone cannot go
// to a client off our link.
TEST(Export, RouteServerClientIpv6NextHopAndItsLinkLocalHalf) {
  PathAttributes pa = learned({64496});
  pa.next_hop.reset();
  pa.mp_family = kV6;
  pa.mp_next_hop = codec::NextHop{ip("fd00::2"), ip("fe80::2")};
  auto on_link = run(route_server_client_target(), peer(false), pa, kV6).attrs.decode();
  ASSERT_TRUE(on_link.mp_next_hop);
  EXPECT_EQ(on_link.mp_next_hop->global, ip("fd00::2"));
  EXPECT_EQ(on_link.mp_next_hop->link_local, ip("fe80::2"));
  EXPECT_EQ(on_link.as_path->segments[0].asns, std::vector<uint32_t>{64496});

  ExportTarget off = route_server_client_target();
  off.next_hop_v6 = codec::NextHop{ip("fd00:1::1"), std::nullopt};
  auto off_link = run(off, peer(false), pa, kV6).attrs.decode();
  EXPECT_EQ(off_link.mp_next_hop->global, ip("fd00::2"));
  EXPECT_FALSE(off_link.mp_next_hop->link_local);

  pa.mp_next_hop = codec::NextHop{ip("fe80::2"), std::nullopt};
  EXPECT_EQ(run(off, peer(false), pa, kV6).verdict, ExportVerdict::kNoNextHop);
  auto alone = run(route_server_client_target(), peer(false), pa, kV6);
  ASSERT_EQ(alone.verdict, ExportVerdict::kSend);
  EXPECT_EQ(alone.attrs.decode().mp_next_hop->global, ip("fe80::2"));
  // A client on a link-local session (ours alone in the global field) is
  // on our link too.
  ExportTarget ll = route_server_client_target();
  ll.next_hop_v6 = codec::NextHop{ip("fe80::1"), std::nullopt};
  EXPECT_EQ(run(ll, peer(false), pa, kV6).verdict, ExportVerdict::kSend);
}

// An IPv4 route with an IPv6 next hop (RFC 8950) keeps it only for a client
// that negotiated extended next hop; ours never replaces it.
TEST(Export, RouteServerClientIpv4RouteWithAnIpv6NextHopNeedsExtendedNextHop) {
  PathAttributes pa = learned({64496});
  pa.next_hop.reset();
  pa.mp_family = kV4;
  pa.mp_next_hop = codec::NextHop{ip("fd00::2"), std::nullopt};
  ExportTarget t = route_server_client_target();
  EXPECT_EQ(run(t, peer(false), pa).verdict, ExportVerdict::kNoNextHop);
  t.extended_next_hop_v4 = true;
  auto out = run(t, peer(false), pa);
  ASSERT_EQ(out.verdict, ExportVerdict::kSend);
  EXPECT_EQ(out.attrs.decode().mp_next_hop->global, ip("fd00::2"));
}

TEST(Export, ExportingIsDeterministicAndReachesAFixedPointOnTheRules) {
  // Property: to an external peer the result always has our AS first, no
  // LOCAL_PREF, our next hop; to an internal one the path is unchanged.
  rc::check([](std::vector<uint32_t> path, bool internal, uint32_t lp) {
    std::erase(path, 0u);
    if (path.size() > 200) path.resize(200);
    PathAttributes pa = learned(path);
    pa.local_pref = lp;
    ExportTarget t = internal ? internal_target() : external_target();
    auto a = run(t, peer(false), pa);
    auto b = run(t, peer(false), pa);
    RC_ASSERT(a.verdict == ExportVerdict::kSend);
    RC_ASSERT(a.attrs == b.attrs);
    auto got = a.attrs.decode();
    if (internal) {
      RC_ASSERT(got.as_path->length() == static_cast<uint32_t>(path.size()));
      RC_ASSERT(got.local_pref == std::optional<uint32_t>(lp));
    } else {
      RC_ASSERT(got.as_path->first_as() == 64500u);
      RC_ASSERT(got.as_path->length() == static_cast<uint32_t>(path.size() + 1));
      RC_ASSERT(!got.local_pref);
      RC_ASSERT(got.next_hop == std::optional(ip("198.18.1.1")));
    }
  });
}

TEST(Import, OwnAsCountAndReflectionLoops) {
  auto set = codec::AttributeSet::from(learned({64496, 64500, 64511, 64500}));
  EXPECT_EQ(count_as(set, 64500), 2u);
  EXPECT_EQ(count_as(set, 64496), 1u);
  EXPECT_EQ(count_as(set, 1), 0u);
  PathAttributes pa = learned({});
  pa.originator_id = 0x0A000001;
  EXPECT_TRUE(reflection_loop(codec::AttributeSet::from(pa), 0x0A000001, 5));
  pa.originator_id = 7;
  pa.cluster_list = {4, 5, 6};
  EXPECT_TRUE(reflection_loop(codec::AttributeSet::from(pa), 0x0A000001, 5));
  EXPECT_FALSE(reflection_loop(codec::AttributeSet::from(pa), 0x0A000001, 9));
}

// ---- filters

TEST(Filter, PrefixRanges) {
  auto exact = PrefixRange::parse("10.0.0.0/8");
  ASSERT_TRUE(exact);
  EXPECT_TRUE(exact->contains(pfx("10.0.0.0/8")));
  EXPECT_FALSE(exact->contains(pfx("10.1.0.0/16")));
  auto le = PrefixRange::parse("10.0.0.0/8 le 24");
  EXPECT_TRUE(le->contains(pfx("10.1.0.0/16")));
  EXPECT_TRUE(le->contains(pfx("10.0.0.0/8")));
  EXPECT_FALSE(le->contains(pfx("10.1.1.0/25")));
  EXPECT_FALSE(le->contains(pfx("11.0.0.0/16")));
  auto ge = PrefixRange::parse("2001:db8::/32 ge 48");
  ASSERT_TRUE(ge);
  EXPECT_FALSE(ge->contains(pfx("2001:db8::/32")));
  EXPECT_TRUE(ge->contains(pfx("2001:db8:1::/48")));
  EXPECT_TRUE(ge->contains(pfx("2001:db8:1::1/128")));
  EXPECT_FALSE(ge->contains(pfx("10.0.0.0/8")));
  auto both = PrefixRange::parse("0.0.0.0/0  ge 8 le 24");
  EXPECT_EQ(both->to_string(), "0.0.0.0/0 ge 8 le 24");
  for (const char* text : {"10.0.0.0/8", "10.0.0.0/8 le 24", "10.0.0.0/8 ge 16", "10.0.0.0/8 ge 16 le 20"})
    EXPECT_EQ(PrefixRange::parse(PrefixRange::parse(text)->to_string()), PrefixRange::parse(text)) << text;
  std::string why;
  for (const char* bad : {"", "10.0.0.1/8", "10.0.0.0/8 le", "10.0.0.0/8 le 33", "10.0.0.0/16 ge 8",
                          "10.0.0.0/8 ge 24 le 16", "10.0.0.0/8 le 24 ge 16", "10/8", "10.0.0.0/8 eq 9"}) {
    why.clear();
    EXPECT_FALSE(PrefixRange::parse(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

TEST(Filter, Communities) {
  EXPECT_EQ(parse_community("65000:100"), (65000u << 16) | 100);
  EXPECT_EQ(parse_community("no-export"), codec::community::kNoExport);
  EXPECT_FALSE(parse_community("65536:1"));
  EXPECT_FALSE(parse_community("1:2:3"));
  EXPECT_EQ(community_text(*parse_community("65000:100")), "65000:100");
  EXPECT_EQ(parse_large_community("4200000000:1:2"), (codec::LargeCommunity{4200000000u, 1, 2}));
  EXPECT_FALSE(parse_large_community("1:2"));
}

TEST(Filter, FirstMatchingRuleDecidesThenTheDefault) {
  Filter f;
  f.name = "customers";
  FilterRule reject_long;
  reject_long.prefixes = {*PrefixRange::parse("0.0.0.0/0 ge 25")};
  reject_long.action = FilterAction::kReject;
  FilterRule tagged;
  tagged.communities = {*parse_community("64500:10")};
  tagged.large_communities = {codec::LargeCommunity{64500, 1, 1}};
  tagged.set_local_pref = 200;
  tagged.set_med = 5;
  FilterRule ours;
  ours.prefixes = {*PrefixRange::parse("192.0.2.0/24 le 24")};
  f.rules = {reject_long, tagged, ours};

  PathAttributes plain = learned({64496});
  PathAttributes tagged_attrs = plain;
  tagged_attrs.communities = {*parse_community("64500:10")};
  PathAttributes large_attrs = plain;
  large_attrs.large_communities = {codec::LargeCommunity{64500, 1, 1}};
  auto set = [](const PathAttributes& p) { return codec::AttributeSet::from(p); };

  EXPECT_FALSE(evaluate(f, pfx("192.0.2.0/25"), set(tagged_attrs)).accept);  // first rule wins
  auto v = evaluate(f, pfx("203.0.113.0/24"), set(tagged_attrs));
  EXPECT_TRUE(v.accept);
  EXPECT_EQ(v.local_pref, 200u);
  EXPECT_EQ(v.med, 5u);
  EXPECT_TRUE(evaluate(f, pfx("203.0.113.0/24"), set(large_attrs)).accept);
  auto o = evaluate(f, pfx("192.0.2.0/24"), set(plain));
  EXPECT_TRUE(o.accept);
  EXPECT_FALSE(o.changes_attributes());
  EXPECT_FALSE(evaluate(f, pfx("203.0.113.0/24"), set(plain)).accept);  // default reject
  f.default_action = FilterAction::kAccept;
  EXPECT_TRUE(evaluate(f, pfx("203.0.113.0/24"), set(plain)).accept);

  auto applied = apply_verdict(set(tagged_attrs), v).decode();
  EXPECT_EQ(applied.local_pref, 200u);
  EXPECT_EQ(applied.med, 5u);
  EXPECT_EQ(applied.communities, tagged_attrs.communities);
}

// RFC 9494 section 4.3: a route with LLGR_STALE goes only to a peer that
// negotiated LLGR, with the community; the other rules still apply.
TEST(Export, LongLivedStaleRoutesGoOnlyToLlgrPeers) {
  PeerInfo src;
  src.asn = 65001;
  const ExportSource from{&src, 3};
  PathAttributes pa = learned({65001});
  pa.communities = {codec::community::kLlgrStale};
  const auto stale = codec::AttributeSet::from(pa);
  const auto fresh = codec::AttributeSet::from(learned({65001}));
  for (ExportTarget to : {external_target(), internal_target(true), route_server_client_target()}) {
    EXPECT_EQ(may_export(to, from, stale), ExportVerdict::kLongLivedStale);
    EXPECT_EQ(export_route(to, from, kV4, stale).verdict, ExportVerdict::kLongLivedStale);
    EXPECT_EQ(may_export(to, from, fresh), ExportVerdict::kSend);
    to.long_lived_graceful_restart = true;
    const Exported out = export_route(to, from, kV4, stale);
    ASSERT_EQ(out.verdict, ExportVerdict::kSend);
    EXPECT_TRUE(out.attrs.has_community(codec::community::kLlgrStale));
  }
  // NO_ADVERTISE still wins; never back to the sender.
  ExportTarget llgr = external_target();
  llgr.long_lived_graceful_restart = true;
  pa.communities.push_back(codec::community::kNoAdvertise);
  EXPECT_EQ(may_export(llgr, from, codec::AttributeSet::from(pa)), ExportVerdict::kNoAdvertise);
  llgr.slot = 3;
  EXPECT_EQ(may_export(llgr, from, stale), ExportVerdict::kToSender);
  EXPECT_EQ(export_verdict_name(ExportVerdict::kLongLivedStale), "long-lived-stale");
}

}  // namespace
}  // namespace petrel::table
