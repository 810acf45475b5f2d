// TABLE_DUMP_V2 records (writer.h). Layouts: RFC 6396 sections 2, 4.3.1,
// 4.3.2 and 4.3.4; RFC 8050 section 4 for the _ADDPATH RIB entries.
#include "mrt/writer.h"

#include <algorithm>

#include "mrt/mrt.h"

namespace petrel::mrt {

namespace {

constexpr uint8_t kFlagExtendedLength = 0x10;
constexpr uint8_t kTypeMpReachNlri = 14;
constexpr uint8_t kTypeMpUnreachNlri = 15;
constexpr size_t kHeaderBytes = 12;

// Peer type bits (RFC 6396 section 4.3.1).
constexpr uint8_t kPeerIpv6 = 0x01;
constexpr uint8_t kPeerAs4 = 0x02;

void write_attribute(bytes::Writer& w, uint8_t flags, uint8_t type, bytes::Span value) {
  if (value.size() > 0xFF) {
    w.u8(static_cast<uint8_t>(flags | kFlagExtendedLength));
    w.u8(type);
    w.u16(static_cast<uint16_t>(value.size()));
  } else {
    w.u8(static_cast<uint8_t>(flags & ~kFlagExtendedLength));
    w.u8(type);
    w.u8(static_cast<uint8_t>(value.size()));
  }
  w.bytes(value);
}

// The common header with a zero length, patched by end_record().
size_t begin_record(bytes::Writer& w, uint32_t timestamp, Type type, uint16_t subtype) {
  size_t at = w.size();
  w.u32(timestamp);
  w.u16(static_cast<uint16_t>(type));
  w.u16(subtype);
  w.u32(0);
  return at;
}

size_t begin_record(bytes::Writer& w, uint32_t timestamp, TableDumpV2 subtype) {
  return begin_record(w, timestamp, Type::kTableDumpV2, static_cast<uint16_t>(subtype));
}

void end_record(bytes::Writer& w, size_t at) {
  const auto len = static_cast<uint32_t>(w.size() - at - kHeaderBytes);
  w.patch_u16(at + 8, static_cast<uint16_t>(len >> 16));
  w.patch_u16(at + 10, static_cast<uint16_t>(len & 0xFFFF));
}

// BGP4MP_ET's common header, its microseconds, then the BGP4MP header of
// the _AS4 subtypes (RFC 6396 sections 3 and 4.4.1): peer AS, local AS,
// interface index, AFI, peer IP, local IP. The local address is written
// in the peer address's family (zeros when it is of the other family or
// unknown): the record has one AFI for both.
size_t begin_bgp4mp(bytes::Writer& w, const Bgp4mpTime& t, const Bgp4mpPeer& p, Bgp4mp subtype) {
  size_t at = begin_record(w, t.seconds, Type::kBgp4mpEt, static_cast<uint16_t>(subtype));
  w.u32(t.microseconds);
  const bool v6 = p.peer_ip.is_v6();
  w.u32(p.peer_as);
  w.u32(p.local_as);
  w.u16(p.interface_index);
  w.u16(v6 ? 2 : 1);
  const size_t n = v6 ? 16 : 4;
  w.raw(p.peer_ip.bytes().data(), n);
  if (p.local_ip.family() == p.peer_ip.family()) w.raw(p.local_ip.bytes().data(), n);
  else w.fill(std::byte{0}, n);
  return at;
}

}  // namespace

void bgp4mp_message(const Bgp4mpTime& t, const Bgp4mpPeer& peer, bool add_path, bytes::Span message,
                    std::vector<std::byte>& out) {
  bytes::Writer w(out);
  size_t at = begin_bgp4mp(w, t, peer, add_path ? Bgp4mp::kMessageAs4AddPath : Bgp4mp::kMessageAs4);
  w.bytes(message);
  end_record(w, at);
}

void bgp4mp_state_change(const Bgp4mpTime& t, const Bgp4mpPeer& peer, uint16_t old_state, uint16_t new_state,
                         std::vector<std::byte>& out) {
  bytes::Writer w(out);
  size_t at = begin_bgp4mp(w, t, peer, Bgp4mp::kStateChangeAs4);
  w.u16(old_state);
  w.u16(new_state);
  end_record(w, at);
}

std::optional<std::vector<std::byte>> rib_attributes(bytes::Span attributes) {
  std::vector<std::byte> out;
  out.reserve(attributes.size());
  bytes::Writer w(out);
  bytes::Reader in(attributes);
  while (!in.empty()) {
    auto flags = in.u8();
    auto type = in.u8();
    if (!flags || !type) return std::nullopt;
    std::optional<uint16_t> len;
    if (*flags & kFlagExtendedLength) len = in.u16();
    else if (auto l = in.u8()) len = *l;
    if (!len) return std::nullopt;
    auto value = in.take(*len);
    if (!value) return std::nullopt;
    if (*type == kTypeMpUnreachNlri) continue;
    if (*type == kTypeMpReachNlri) {
      // AFI (2), SAFI (1), next hop length (1), next hop: only the last two.
      bytes::Reader m(*value);
      if (!m.skip(3)) return std::nullopt;
      auto nh_len = m.u8();
      if (!nh_len) return std::nullopt;
      auto nh = m.take(*nh_len);
      if (!nh) return std::nullopt;
      std::vector<std::byte> v;
      bytes::Writer vw(v);
      vw.u8(*nh_len);
      vw.bytes(*nh);
      write_attribute(w, *flags, *type, v);
      continue;
    }
    write_attribute(w, *flags, *type, *value);
  }
  return out;
}

bool TableDumpWriter::peer_index_table(uint32_t collector_bgp_id, std::string_view view_name,
                                       std::span<const DumpPeer> peers, std::vector<std::byte>& out) {
  if (peers.size() > 0xFFFF || view_name.size() > 0xFFFF) return false;
  const size_t before = out.size();
  bytes::Writer w(out);
  size_t at = begin_record(w, timestamp_, TableDumpV2::kPeerIndexTable);
  w.u32(collector_bgp_id);
  w.u16(static_cast<uint16_t>(view_name.size()));
  w.bytes(bytes::as_bytes(view_name));
  w.u16(static_cast<uint16_t>(peers.size()));
  for (const DumpPeer& p : peers) {
    const bool v6 = p.address.is_v6();
    w.u8(static_cast<uint8_t>(kPeerAs4 | (v6 ? kPeerIpv6 : 0)));
    w.u32(p.bgp_id);
    w.raw(p.address.bytes().data(), v6 ? 16 : 4);
    w.u32(p.as);
  }
  end_record(w, at);
  peer_count_ = peers.size();
  ++stats_.records;
  stats_.bytes += out.size() - before;
  return true;
}

void TableDumpWriter::rib(const net::Prefix& prefix, std::span<const DumpRoute> routes, std::vector<std::byte>& out) {
  const uint64_t written = stats_.routes;
  rib_record(prefix, routes, false, out);
  rib_record(prefix, routes, true, out);
  if (stats_.routes != written) ++stats_.prefixes;
}

void TableDumpWriter::rib_record(const net::Prefix& prefix, std::span<const DumpRoute> routes, bool add_path,
                                 std::vector<std::byte>& out) {
  const bool v6 = prefix.family() == net::IpFamily::V6;
  TableDumpV2 subtype = v6 ? (add_path ? TableDumpV2::kRibIpv6UnicastAddPath : TableDumpV2::kRibIpv6Unicast)
                           : (add_path ? TableDumpV2::kRibIpv4UnicastAddPath : TableDumpV2::kRibIpv4Unicast);
  const size_t before = out.size();
  bytes::Writer w(out);
  size_t at = 0;
  size_t count_at = 0;
  uint16_t count = 0;
  for (const DumpRoute& r : routes) {
    if (r.path_id.has_value() != add_path) continue;
    std::optional<std::vector<std::byte>> attrs = rib_attributes(r.attributes);
    const size_t entry = 2 + 4 + (add_path ? 4 : 0) + 2 + (attrs ? attrs->size() : 0);
    const uint64_t body = count == 0 ? 0 : out.size() - at - kHeaderBytes;
    const uint64_t head = count == 0 ? 4 + 1 + prefix.wire_bytes() + 2 : 0;
    if (!attrs || r.peer_index >= peer_count_ || attrs->size() > kMaxRibAttributes || count >= kMaxRibEntries ||
        body + head + entry > kMaxRecordBody) {
      ++stats_.routes_left_out;
      continue;
    }
    if (count == 0) {
      at = begin_record(w, timestamp_, subtype);
      w.u32(sequence_++);
      w.u8(prefix.len());
      w.raw(prefix.addr().bytes().data(), prefix.wire_bytes());
      count_at = w.reserve(2);
    }
    w.u16(r.peer_index);
    w.u32(r.originated);
    if (add_path) w.u32(*r.path_id);
    w.u16(static_cast<uint16_t>(attrs->size()));
    w.bytes(*attrs);
    ++count;
  }
  if (count == 0) return;
  w.patch_u16(count_at, count);
  end_record(w, at);
  ++stats_.records;
  stats_.routes += count;
  stats_.bytes += out.size() - before;
}

}  // namespace petrel::mrt
