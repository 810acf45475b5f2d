// Tests for fsm/negotiate.h: hold time and keepalive, the OPEN checks
// (peer AS with AS_TRANS, BGP Identifier, hold time, version, roles) and
// capability negotiation (families, ADD-PATH directions, extended message
// and next hop, route refresh, graceful restart, required capabilities).
#include "fsm/negotiate.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "tests/fsm/fsm_testing.h"

namespace petrel::fsm {
namespace {

using namespace testing;
using codec::AddPathMode;
using codec::Role;

codec::Notification refusal(const PeerConfig& ours, const codec::Open& theirs) {
  auto r = negotiate(ours, theirs);
  EXPECT_FALSE(r.ok());
  return r.ok() ? codec::Notification{} : r.error();
}

TEST(HoldTime, SmallerWinsAndZeroSwitchesOff) {
  EXPECT_EQ(negotiate_hold_time(90, 180), 90);
  EXPECT_EQ(negotiate_hold_time(180, 30), 30);
  EXPECT_EQ(negotiate_hold_time(0, 90), 0);
  EXPECT_EQ(negotiate_hold_time(90, 0), 0);
}

TEST(HoldTime, KeepaliveIsAThirdOrLess) {
  EXPECT_EQ(keepalive_interval(90, 0), 30);
  EXPECT_EQ(keepalive_interval(90, 10), 10);
  EXPECT_EQ(keepalive_interval(90, 60), 30);
  EXPECT_EQ(keepalive_interval(3, 0), 1);
  EXPECT_EQ(keepalive_interval(4, 0), 1);
  EXPECT_EQ(keepalive_interval(0, 10), 0);
}

RC_GTEST_PROP(HoldTime, KeepaliveNeverExceedsAThird, (uint16_t hold, uint16_t configured)) {
  RC_PRE(hold == 0 || hold >= 3);
  uint16_t ka = keepalive_interval(hold, configured);
  if (hold == 0) {
    RC_ASSERT(ka == 0);
  } else {
    RC_ASSERT(ka >= 1);
    RC_ASSERT(ka * 3 <= hold);
  }
}

TEST(HoldTime, SendHoldDefaultsToEightMinutesOrTwiceTheHoldTime) {
  PeerConfig c = config_a();
  EXPECT_EQ(send_hold_time(c, 90), Duration(480s));
  EXPECT_EQ(send_hold_time(c, 0), Duration(480s));
  EXPECT_EQ(send_hold_time(c, 300), Duration(600s));
  c.send_hold = 100s;
  EXPECT_EQ(send_hold_time(c, 300), Duration(100s));
}

TEST(Open, OrdinaryPeerNegotiates) {
  auto r = negotiate(config_a(), open_of(config_b()));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->peer_as, 65002u);
  EXPECT_EQ(r->peer_id, config_b().local_id);
  EXPECT_EQ(r->hold_time, 90);
  EXPECT_EQ(r->keepalive, 30);
  EXPECT_TRUE(r->params.four_octet_as);
  EXPECT_TRUE(r->route_refresh);
  EXPECT_EQ(r->families, (codec::FamilySet{codec::kIpv4Unicast, codec::kIpv6Unicast}));
}

TEST(Open, WrongPeerAs) {
  PeerConfig peer = config_b();
  peer.local_as = 65003;
  auto n = refusal(config_a(), open_of(peer));
  EXPECT_EQ(n.code, 2);
  EXPECT_EQ(n.subcode, codec::open_error::kBadPeerAs);
}

TEST(Open, AsZeroIsBad) {
  PeerConfig c = config_a();
  c.peer_as = 0;  // any AS
  codec::Open o = open_of(config_b());
  o.caps.four_octet_as.reset();
  o.my_as = 0;
  EXPECT_EQ(refusal(c, o).subcode, codec::open_error::kBadPeerAs);
}

TEST(Open, AnyAsWhenNotConfigured) {
  PeerConfig c = config_a();
  c.peer_as = 0;
  PeerConfig peer = config_b();
  peer.local_as = 4200000001;
  auto r = negotiate(c, open_of(peer));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->peer_as, 4200000001u);
}

TEST(Open, FourOctetAsBehindAsTrans) {
  PeerConfig c = config_a();
  c.peer_as = 4200000001;
  PeerConfig peer = mirror(c);
  codec::Open o = open_of(peer);
  EXPECT_EQ(o.my_as, codec::kAsTrans);
  auto r = negotiate(c, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->peer_as, 4200000001u);
  // Without the capability the AS is AS_TRANS itself, which is not the peer.
  o.caps.four_octet_as.reset();
  EXPECT_EQ(refusal(c, o).subcode, codec::open_error::kBadPeerAs);
}

TEST(Open, OldSpeakerWithoutFourOctetCapability) {
  codec::Open o = open_of(config_b());
  o.caps.four_octet_as.reset();
  auto r = negotiate(config_a(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->params.four_octet_as);
}

TEST(Open, InternalPeerWithOurIdentifier) {
  PeerConfig c = config_a();
  c.peer_as = c.local_as;
  PeerConfig peer = mirror(c);
  peer.local_id = c.local_id;
  EXPECT_EQ(refusal(c, open_of(peer)).subcode, codec::open_error::kBadBgpIdentifier);
}

TEST(Open, ExternalPeerMayShareOurIdentifier) {
  PeerConfig peer = config_b();
  peer.local_id = config_a().local_id;
  EXPECT_TRUE(negotiate(config_a(), open_of(peer)).ok());  // RFC 6286 section 2.2
}

TEST(Open, ZeroIdentifier) {
  PeerConfig peer = config_b();
  peer.local_id = 0;
  EXPECT_EQ(refusal(config_a(), open_of(peer)).subcode, codec::open_error::kBadBgpIdentifier);
}

TEST(Open, HoldTimeOneOrTwo) {
  for (uint16_t h : {uint16_t{1}, uint16_t{2}}) {
    PeerConfig peer = config_b();
    peer.hold_time = h;
    EXPECT_EQ(refusal(config_a(), open_of(peer)).subcode, codec::open_error::kUnacceptableHoldTime);
  }
}

TEST(Open, OtherVersion) {
  codec::Open o = open_of(config_b());
  o.version = 3;
  auto n = refusal(config_a(), o);
  EXPECT_EQ(n.subcode, codec::open_error::kUnsupportedVersion);
  EXPECT_EQ(bytes::to_hex(n.data), "0004");
}

TEST(Families, BothSidesHave) {
  PeerConfig peer = config_b();
  peer.capabilities.multiprotocol = {codec::kIpv6Unicast, codec::Family{25, 70}};
  auto r = negotiate(config_a(), open_of(peer));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->families, codec::FamilySet{codec::kIpv6Unicast});
  EXPECT_EQ(r->all_families, std::vector{codec::kIpv6Unicast});
}

TEST(Families, NoMultiprotocolMeansIpv4Unicast) {
  PeerConfig peer = config_b();
  peer.capabilities.multiprotocol.clear();
  auto r = negotiate(config_a(), open_of(peer));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->families, codec::FamilySet{codec::kIpv4Unicast});
}

TEST(Families, UnknownFamiliesBothHaveAreListed) {
  PeerConfig c = config_a();
  c.capabilities.multiprotocol.push_back({25, 70});
  PeerConfig peer = mirror(c);
  auto r = negotiate(c, open_of(peer));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->all_families.size(), 3u);
  EXPECT_EQ(r->families, (codec::FamilySet{codec::kIpv4Unicast, codec::kIpv6Unicast}));
}

TEST(Required, MissingFamilyIsUnsupportedCapabilityWithTheCapability) {
  PeerConfig c = config_a();
  c.required.families = {codec::kIpv6Unicast};
  PeerConfig peer = config_b();
  peer.capabilities.multiprotocol = {codec::kIpv4Unicast};
  auto n = refusal(c, open_of(peer));
  EXPECT_EQ(n.code, 2);
  EXPECT_EQ(n.subcode, codec::open_error::kUnsupportedCapability);
  EXPECT_EQ(bytes::to_hex(n.data), "010400020001");
}

TEST(Required, RouteRefreshAndFourOctetAs) {
  PeerConfig c = config_a();
  c.required.route_refresh = true;
  c.required.four_octet_as = true;
  codec::Open o = open_of(config_b());
  o.caps.route_refresh = false;
  o.caps.four_octet_as.reset();
  auto n = refusal(c, o);
  EXPECT_EQ(n.subcode, codec::open_error::kUnsupportedCapability);
  // Both missing capabilities, as we advertise them: route refresh (2, 0)
  // and 4-octet AS (65, 4, our AS).
  auto want = bytes::to_hex(n.data);
  EXPECT_NE(want.find("0200"), std::string::npos) << want;
  EXPECT_NE(want.find("41040000fde9"), std::string::npos) << want;
}

TEST(Required, PresentCapabilitiesPass) {
  PeerConfig c = config_a();
  c.required.route_refresh = true;
  c.required.four_octet_as = true;
  c.required.families = {codec::kIpv4Unicast};
  EXPECT_TRUE(negotiate(c, open_of(config_b())).ok());
}

TEST(Required, AddPathDirection) {
  PeerConfig c = config_a();
  c.capabilities.add_path = {{codec::kIpv4Unicast, AddPathMode::kBoth}};
  c.required.add_path_receive = {codec::kIpv4Unicast};
  PeerConfig peer = mirror(c);
  peer.capabilities.add_path = {{codec::kIpv4Unicast, AddPathMode::kReceive}};  // cannot send
  auto n = refusal(c, open_of(peer));
  EXPECT_EQ(n.subcode, codec::open_error::kUnsupportedCapability);
  EXPECT_EQ(bytes::to_hex(n.data), "450400010101");
}

TEST(AddPath, DirectionsFollowTheModes) {
  PeerConfig c = config_a();
  c.capabilities.add_path = {{codec::kIpv4Unicast, AddPathMode::kBoth},
                             {codec::kIpv6Unicast, AddPathMode::kReceive}};
  PeerConfig peer = mirror(c);
  peer.capabilities.add_path = {{codec::kIpv4Unicast, AddPathMode::kReceive},
                                {codec::kIpv6Unicast, AddPathMode::kBoth}};
  auto r = negotiate(c, open_of(peer));
  ASSERT_TRUE(r.ok());
  // IPv4: we send (ours both, theirs receive); we do not receive.
  EXPECT_EQ(r->params.add_path_send, codec::FamilySet{codec::kIpv4Unicast});
  // IPv6: we receive (ours receive, theirs both); we do not send.
  EXPECT_EQ(r->params.add_path_receive, codec::FamilySet{codec::kIpv6Unicast});
}

TEST(AddPath, NotForAFamilyNotNegotiated) {
  PeerConfig c = config_a();
  c.capabilities.add_path = {{codec::kIpv6Unicast, AddPathMode::kBoth}};
  PeerConfig peer = mirror(c);
  peer.capabilities.multiprotocol = {codec::kIpv4Unicast};
  auto r = negotiate(c, open_of(peer));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->params.add_path_send.empty());
  EXPECT_TRUE(r->params.add_path_receive.empty());
}

TEST(Capabilities, ExtendedMessageAndNextHopNeedBothSides) {
  PeerConfig c = config_a();
  c.capabilities.extended_message = true;
  c.capabilities.extended_next_hop = {{codec::kIpv4Unicast, 2}};
  PeerConfig peer = mirror(c);
  auto r = negotiate(c, open_of(peer));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->params.extended_message);
  EXPECT_EQ(r->params.max_message_len(), 65535u);
  EXPECT_EQ(r->params.extended_next_hop, codec::FamilySet{codec::kIpv4Unicast});
  peer.capabilities.extended_message = false;
  peer.capabilities.extended_next_hop.clear();
  r = negotiate(c, open_of(peer));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->params.extended_message);
  EXPECT_TRUE(r->params.extended_next_hop.empty());
}

TEST(Capabilities, RouteRefreshAndGracefulRestart) {
  PeerConfig c = config_a();
  c.capabilities.enhanced_route_refresh = true;
  codec::GracefulRestart gr;
  gr.restart_time = 120;
  gr.families = {{codec::kIpv4Unicast, true}};
  PeerConfig peer = mirror(c);
  peer.capabilities.graceful_restart = gr;
  auto r = negotiate(c, open_of(peer));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->route_refresh);
  EXPECT_TRUE(r->enhanced_route_refresh);
  EXPECT_FALSE(r->graceful_restart.has_value());  // we did not offer it
  c.capabilities.graceful_restart = codec::GracefulRestart{};
  r = negotiate(c, open_of(peer));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->graceful_restart.has_value());
  EXPECT_EQ(r->graceful_restart->restart_time, 120);
}

struct RoleCase {
  std::optional<Role> ours;
  std::optional<Role> theirs;
  bool strict;
  bool ok;
};

TEST(Roles, Rfc9234Pairs) {
  const RoleCase cases[] = {
      {Role::kProvider, Role::kCustomer, false, true},
      {Role::kCustomer, Role::kProvider, true, true},
      {Role::kRouteServer, Role::kRsClient, false, true},
      {Role::kRsClient, Role::kRouteServer, false, true},
      {Role::kPeer, Role::kPeer, true, true},
      {Role::kProvider, Role::kProvider, false, false},
      {Role::kPeer, Role::kCustomer, false, false},
      {Role::kCustomer, static_cast<Role>(7), false, false},
      {Role::kPeer, std::nullopt, false, true},
      {Role::kPeer, std::nullopt, true, false},
      {std::nullopt, Role::kPeer, true, true},
  };
  for (const RoleCase& rc : cases) {
    PeerConfig c = config_a();
    c.capabilities.role = rc.ours;
    c.strict_role = rc.strict;
    PeerConfig peer = mirror(c);
    peer.capabilities.role = rc.theirs;
    auto r = negotiate(c, open_of(peer));
    EXPECT_EQ(r.ok(), rc.ok) << int(rc.ours.value_or(Role{9})) << " " << int(rc.theirs.value_or(Role{9}));
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, 2);
      EXPECT_EQ(r.error().subcode, codec::open_error::kRoleMismatch);
    }
  }
}

// Two mirrored speakers see the same session from either end.
RC_GTEST_PROP(Negotiate, MirroredSpeakersAgree,
              (uint16_t hold_a, uint16_t hold_b, uint8_t fams_a, uint8_t fams_b, uint8_t ap_a, uint8_t ap_b,
               bool ext_a, bool ext_b)) {
  RC_PRE(hold_a == 0 || hold_a >= 3);
  RC_PRE(hold_b == 0 || hold_b >= 3);
  PeerConfig a = config_a();
  a.hold_time = hold_a;
  a.capabilities.extended_message = ext_a;
  a.capabilities.multiprotocol.clear();
  PeerConfig b = mirror(a);
  b.hold_time = hold_b;
  b.capabilities.extended_message = ext_b;
  for (size_t i = 0; i < codec::kKnownFamilies; ++i) {
    codec::Family f = codec::kKnownFamilyList[i];
    if (fams_a >> i & 1) a.capabilities.multiprotocol.push_back(f);
    if (fams_b >> i & 1) b.capabilities.multiprotocol.push_back(f);
    if (ap_a >> (2 * i) & 3) a.capabilities.add_path.push_back({f, static_cast<AddPathMode>(ap_a >> (2 * i) & 3)});
    if (ap_b >> (2 * i) & 3) b.capabilities.add_path.push_back({f, static_cast<AddPathMode>(ap_b >> (2 * i) & 3)});
  }
  auto ra = negotiate(a, open_of(b));
  auto rb = negotiate(b, open_of(a));
  RC_ASSERT(ra.ok());
  RC_ASSERT(rb.ok());
  RC_ASSERT(ra->hold_time == rb->hold_time);
  RC_ASSERT(ra->families == rb->families);
  RC_ASSERT(ra->params.extended_message == rb->params.extended_message);
  // What one sends with path ids the other expects with path ids.
  RC_ASSERT(ra->params.add_path_send == rb->params.add_path_receive);
  RC_ASSERT(ra->params.add_path_receive == rb->params.add_path_send);
  RC_ASSERT((ra->families & ra->params.add_path_send) == ra->params.add_path_send);
}

}  // namespace
}  // namespace petrel::fsm
