// BMP messages as bytes (bmp.h): RFC 7854 sections 4.1 to 4.10, RFC 9069
// sections 4 and 5 for the Loc-RIB peer.
#include "bmp/bmp.h"

#include <algorithm>

#include "codec/update_builder.h"

namespace petrel::bmp {

namespace {

// The offset of a BGP message's length in its header (RFC 4271 section 4.1).
constexpr size_t kBgpLengthAt = 16;

// Appends the common header with a length to patch, returns where the
// message starts.
size_t begin(MessageType type, std::vector<std::byte>& out) {
  size_t at = out.size();
  bytes::Writer w(out);
  w.u8(kVersion);
  w.u32(0);
  w.u8(static_cast<uint8_t>(type));
  return at;
}

void finish(size_t at, std::vector<std::byte>& out) {
  const auto len = static_cast<uint32_t>(out.size() - at);
  out[at + 1] = std::byte(len >> 24);
  out[at + 2] = std::byte((len >> 16) & 0xff);
  out[at + 3] = std::byte((len >> 8) & 0xff);
  out[at + 4] = std::byte(len & 0xff);
}

// A 16-octet address field: IPv4 in the last four octets, zeros before
// (section 4.2).
void address16(const net::IpAddress& a, bytes::Writer& w) {
  if (a.is_v6()) {
    w.raw(a.data(), 16);
  } else {
    w.fill(std::byte{0}, 12);
    w.raw(a.data(), 4);
  }
}

void tlv(uint16_t type, bytes::Span value, bytes::Writer& w) {
  const size_t n = std::min<size_t>(value.size(), 0xFFFF);
  w.u16(type);
  w.u16(static_cast<uint16_t>(n));
  w.bytes(value.first(n));
}

bytes::Span text(std::string_view s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }

}  // namespace

void common_header(MessageType type, size_t body_len, std::vector<std::byte>& out) {
  bytes::Writer w(out);
  w.u8(kVersion);
  w.u32(static_cast<uint32_t>(kCommonHeaderLen + body_len));
  w.u8(static_cast<uint8_t>(type));
}

void per_peer_header(const PeerHeader& h, std::vector<std::byte>& out) {
  bytes::Writer w(out);
  w.u8(static_cast<uint8_t>(h.type));
  uint8_t flags = h.flags;
  if (h.type != PeerType::kLocRib && h.address.is_v6()) flags |= kFlagV;
  w.u8(flags);
  w.u64(h.distinguisher);
  address16(h.type == PeerType::kLocRib ? net::IpAddress{} : h.address, w);  // RFC 9069: zeros
  w.u32(h.as);
  w.u32(h.bgp_id);
  w.u32(h.seconds);
  w.u32(h.micros);
}

void info_tlvs(std::span<const InfoTlv> tlvs, std::vector<std::byte>& out) {
  bytes::Writer w(out);
  for (const InfoTlv& t : tlvs) tlv(t.type, text(t.value), w);
}

void initiation(std::span<const InfoTlv> tlvs, std::vector<std::byte>& out) {
  size_t at = begin(MessageType::kInitiation, out);
  info_tlvs(tlvs, out);
  finish(at, out);
}

void termination(TerminationReason reason, std::string_view message, std::vector<std::byte>& out) {
  size_t at = begin(MessageType::kTermination, out);
  bytes::Writer w(out);
  if (!message.empty()) tlv(0, text(message), w);  // type 0: string
  w.u16(1);  // type 1: reason
  w.u16(2);
  w.u16(static_cast<uint16_t>(reason));
  finish(at, out);
}

void peer_up(const PeerHeader& h, const PeerUp& up, std::vector<std::byte>& out) {
  size_t at = begin(MessageType::kPeerUp, out);
  per_peer_header(h, out);
  bytes::Writer w(out);
  if (h.type == PeerType::kLocRib)
    w.fill(std::byte{0}, 16);  // RFC 9069: no session
  else
    address16(up.local_address, w);
  w.u16(up.local_port);
  w.u16(up.remote_port);
  w.bytes(up.sent_open);
  w.bytes(up.received_open);
  info_tlvs(up.tlvs, out);
  finish(at, out);
}

void peer_down(const PeerHeader& h, DownReason reason, bytes::Span data, std::vector<std::byte>& out) {
  size_t at = begin(MessageType::kPeerDown, out);
  per_peer_header(h, out);
  bytes::Writer w(out);
  w.u8(static_cast<uint8_t>(reason));
  w.bytes(data);
  finish(at, out);
}

void route_monitoring(const PeerHeader& h, bytes::Span update, std::vector<std::byte>& out) {
  size_t at = begin(MessageType::kRouteMonitoring, out);
  per_peer_header(h, out);
  bytes::Writer(out).bytes(update);
  finish(at, out);
}

Result<size_t, std::string_view> route_monitoring(const PeerHeader& h, codec::Family f,
                                                  const codec::AttributeSet* attrs,
                                                  std::span<const codec::NlriPrefix> announce,
                                                  std::span<const codec::NlriPrefix> withdraw,
                                                  codec::SessionParams params, std::vector<std::byte>& out) {
  std::vector<std::byte> updates;
  auto built = codec::UpdateBuilder(params).build(f, attrs, announce, withdraw, updates);
  if (!built) {
    params.extended_message = true;  // RFC 8654: a set too large for 4096 octets
    updates.clear();
    built = codec::UpdateBuilder(params).build(f, attrs, announce, withdraw, updates);
    if (!built) return built;
  }
  size_t at = 0;
  while (at + codec::kHeaderLen <= updates.size()) {
    const size_t len = (static_cast<size_t>(updates[at + kBgpLengthAt]) << 8) |
                       static_cast<size_t>(updates[at + kBgpLengthAt + 1]);
    if (len < codec::kHeaderLen || at + len > updates.size()) break;  // the builder's own output: never
    route_monitoring(h, bytes::Span(updates).subspan(at, len), out);
    at += len;
  }
  return built;
}

void statistics(const PeerHeader& h, std::span<const Stat> stats, std::vector<std::byte>& out) {
  size_t at = begin(MessageType::kStatisticsReport, out);
  per_peer_header(h, out);
  bytes::Writer w(out);
  w.u32(static_cast<uint32_t>(stats.size()));
  for (const Stat& s : stats) {
    w.u16(s.type);
    switch (s.type) {
      case stat::kAdjRibInRoutes:
      case stat::kLocRibRoutes:
        w.u16(8);
        w.u64(s.value);
        break;
      case stat::kAdjRibInRoutesPerFamily:
      case stat::kLocRibRoutesPerFamily:
        w.u16(11);
        w.u16(s.family.afi);
        w.u8(s.family.safi);
        w.u64(s.value);
        break;
      default:
        w.u16(4);
        w.u32(static_cast<uint32_t>(s.value));
        break;
    }
  }
  finish(at, out);
}

}  // namespace petrel::bmp
