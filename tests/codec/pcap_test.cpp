// Tests for the test-only capture reader (tests/codec/pcap.h): captures
// built by hand in each format and byte order, every truncation of them,
// random bytes, and the stream reassembly's runs.
#include "tests/codec/pcap.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <vector>

namespace petrel::testing::pcap {
namespace {

using Bytes = std::vector<std::byte>;

void put32(Bytes& b, uint32_t v, bool little) {
  for (int i = 0; i < 4; ++i) {
    int shift = little ? 8 * i : 24 - 8 * i;
    b.push_back(static_cast<std::byte>((v >> shift) & 0xff));
  }
}
void put16(Bytes& b, uint16_t v, bool little) {
  b.push_back(static_cast<std::byte>(little ? v & 0xff : v >> 8));
  b.push_back(static_cast<std::byte>(little ? v >> 8 : v & 0xff));
}

// An Ethernet frame: IPv4, TCP from 10.0.0.1:port to 10.0.0.2:179.
Bytes frame(uint32_t seq, const Bytes& payload, uint16_t sport = 40000, bool syn = false) {
  Bytes f(12, std::byte{0x02});
  put16(f, 0x0800, false);
  auto total = static_cast<uint16_t>(20 + 20 + payload.size());
  for (int v : {0x45, 0x00}) f.push_back(static_cast<std::byte>(v));
  put16(f, total, false);
  put32(f, 0, false);  // id, flags, fragment offset
  for (int v : {64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}) f.push_back(static_cast<std::byte>(v));
  put16(f, sport, false);
  put16(f, 179, false);
  put32(f, seq, false);
  put32(f, 0, false);
  put16(f, static_cast<uint16_t>(0x5000 | (syn ? 0x02 : 0x10)), false);
  put32(f, 0, false);  // window, checksum
  put16(f, 0, false);  // urgent pointer
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

Bytes classic(bool little, bool nano, const std::vector<Bytes>& frames) {
  Bytes b;
  put32(b, nano ? 0xa1b23c4d : 0xa1b2c3d4, little);
  put16(b, 2, little);
  put16(b, 4, little);
  put32(b, 0, little);
  put32(b, 0, little);
  put32(b, 65535, little);
  put32(b, link_type::kEthernet, little);
  for (const Bytes& f : frames) {
    put32(b, 1, little);
    put32(b, 2, little);
    put32(b, static_cast<uint32_t>(f.size()), little);
    put32(b, static_cast<uint32_t>(f.size()), little);
    b.insert(b.end(), f.begin(), f.end());
  }
  return b;
}

void block(Bytes& b, uint32_t type, const Bytes& body, bool little) {
  Bytes padded = body;
  while (padded.size() % 4) padded.push_back(std::byte{0});
  auto total = static_cast<uint32_t>(12 + padded.size());
  put32(b, type, little);
  put32(b, total, little);
  b.insert(b.end(), padded.begin(), padded.end());
  put32(b, total, little);
}

Bytes pcapng(bool little, const std::vector<Bytes>& frames) {
  Bytes b, shb, idb;
  put32(shb, 0x1a2b3c4d, little);
  put16(shb, 1, little);
  put16(shb, 0, little);
  put32(shb, 0xffffffff, little);  // section length unknown
  put32(shb, 0xffffffff, little);
  block(b, 0x0a0d0d0a, shb, little);
  put16(idb, link_type::kEthernet, little);
  put16(idb, 0, little);
  put32(idb, 0, little);
  block(b, 1, idb, little);
  block(b, 5, Bytes(8, std::byte{0x33}), little);  // an interface statistics block: skipped
  for (const Bytes& f : frames) {
    Bytes epb;
    put32(epb, 0, little);
    put32(epb, 0, little);
    put32(epb, 0, little);
    put32(epb, static_cast<uint32_t>(f.size()), little);
    put32(epb, static_cast<uint32_t>(f.size()), little);
    epb.insert(epb.end(), f.begin(), f.end());
    block(b, 6, epb, little);
  }
  return b;
}

Bytes text(std::string_view s) {
  Bytes b;
  for (char c : s) b.push_back(static_cast<std::byte>(c));
  return b;
}

void expect_two_segments(const Bytes& file) {
  auto packets = read_packets(file);
  ASSERT_TRUE(packets.ok()) << packets.error();
  ASSERT_EQ(packets->size(), 2u);
  Reassembler r;
  for (const Packet& p : *packets) {
    auto d = decode_packet(p);
    ASSERT_TRUE(d.ok()) << d.error();
    ASSERT_EQ(d->kind, Kind::kTcp);
    EXPECT_EQ(d->tcp.dst.port, 179);
    r.add(d->tcp);
  }
  ASSERT_EQ(r.streams().size(), 1u);
  ASSERT_EQ(r.streams()[0].runs.size(), 1u);
  EXPECT_EQ(r.streams()[0].runs[0].bytes, text("hello, world"));
  EXPECT_EQ(r.streams()[0].src.to_string(), "10.0.0.1:40000");
}

TEST(Pcap, ClassicInBothByteOrdersAndTimestampUnits) {
  std::vector<Bytes> frames = {frame(100, text("hello")), frame(105, text(", world"))};
  for (bool little : {false, true})
    for (bool nano : {false, true}) expect_two_segments(classic(little, nano, frames));
}

TEST(Pcap, PcapngInBothByteOrders) {
  std::vector<Bytes> frames = {frame(100, text("hello")), frame(105, text(", world"))};
  for (bool little : {false, true}) expect_two_segments(pcapng(little, frames));
}

// Every prefix of a good file either reads (the cut fell between records)
// or is an error; none reads past its end (ASan would see it).
TEST(Pcap, EveryTruncationIsAnErrorOrFewerPackets) {
  std::vector<Bytes> frames = {frame(100, text("hello")), frame(105, text(", world"))};
  for (const Bytes& whole : {classic(true, false, frames), pcapng(false, frames)}) {
    size_t complete = 0;
    for (size_t n = 0; n < whole.size(); ++n) {
      Bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
      auto packets = read_packets(cut);
      if (packets.ok()) {
        EXPECT_LT(packets->size(), 2u) << n;
        ++complete;
      }
    }
    EXPECT_GE(complete, 2u);  // the header alone, and the first record
  }
}

TEST(Pcap, CorruptLengthsAreErrors) {
  Bytes file = classic(true, false, {frame(1, text("x"))});
  Bytes big = file;
  big[32] = std::byte{0xff};  // incl_len's low octet: past the end
  EXPECT_FALSE(read_packets(big).ok());
  Bytes more = file;
  more[36] = std::byte{0x01};  // orig_len below incl_len
  EXPECT_FALSE(read_packets(more).ok());
  Bytes ng = pcapng(false, {frame(1, text("x"))});
  ng[ng.size() - 1] = std::byte{0x07};  // trailing length differs
  EXPECT_FALSE(read_packets(ng).ok());
  EXPECT_FALSE(read_packets(text("not a capture")).ok());
}

TEST(Pcap, HeadersThatContradictTheirLengthsAreErrors) {
  Bytes f = frame(1, text("abc"));
  Packet p{link_type::kEthernet, static_cast<uint32_t>(f.size()), f};
  ASSERT_TRUE(decode_packet(p).ok());
  Bytes ihl = f;
  ihl[14] = std::byte{0x44};  // IHL 16 octets
  EXPECT_FALSE(decode_packet(Packet{link_type::kEthernet, p.original_length, ihl}).ok());
  Bytes offset = f;
  offset[46] = std::byte{0xf0};  // TCP data offset 60: past the segment
  EXPECT_FALSE(decode_packet(Packet{link_type::kEthernet, p.original_length, offset}).ok());
  for (size_t n = 0; n < f.size(); ++n) {
    Bytes cut(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(n));
    auto d = decode_packet(Packet{link_type::kEthernet, p.original_length, cut});
    // Cut inside the headers: an error; inside the payload: truncated.
    if (d.ok()) {
      EXPECT_TRUE(d->tcp.truncated) << n;
    }
  }
}

// The same IPv4 packet behind each link-layer header the reader knows,
// and an IPv6 one with a destination options header.
TEST(Pcap, EveryLinkTypeAndIpv6) {
  Bytes eth = frame(7, text("bgp"));
  Bytes ip(eth.begin() + 14, eth.end());
  auto with = [&ip](std::initializer_list<int> head) {
    Bytes b;
    for (int v : head) b.push_back(static_cast<std::byte>(v));
    b.insert(b.end(), ip.begin(), ip.end());
    return b;
  };
  struct Case {
    uint32_t link;
    Bytes data;
  };
  const Case cases[] = {
      {link_type::kEthernet, eth},
      {link_type::kRaw, ip},
      {link_type::kIpv4, ip},
      {link_type::kPpp, with({0xff, 0x03, 0x00, 0x21})},
      {link_type::kPpp, with({0x00, 0x21})},
      {link_type::kLinuxSll, with({0, 0, 0, 1, 0, 6, 2, 2, 2, 2, 2, 2, 0, 0, 0x08, 0x00})},
      {link_type::kLinuxSll2, with({0x08, 0x00, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6, 2, 2, 2, 2, 2, 2, 0, 0})},
      // "MGC", extensions present, 2 octets of them; then Ethernet.
      {link_type::kJuniperEther, [&eth] {
         Bytes b;
         for (int v : {0x4d, 0x47, 0x43, 0x80, 0x00, 0x02, 0x01, 0x00}) b.push_back(static_cast<std::byte>(v));
         b.insert(b.end(), eth.begin(), eth.end());
         return b;
       }()},
  };
  for (const Case& c : cases) {
    auto d = decode_packet(Packet{c.link, static_cast<uint32_t>(c.data.size()), c.data});
    ASSERT_TRUE(d.ok()) << c.link << ": " << d.error();
    ASSERT_EQ(d->kind, Kind::kTcp) << c.link;
    EXPECT_EQ(d->tcp.seq, 7u);
    EXPECT_EQ(Bytes(d->tcp.payload.begin(), d->tcp.payload.end()), text("bgp")) << c.link;
    EXPECT_FALSE(d->tcp.truncated);
  }
  // An ARP frame and a UDP packet are not TCP; an unknown link type is an
  // error.
  Bytes arp = eth;
  arp[12] = std::byte{0x08};
  arp[13] = std::byte{0x06};
  EXPECT_EQ(decode_packet(Packet{link_type::kEthernet, 60, arp})->kind, Kind::kOther);
  Bytes udp = ip;
  udp[9] = std::byte{17};
  EXPECT_EQ(decode_packet(Packet{link_type::kRaw, static_cast<uint32_t>(udp.size()), udp})->kind, Kind::kOther);
  EXPECT_FALSE(decode_packet(Packet{147, static_cast<uint32_t>(ip.size()), ip}).ok());

  // IPv6: fixed header, 8 octets of destination options, TCP.
  Bytes v6;
  put32(v6, 0x60000000, false);
  Bytes tcp(ip.begin() + 20, ip.end());
  put16(v6, static_cast<uint16_t>(8 + tcp.size()), false);
  v6.push_back(std::byte{60});  // next header: destination options
  v6.push_back(std::byte{64});
  for (int i = 0; i < 32; ++i) v6.push_back(static_cast<std::byte>(i < 16 ? 0x20 : 0x30));
  for (int v : {6, 0, 1, 4, 0, 0, 0, 0}) v6.push_back(static_cast<std::byte>(v));  // TCP next; PadN
  v6.insert(v6.end(), tcp.begin(), tcp.end());
  auto d = decode_packet(Packet{link_type::kIpv6, static_cast<uint32_t>(v6.size()), v6});
  ASSERT_TRUE(d.ok()) << d.error();
  ASSERT_EQ(d->kind, Kind::kTcp);
  EXPECT_TRUE(d->tcp.src.v6);
  EXPECT_EQ(Bytes(d->tcp.payload.begin(), d->tcp.payload.end()), text("bgp"));
  EXPECT_EQ(d->tcp.src.to_string(), "[2020:2020:2020:2020:2020:2020:2020:2020]:40000");
  // A payload length that says more than the frame holds is an error.
  Bytes longer = v6;
  longer[5] = static_cast<std::byte>(std::to_integer<int>(longer[5]) + 1);
  EXPECT_FALSE(decode_packet(Packet{link_type::kIpv6, static_cast<uint32_t>(longer.size()), longer}).ok());
}

TEST(Pcap, RetransmissionsGapsAndSynsMakeRuns) {
  Reassembler r;
  auto seg = [&](uint32_t seq, std::string_view s, bool syn = false, bool truncated = false) {
    TcpSegment t;
    t.src.port = 1;
    t.dst.port = 179;
    t.seq = seq;
    t.syn = syn;
    t.truncated = truncated;
    Bytes b = text(s);
    t.payload = b;
    r.add(t);  // copies what it keeps
  };
  seg(0xfffffffe, "", true);  // SYN: data starts at 0xffffffff, across the wrap
  seg(0xffffffff, "ab");
  seg(0xffffffff, "abcd");  // retransmission with more: adds "cd"
  seg(3, "ef");
  seg(10, "xy");                       // a hole: a new run
  seg(12, "z", false, /*truncated=*/true);  // cut short: ends the run
  seg(13, "q");
  seg(0, "new", true);  // a new connection
  ASSERT_EQ(r.streams().size(), 1u);
  const auto& runs = r.streams()[0].runs;
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].bytes, text("abcdef"));
  EXPECT_TRUE(runs[0].cut);
  EXPECT_EQ(runs[1].bytes, text("xyz"));
  EXPECT_TRUE(runs[1].cut);
  EXPECT_EQ(runs[2].bytes, text("q"));
  EXPECT_EQ(runs[3].bytes, text("new"));
  EXPECT_FALSE(runs[3].cut);
}

RC_GTEST_PROP(Pcap, RandomBytesNeverCrash, (std::vector<uint8_t> raw, bool ng)) {
  // A valid header in front, so the records' parser sees the random part.
  Bytes file = ng ? pcapng(true, {}) : classic(false, false, {});
  for (uint8_t v : raw) file.push_back(std::byte{v});
  auto packets = read_packets(file);
  if (!packets.ok()) return;
  Reassembler r;
  for (const Packet& p : *packets) {
    auto d = decode_packet(p);
    if (d.ok() && d->kind == Kind::kTcp) r.add(d->tcp);
  }
}

RC_GTEST_PROP(Pcap, RandomFramesNeverCrash, (std::vector<uint8_t> raw, uint32_t link)) {
  Bytes f;
  for (uint8_t v : raw) f.push_back(std::byte{v});
  const uint32_t links[] = {link_type::kEthernet, link_type::kPpp,          link_type::kRaw,
                            link_type::kLinuxSll, link_type::kJuniperEther, link_type::kLinuxSll2};
  Packet p{links[link % 6], static_cast<uint32_t>(f.size()) + (link & 0xff), f};
  (void)decode_packet(p);
}

}  // namespace
}  // namespace petrel::testing::pcap
