// The test-only capture reader (tests/codec/pcap.h): files, link layers,
// IP and TCP, and the in-order stream reassembly. Every field is read
// through bytes::Reader, so a length that runs past the captured bytes is
// an error, not a read past the end.
#include "tests/codec/pcap.h"

#include <cstdio>
#include <fstream>
#include <iterator>

namespace petrel::testing::pcap {
namespace {

constexpr uint32_t kPcapMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kPcapMagicNano = 0xa1b23c4d;
constexpr uint32_t kPcapngSectionHeader = 0x0a0d0d0a;
constexpr uint32_t kPcapngByteOrderMagic = 0x1a2b3c4d;
constexpr uint32_t kPcapngInterface = 1;
constexpr uint32_t kPcapngObsoletePacket = 2;
constexpr uint32_t kPcapngSimplePacket = 3;
constexpr uint32_t kPcapngEnhancedPacket = 6;
// Bits 0..25 of the classic header's link type field; the upper bits may
// carry FCS information.
constexpr uint32_t kLinkTypeMask = 0x03ffffff;

constexpr uint32_t swap32(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}
constexpr uint16_t swap16(uint16_t v) { return static_cast<uint16_t>((v >> 8) | (v << 8)); }

// Reads integers in the file's byte order (Reader reads big-endian).
struct Ordered {
  bytes::Reader& r;
  bool little;
  std::optional<uint32_t> u32() {
    auto v = r.u32();
    if (v && little) return swap32(*v);
    return v;
  }
  std::optional<uint16_t> u16() {
    auto v = r.u16();
    if (v && little) return swap16(*v);
    return v;
  }
};

Result<std::vector<Packet>, std::string_view> read_classic(bytes::Span file) {
  bytes::Reader r(file);
  auto magic = r.u32();
  if (!magic) return fail("file shorter than a pcap header");
  bool little = *magic == swap32(kPcapMagicMicro) || *magic == swap32(kPcapMagicNano);
  Ordered in{r, little};
  // version (2 + 2), thiszone, sigfigs, snaplen: not needed.
  if (!r.skip(16)) return fail("pcap header truncated");
  auto network = in.u32();
  if (!network) return fail("pcap header truncated");
  uint32_t link = *network & kLinkTypeMask;
  std::vector<Packet> out;
  while (!r.empty()) {
    // ts_sec, ts_usec (or ns), incl_len, orig_len
    if (!r.skip(8)) return fail("pcap record header truncated");
    auto incl = in.u32();
    auto orig = in.u32();
    if (!incl || !orig) return fail("pcap record header truncated");
    if (*incl > kMaxPacket) return fail("pcap record larger than any packet");
    if (*incl > *orig) return fail("pcap record captured more than its original length");
    auto data = r.take(*incl);
    if (!data) return fail("pcap record runs past the end of the file");
    out.push_back(Packet{link, *orig, *data});
  }
  return out;
}

Result<std::vector<Packet>, std::string_view> read_pcapng(bytes::Span file) {
  bytes::Reader r(file);
  std::vector<uint32_t> interfaces;  // link type of each, this section
  bool little = false;
  bool in_section = false;
  std::vector<Packet> out;
  while (!r.empty()) {
    if (r.remaining() < 12) return fail("pcapng block header truncated");
    bytes::Span rest = r.peek_rest();
    // The type is read in the current byte order; the Section Header's
    // type reads the same in both.
    bytes::Reader head(rest);
    auto raw_type = head.u32();
    if (!raw_type) return fail("pcapng block header truncated");
    if (*raw_type == kPcapngSectionHeader) {
      (void)head.u32();  // length, in an order not yet known
      auto bom = head.u32();
      if (!bom) return fail("pcapng section header truncated");
      if (*bom == kPcapngByteOrderMagic) {
        little = false;
      } else if (*bom == swap32(kPcapngByteOrderMagic)) {
        little = true;
      } else {
        return fail("pcapng section header with a bad byte-order magic");
      }
      interfaces.clear();
      in_section = true;
    } else if (!in_section) {
      return fail("pcapng block before the first section header");
    }
    Ordered in{r, little};
    auto type = in.u32();
    auto total = in.u32();
    if (!type || !total) return fail("pcapng block header truncated");
    if (*total < 12 || *total % 4 != 0) return fail("pcapng block length not a multiple of 4 of at least 12");
    auto body_span = r.take(*total - 12);
    if (!body_span) return fail("pcapng block runs past the end of the file");
    auto trailer = in.u32();
    if (!trailer) return fail("pcapng block trailer missing");
    if (*trailer != *total) return fail("pcapng block's trailing length differs from its leading one");
    bytes::Reader body(*body_span);
    Ordered b{body, little};
    switch (*type) {
      case kPcapngSectionHeader:
        break;
      case kPcapngInterface: {
        auto link = b.u16();
        if (!link) return fail("pcapng interface block truncated");
        interfaces.push_back(*link);
        break;
      }
      case kPcapngEnhancedPacket:
      case kPcapngObsoletePacket: {
        std::optional<uint32_t> iface;
        if (*type == kPcapngEnhancedPacket) {
          iface = b.u32();
        } else {
          auto id = b.u16();
          if (id) iface = *id;
          if (!body.skip(2)) iface.reset();  // drops count
        }
        if (!iface || !body.skip(8)) return fail("pcapng packet block truncated");  // timestamp
        auto caplen = b.u32();
        auto orig = b.u32();
        if (!caplen || !orig) return fail("pcapng packet block truncated");
        if (*iface >= interfaces.size()) return fail("pcapng packet of an undescribed interface");
        if (*caplen > kMaxPacket) return fail("pcapng packet larger than any packet");
        if (*caplen > *orig) return fail("pcapng packet captured more than its original length");
        auto data = body.take(*caplen);
        if (!data) return fail("pcapng packet data runs past its block");
        out.push_back(Packet{interfaces[*iface], *orig, *data});
        break;
      }
      case kPcapngSimplePacket: {
        auto orig = b.u32();
        if (!orig) return fail("pcapng simple packet block truncated");
        if (interfaces.empty()) return fail("pcapng packet of an undescribed interface");
        // The captured part is what the block holds, padding aside.
        size_t caplen = std::min<size_t>(*orig, body.remaining());
        out.push_back(Packet{interfaces[0], *orig, *body.take(caplen)});
        break;
      }
      default:
        break;  // statistics, name resolution, custom blocks...
    }
  }
  return out;
}

// Reads a network-layer packet (IPv4 or IPv6) into `out`.
Result<Decoded, std::string_view> decode_ip(bytes::Span ip, uint32_t original_left);

Result<Decoded, std::string_view> decode_ethertype(uint16_t type, bytes::Reader& r, uint32_t original_left) {
  // 802.1Q and 802.1ad tags: a 2-octet tag then the next type.
  for (int tags = 0; type == 0x8100 || type == 0x88a8; ++tags) {
    if (tags == 4) return fail("more than four VLAN tags");
    if (!r.skip(2)) return fail("VLAN tag truncated");
    auto next = r.u16();
    if (!next) return fail("VLAN tag truncated");
    type = *next;
  }
  if (type != 0x0800 && type != 0x86dd) return Decoded{};
  size_t header = r.offset();
  if (original_left < header) return fail("original length shorter than the link header");
  return decode_ip(r.rest(), static_cast<uint32_t>(original_left - header));
}

Result<Decoded, std::string_view> decode_ethernet(bytes::Reader& r, uint32_t original) {
  if (!r.skip(12)) return fail("Ethernet header truncated");
  auto type = r.u16();
  if (!type) return fail("Ethernet header truncated");
  return decode_ethertype(*type, r, original);
}

}  // namespace

Result<std::vector<Packet>, std::string_view> read_packets(bytes::Span file) {
  bytes::Reader r(file);
  auto magic = r.u32();
  if (!magic) return fail("file shorter than any capture header");
  if (*magic == kPcapngSectionHeader) return read_pcapng(file);
  for (uint32_t m : {kPcapMagicMicro, kPcapMagicNano})
    if (*magic == m || *magic == swap32(m)) return read_classic(file);
  return fail("neither a pcap nor a pcapng file");
}

Result<std::vector<std::byte>, std::string_view> load_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail("cannot open the capture file");
  f.seekg(0, std::ios::end);
  auto size = f.tellg();
  if (size < 0) return fail("cannot read the capture file");
  if (static_cast<size_t>(size) > kMaxFileSize) return fail("capture file larger than a test capture");
  f.seekg(0, std::ios::beg);
  std::vector<std::byte> out(static_cast<size_t>(size));
  if (!f.read(reinterpret_cast<char*>(out.data()), size)) return fail("cannot read the capture file");
  return out;
}

std::string Endpoint::to_string() const {
  char buf[64];
  if (!v6) {
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u:%u", address[0], address[1], address[2], address[3], port);
    return buf;
  }
  std::string s = "[";
  for (size_t i = 0; i < 16; i += 2) {
    std::snprintf(buf, sizeof buf, "%s%x", i ? ":" : "", (address[i] << 8) | address[i + 1]);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "]:%u", port);
  return s + buf;
}

namespace {

Result<Decoded, std::string_view> decode_tcp(bytes::Span seg, uint32_t original_left, Decoded d) {
  bytes::Reader r(seg);
  auto sport = r.u16();
  auto dport = r.u16();
  auto seq = r.u32();
  if (!sport || !dport || !seq || !r.skip(4)) return fail("TCP header truncated");  // ack
  auto off_flags = r.u16();
  if (!off_flags) return fail("TCP header truncated");
  size_t header = static_cast<size_t>(*off_flags >> 12) * 4;
  if (header < 20) return fail("TCP data offset below 20 octets");
  if (original_left < header) return fail("TCP header longer than its IP payload");
  if (seg.size() < header) return fail("TCP header truncated");
  d.kind = Kind::kTcp;
  d.tcp.src.port = *sport;
  d.tcp.dst.port = *dport;
  d.tcp.seq = *seq;
  d.tcp.fin = *off_flags & 0x01;
  d.tcp.syn = *off_flags & 0x02;
  d.tcp.rst = *off_flags & 0x04;
  d.tcp.payload = seg.subspan(header);
  d.tcp.truncated = seg.size() < original_left;
  return d;
}

Result<Decoded, std::string_view> decode_ipv4(bytes::Span ip, uint32_t original_left) {
  bytes::Reader r(ip);
  auto vihl = r.u8();
  if (!vihl) return fail("IPv4 header truncated");
  size_t header = size_t{*vihl & 0x0fu} * 4;
  if (!r.skip(1)) return fail("IPv4 header truncated");  // type of service
  auto total = r.u16();
  if (!total || !r.skip(2)) return fail("IPv4 header truncated");  // identification
  auto frag = r.u16();
  if (!frag || !r.skip(1)) return fail("IPv4 header truncated");  // ttl
  auto proto = r.u8();
  if (!proto || !r.skip(2)) return fail("IPv4 header truncated");  // checksum
  Decoded d;
  if (!r.copy_to(d.tcp.src.address.data(), 4) || !r.copy_to(d.tcp.dst.address.data(), 4))
    return fail("IPv4 header truncated");
  if (header < 20) return fail("IPv4 header length below 20 octets");
  if (*total < header) return fail("IPv4 total length shorter than its header");
  if (ip.size() < header) return fail("IPv4 header truncated");
  // The packet as sent ends at its total length (link padding follows);
  // the capture may hold less.
  if (*total > original_left) return fail("IPv4 total length longer than the frame");
  // Fragments are not reassembled: a first fragment (more fragments, offset
  // 0) holds the TCP header and the start of the payload, the rest nothing
  // this reader can place.
  bool more_fragments = (*frag & 0x2000) != 0;
  if (*proto != 6 || (*frag & 0x1fff) != 0) return Decoded{};
  bytes::Span payload = ip.subspan(header, std::min<size_t>(ip.size(), *total) - header);
  auto tcp = decode_tcp(payload, static_cast<uint32_t>(*total - header), d);
  if (tcp && more_fragments) tcp->tcp.truncated = true;
  return tcp;
}

Result<Decoded, std::string_view> decode_ipv6(bytes::Span ip, uint32_t original_left) {
  bytes::Reader r(ip);
  if (!r.skip(4)) return fail("IPv6 header truncated");  // version, class, flow label
  auto length = r.u16();
  auto next = r.u8();
  if (!length || !next || !r.skip(1)) return fail("IPv6 header truncated");  // hop limit
  Decoded d;
  d.tcp.src.v6 = d.tcp.dst.v6 = true;
  if (!r.copy_to(d.tcp.src.address.data(), 16) || !r.copy_to(d.tcp.dst.address.data(), 16))
    return fail("IPv6 header truncated");
  if (*length == 0) return fail("IPv6 jumbograms are not read");
  if (size_t{*length} + 40 > original_left) return fail("IPv6 payload length longer than the frame");
  size_t left = *length;  // octets of the payload as sent, from r's position
  uint8_t proto = *next;
  // Hop-by-hop (0), routing (43), destination options (60): skipped.
  // Fragment (44) and anything else but TCP: not read.
  for (int hops = 0; proto == 0 || proto == 43 || proto == 60; ++hops) {
    if (hops == 8) return fail("more than eight IPv6 extension headers");
    auto nh = r.u8();
    auto len = r.u8();
    if (!nh || !len) return fail("IPv6 extension header truncated");
    size_t ext = (size_t{*len} + 1) * 8;
    if (ext > left) return fail("IPv6 extension header longer than the payload");
    if (!r.skip(ext - 2)) return fail("IPv6 extension header truncated");
    left -= ext;
    proto = *nh;
  }
  if (proto != 6) return Decoded{};
  bytes::Span rest = r.rest();
  return decode_tcp(rest.first(std::min(rest.size(), left)), static_cast<uint32_t>(left), d);
}

Result<Decoded, std::string_view> decode_ip(bytes::Span ip, uint32_t original_left) {
  if (ip.empty()) return fail("IP header truncated");
  switch (std::to_integer<uint8_t>(ip[0]) >> 4) {
    case 4:
      return decode_ipv4(ip, original_left);
    case 6:
      return decode_ipv6(ip, original_left);
    default:
      return fail("IP version neither 4 nor 6");
  }
}

}  // namespace

Result<Decoded, std::string_view> decode_packet(const Packet& p) {
  bytes::Reader r(p.data);
  switch (p.link_type) {
    case link_type::kEthernet:
      return decode_ethernet(r, p.original_length);
    case link_type::kRaw:
    case link_type::kIpv4:
    case link_type::kIpv6:
      return decode_ip(p.data, p.original_length);
    case link_type::kPpp: {
      // Optional HDLC-like address and control octets (0xff 0x03), then a
      // 2-octet protocol (the 1-octet compressed form is not read).
      auto first = r.u16();
      if (first && *first == 0xff03) first = r.u16();
      if (!first) return fail("PPP header truncated");
      if (*first != 0x0021 && *first != 0x0057) return Decoded{};
      size_t header = r.offset();
      if (p.original_length < header) return fail("original length shorter than the PPP header");
      return decode_ip(r.rest(), p.original_length - static_cast<uint32_t>(header));
    }
    case link_type::kLinuxSll: {
      // packet type, ARPHRD type, address length, 8 octets of address
      if (!r.skip(14)) return fail("Linux cooked header truncated");
      auto proto = r.u16();
      if (!proto) return fail("Linux cooked header truncated");
      return decode_ethertype(*proto, r, p.original_length);
    }
    case link_type::kLinuxSll2: {
      auto proto = r.u16();
      // reserved, interface index, ARPHRD type, packet type, address
      // length, 8 octets of address
      if (!proto || !r.skip(18)) return fail("Linux cooked v2 header truncated");
      return decode_ethertype(*proto, r, p.original_length);
    }
    case link_type::kJuniperEther: {
      // "MGC", a flags octet; with the extension flag (0x80) a 2-octet
      // length of TLVs that follow. The no-layer-2 flag (0x02) is not read.
      auto magic = r.u16();
      auto magic2 = r.u8();
      auto flags = r.u8();
      if (!magic || !magic2 || !flags) return fail("Juniper header truncated");
      if (*magic != 0x4d47 || *magic2 != 0x43) return fail("Juniper header without its magic");
      if (*flags & 0x02) return fail("Juniper capture without layer 2 is not read");
      if (*flags & 0x80) {
        auto ext = r.u16();
        if (!ext || !r.skip(*ext)) return fail("Juniper extensions truncated");
      }
      size_t header = r.offset();
      if (p.original_length < header) return fail("original length shorter than the Juniper header");
      bytes::Reader eth(r.rest());
      return decode_ethernet(eth, p.original_length - static_cast<uint32_t>(header));
    }
    default:
      return fail("link type not read");
  }
}

void Reassembler::add(const TcpSegment& s) {
  auto key = std::make_pair(s.src, s.dst);
  auto it = by_key_.find(key);
  uint32_t data_seq = s.seq + (s.syn ? 1u : 0u);
  if (it == by_key_.end()) {
    it = by_key_.emplace(key, State{streams_.size(), data_seq, 0, false}).first;
    streams_.push_back(Stream{s.src, s.dst, {}, 0, false});
  }
  State& state = it->second;
  Stream& st = streams_[state.index];
  if (s.payload.empty() && !s.truncated) return;
  ++st.segments;
  // Sequence numbers wrap: compare by signed distance (RFC 9293 3.4).
  auto ahead = static_cast<int32_t>(data_seq - state.next_seq);
  bytes::Span fresh = s.payload;
  // A SYN opens a new connection; a segment that starts past the next
  // expected byte, or before the bytes the run holds (so it cannot be a
  // retransmission of them), leaves bytes out: both start a new run.
  auto behind = static_cast<size_t>(-static_cast<int64_t>(ahead));
  bool fresh_run = st.runs.empty() || s.syn || ahead > 0 || state.after_cut ||
                   behind > st.runs.back().bytes.size();
  if (fresh_run) {
    if (!st.runs.empty()) st.runs.back().cut = true;
    state.after_cut = false;
    st.runs.emplace_back();
    state.next_seq = data_seq;
  } else {
    fresh = behind < fresh.size() ? fresh.subspan(behind) : bytes::Span{};
  }
  if (state.held + fresh.size() > kMaxStream) {
    st.overflow = true;
    return;
  }
  Run& run = st.runs.back();
  run.bytes.insert(run.bytes.end(), fresh.begin(), fresh.end());
  state.held += fresh.size();
  state.next_seq += static_cast<uint32_t>(fresh.size());
  if (s.truncated) {
    // What follows is missing: the next segment starts a new run.
    run.cut = true;
    state.after_cut = true;
  }
}

}  // namespace petrel::testing::pcap
