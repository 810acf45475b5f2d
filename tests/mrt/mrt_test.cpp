// Tests for mrt: hand-built records of each type, truncation at every
// length, random bytes, and the real MRT files of tests/data/real with the
// counts their README gives.
#include "mrt/mrt.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "tests/real_data.h"

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "mrt/file.h"

namespace petrel::mrt {
namespace {

using Bytes = std::vector<std::byte>;

// A record: common header then body.
Bytes record(uint16_t type, uint16_t subtype, const Bytes& body, uint32_t ts = 1470931200) {
  Bytes out;
  bytes::Writer w(out);
  w.u32(ts);
  w.u16(type);
  w.u16(subtype);
  w.u32(static_cast<uint32_t>(body.size()));
  w.bytes(body);
  return out;
}

Bytes keepalive() {
  Bytes m(16, std::byte{0xff});
  bytes::Writer w(m);
  w.u16(19);
  w.u8(4);
  return m;
}

Bytes bgp4mp_as4_body(const Bytes& message) {
  Bytes b;
  bytes::Writer w(b);
  w.u32(4200000000u);  // peer AS
  w.u32(64496);        // local AS
  w.u16(3);            // interface index
  w.u16(1);            // AFI IPv4
  w.raw("\xc0\x00\x02\x01", 4);
  w.raw("\xc0\x00\x02\x02", 4);
  w.bytes(message);
  return b;
}

// Reads the one record of data. Records point into their bytes, so data is
// kept for the rest of the test run.
Record only_record(Bytes data) {
  static std::deque<Bytes> kept;
  const Bytes& d = kept.emplace_back(std::move(data));
  RecordReader r(d);
  auto rec = r.next();
  EXPECT_TRUE(rec.ok());
  EXPECT_TRUE(r.done());
  return rec.ok() ? *rec : Record{};
}

TEST(MrtRecord, Bgp4mpMessageAs4) {
  Record rec = only_record(record(16, 4, bgp4mp_as4_body(keepalive())));
  EXPECT_EQ(rec.timestamp, 1470931200u);
  ASSERT_TRUE(is_bgp4mp_message(rec));
  auto m = decode_bgp4mp_message(rec);
  ASSERT_TRUE(m.ok()) << to_string(m.error());
  EXPECT_EQ(m->header.peer_as, 4200000000u);
  EXPECT_EQ(m->header.local_as, 64496u);
  EXPECT_EQ(m->header.interface_index, 3);
  EXPECT_EQ(m->header.peer_ip.to_string(), "192.0.2.1");
  EXPECT_EQ(m->header.local_ip.to_string(), "192.0.2.2");
  EXPECT_TRUE(m->as4);
  EXPECT_FALSE(m->add_path);
  EXPECT_FALSE(m->local);
  EXPECT_EQ(Bytes(m->message.begin(), m->message.end()), keepalive());
}

TEST(MrtRecord, Bgp4mpEtReadsMicrosecondsAndIpv6) {
  Bytes body;
  bytes::Writer w(body);
  w.u32(250000);  // microseconds
  w.u16(64497);
  w.u16(64496);
  w.u16(0);
  w.u16(2);  // AFI IPv6
  Bytes v6(16, std::byte{0});
  v6[0] = std::byte{0x20};
  v6[1] = std::byte{0x01};
  v6[2] = std::byte{0x0d};
  v6[3] = std::byte{0xb8};
  v6[15] = std::byte{1};
  w.bytes(v6);
  v6[15] = std::byte{2};
  w.bytes(v6);
  w.bytes(keepalive());
  Record rec = only_record(record(17, 8, body));  // MESSAGE_ADDPATH: 2-octet ASes
  EXPECT_EQ(rec.microseconds, 250000u);
  auto m = decode_bgp4mp_message(rec);
  ASSERT_TRUE(m.ok()) << to_string(m.error());
  EXPECT_TRUE(m->add_path);
  EXPECT_FALSE(m->as4);
  EXPECT_EQ(m->header.peer_as, 64497u);
  EXPECT_EQ(m->header.peer_ip.to_string(), "2001:db8::1");
  EXPECT_EQ(m->header.local_ip.to_string(), "2001:db8::2");
  EXPECT_EQ(m->message.size(), 19u);
}

TEST(MrtRecord, Bgp4mpStateChange) {
  Bytes body;
  bytes::Writer w(body);
  w.u16(64497);
  w.u16(64496);
  w.u16(0);
  w.u16(1);
  w.u32(0xc0000201);
  w.u32(0xc0000202);
  w.u16(3);  // Active
  w.u16(6);  // Established
  Record rec = only_record(record(16, 0, body));
  EXPECT_FALSE(is_bgp4mp_message(rec));
  ASSERT_TRUE(is_bgp4mp_state_change(rec));
  auto s = decode_bgp4mp_state_change(rec);
  ASSERT_TRUE(s.ok()) << to_string(s.error());
  EXPECT_EQ(s->old_state, 3);
  EXPECT_EQ(s->new_state, 6);
  EXPECT_EQ(decode_bgp4mp_message(rec).error(), Error::kWrongType);
}

TEST(MrtRecord, Bgp4mpBadAfi) {
  auto body = bgp4mp_as4_body(keepalive());
  body[11] = std::byte{3};
  Record rec = only_record(record(16, 4, body));
  EXPECT_EQ(decode_bgp4mp_message(rec).error(), Error::kBadAfi);
}

TEST(MrtRecord, TableDumpV1) {
  Bytes body;
  bytes::Writer w(body);
  w.u16(0);           // view
  w.u16(7);           // sequence
  w.u32(0xc6336400);  // 198.51.100.0
  w.u8(24);
  w.u8(1);            // status
  w.u32(1000);        // originated
  w.u32(0xc0000201);  // peer
  w.u16(64497);
  w.u16(4);
  w.raw("\x40\x01\x01\x00", 4);  // ORIGIN IGP
  Record rec = only_record(record(12, 1, body));
  auto e = decode_table_dump(rec);
  ASSERT_TRUE(e.ok()) << to_string(e.error());
  EXPECT_EQ(e->sequence, 7);
  EXPECT_EQ(e->prefix.to_string(), "198.51.100.0/24");
  EXPECT_EQ(e->originated, 1000u);
  EXPECT_EQ(e->peer_ip.to_string(), "192.0.2.1");
  EXPECT_EQ(e->peer_as, 64497);
  EXPECT_EQ(e->attributes.size(), 4u);
}

Bytes peer_index_body() {
  Bytes b;
  bytes::Writer w(b);
  w.u32(0x0a000001);
  w.u16(4);
  w.raw("view", 4);
  w.u16(2);
  w.u8(0);  // IPv4, 2-octet AS
  w.u32(0x0a000002);
  w.u32(0xc0000201);
  w.u16(64497);
  w.u8(3);  // IPv6, 4-octet AS
  w.u32(0x0a000003);
  w.fill(std::byte{0}, 15);
  w.u8(1);
  w.u32(4200000000u);
  return b;
}

TEST(MrtRecord, PeerIndexTable) {
  Record rec = only_record(record(13, 1, peer_index_body()));
  auto t = decode_peer_index_table(rec);
  ASSERT_TRUE(t.ok()) << to_string(t.error());
  EXPECT_EQ(t->collector_bgp_id, 0x0a000001u);
  EXPECT_EQ(t->view_name, "view");
  ASSERT_EQ(t->peers.size(), 2u);
  EXPECT_EQ(t->peers[0].ip.to_string(), "192.0.2.1");
  EXPECT_EQ(t->peers[0].as, 64497u);
  EXPECT_EQ(t->peers[1].ip.to_string(), "::1");
  EXPECT_EQ(t->peers[1].as, 4200000000u);
}

Bytes rib_body(bool add_path, uint16_t count_field, int entries) {
  Bytes b;
  bytes::Writer w(b);
  w.u32(42);  // sequence
  w.u8(20);
  w.raw("\xcb\x00\x70", 3);  // 203.0.112.0/20
  w.u16(count_field);
  for (int i = 0; i < entries; ++i) {
    w.u16(static_cast<uint16_t>(i));
    w.u32(1000 + static_cast<uint32_t>(i));
    if (add_path) w.u32(100 + static_cast<uint32_t>(i));
    w.u16(4);
    w.raw("\x40\x01\x01\x02", 4);
  }
  return b;
}

TEST(MrtRecord, RibIpv4UnicastAddPath) {
  Record rec = only_record(record(13, 8, rib_body(true, 3, 3)));
  ASSERT_TRUE(is_rib(rec));
  auto rib = decode_rib(rec);
  ASSERT_TRUE(rib.ok()) << to_string(rib.error());
  EXPECT_EQ(rib->sequence, 42u);
  EXPECT_EQ(rib->prefix.to_string(), "203.0.112.0/20");
  EXPECT_TRUE(rib->add_path);
  EXPECT_EQ(rib->afi, 1);
  EXPECT_EQ(rib->safi, 1);
  int i = 0;
  for (const RibEntry& e : *rib) {
    EXPECT_EQ(e.peer_index, i);
    EXPECT_EQ(e.originated, 1000u + static_cast<uint32_t>(i));
    EXPECT_EQ(e.path_id, 100u + static_cast<uint32_t>(i));
    EXPECT_EQ(e.attributes.size(), 4u);
    ++i;
  }
  EXPECT_EQ(i, 3);
}

TEST(MrtRecord, RibWithoutAddPathAndEmpty) {
  auto rib = decode_rib(only_record(record(13, 2, rib_body(false, 2, 2))));
  ASSERT_TRUE(rib.ok());
  EXPECT_FALSE(rib->add_path);
  EXPECT_EQ(std::distance(rib->begin(), rib->end()), 2);
  auto empty = decode_rib(only_record(record(13, 2, rib_body(false, 0, 0))));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->begin(), empty->end());
}

TEST(MrtRecord, RibCountBeyondEntriesIsAnError) {
  EXPECT_EQ(decode_rib(only_record(record(13, 2, rib_body(false, 3, 2)))).error(),
            Error::kBadEntryCount);
  EXPECT_EQ(decode_rib(only_record(record(13, 2, rib_body(false, 1, 2)))).error(),
            Error::kTrailingBytes);
}

TEST(MrtRecord, RibPrefixTooLong) {
  auto body = rib_body(false, 0, 0);
  body[4] = std::byte{33};
  EXPECT_EQ(decode_rib(only_record(record(13, 2, body))).error(), Error::kBadPrefixLength);
}

TEST(MrtReader, TruncationAtEveryLength) {
  auto one = record(16, 4, bgp4mp_as4_body(keepalive()));
  Bytes data = one;
  data.insert(data.end(), one.begin(), one.end());
  for (size_t n = 0; n < data.size(); ++n) {
    RecordReader r(bytes::Span(data).first(n));
    size_t ok = 0;
    bool failed = false;
    while (!r.done()) {
      auto rec = r.next();
      if (!rec) {
        failed = true;
        EXPECT_TRUE(rec.error() == Error::kTruncatedHeader || rec.error() == Error::kTruncatedRecord);
        continue;
      }
      ++ok;
    }
    EXPECT_EQ(ok, n / one.size()) << n;
    EXPECT_EQ(failed, n % one.size() != 0) << n;
  }
}

TEST(MrtReader, FieldTruncationInEveryDecoder) {
  std::vector<Bytes> records = {
      record(16, 0, Bytes(19, std::byte{0})), record(16, 4, bgp4mp_as4_body({})),
      record(12, 1, Bytes(10, std::byte{0})), record(13, 1, peer_index_body()),
      record(13, 8, rib_body(true, 2, 2)),
  };
  for (const auto& full : records) {
    Record rec = only_record(full);
    for (size_t n = 0; n < rec.body.size(); ++n) {
      Record cut = rec;
      cut.body = rec.body.first(n);
      // Each decoder either rejects the record or reads it within bounds.
      (void)decode_bgp4mp_message(cut);
      (void)decode_bgp4mp_state_change(cut);
      (void)decode_table_dump(cut);
      (void)decode_peer_index_table(cut);
      if (auto rib = decode_rib(cut)) {
        for (const auto& e : *rib) (void)e;
      }
    }
  }
}

RC_GTEST_PROP(MrtReaderProp, RandomBytesAreReadWithinBounds, ()) {
  auto data = *rc::gen::container<Bytes>(rc::gen::map(rc::gen::arbitrary<uint8_t>(), [](uint8_t b) {
    return std::byte{b};
  }));
  RecordReader r(data);
  size_t total = 0;
  while (!r.done()) {
    auto rec = r.next();
    if (!rec) break;
    total += 12 + rec->body.size();
    RC_ASSERT(rec->body.data() >= data.data());
    RC_ASSERT(rec->body.data() + rec->body.size() <= data.data() + data.size());
    if (auto m = decode_bgp4mp_message(*rec)) RC_ASSERT(m->message.size() <= rec->body.size());
    if (auto rib = decode_rib(*rec)) {
      size_t n = 0;
      for (const auto& e : *rib) {
        RC_ASSERT(e.attributes.size() <= rec->body.size());
        ++n;
      }
      RC_ASSERT(n == rib->entry_count);
    }
    (void)decode_table_dump(*rec);
    (void)decode_peer_index_table(*rec);
    (void)decode_bgp4mp_state_change(*rec);
  }
  RC_ASSERT(total <= data.size());
}

TEST(MrtFile, CorruptGzipIsAnError) {
  Bytes junk = {std::byte{0x1f}, std::byte{0x8b}, std::byte{8}, std::byte{0}, std::byte{1}};
  EXPECT_EQ(gunzip(junk).error(), FileError::kCorrupt);
  EXPECT_EQ(load_file("/nonexistent/petrel-mrt").error(), FileError::kOpen);
}

// --- Real data: tests/data/real/mrt ---------------------------------------

// Run apart (meson test 'mrt-real-data'): with no data folder, every test
// skips and the program exits 77, which meson counts as a skip.
[[maybe_unused]] const bool kSkipExit = petrel::testing::register_skip_exit();

std::string testdata(const char* name) { return petrel::testing::real_data_path(std::string("mrt/") + name); }

#define LOAD_OR_SKIP(var, name)                                                                  \
  std::string var##_path = testdata(name);                                                       \
  if (var##_path.empty()) {                                                                      \
    GTEST_SKIP() << "*** SKIPPED: real test data " << (name)                                     \
                 << " not found: set PETREL_TESTDATA (meson -Dtestdata=) to "                    \
                    "tests/data/real ***";                                                       \
  }                                                                                              \
  auto var##_loaded = load_file(var##_path);                                                     \
  ASSERT_TRUE(var##_loaded.ok()) << to_string(var##_loaded.error());                             \
  const std::vector<std::byte>& var = *var##_loaded

// Reads every record, failing the test on a framing error.
std::vector<Record> all_records(const std::vector<std::byte>& data) {
  std::vector<Record> out;
  RecordReader r(data);
  while (!r.done()) {
    auto rec = r.next();
    EXPECT_TRUE(rec.ok()) << to_string(rec.error());
    if (!rec) break;
    out.push_back(*rec);
  }
  return out;
}

uint8_t bgp_type(Span message) { return message.size() >= 19 ? std::to_integer<uint8_t>(message[18]) : 0; }

TEST(MrtRealData, Updates20160811) {
  LOAD_OR_SKIP(data, "updates.20160811.1600.gz");
  size_t updates = 0;
  std::set<net::IpAddress> peers;
  for (const Record& rec : all_records(data)) {
    if (!is_bgp4mp_message(rec)) continue;
    auto m = decode_bgp4mp_message(rec);
    ASSERT_TRUE(m.ok()) << to_string(m.error());
    EXPECT_TRUE(m->as4);
    peers.insert(m->header.peer_ip);
    if (bgp_type(m->message) == 2) ++updates;
  }
  EXPECT_EQ(updates, 17216u);
  EXPECT_EQ(peers.size(), 40u);
}

TEST(MrtRealData, LongWithdrawal) {
  LOAD_OR_SKIP(data, "updates.long_withdrawal.gz");
  auto records = all_records(data);
  ASSERT_EQ(records.size(), 1u);
  auto m = decode_bgp4mp_message(records[0]);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(bgp_type(m->message), 2);
  // The prefixes are IPv6, in MP_UNREACH_NLRI (RFC 4760 section 4): walk
  // just enough UPDATE framing to count them.
  bytes::Reader in(m->message);
  ASSERT_TRUE(in.skip(19));
  auto wlen = in.u16();
  ASSERT_TRUE(wlen && in.skip(*wlen));
  auto alen = in.u16();
  ASSERT_TRUE(alen);
  auto attrs = in.sub(*alen);
  ASSERT_TRUE(attrs);
  size_t n = 0;
  while (!attrs->empty()) {
    auto flags = attrs->u8();
    auto type = attrs->u8();
    ASSERT_TRUE(flags && type);
    size_t len = 0;
    if (*flags & 0x10) {  // extended length
      auto l = attrs->u16();
      ASSERT_TRUE(l);
      len = *l;
    } else {
      auto l = attrs->u8();
      ASSERT_TRUE(l);
      len = *l;
    }
    auto value = attrs->sub(len);
    ASSERT_TRUE(value);
    if (*type != 15) continue;
    ASSERT_TRUE(value->u16() == 2 && value->u8() == 1);  // IPv6 unicast
    while (!value->empty()) {
      auto plen = value->u8();
      ASSERT_TRUE(plen && value->skip((*plen + 7u) / 8u));
      ++n;
    }
  }
  EXPECT_EQ(n, 4096u);
}

TEST(MrtRealData, Bview20020722TableDumpV1) {
  LOAD_OR_SKIP(data, "bview.20020722.2337.gz");
  size_t entries = 0;
  std::set<net::Prefix> prefixes;
  std::set<net::IpAddress> peers;
  std::set<std::string_view> attribute_sets;
  for (const Record& rec : all_records(data)) {
    auto e = decode_table_dump(rec);
    ASSERT_TRUE(e.ok()) << to_string(e.error());
    ++entries;
    prefixes.insert(e->prefix);
    peers.insert(e->peer_ip);
    attribute_sets.insert(bytes::as_chars(e->attributes));
  }
  EXPECT_EQ(entries, 115521u);
  EXPECT_EQ(prefixes.size(), 112988u);
  EXPECT_EQ(peers.size(), 36u);
  EXPECT_EQ(attribute_sets.size(), 20934u);
}

// A TABLE_DUMP_V2 file: one PEER_INDEX_TABLE first, then RIB records whose
// peer indexes all point into it.
struct V2Summary {
  size_t peers = 0;
  size_t ribs = 0;
  size_t entries = 0;
  size_t add_path_entries = 0;
  std::set<uint32_t> path_ids;
};

V2Summary read_table_dump_v2(const std::vector<std::byte>& data) {
  V2Summary s;
  for (const Record& rec : all_records(data)) {
    EXPECT_TRUE(rec.is(Type::kTableDumpV2));
    if (rec.subtype == static_cast<uint16_t>(TableDumpV2::kPeerIndexTable)) {
      auto t = decode_peer_index_table(rec);
      EXPECT_TRUE(t.ok()) << to_string(t.error());
      if (t) s.peers = t->peers.size();
      continue;
    }
    auto rib = decode_rib(rec);
    EXPECT_TRUE(rib.ok()) << to_string(rib.error());
    if (!rib) continue;
    ++s.ribs;
    for (const RibEntry& e : *rib) {
      EXPECT_LT(e.peer_index, s.peers);
      ++s.entries;
      if (rib->add_path) {
        ++s.add_path_entries;
        s.path_ids.insert(e.path_id);
      }
    }
  }
  return s;
}

TEST(MrtRealData, AddPathRibsIpv4AndIpv6) {
  for (const char* name : {"bview.ipv4_unicast_add_path.gz", "bview.ipv6_unicast_add_path.gz"}) {
    SCOPED_TRACE(name);
    LOAD_OR_SKIP(data, name);
    V2Summary s = read_table_dump_v2(data);
    EXPECT_EQ(s.peers, 3u);
    EXPECT_EQ(s.ribs, 31u);
    EXPECT_EQ(s.entries, 62u);
    EXPECT_EQ(s.add_path_entries, 62u);
    EXPECT_GT(s.path_ids.size(), 1u);
  }
}

TEST(MrtRealData, BirdRibDump) {
  LOAD_OR_SKIP(data, "bird-mrtdump_rib");
  V2Summary s = read_table_dump_v2(data);
  EXPECT_EQ(s.ribs, 12u);
  EXPECT_EQ(s.entries, 18u);
  EXPECT_GT(s.add_path_entries, 0u);
}

TEST(MrtRealData, BirdBgpDumpEveryMessageType) {
  LOAD_OR_SKIP(data, "bird-mrtdump_bgp");
  std::set<uint8_t> types;
  size_t add_path = 0, state_changes = 0;
  for (const Record& rec : all_records(data)) {
    if (is_bgp4mp_state_change(rec)) {
      auto s = decode_bgp4mp_state_change(rec);
      EXPECT_TRUE(s.ok()) << to_string(s.error());
      ++state_changes;
      continue;
    }
    auto m = decode_bgp4mp_message(rec);
    ASSERT_TRUE(m.ok()) << to_string(m.error());
    types.insert(bgp_type(m->message));
    if (m->add_path) ++add_path;
  }
  EXPECT_EQ(state_changes, 12u);
  EXPECT_EQ(add_path, 14u);
  EXPECT_EQ(types, (std::set<uint8_t>{1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace petrel::mrt
