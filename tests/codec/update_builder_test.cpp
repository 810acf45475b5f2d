// Tests for codec/update_builder: packing under the size limit, every
// prefix once, each family with and without ADD-PATH, End-of-RIB markers
// (RFC 4724 section 2), 2-octet sessions (RFC 6793 section 4.2.2).
#include "codec/update_builder.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "codec/framer.h"
#include "codec/update.h"
#include "tests/codec/update_util.h"

namespace petrel::codec {
namespace {

using testing::gen_prefix;

// Splits a stream of whole messages; every one must frame.
std::vector<bytes::Span> split(const std::vector<std::byte>& stream, size_t max_len) {
  std::vector<bytes::Span> out;
  bytes::Span all(stream);
  size_t pos = 0;
  while (pos < all.size()) {
    auto h = check_header(all.subspan(pos, kHeaderLen), max_len);
    if (!h) {
      ADD_FAILURE() << "bad header at " << pos;
      return out;
    }
    out.push_back(all.subspan(pos + kHeaderLen, h->length - kHeaderLen));
    pos += h->length;
  }
  return out;
}

AttributeSet attrs_for(Family f) {
  PathAttributes a;
  a.origin = Origin::kIgp;
  a.as_path = AsPath{{{SegmentType::kAsSequence, {65001, 4200000000u}}}};
  a.med = 5;
  a.communities = {0xfde90001};
  a.large_communities = {{4200000000u, 1, 2}};
  if (f == kIpv4Unicast) {
    a.next_hop = net::IpAddress::v4(0xc0000201);
  } else {
    a.mp_family = f;
    a.mp_next_hop = NextHop{f.afi == 1 ? net::IpAddress::v4(0xc0000201)
                                       : *net::IpAddress::parse("2001:db8::1"),
                            f.afi == 2 ? net::IpAddress::parse("fe80::1") : std::nullopt};
  }
  return AttributeSet::from(a);
}

void check_roundtrip(Family f, bool add_path, bool extended, bool four_octet) {
  const auto gen_list = rc::gen::container<std::vector<NlriPrefix>>(
      gen_prefix(ip_family(f), add_path));
  auto ann = *gen_list;
  auto wd = *gen_list;
  SessionParams p;
  p.extended_message = extended;
  p.four_octet_as = four_octet;
  if (add_path) {
    p.add_path_send.add(f);
    p.add_path_receive.add(f);
  }
  AttributeSet set = attrs_for(f);
  std::vector<std::byte> out;
  auto n = UpdateBuilder(p).build(f, &set, ann, wd, out);
  RC_ASSERT(n.ok());
  auto msgs = split(out, p.max_message_len());
  RC_ASSERT(msgs.size() == *n);
  std::vector<NlriPrefix> got_ann, got_wd;
  for (auto body : msgs) {
    auto v = UpdateView::decode(body, p, PeerType::kExternal);
    RC_ASSERT(v.action() == ErrorAction::kNone);
    for (const auto& r : v.announced()) {
      RC_ASSERT(r.family() == f);
      for (const auto& x : r) got_ann.push_back(x);
      RC_ASSERT(v.attribute_set() == set);
    }
    for (const auto& r : v.withdrawals())
      for (const auto& x : r) got_wd.push_back(x);
  }
  RC_ASSERT(got_ann == ann);
  RC_ASSERT(got_wd == wd);
}

RC_GTEST_PROP(UpdateBuilder, Ipv4UnicastRoundTrips, ()) {
  check_roundtrip(kIpv4Unicast, false, false, true);
}
RC_GTEST_PROP(UpdateBuilder, Ipv4UnicastAddPathRoundTrips, ()) {
  check_roundtrip(kIpv4Unicast, true, false, true);
}
RC_GTEST_PROP(UpdateBuilder, Ipv6UnicastRoundTrips, ()) {
  check_roundtrip(kIpv6Unicast, false, false, true);
}
RC_GTEST_PROP(UpdateBuilder, Ipv6UnicastAddPathRoundTrips, ()) {
  check_roundtrip(kIpv6Unicast, true, false, true);
}
RC_GTEST_PROP(UpdateBuilder, MulticastRoundTrips, ()) {
  check_roundtrip(kIpv4Multicast, *rc::gen::arbitrary<bool>(), false, true);
  check_roundtrip(kIpv6Multicast, *rc::gen::arbitrary<bool>(), false, true);
}
RC_GTEST_PROP(UpdateBuilder, ExtendedMessagesAndTwoOctetSessionsRoundTrip, ()) {
  check_roundtrip(kIpv4Unicast, *rc::gen::arbitrary<bool>(), true, false);
  check_roundtrip(kIpv6Unicast, *rc::gen::arbitrary<bool>(), true, false);
}

TEST(UpdateBuilder, PacksUpToTheLimitAndNoFurther) {
  std::vector<NlriPrefix> many;
  for (uint32_t i = 0; i < 5000; ++i)
    many.push_back({*net::Prefix::make(net::IpAddress::v4(0x0a000000 + (i << 8)), 24), 0});
  for (bool ext : {false, true}) {
    SessionParams p;
    p.extended_message = ext;
    std::vector<std::byte> out;
    AttributeSet set = attrs_for(kIpv4Unicast);
    auto n = UpdateBuilder(p).announce(kIpv4Unicast, set, many, out);
    ASSERT_TRUE(n.ok());
    auto msgs = split(out, p.max_message_len());
    size_t total = 0;
    for (size_t i = 0; i < msgs.size(); ++i) {
      size_t len = msgs[i].size() + kHeaderLen;
      EXPECT_LE(len, p.max_message_len());
      // Every message but the last is full to within one prefix.
      if (i + 1 < msgs.size()) {
        EXPECT_GT(len + 4, p.max_message_len());
      }
      auto v = UpdateView::decode(msgs[i], p, PeerType::kExternal);
      for (const auto& x : v.nlri()) {
        (void)x;
        ++total;
      }
    }
    EXPECT_EQ(total, many.size());
    EXPECT_EQ(msgs.size(), ext ? 1u : 5u);
  }
}

TEST(UpdateBuilder, EndOfRibMarkers) {
  std::vector<std::byte> out;
  UpdateBuilder::end_of_rib(kIpv4Unicast, out);
  EXPECT_EQ(bytes::to_hex(out), "ffffffffffffffffffffffffffffffff00170200000000");
  out.clear();
  UpdateBuilder::end_of_rib(kIpv6Unicast, out);
  EXPECT_EQ(bytes::to_hex(out), "ffffffffffffffffffffffffffffffff001d0200000006800f03000201");
  for (Family f : {kIpv4Unicast, kIpv6Unicast, kIpv4Multicast, Family{25, 70}}) {
    std::vector<std::byte> m;
    UpdateBuilder::end_of_rib(f, m);
    auto v = UpdateView::decode(bytes::Span(m).subspan(kHeaderLen), {}, PeerType::kExternal);
    EXPECT_EQ(v.end_of_rib(), f);
  }
}

TEST(UpdateBuilder, TwoOctetSessionGetsAsTransAndAs4Path) {
  SessionParams p;
  p.four_octet_as = false;
  AttributeSet set = attrs_for(kIpv4Unicast);
  std::vector<NlriPrefix> one = {{*net::Prefix::parse("192.0.2.0/24"), 0}};
  std::vector<std::byte> out;
  ASSERT_TRUE(UpdateBuilder(p).announce(kIpv4Unicast, set, one, out).ok());
  auto v = UpdateView::decode(bytes::Span(out).subspan(kHeaderLen), p, PeerType::kExternal);
  ASSERT_EQ(v.action(), ErrorAction::kNone);
  auto as_path = v.attribute(attr_type::kAsPath);
  ASSERT_TRUE(as_path);
  EXPECT_EQ(bytes::to_hex(as_path->value), "0202fde95ba0");
  EXPECT_TRUE(v.attribute(attr_type::kAs4Path));
  // RFC 6793 section 4.2.3: the receiver rebuilds the 4-octet path.
  EXPECT_EQ(v.attribute_set(), set);
  EXPECT_EQ(v.attribute_set().first_as(), 65001u);
}

TEST(UpdateBuilder, RejectsAFamilyWithoutItsNextHop) {
  AttributeSet v4 = attrs_for(kIpv4Unicast);
  std::vector<NlriPrefix> one = {{*net::Prefix::parse("2001:db8::/32"), 0}};
  std::vector<std::byte> out;
  EXPECT_FALSE(UpdateBuilder({}).announce(kIpv6Unicast, v4, one, out).ok());
}

}  // namespace
}  // namespace petrel::codec
