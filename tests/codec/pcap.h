// A small, test-only reader of packet captures, to feed the BGP messages
// of real captures (tests/data/real/pcap) through the codec.
//
// Written from the format descriptions (the classic libpcap file format;
// pcapng, draft-ietf-opsawg-pcapng; RFC 791, RFC 8200, RFC 9293 for IPv4,
// IPv6 and TCP); no code of any capture library or dissector.
//
// What it reads:
// - classic pcap in both byte orders, microsecond and nanosecond magic;
// - pcapng: Section Header, Interface Description, Enhanced, Simple and
//   the obsolete Packet blocks, in either byte order, several sections
//   and interfaces; every other block is skipped by its length;
// - link types Ethernet (with 802.1Q/802.1ad tags), PPP, raw IP, Linux
//   cooked v1 and v2 (SLL, SLL2) and Juniper Ethernet (the "MGC" header
//   with its extension TLVs skipped);
// - IPv4 and IPv6 (hop-by-hop, routing and destination options headers
//   skipped), then TCP.
//
// What it does not do: IP fragments are not reassembled (a first fragment
// gives a truncated segment, the others are reported as not TCP); TCP streams are put together in sequence order
// only as far as the capture is in order (see Reassembler); checksums are
// not checked. Every length read from the file is checked against what
// is there: a corrupt capture is an error, never a read past the end.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crates/bytes/bytes.h"
#include "crates/result/result.h"

namespace petrel::testing::pcap {

// Link-layer header types (the tcpdump.org LINKTYPE_ registry values).
namespace link_type {
inline constexpr uint32_t kEthernet = 1;
inline constexpr uint32_t kPpp = 9;
inline constexpr uint32_t kRaw = 101;
inline constexpr uint32_t kLinuxSll = 113;
inline constexpr uint32_t kJuniperEther = 178;
inline constexpr uint32_t kIpv4 = 228;
inline constexpr uint32_t kIpv6 = 229;
inline constexpr uint32_t kLinuxSll2 = 276;
}  // namespace link_type

// One packet as captured: `data` views into the file's bytes.
struct Packet {
  uint32_t link_type = 0;
  uint32_t original_length = 0;  // on the wire; data may be shorter (snap length)
  bytes::Span data;
};

// Capture files are small test data: anything larger is refused.
inline constexpr size_t kMaxFileSize = 64u << 20;
// No packet of a test capture is larger (a record that says so is corrupt).
inline constexpr size_t kMaxPacket = 1u << 20;

// The packets of a classic pcap or pcapng file held in `file`. The error
// is a static text naming what was wrong.
Result<std::vector<Packet>, std::string_view> read_packets(bytes::Span file);

// The whole file, or an error (missing, unreadable, larger than
// kMaxFileSize).
Result<std::vector<std::byte>, std::string_view> load_file(const std::string& path);

struct Endpoint {
  std::array<uint8_t, 16> address{};  // IPv4 in the first 4 octets
  bool v6 = false;
  uint16_t port = 0;
  friend auto operator<=>(const Endpoint&, const Endpoint&) = default;
  [[nodiscard]] std::string to_string() const;
};

struct TcpSegment {
  Endpoint src, dst;
  uint32_t seq = 0;
  bool syn = false, fin = false, rst = false;
  bytes::Span payload;  // what was captured of it
  // The capture cut the segment short (snap length, or a first IP
  // fragment): bytes are missing after `payload`.
  bool truncated = false;
};

// What a packet holds: a TCP segment, something else (ARP, UDP, an IP
// fragment...), or an error for headers that contradict themselves or the
// captured length.
enum class Kind : uint8_t { kTcp, kOther };
struct Decoded {
  Kind kind = Kind::kOther;
  TcpSegment tcp;
};
Result<Decoded, std::string_view> decode_packet(const Packet& p);

// A run of a stream's bytes with nothing missing inside it.
struct Run {
  std::vector<std::byte> bytes;
  // The run ends where bytes are missing: the capture cut a segment short
  // (snap length, or an IP fragment whose rest is not read), or the next
  // segment started past the run's end (lost, or out of order).
  bool cut = false;
};

// One direction of a TCP connection, put together from its segments.
struct Stream {
  Endpoint src, dst;
  std::vector<Run> runs;  // at least one once a segment carried bytes
  size_t segments = 0;    // segments with payload that were seen
  // The reassembly bound was hit: bytes past it were dropped.
  bool overflow = false;
};

// Puts each direction's payload together in sequence order. The first
// segment of a direction fixes its starting sequence number (after the SYN,
// if it has one). A segment that repeats bytes already held (a
// retransmission) adds only what is new; one that starts past the next
// expected sequence number, or before the bytes the run holds, starts a new
// Run (the bytes between are not in the capture), and so does a SYN (a new
// connection on the same addresses and ports, as hand-made captures have). Segments are not reordered or buffered: a segment that
// arrives late in the capture counts as a retransmission and is dropped,
// which is enough for the small, in-order captures this is for. A stream
// holds at most kMaxStream bytes.
class Reassembler {
 public:
  static constexpr size_t kMaxStream = 4u << 20;

  void add(const TcpSegment& s);
  // In order of each direction's first segment.
  [[nodiscard]] const std::vector<Stream>& streams() const { return streams_; }

 private:
  struct State {
    size_t index = 0;
    uint32_t next_seq = 0;
    size_t held = 0;
    bool after_cut = false;  // the last segment was truncated
  };
  std::map<std::pair<Endpoint, Endpoint>, State> by_key_;
  std::vector<Stream> streams_;
};

}  // namespace petrel::testing::pcap
