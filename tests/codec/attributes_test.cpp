// Tests for every path attribute's decoder and encoder: RFC examples and
// hand-made vectors, and decode(encode(x)) == x for each (rapidcheck).
#include "codec/attributes.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "codec/as_path.h"
#include "codec/attribute_set.h"
#include "codec/communities.h"
#include "codec/mp_nlri.h"
#include "codec/simple_attributes.h"
#include "tests/codec/update_util.h"

namespace petrel::codec {
namespace {

using testing::gen_prefix;
using testing::hx;

// Encodes with f, reads the attribute header back and returns the value.
template <typename F>
RawAttribute one_attribute(std::vector<std::byte>& buf, F&& f) {
  buf.clear();
  bytes::Writer w(buf);
  f(w);
  bytes::Reader r(buf);
  AttrReadError e;
  auto a = read_attribute(r, e);
  RC_ASSERT(a.has_value());
  RC_ASSERT(r.empty());
  return *a;
}

TEST(Attributes, TableMatchesTheRfcFlags) {
  EXPECT_EQ(find_descriptor(attr_type::kOrigin)->flags, attr_flag::kTransitive);
  EXPECT_EQ(find_descriptor(attr_type::kMultiExitDisc)->flags, attr_flag::kOptional);
  EXPECT_EQ(find_descriptor(attr_type::kLargeCommunity)->flags,
            attr_flag::kOptional | attr_flag::kTransitive);
  EXPECT_EQ(find_descriptor(200), nullptr);
  EXPECT_EQ(attr_name(attr_type::kOtc), "OTC");
  EXPECT_EQ(attr_name(200), "unknown");
}

TEST(Attributes, ExtendedLengthOnlyWhenNeeded) {
  std::vector<std::byte> buf;
  bytes::Writer w(buf);
  std::vector<uint32_t> many(100, 0xfde90001);  // 400 octets
  encode_communities(w, many);
  EXPECT_EQ(bytes::to_hex(bytes::Span(buf).first(4)), "d0080190");
  buf.clear();
  encode_communities(w, std::vector<uint32_t>{1});
  EXPECT_EQ(bytes::to_hex(buf), "c0080400000001");
}

TEST(Attributes, AsPathLengthFollowsRfc4271Section9_1_2_2) {
  AsPath p{{{SegmentType::kAsSequence, {1, 2, 3}},
            {SegmentType::kAsSet, {4, 5}},
            {SegmentType::kConfedSequence, {6, 7}}}};
  EXPECT_EQ(p.length(), 4u);
  EXPECT_EQ(p.first_as(), 1u);
  std::vector<std::byte> buf;
  bytes::Writer w(buf);
  encode_as_path_value(w, p, AsWidth::k4);
  auto s = summarize_as_path(buf, AsWidth::k4);
  EXPECT_EQ(s.length, 4u);
  EXPECT_EQ(s.first_as, 1u);
  EXPECT_EQ(s.origin_as, 0u);  // ends in a confederation segment
}

TEST(Attributes, LongSegmentsAreSplitAt255) {
  AsPath p{{{SegmentType::kAsSequence, std::vector<uint32_t>(300, 65001)}}};
  std::vector<std::byte> buf;
  bytes::Writer w(buf);
  encode_as_path_value(w, p, AsWidth::k2);
  EXPECT_EQ(buf.size(), 2u + 255 * 2 + 2u + 45 * 2);
  auto back = decode_as_path(buf, {AsWidth::k2, true});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->length(), 300u);
}

TEST(Attributes, Rfc5701Ipv6ExtendedCommunity) {
  auto v = hx("000b 20010db8000000000000000000000001 000a");
  auto c = decode_ipv6_ext_communities(v);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 1u);
  EXPECT_EQ((*c)[0].subtype, 0x0b);
  EXPECT_EQ((*c)[0].local, 10);
}

TEST(Attributes, MpReachNextHops) {
  auto ll = decode_mp_next_hop(kIpv6Unicast,
                               hx("20010db8000000000000000000000001fe800000000000000000000000000001"), false);
  ASSERT_TRUE(ll.ok());
  EXPECT_EQ(ll->link_local->to_string(), "fe80::1");
  EXPECT_FALSE(decode_mp_next_hop(kIpv6Unicast, hx("0a000001"), false).ok());
  EXPECT_TRUE(decode_mp_next_hop(kIpv4Multicast, hx("0a000001"), false).ok());
  EXPECT_FALSE(decode_mp_next_hop(kIpv4Unicast, hx("20010db8000000000000000000000001"), false).ok());
  EXPECT_TRUE(decode_mp_next_hop(kIpv4Unicast, hx("20010db8000000000000000000000001"), true).ok());
}

// Round trips, one property per attribute.

RC_GTEST_PROP(AttributesRoundTrip, Origin, ()) {
  auto o = static_cast<Origin>(*rc::gen::inRange(0, 3));
  std::vector<std::byte> buf;
  auto a = one_attribute(buf, [&](bytes::Writer& w) { encode_origin(w, o); });
  RC_ASSERT(a.type == attr_type::kOrigin);
  RC_ASSERT(*decode_origin(a.value) == o);
}

RC_GTEST_PROP(AttributesRoundTrip, FourOctetValues, (uint32_t x)) {
  std::vector<std::byte> buf;
  RC_ASSERT(*decode_med(one_attribute(buf, [&](bytes::Writer& w) { encode_med(w, x); }).value) == x);
  RC_ASSERT(*decode_local_pref(one_attribute(buf, [&](bytes::Writer& w) { encode_local_pref(w, x); }).value) == x);
  RC_ASSERT(*decode_originator_id(
                one_attribute(buf, [&](bytes::Writer& w) { encode_originator_id(w, x); }).value) == x);
  RC_ASSERT(*decode_otc(one_attribute(buf, [&](bytes::Writer& w) { encode_otc(w, x); }).value) == x);
  auto nh = net::IpAddress::v4(x);
  RC_ASSERT(*decode_next_hop(one_attribute(buf, [&](bytes::Writer& w) { encode_next_hop(w, nh); }).value) == nh);
}

RC_GTEST_PROP(AttributesRoundTrip, Aggregator, (uint32_t as, uint32_t addr)) {
  RC_PRE(as != 0u);
  Aggregator g{as, net::IpAddress::v4(addr)};
  std::vector<std::byte> buf;
  RC_ASSERT(*decode_aggregator(one_attribute(buf, [&](bytes::Writer& w) { encode_aggregator(w, g, true); }).value,
                               true) == g);
  RC_ASSERT(*decode_as4_aggregator(
                one_attribute(buf, [&](bytes::Writer& w) { encode_as4_aggregator(w, g); }).value) == g);
  auto two = decode_aggregator(
      one_attribute(buf, [&](bytes::Writer& w) { encode_aggregator(w, g, false); }).value, false);
  RC_ASSERT(two->asn == (as > 0xffff ? kAsTrans : as));
}

rc::Gen<AsPath> gen_as_path(bool confed, bool two_octet) {
  auto asn = two_octet ? rc::gen::inRange<uint32_t>(1, 65536) : rc::gen::inRange<uint32_t>(1, 0xffffffff);
  auto seg = rc::gen::build<AsSegment>(
      rc::gen::set(&AsSegment::type,
                   rc::gen::element(SegmentType::kAsSequence, SegmentType::kAsSet,
                                    confed ? SegmentType::kConfedSequence : SegmentType::kAsSequence,
                                    confed ? SegmentType::kConfedSet : SegmentType::kAsSet)),
      rc::gen::set(&AsSegment::asns, rc::gen::resize(40, rc::gen::nonEmpty(rc::gen::container<std::vector<uint32_t>>(asn)))));
  return rc::gen::build<AsPath>(rc::gen::set(&AsPath::segments, rc::gen::container<std::vector<AsSegment>>(seg)));
}

RC_GTEST_PROP(AttributesRoundTrip, AsPathBothWidths, ()) {
  const bool two = *rc::gen::arbitrary<bool>();
  AsPath p = *gen_as_path(true, two);
  std::vector<std::byte> buf;
  auto width = two ? AsWidth::k2 : AsWidth::k4;
  auto a = one_attribute(buf, [&](bytes::Writer& w) { encode_as_path(w, p, width); });
  auto back = decode_as_path(a.value, {width, true});
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == p);
  RC_ASSERT(summarize_as_path(a.value, width).length == p.length());
}

RC_GTEST_PROP(AttributesRoundTrip, As4PathThroughATwoOctetSession, ()) {
  AsPath p = *gen_as_path(false, false);
  std::vector<std::byte> buf;
  auto a2 = one_attribute(buf, [&](bytes::Writer& w) { encode_as_path(w, p, AsWidth::k2); });
  AsPath two = *decode_as_path(a2.value, {AsWidth::k2, true});
  std::vector<std::byte> buf4;
  auto a4 = one_attribute(buf4, [&](bytes::Writer& w) { encode_as4_path(w, p); });
  AsPath four = *decode_as_path(a4.value, {AsWidth::k4, false});
  // RFC 6793 4.2.3 gives back the same AS numbers (adjacent sequences may
  // merge, so compare the flattened path and its length).
  AsPath got = reconstruct_as4_path(two, four);
  RC_ASSERT(got.length() == p.length());
  std::vector<uint32_t> fa, fb;
  for (const auto& s : got.segments) fa.insert(fa.end(), s.asns.begin(), s.asns.end());
  for (const auto& s : p.segments) fb.insert(fb.end(), s.asns.begin(), s.asns.end());
  RC_ASSERT(fa == fb);
}

RC_GTEST_PROP(AttributesRoundTrip, Communities, (std::vector<uint32_t> c, std::vector<uint32_t> cl)) {
  RC_PRE(!c.empty() && !cl.empty() && c.size() < 1000 && cl.size() < 1000);
  std::vector<std::byte> buf;
  RC_ASSERT(*decode_communities(one_attribute(buf, [&](bytes::Writer& w) { encode_communities(w, c); }).value) == c);
  RC_ASSERT(*decode_cluster_list(one_attribute(buf, [&](bytes::Writer& w) { encode_cluster_list(w, cl); }).value) ==
            cl);
}

RC_GTEST_PROP(AttributesRoundTrip, ExtendedAndLargeCommunities, (std::vector<uint64_t> e, std::vector<uint32_t> l)) {
  RC_PRE(!e.empty() && l.size() >= 3 && e.size() < 500 && l.size() < 1500);
  std::vector<ExtCommunity> ext;
  for (auto x : e) ext.push_back({x});
  std::vector<LargeCommunity> large;
  for (size_t i = 0; i + 2 < l.size(); i += 3) large.push_back({l[i], l[i + 1], l[i + 2]});
  std::vector<Ipv6ExtCommunity> v6;
  for (size_t i = 0; i < ext.size() && i < 50; ++i) {
    Ipv6ExtCommunity c;
    c.type = static_cast<uint8_t>(e[i]);
    c.subtype = static_cast<uint8_t>(e[i] >> 8);
    for (size_t k = 0; k < 16; ++k) c.global[k] = static_cast<uint8_t>(e[i] >> (k % 8 * 8));
    c.local = static_cast<uint16_t>(e[i] >> 48);
    v6.push_back(c);
  }
  std::vector<std::byte> buf;
  RC_ASSERT(*decode_ext_communities(
                one_attribute(buf, [&](bytes::Writer& w) { encode_ext_communities(w, ext); }).value) == ext);
  RC_ASSERT(*decode_large_communities(
                one_attribute(buf, [&](bytes::Writer& w) { encode_large_communities(w, large); }).value) == large);
  RC_ASSERT(*decode_ipv6_ext_communities(
                one_attribute(buf, [&](bytes::Writer& w) { encode_ipv6_ext_communities(w, v6); }).value) == v6);
}

RC_GTEST_PROP(AttributesRoundTrip, MpReachAndUnreach, ()) {
  const Family f = *rc::gen::element(kIpv4Unicast, kIpv6Unicast, kIpv4Multicast, kIpv6Multicast);
  const bool ap = *rc::gen::arbitrary<bool>();
  auto list = *rc::gen::resize(200, rc::gen::container<std::vector<NlriPrefix>>(gen_prefix(ip_family(f), ap)));
  NextHop nh;
  if (f.afi == 1) {
    nh.global = net::IpAddress::v4(*rc::gen::arbitrary<uint32_t>());
  } else {
    nh.global = *net::IpAddress::parse("2001:db8::1");
    if (*rc::gen::arbitrary<bool>()) nh.link_local = net::IpAddress::parse("fe80::2");
  }
  FamilySet aps;
  if (ap) aps.add(f);
  std::vector<std::byte> buf;
  auto a = one_attribute(buf, [&](bytes::Writer& w) { encode_mp_reach(w, f, nh, list, ap); });
  auto m = decode_mp_reach(a.value, aps, {});
  RC_ASSERT(m.ok());
  RC_ASSERT(m->family == f);
  RC_ASSERT(m->next_hop == nh);
  RC_ASSERT(std::vector<NlriPrefix>(m->nlri.begin(), m->nlri.end()) == list);
  auto u = one_attribute(buf, [&](bytes::Writer& w) { encode_mp_unreach(w, f, list, ap); });
  auto mu = decode_mp_unreach(u.value, aps);
  RC_ASSERT(mu.ok());
  RC_ASSERT(std::vector<NlriPrefix>(mu->withdrawn.begin(), mu->withdrawn.end()) == list);
}

RC_GTEST_PROP(AttributesRoundTrip, WholeAttributeSet, ()) {
  PathAttributes a;
  a.origin = static_cast<Origin>(*rc::gen::inRange(0, 3));
  a.as_path = *gen_as_path(true, false);
  if (*rc::gen::arbitrary<bool>()) a.next_hop = net::IpAddress::v4(*rc::gen::arbitrary<uint32_t>());
  if (*rc::gen::arbitrary<bool>()) a.med = *rc::gen::arbitrary<uint32_t>();
  if (*rc::gen::arbitrary<bool>()) a.local_pref = *rc::gen::arbitrary<uint32_t>();
  a.atomic_aggregate = *rc::gen::arbitrary<bool>();
  if (*rc::gen::arbitrary<bool>())
    a.aggregator = Aggregator{*rc::gen::inRange<uint32_t>(1, 0xffffffff), net::IpAddress::v4(1)};
  a.communities = *rc::gen::resize(20, rc::gen::arbitrary<std::vector<uint32_t>>());
  a.cluster_list = *rc::gen::resize(5, rc::gen::arbitrary<std::vector<uint32_t>>());
  if (*rc::gen::arbitrary<bool>()) a.originator_id = *rc::gen::arbitrary<uint32_t>();
  if (*rc::gen::arbitrary<bool>()) {
    a.mp_family = kIpv6Unicast;
    a.mp_next_hop = NextHop{*net::IpAddress::parse("2001:db8::1"), net::IpAddress::parse("fe80::1")};
  }
  for (uint64_t x : *rc::gen::resize(5, rc::gen::arbitrary<std::vector<uint64_t>>())) a.ext_communities.push_back({x});
  if (*rc::gen::arbitrary<bool>()) a.large_communities.push_back({1, 2, 3});
  if (*rc::gen::arbitrary<bool>()) a.otc = *rc::gen::arbitrary<uint32_t>();
  if (*rc::gen::arbitrary<bool>()) {
    a.unknown.push_back({attr_flag::kOptional | attr_flag::kTransitive | attr_flag::kPartial, 99,
                         {std::byte{1}, std::byte{2}}});
  }
  if (*rc::gen::arbitrary<bool>()) a.partial |= uint64_t{1} << attr_type::kCommunities;
  if (a.communities.empty()) a.partial = 0;
  AttributeSet s = AttributeSet::from(a);
  RC_ASSERT(s.decode() == a);
  auto again = AttributeSet::from_canonical(s.wire());
  RC_ASSERT(again.ok());
  RC_ASSERT(*again == s);
  RC_ASSERT(s.as_path_length() == a.as_path->length());
}

}  // namespace
}  // namespace petrel::codec
