// Tests for mrt/writer.h: TABLE_DUMP_V2 dumps read back through Petrel's
// own reader (mrt/mrt.h), by hand for IPv4, IPv6, ADD-PATH, many peers and
// an empty table, and as a property on random tables.
#include "mrt/writer.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "mrt/mrt.h"

namespace petrel::mrt {
namespace {

using Bytes = std::vector<std::byte>;

Bytes hex(const char* h) { return *bytes::from_hex(h); }

// ORIGIN IGP, AS_PATH (one AS_SEQUENCE, 4-octet), NEXT_HOP.
Bytes v4_attributes(const std::vector<uint32_t>& path, uint32_t next_hop) {
  Bytes out;
  bytes::Writer w(out);
  w.u8(0x40);
  w.u8(1);
  w.u8(1);
  w.u8(0);
  w.u8(0x40);
  w.u8(2);
  w.u8(static_cast<uint8_t>(path.empty() ? 0 : 2 + 4 * path.size()));
  if (!path.empty()) {
    w.u8(2);
    w.u8(static_cast<uint8_t>(path.size()));
    for (uint32_t as : path) w.u32(as);
  }
  w.u8(0x40);
  w.u8(3);
  w.u8(4);
  w.u32(next_hop);
  return out;
}

// ORIGIN IGP and MP_REACH_NLRI as the table holds it: AFI 2, SAFI 1, a
// 16-octet next hop, the reserved octet, no NLRI.
Bytes v6_attributes() {
  return hex("40 01 01 00  80 0e 15 0002 01 10 20010db8000000000000000000000001 00");
}

struct Dump {
  Bytes data;
  DumpStats stats;
};

std::vector<Record> records(const Bytes& data) {
  std::vector<Record> out;
  RecordReader r(data);
  for (int i = 0; i < 1'000'000 && !r.done(); ++i) {
    auto rec = r.next();
    EXPECT_TRUE(rec.ok());
    if (!rec) break;
    out.push_back(*rec);
  }
  return out;
}

std::vector<DumpPeer> some_peers(size_t n) {
  std::vector<DumpPeer> peers;
  for (size_t i = 0; i < n; ++i) {
    DumpPeer p;
    p.bgp_id = static_cast<uint32_t>(0x0a000000u + i);
    p.address = i % 2 == 0 ? net::IpAddress::v4(static_cast<uint32_t>(0xc0000200u + i))
                           : *net::IpAddress::parse("2001:db8::" + std::to_string(i % 0xffff + 1));
    p.as = static_cast<uint32_t>(64512 + i * 100000);
    peers.push_back(p);
  }
  return peers;
}

TEST(MrtWriter, Ipv4RoundTrip) {
  Bytes out;
  TableDumpWriter w(1700000000);
  auto peers = some_peers(2);
  ASSERT_TRUE(w.peer_index_table(0x01020304, "petrel", peers, out));
  Bytes a1 = v4_attributes({65001, 4200000000u}, 0xc0000201);
  Bytes a2 = v4_attributes({65002}, 0xc0000202);
  std::vector<DumpRoute> routes = {{0, 1699999000, std::nullopt, a1}, {1, 1699999001, std::nullopt, a2}};
  w.rib(*net::Prefix::parse("198.51.100.0/24"), routes, out);
  w.rib(*net::Prefix::parse("10.0.0.0/8"), std::span(routes).first(1), out);
  EXPECT_EQ(w.stats().records, 3u);
  EXPECT_EQ(w.stats().prefixes, 2u);
  EXPECT_EQ(w.stats().routes, 3u);
  EXPECT_EQ(w.stats().routes_left_out, 0u);
  EXPECT_EQ(w.stats().bytes, out.size());

  auto recs = records(out);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].timestamp, 1700000000u);
  auto pit = decode_peer_index_table(recs[0]);
  ASSERT_TRUE(pit.ok());
  EXPECT_EQ(pit->collector_bgp_id, 0x01020304u);
  EXPECT_EQ(pit->view_name, "petrel");
  ASSERT_EQ(pit->peers.size(), 2u);
  EXPECT_EQ(pit->peers[0].ip, peers[0].address);
  EXPECT_EQ(pit->peers[1].ip, peers[1].address);
  EXPECT_EQ(pit->peers[0].type, 0x02);
  EXPECT_EQ(pit->peers[1].type, 0x03);
  EXPECT_EQ(pit->peers[1].as, peers[1].as);
  EXPECT_EQ(pit->peers[1].bgp_id, peers[1].bgp_id);

  ASSERT_TRUE(is_rib(recs[1]));
  EXPECT_EQ(recs[1].subtype, static_cast<uint16_t>(TableDumpV2::kRibIpv4Unicast));
  auto rib = decode_rib(recs[1]);
  ASSERT_TRUE(rib.ok());
  EXPECT_EQ(rib->sequence, 0u);
  EXPECT_FALSE(rib->add_path);
  EXPECT_EQ(rib->prefix, *net::Prefix::parse("198.51.100.0/24"));
  ASSERT_EQ(rib->entry_count, 2);
  auto it = rib->begin();
  EXPECT_EQ(it->peer_index, 0);
  EXPECT_EQ(it->originated, 1699999000u);
  EXPECT_EQ(Bytes(it->attributes.begin(), it->attributes.end()), a1);
  ++it;
  EXPECT_EQ(it->peer_index, 1);
  EXPECT_EQ(Bytes(it->attributes.begin(), it->attributes.end()), a2);
  auto rib2 = decode_rib(recs[2]);
  ASSERT_TRUE(rib2.ok());
  EXPECT_EQ(rib2->sequence, 1u);
  EXPECT_EQ(rib2->prefix, *net::Prefix::parse("10.0.0.0/8"));
}

TEST(MrtWriter, Ipv6MpReachIsAbbreviatedToTheNextHop) {
  Bytes out;
  TableDumpWriter w(1);
  auto peers = some_peers(2);
  ASSERT_TRUE(w.peer_index_table(7, "", peers, out));
  Bytes a = v6_attributes();
  std::vector<DumpRoute> routes = {{1, 5, std::nullopt, a}};
  w.rib(*net::Prefix::parse("2001:db8:1::/48"), routes, out);
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[1].subtype, static_cast<uint16_t>(TableDumpV2::kRibIpv6Unicast));
  auto rib = decode_rib(recs[1]);
  ASSERT_TRUE(rib.ok());
  EXPECT_EQ(rib->afi, 2);
  EXPECT_EQ(rib->prefix, *net::Prefix::parse("2001:db8:1::/48"));
  ASSERT_EQ(rib->entry_count, 1);
  // RFC 6396 section 4.3.4: next hop length and next hop only.
  EXPECT_EQ(bytes::to_hex(rib->begin()->attributes),
            bytes::to_hex(hex("40 01 01 00  80 0e 11 10 20010db8000000000000000000000001")));
}

TEST(MrtWriter, RibAttributesDropsMpUnreachAndKeepsExtendedLength) {
  Bytes long_value(300, std::byte{7});
  Bytes in = hex("40 01 01 02  80 0f 03 0002 01");
  bytes::Writer w(in);
  w.u8(0xd0);  // optional transitive, partial, extended length
  w.u8(99);
  w.u16(300);
  w.bytes(long_value);
  auto out = rib_attributes(in);
  ASSERT_TRUE(out.has_value());
  Bytes want = hex("40 01 01 02");
  bytes::Writer ww(want);
  ww.u8(0xd0);
  ww.u8(99);
  ww.u16(300);
  ww.bytes(long_value);
  EXPECT_EQ(*out, want);
  // Broken framing: nothing (the route is left out and counted, below).
  EXPECT_FALSE(rib_attributes(hex("40 01 01 00  40 02 09 02")).has_value());
  EXPECT_FALSE(rib_attributes(hex("40 01")).has_value());
  EXPECT_FALSE(rib_attributes(hex("80 0e 05 0002 01 10 20")).has_value());  // next hop past its end
  EXPECT_TRUE(rib_attributes({}).has_value());
}

TEST(MrtWriter, BrokenAttributesAreLeftOutAndCounted) {
  Bytes out;
  TableDumpWriter w(1);
  ASSERT_TRUE(w.peer_index_table(7, "", some_peers(1), out));
  Bytes broken = hex("40 01 01 00  40 02 09 02");
  Bytes ok = v4_attributes({1}, 1);
  std::vector<DumpRoute> routes = {{0, 1, std::nullopt, broken}, {0, 1, 3u, ok}};
  w.rib(*net::Prefix::parse("192.0.2.0/24"), routes, out);
  EXPECT_EQ(w.stats().routes, 1u);
  EXPECT_EQ(w.stats().routes_left_out, 1u);
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[1].subtype, static_cast<uint16_t>(TableDumpV2::kRibIpv4UnicastAddPath));
}

TEST(MrtWriter, AddPathRoutesGoToTheAddPathSubtype) {
  Bytes out;
  TableDumpWriter w(1);
  ASSERT_TRUE(w.peer_index_table(7, "v", some_peers(2), out));
  Bytes a4 = v4_attributes({65001}, 0xc0000201);
  Bytes a6 = v6_attributes();
  std::vector<DumpRoute> routes = {{0, 1, 1u, a4}, {0, 1, 2u, a4}, {1, 1, std::nullopt, a4}};
  w.rib(*net::Prefix::parse("192.0.2.0/24"), routes, out);
  std::vector<DumpRoute> routes6 = {{1, 1, 0u, a6}};
  w.rib(*net::Prefix::parse("2001:db8::/32"), routes6, out);
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[1].subtype, static_cast<uint16_t>(TableDumpV2::kRibIpv4Unicast));
  EXPECT_EQ(recs[2].subtype, static_cast<uint16_t>(TableDumpV2::kRibIpv4UnicastAddPath));
  EXPECT_EQ(recs[3].subtype, static_cast<uint16_t>(TableDumpV2::kRibIpv6UnicastAddPath));
  auto plain = decode_rib(recs[1]);
  auto ap = decode_rib(recs[2]);
  auto ap6 = decode_rib(recs[3]);
  ASSERT_TRUE(plain && ap && ap6);
  EXPECT_EQ(plain->entry_count, 1);
  EXPECT_EQ(plain->begin()->peer_index, 1);
  ASSERT_EQ(ap->entry_count, 2);
  EXPECT_TRUE(ap->add_path);
  EXPECT_EQ(ap->begin()->path_id, 1u);
  EXPECT_EQ(std::next(ap->begin())->path_id, 2u);
  EXPECT_EQ(plain->sequence + 1, ap->sequence);
  EXPECT_EQ(ap6->begin()->path_id, 0u);
  EXPECT_EQ(w.stats().prefixes, 2u);
  EXPECT_EQ(w.stats().routes, 4u);
}

TEST(MrtWriter, ManyPeers) {
  Bytes out;
  TableDumpWriter w(1);
  auto peers = some_peers(1000);
  ASSERT_TRUE(w.peer_index_table(7, "many", peers, out));
  Bytes a = v4_attributes({65001}, 1);
  std::vector<DumpRoute> routes;
  for (size_t i = 0; i < peers.size(); ++i) routes.push_back({static_cast<uint16_t>(i), 1, std::nullopt, a});
  w.rib(*net::Prefix::parse("0.0.0.0/0"), routes, out);
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 2u);
  auto pit = decode_peer_index_table(recs[0]);
  ASSERT_TRUE(pit.ok());
  ASSERT_EQ(pit->peers.size(), peers.size());
  for (size_t i = 0; i < peers.size(); ++i) {
    EXPECT_EQ(pit->peers[i].ip, peers[i].address);
    EXPECT_EQ(pit->peers[i].as, peers[i].as);
  }
  auto rib = decode_rib(recs[1]);
  ASSERT_TRUE(rib.ok());
  EXPECT_EQ(rib->prefix.len(), 0);
  ASSERT_EQ(rib->entry_count, 1000);
  uint16_t want = 0;
  for (const RibEntry& e : *rib) EXPECT_EQ(e.peer_index, want++);
  // More than 65535 peers do not fit the table's count.
  TableDumpWriter w2(1);
  Bytes out2;
  EXPECT_FALSE(w2.peer_index_table(7, "", some_peers(65536), out2));
  EXPECT_TRUE(out2.empty());
}

TEST(MrtWriter, EmptyTable) {
  Bytes out;
  TableDumpWriter w(1);
  ASSERT_TRUE(w.peer_index_table(7, "empty", {}, out));
  w.rib(*net::Prefix::parse("192.0.2.0/24"), {}, out);
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 1u);
  auto pit = decode_peer_index_table(recs[0]);
  ASSERT_TRUE(pit.ok());
  EXPECT_TRUE(pit->peers.empty());
  EXPECT_EQ(w.stats().prefixes, 0u);
  EXPECT_EQ(w.stats().routes, 0u);
}

TEST(MrtWriter, OversizedAttributesAndUnknownPeersAreLeftOutAndCounted) {
  Bytes out;
  TableDumpWriter w(1);
  ASSERT_TRUE(w.peer_index_table(7, "", some_peers(1), out));
  // 300 attributes of 255 octets: more than a RIB entry's 16-bit length.
  Bytes big;
  bytes::Writer bw(big);
  for (int i = 0; i < 300; ++i) {
    bw.u8(0xc0);
    bw.u8(99);
    bw.u8(255);
    bw.fill(std::byte{1}, 255);
  }
  ASSERT_GT(big.size(), kMaxRibAttributes);
  Bytes ok = v4_attributes({1}, 1);
  std::vector<DumpRoute> routes = {{0, 1, std::nullopt, big}, {5, 1, std::nullopt, ok}, {0, 1, std::nullopt, ok}};
  w.rib(*net::Prefix::parse("192.0.2.0/24"), routes, out);
  w.rib(*net::Prefix::parse("192.0.3.0/24"), std::span(routes).first(2), out);
  EXPECT_EQ(w.stats().routes, 1u);
  EXPECT_EQ(w.stats().routes_left_out, 4u);
  EXPECT_EQ(w.stats().prefixes, 1u);
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 2u);
  auto rib = decode_rib(recs[1]);
  ASSERT_TRUE(rib.ok());
  EXPECT_EQ(rib->entry_count, 1);
}

// Random tables: every route written comes back with its prefix, peer,
// time, path identifier and attributes; the counts add up.
RC_GTEST_PROP(MrtWriterProp, RandomTablesRoundTrip, ()) {
  const auto npeers = *rc::gen::inRange<size_t>(0, 40);
  std::vector<DumpPeer> peers;
  for (size_t i = 0; i < npeers; ++i) {
    DumpPeer p;
    p.bgp_id = *rc::gen::arbitrary<uint32_t>();
    p.as = *rc::gen::arbitrary<uint32_t>();
    std::array<uint8_t, 16> a{};
    for (auto& b : a) b = *rc::gen::arbitrary<uint8_t>();
    p.address = *rc::gen::arbitrary<bool>() ? net::IpAddress::from_bytes(net::IpFamily::V6, a.data()) : net::IpAddress::v4(*rc::gen::arbitrary<uint32_t>());
    peers.push_back(p);
  }
  const auto nprefixes = *rc::gen::inRange<size_t>(0, 30);
  struct Want {
    net::Prefix prefix;
    std::vector<DumpRoute> routes;
    std::vector<Bytes> attrs;
  };
  std::vector<Want> wants;
  std::map<net::Prefix, size_t> seen;
  for (size_t i = 0; i < nprefixes; ++i) {
    const bool v6 = *rc::gen::arbitrary<bool>();
    std::array<uint8_t, 16> a{};
    for (auto& b : a) b = *rc::gen::arbitrary<uint8_t>();
    auto addr = v6 ? net::IpAddress::from_bytes(net::IpFamily::V6, a.data()) : net::IpAddress::v4(*rc::gen::arbitrary<uint32_t>());
    auto len = *rc::gen::inRange<unsigned>(0, v6 ? 129 : 33);
    auto p = *net::Prefix::make(addr, len);
    if (seen.contains(p)) continue;
    seen[p] = wants.size();
    Want want{p, {}, {}};
    const auto nroutes = npeers == 0 ? 0 : *rc::gen::inRange<size_t>(0, 8);
    for (size_t r = 0; r < nroutes; ++r) {
      std::vector<uint32_t> path = *rc::gen::container<std::vector<uint32_t>>(
          *rc::gen::inRange<size_t>(0, 10), rc::gen::arbitrary<uint32_t>());
      want.attrs.push_back(v4_attributes(path, *rc::gen::arbitrary<uint32_t>()));
    }
    for (size_t r = 0; r < nroutes; ++r) {
      DumpRoute d;
      d.peer_index = *rc::gen::inRange<uint16_t>(0, static_cast<uint16_t>(npeers));
      d.originated = *rc::gen::arbitrary<uint32_t>();
      if (*rc::gen::arbitrary<bool>()) d.path_id = *rc::gen::arbitrary<uint32_t>();
      d.attributes = want.attrs[r];
      want.routes.push_back(d);
    }
    wants.push_back(std::move(want));
  }
  Bytes out;
  TableDumpWriter w(42);
  RC_ASSERT(w.peer_index_table(9, "prop", peers, out));
  size_t total = 0;
  for (const Want& want : wants) {
    w.rib(want.prefix, want.routes, out);
    total += want.routes.size();
  }
  RC_ASSERT(w.stats().routes == total);
  RC_ASSERT(w.stats().routes_left_out == 0u);
  RC_ASSERT(w.stats().bytes == out.size());

  RecordReader reader(out);
  auto first = reader.next();
  RC_ASSERT(first.ok());
  auto pit = decode_peer_index_table(*first);
  RC_ASSERT(pit.ok());
  RC_ASSERT(pit->peers.size() == npeers);
  for (size_t i = 0; i < npeers; ++i) {
    RC_ASSERT(pit->peers[i].ip == peers[i].address);
    RC_ASSERT(pit->peers[i].as == peers[i].as);
    RC_ASSERT(pit->peers[i].bgp_id == peers[i].bgp_id);
  }
  std::map<net::Prefix, size_t> got;
  uint32_t sequence = 0;
  for (int i = 0; i < 1000 && !reader.done(); ++i) {
    auto rec = reader.next();
    RC_ASSERT(rec.ok());
    auto rib = decode_rib(*rec);
    RC_ASSERT(rib.ok());
    RC_ASSERT(rib->sequence == sequence++);
    auto it = seen.find(rib->prefix);
    RC_ASSERT(it != seen.end());
    const Want& want = wants[it->second];
    // The entries of this record, in order, are the routes of its kind.
    std::vector<size_t> kind;
    for (size_t r = 0; r < want.routes.size(); ++r)
      if (want.routes[r].path_id.has_value() == rib->add_path) kind.push_back(r);
    RC_ASSERT(rib->entry_count == kind.size());
    size_t k = 0;
    for (const RibEntry& e : *rib) {
      const DumpRoute& d = want.routes[kind[k]];
      RC_ASSERT(e.peer_index == d.peer_index);
      RC_ASSERT(e.originated == d.originated);
      RC_ASSERT(e.path_id == d.path_id.value_or(0));
      RC_ASSERT(Bytes(e.attributes.begin(), e.attributes.end()) == want.attrs[kind[k]]);
      ++k;
    }
    got[rib->prefix] += k;
  }
  RC_ASSERT(reader.done());
  size_t read = 0;
  for (const auto& [p, n] : got) read += n;
  RC_ASSERT(read == total);
}

// Hostile attribute bytes: every route is written or left out and
// counted, and whatever is written reads back.
RC_GTEST_PROP(MrtWriterProp, RandomAttributeBytesAreWrittenOrCounted, ()) {
  const auto n = *rc::gen::inRange<size_t>(0, 20);
  std::vector<Bytes> attrs;
  for (size_t i = 0; i < n; ++i)
    attrs.push_back(*rc::gen::container<Bytes>(*rc::gen::inRange<size_t>(0, 64),
                                               rc::gen::map(rc::gen::arbitrary<uint8_t>(), [](uint8_t b) {
                                                 return std::byte{b};
                                               })));
  std::vector<DumpRoute> routes;
  for (size_t i = 0; i < n; ++i) {
    DumpRoute d;
    d.peer_index = *rc::gen::inRange<uint16_t>(0, 3);
    if (*rc::gen::arbitrary<bool>()) d.path_id = static_cast<uint32_t>(i);
    d.attributes = attrs[i];
    routes.push_back(d);
  }
  Bytes out;
  TableDumpWriter w(1);
  RC_ASSERT(w.peer_index_table(1, "", some_peers(2), out));
  w.rib(*net::Prefix::parse("2001:db8::/32"), routes, out);
  RC_ASSERT(w.stats().routes + w.stats().routes_left_out == n);
  RecordReader reader(out);
  uint64_t entries = 0;
  for (int i = 0; i < 10 && !reader.done(); ++i) {
    auto rec = reader.next();
    RC_ASSERT(rec.ok());
    if (!is_rib(*rec)) continue;
    auto rib = decode_rib(*rec);
    RC_ASSERT(rib.ok());
    entries += rib->entry_count;
  }
  RC_ASSERT(reader.done());
  RC_ASSERT(entries == w.stats().routes);
}

}  // namespace
}  // namespace petrel::mrt

// --- BGP4MP_ET ------------------------------------------------------------

namespace petrel::mrt {
namespace {

Bgp4mpPeer v4_session() {
  Bgp4mpPeer p;
  p.peer_as = 65002;
  p.local_as = 65001;
  p.peer_ip = *net::IpAddress::parse("192.0.2.1");
  p.local_ip = *net::IpAddress::parse("192.0.2.2");
  return p;
}

// An UPDATE with nothing in it: IPv4 unicast's End-of-RIB (RFC 4724).
Bytes end_of_rib() { return hex("ffffffffffffffffffffffffffffffff" "0017" "02" "0000" "0000"); }

TEST(MrtBgp4mp, MessageAs4ByteExact) {
  Bytes out;
  bgp4mp_message(Bgp4mpTime{1700000000, 123456}, v4_session(), false, end_of_rib(), out);
  EXPECT_EQ(bytes::to_hex(out),
            "6553f100" "0011" "0004" "0000002f"  // ET, MESSAGE_AS4, length (microseconds included)
            "0001e240"                           // microseconds
            "0000fdea" "0000fde9" "0000" "0001"  // peer AS, local AS, interface, AFI
            "c0000201" "c0000202"                // peer IP, local IP
            "ffffffffffffffffffffffffffffffff001702" "00000000");
}

TEST(MrtBgp4mp, StateChangeAs4ByteExact) {
  Bytes out;
  bgp4mp_state_change(Bgp4mpTime{1700000000, 5}, v4_session(), 5, 6, out);
  EXPECT_EQ(bytes::to_hex(out),
            "6553f100" "0011" "0005" "0000001c" "00000005"
            "0000fdea" "0000fde9" "0000" "0001" "c0000201" "c0000202" "0005" "0006");
}

TEST(MrtBgp4mp, RoundTripThroughTheReader) {
  Bytes out;
  Bgp4mpPeer v6;
  v6.peer_as = 4200000000;
  v6.local_as = 65001;
  v6.peer_ip = *net::IpAddress::parse("2001:db8::1");
  v6.local_ip = *net::IpAddress::parse("192.0.2.2");  // the other family: zeros
  bgp4mp_state_change(Bgp4mpTime{10, 1}, v6, 1, 6, out);
  bgp4mp_message(Bgp4mpTime{11, 2}, v6, true, end_of_rib(), out);
  bgp4mp_message(Bgp4mpTime{12, 3}, v4_session(), false, end_of_rib(), out);

  RecordReader r(out);
  auto a = r.next();
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->is(Type::kBgp4mpEt));
  EXPECT_EQ(a->timestamp, 10u);
  EXPECT_EQ(a->microseconds, 1u);
  ASSERT_TRUE(is_bgp4mp_state_change(*a));
  auto sc = decode_bgp4mp_state_change(*a);
  ASSERT_TRUE(sc);
  EXPECT_EQ(sc->header.peer_as, 4200000000u);
  EXPECT_EQ(sc->header.local_as, 65001u);
  EXPECT_EQ(sc->header.peer_ip, v6.peer_ip);
  EXPECT_EQ(sc->header.local_ip, *net::IpAddress::parse("::"));
  EXPECT_EQ(sc->old_state, 1);
  EXPECT_EQ(sc->new_state, 6);

  auto b = r.next();
  ASSERT_TRUE(b);
  ASSERT_TRUE(is_bgp4mp_message(*b));
  auto m = decode_bgp4mp_message(*b);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->as4);
  EXPECT_TRUE(m->add_path);
  EXPECT_FALSE(m->local);
  EXPECT_EQ(Bytes(m->message.begin(), m->message.end()), end_of_rib());

  auto c = r.next();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->microseconds, 3u);
  auto m2 = decode_bgp4mp_message(*c);
  ASSERT_TRUE(m2);
  EXPECT_FALSE(m2->add_path);
  EXPECT_EQ(m2->header.peer_ip, *net::IpAddress::parse("192.0.2.1"));
  EXPECT_EQ(m2->header.local_ip, *net::IpAddress::parse("192.0.2.2"));
  EXPECT_TRUE(r.done());
}

}  // namespace
}  // namespace petrel::mrt
