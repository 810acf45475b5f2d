// MRT record framing (RFC 6396 sections 2-4; RFC 8050 sections 3-4).
#include "mrt/mrt.h"

namespace petrel::mrt {
namespace {

using bytes::Reader;

constexpr uint16_t kAfiIpv4 = 1;
constexpr uint16_t kAfiIpv6 = 2;

// Reads an address of the given AFI (1 or 2).
bool read_address(Reader& in, net::IpFamily family, net::IpAddress& out) {
  uint8_t buf[16];
  if (!in.copy_to(buf, net::IpAddress::width(family))) return false;
  out = net::IpAddress::from_bytes(family, buf);
  return true;
}

bool family_of_afi(uint16_t afi, net::IpFamily& out) {
  if (afi == kAfiIpv4) {
    out = net::IpFamily::V4;
    return true;
  }
  if (afi == kAfiIpv6) {
    out = net::IpFamily::V6;
    return true;
  }
  return false;
}

// The common part of BGP4MP MESSAGE and STATE_CHANGE (sections 4.4.1-4.4.4).
Result<Bgp4mpHeader, Error> read_bgp4mp_header(Reader& in, bool as4) {
  Bgp4mpHeader h;
  if (as4) {
    auto p = in.u32();
    auto l = in.u32();
    if (!p || !l) return fail(Error::kTruncatedField);
    h.peer_as = *p;
    h.local_as = *l;
  } else {
    auto p = in.u16();
    auto l = in.u16();
    if (!p || !l) return fail(Error::kTruncatedField);
    h.peer_as = *p;
    h.local_as = *l;
  }
  auto ifindex = in.u16();
  auto afi = in.u16();
  if (!ifindex || !afi) return fail(Error::kTruncatedField);
  h.interface_index = *ifindex;
  h.afi = *afi;
  net::IpFamily family;
  if (!family_of_afi(h.afi, family)) return fail(Error::kBadAfi);
  if (!read_address(in, family, h.peer_ip) || !read_address(in, family, h.local_ip))
    return fail(Error::kTruncatedField);
  return h;
}

bool has_type(const Record& r, Type a, Type b) { return r.is(a) || r.is(b); }

}  // namespace

const char* to_string(Error e) {
  switch (e) {
    case Error::kTruncatedHeader: return "truncated MRT header";
    case Error::kTruncatedRecord: return "MRT record length runs past the end of the data";
    case Error::kTruncatedField: return "MRT field runs past the end of its record";
    case Error::kWrongType: return "MRT record is not of the expected type";
    case Error::kBadAfi: return "MRT record has an address family other than IPv4 or IPv6";
    case Error::kBadPrefixLength: return "MRT prefix length too long for its family";
    case Error::kBadEntryCount: return "MRT RIB record has fewer entries than its count";
    case Error::kTrailingBytes: return "MRT record has bytes after its last field";
  }
  return "unknown MRT error";
}

Result<Record, Error> RecordReader::next() {
  Record r;
  r.offset = in_.offset();
  auto ts = in_.u32();
  auto type = in_.u16();
  auto subtype = in_.u16();
  auto len = in_.u32();
  if (!ts || !type || !subtype || !len) {
    failed_ = true;
    return fail(Error::kTruncatedHeader);
  }
  auto body = in_.take(*len);
  if (!body) {
    failed_ = true;
    return fail(Error::kTruncatedRecord);
  }
  r.timestamp = *ts;
  r.type = *type;
  r.subtype = *subtype;
  r.body = *body;
  if (r.is(Type::kBgp4mpEt) || r.is(Type::kIsisEt) || r.is(Type::kOspfV3Et)) {
    Reader b(r.body);
    auto us = b.u32();
    if (!us) return fail(Error::kTruncatedField);  // the next record is still framed
    r.microseconds = *us;
    r.body = b.rest();
  }
  return r;
}

// --- BGP4MP ---------------------------------------------------------------

bool is_bgp4mp_message(const Record& r) {
  if (!has_type(r, Type::kBgp4mp, Type::kBgp4mpEt)) return false;
  switch (static_cast<Bgp4mp>(r.subtype)) {
    case Bgp4mp::kMessage:
    case Bgp4mp::kMessageAs4:
    case Bgp4mp::kMessageLocal:
    case Bgp4mp::kMessageAs4Local:
    case Bgp4mp::kMessageAddPath:
    case Bgp4mp::kMessageAs4AddPath:
    case Bgp4mp::kMessageLocalAddPath:
    case Bgp4mp::kMessageAs4LocalAddPath:
      return true;
    case Bgp4mp::kStateChange:
    case Bgp4mp::kStateChangeAs4:
      return false;
  }
  return false;
}

bool is_bgp4mp_state_change(const Record& r) {
  return has_type(r, Type::kBgp4mp, Type::kBgp4mpEt) &&
         (r.subtype == static_cast<uint16_t>(Bgp4mp::kStateChange) ||
          r.subtype == static_cast<uint16_t>(Bgp4mp::kStateChangeAs4));
}

Result<Bgp4mpMessage, Error> decode_bgp4mp_message(const Record& r) {
  if (!is_bgp4mp_message(r)) return fail(Error::kWrongType);
  Bgp4mpMessage m;
  switch (static_cast<Bgp4mp>(r.subtype)) {
    case Bgp4mp::kMessage: break;
    case Bgp4mp::kMessageAs4: m.as4 = true; break;
    case Bgp4mp::kMessageLocal: m.local = true; break;
    case Bgp4mp::kMessageAs4Local: m.as4 = m.local = true; break;
    case Bgp4mp::kMessageAddPath: m.add_path = true; break;
    case Bgp4mp::kMessageAs4AddPath: m.as4 = m.add_path = true; break;
    case Bgp4mp::kMessageLocalAddPath: m.local = m.add_path = true; break;
    case Bgp4mp::kMessageAs4LocalAddPath: m.as4 = m.local = m.add_path = true; break;
    case Bgp4mp::kStateChange:
    case Bgp4mp::kStateChangeAs4:
      return fail(Error::kWrongType);
  }
  Reader in(r.body);
  auto h = read_bgp4mp_header(in, m.as4);
  if (!h) return fail(h.error());
  m.header = *h;
  m.message = in.rest();
  return m;
}

Result<Bgp4mpStateChange, Error> decode_bgp4mp_state_change(const Record& r) {
  if (!is_bgp4mp_state_change(r)) return fail(Error::kWrongType);
  Reader in(r.body);
  auto h = read_bgp4mp_header(in, r.subtype == static_cast<uint16_t>(Bgp4mp::kStateChangeAs4));
  if (!h) return fail(h.error());
  auto old_state = in.u16();
  auto new_state = in.u16();
  if (!old_state || !new_state) return fail(Error::kTruncatedField);
  if (!in.empty()) return fail(Error::kTrailingBytes);
  Bgp4mpStateChange s;
  s.header = *h;
  s.old_state = *old_state;
  s.new_state = *new_state;
  return s;
}

// --- TABLE_DUMP (v1) ------------------------------------------------------

Result<TableDumpEntry, Error> decode_table_dump(const Record& r) {
  if (!r.is(Type::kTableDump)) return fail(Error::kWrongType);
  net::IpFamily family;
  if (!family_of_afi(r.subtype, family)) return fail(Error::kBadAfi);
  Reader in(r.body);
  TableDumpEntry e;
  auto view = in.u16();
  auto seq = in.u16();
  if (!view || !seq) return fail(Error::kTruncatedField);
  e.view = *view;
  e.sequence = *seq;
  net::IpAddress addr;
  if (!read_address(in, family, addr)) return fail(Error::kTruncatedField);
  auto len = in.u8();
  auto status = in.u8();
  auto originated = in.u32();
  if (!len || !status || !originated) return fail(Error::kTruncatedField);
  auto prefix = net::Prefix::make(addr, *len);
  if (!prefix) return fail(Error::kBadPrefixLength);
  e.prefix = *prefix;
  e.status = *status;
  e.originated = *originated;
  if (!read_address(in, family, e.peer_ip)) return fail(Error::kTruncatedField);
  auto peer_as = in.u16();
  auto attr_len = in.u16();
  if (!peer_as || !attr_len) return fail(Error::kTruncatedField);
  e.peer_as = *peer_as;
  auto attrs = in.take(*attr_len);
  if (!attrs) return fail(Error::kTruncatedField);
  e.attributes = *attrs;
  if (!in.empty()) return fail(Error::kTrailingBytes);
  return e;
}

// --- TABLE_DUMP_V2 --------------------------------------------------------

Result<PeerIndexTable, Error> decode_peer_index_table(const Record& r) {
  if (!r.is(Type::kTableDumpV2) ||
      r.subtype != static_cast<uint16_t>(TableDumpV2::kPeerIndexTable))
    return fail(Error::kWrongType);
  Reader in(r.body);
  PeerIndexTable t;
  auto id = in.u32();
  auto name_len = in.u16();
  if (!id || !name_len) return fail(Error::kTruncatedField);
  t.collector_bgp_id = *id;
  auto name = in.take(*name_len);
  auto count = name ? in.u16() : std::nullopt;
  if (!count) return fail(Error::kTruncatedField);
  t.view_name = bytes::as_chars(*name);
  // Each entry takes at least 1 + 4 + 4 + 2 bytes: bound the reservation.
  t.peers.reserve(std::min<size_t>(*count, in.remaining() / 11));
  for (uint16_t i = 0; i < *count; ++i) {
    PeerEntry p;
    auto type = in.u8();
    auto bgp_id = in.u32();
    if (!type || !bgp_id) return fail(Error::kTruncatedField);
    p.type = *type;
    p.bgp_id = *bgp_id;
    if (!read_address(in, (p.type & 1) ? net::IpFamily::V6 : net::IpFamily::V4, p.ip))
      return fail(Error::kTruncatedField);
    if (p.type & 2) {
      auto as = in.u32();
      if (!as) return fail(Error::kTruncatedField);
      p.as = *as;
    } else {
      auto as = in.u16();
      if (!as) return fail(Error::kTruncatedField);
      p.as = *as;
    }
    t.peers.push_back(p);
  }
  if (!in.empty()) return fail(Error::kTrailingBytes);
  return t;
}

bool is_rib(const Record& r) {
  if (!r.is(Type::kTableDumpV2)) return false;
  switch (static_cast<TableDumpV2>(r.subtype)) {
    case TableDumpV2::kRibIpv4Unicast:
    case TableDumpV2::kRibIpv4Multicast:
    case TableDumpV2::kRibIpv6Unicast:
    case TableDumpV2::kRibIpv6Multicast:
    case TableDumpV2::kRibIpv4UnicastAddPath:
    case TableDumpV2::kRibIpv4MulticastAddPath:
    case TableDumpV2::kRibIpv6UnicastAddPath:
    case TableDumpV2::kRibIpv6MulticastAddPath:
      return true;
    case TableDumpV2::kPeerIndexTable:
    case TableDumpV2::kRibGeneric:
    case TableDumpV2::kGeoPeerTable:
    case TableDumpV2::kRibGenericAddPath:
      return false;
  }
  return false;
}

Result<Rib, Error> decode_rib(const Record& r) {
  if (!is_rib(r)) return fail(Error::kWrongType);
  Rib rib;
  switch (static_cast<TableDumpV2>(r.subtype)) {
    case TableDumpV2::kRibIpv4UnicastAddPath: rib.add_path = true; [[fallthrough]];
    case TableDumpV2::kRibIpv4Unicast: rib.afi = kAfiIpv4; rib.safi = 1; break;
    case TableDumpV2::kRibIpv4MulticastAddPath: rib.add_path = true; [[fallthrough]];
    case TableDumpV2::kRibIpv4Multicast: rib.afi = kAfiIpv4; rib.safi = 2; break;
    case TableDumpV2::kRibIpv6UnicastAddPath: rib.add_path = true; [[fallthrough]];
    case TableDumpV2::kRibIpv6Unicast: rib.afi = kAfiIpv6; rib.safi = 1; break;
    case TableDumpV2::kRibIpv6MulticastAddPath: rib.add_path = true; [[fallthrough]];
    case TableDumpV2::kRibIpv6Multicast: rib.afi = kAfiIpv6; rib.safi = 2; break;
    case TableDumpV2::kPeerIndexTable:
    case TableDumpV2::kRibGeneric:
    case TableDumpV2::kGeoPeerTable:
    case TableDumpV2::kRibGenericAddPath:
      return fail(Error::kWrongType);
  }
  const net::IpFamily family = rib.afi == kAfiIpv4 ? net::IpFamily::V4 : net::IpFamily::V6;
  Reader in(r.body);
  auto seq = in.u32();
  auto len = in.u8();
  if (!seq || !len) return fail(Error::kTruncatedField);
  rib.sequence = *seq;
  if (*len > net::IpAddress::max_len(family)) return fail(Error::kBadPrefixLength);
  uint8_t addr[16] = {};
  if (!in.copy_to(addr, (*len + 7u) / 8u)) return fail(Error::kTruncatedField);
  auto prefix = net::Prefix::make(net::IpAddress::from_bytes(family, addr), *len);
  if (!prefix) return fail(Error::kBadPrefixLength);
  rib.prefix = *prefix;
  auto count = in.u16();
  if (!count) return fail(Error::kTruncatedField);
  rib.entry_count = *count;
  rib.entries_ = in.peek_rest();
  // Check the framing of every entry once, so iterating cannot fail.
  for (uint16_t i = 0; i < *count; ++i) {
    if (!in.skip(2 + 4 + (rib.add_path ? 4 : 0))) return fail(Error::kBadEntryCount);
    auto attr_len = in.u16();
    if (!attr_len || !in.skip(*attr_len)) return fail(Error::kBadEntryCount);
  }
  if (!in.empty()) return fail(Error::kTrailingBytes);
  return rib;
}

void Rib::Iterator::load() {
  if (left_ == 0) return;
  // decode_rib() checked these reads; value_or() never takes its default.
  cur_.peer_index = in_.u16().value_or(0);
  cur_.originated = in_.u32().value_or(0);
  cur_.path_id = add_path_ ? in_.u32().value_or(0) : 0;
  auto attr_len = in_.u16().value_or(0);
  cur_.attributes = in_.take(attr_len).value_or(Span{});
}

}  // namespace petrel::mrt
