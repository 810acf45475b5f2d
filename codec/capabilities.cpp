// Capabilities: RFC 5492 section 4 and the capability RFCs listed in the
// header. Each known code has one decode step; a known capability whose
// value does not have the length its RFC gives is malformed.
#include "codec/capabilities.h"

#include <algorithm>
#include <cassert>

namespace petrel::codec {

namespace {

constexpr size_t kMaxCapValue = 255;

NotifyError malformed(bytes::Span tlv) {
  return NotifyError::with_view(ErrorCode::kOpenMessage, open_error::kUnspecific, tlv);
}

void keep_unknown(uint8_t code, bytes::Span value, Capabilities& into) {
  into.unknown.push_back(UnknownCapability{code, std::vector<std::byte>(value.begin(), value.end())});
}

// AFI (2 octets) and SAFI (1 octet), as in most capabilities.
Family read_family(bytes::Reader& r) {
  uint16_t afi = r.u16().value_or(0);
  uint8_t safi = r.u8().value_or(0);
  return Family{afi, safi};
}

bool decode_add_path(bytes::Span value, Capabilities& into) {
  if (value.size() % 4 != 0) return false;
  std::vector<AddPathFamily> entries;
  bytes::Reader r(value);
  while (!r.empty()) {
    Family f = read_family(r);
    uint8_t mode = r.u8().value_or(0);
    // RFC 7911 section 4: any other value makes the capability not understood.
    if (mode < 1 || mode > 3) {
      keep_unknown(cap_code::kAddPath, value, into);
      return true;
    }
    entries.push_back(AddPathFamily{f, static_cast<AddPathMode>(mode)});
  }
  into.add_path.insert(into.add_path.end(), entries.begin(), entries.end());
  return true;
}

bool decode_extended_next_hop(bytes::Span value, Capabilities& into) {
  if (value.size() % 6 != 0) return false;
  std::vector<ExtendedNextHop> entries;
  bytes::Reader r(value);
  while (!r.empty()) {
    uint16_t afi = r.u16().value_or(0);
    uint16_t safi = r.u16().value_or(0);
    uint16_t nh_afi = r.u16().value_or(0);
    if (safi > 255) {
      keep_unknown(cap_code::kExtendedNextHop, value, into);
      return true;
    }
    entries.push_back(ExtendedNextHop{Family{afi, static_cast<uint8_t>(safi)}, nh_afi});
  }
  into.extended_next_hop.insert(into.extended_next_hop.end(), entries.begin(), entries.end());
  return true;
}

// RFC 4724 section 3: Restart Flags (4 bits: R, N), Restart Time (12 bits),
// then AFI, SAFI, Flags for Address Family (F) per family. "If more than
// one instance of the Graceful Restart Capability is carried in the
// capability advertisement, the receiver of the advertisement MUST ignore
// all but the last instance": each one replaces what came before.
bool decode_graceful_restart(bytes::Span value, Capabilities& into) {
  if (value.size() < 2 || (value.size() - 2) % 4 != 0) return false;
  bytes::Reader r(value);
  uint16_t head = r.u16().value_or(0);
  GracefulRestart gr;
  gr.restarting = (head & 0x8000) != 0;
  gr.notification = (head & 0x4000) != 0;
  gr.restart_time = head & 0x0fff;
  while (!r.empty()) {
    Family f = read_family(r);
    uint8_t flags = r.u8().value_or(0);
    gr.families.push_back({f, (flags & 0x80) != 0});
  }
  into.graceful_restart = std::move(gr);
  return true;
}

// RFC 9494 section 3: AFI, SAFI, Flags (F), 24-bit Long-lived Stale Time.
bool decode_llgr(bytes::Span value, Capabilities& into) {
  if (value.size() % 7 != 0) return false;
  if (!into.long_lived_graceful_restart) into.long_lived_graceful_restart.emplace();
  bytes::Reader r(value);
  while (!r.empty()) {
    Family f = read_family(r);
    uint8_t flags = r.u8().value_or(0);
    uint32_t hi = r.u8().value_or(0);
    uint32_t lo = r.u16().value_or(0);
    into.long_lived_graceful_restart->families.push_back({f, (flags & 0x80) != 0, hi << 16 | lo});
  }
  return true;
}

// draft-walton-bgp-hostname-capability section 3. A draft: one that does
// not parse is kept as unknown rather than ending the session.
void decode_fqdn(bytes::Span value, Capabilities& into) {
  bytes::Reader r(value);
  auto host_len = r.u8();
  auto host = host_len ? r.take(*host_len) : std::nullopt;
  auto domain_len = host ? r.u8() : std::nullopt;
  auto domain = domain_len ? r.take(*domain_len) : std::nullopt;
  if (!domain || !r.empty()) {
    keep_unknown(cap_code::kFqdn, value, into);
    return;
  }
  into.fqdn = Fqdn{std::string(bytes::as_chars(*host)), std::string(bytes::as_chars(*domain))};
}

// One capability; false if it is malformed.
bool decode_one(uint8_t code, bytes::Span value, Capabilities& into) {
  bytes::Reader r(value);
  switch (code) {
    case cap_code::kMultiprotocol: {
      // RFC 4760 section 8: AFI, reserved octet (ignored), SAFI.
      if (value.size() != 4) return false;
      uint16_t afi = r.u16().value_or(0);
      (void)r.u8();
      into.multiprotocol.push_back(Family{afi, r.u8().value_or(0)});
      return true;
    }
    case cap_code::kRouteRefresh:
    case cap_code::kRouteRefreshOld:
      if (!value.empty()) return false;
      into.route_refresh = true;
      if (code == cap_code::kRouteRefreshOld) into.route_refresh_old = true;
      return true;
    case cap_code::kEnhancedRouteRefresh:
      if (!value.empty()) return false;
      into.enhanced_route_refresh = true;
      return true;
    case cap_code::kExtendedMessage:
      if (!value.empty()) return false;
      into.extended_message = true;
      return true;
    case cap_code::kFourOctetAs:
      if (value.size() != 4) return false;
      into.four_octet_as = r.u32().value_or(0);
      return true;
    case cap_code::kAddPath:
      return decode_add_path(value, into);
    case cap_code::kExtendedNextHop:
      return decode_extended_next_hop(value, into);
    case cap_code::kGracefulRestart:
      return decode_graceful_restart(value, into);
    case cap_code::kLongLivedGracefulRestart:
      return decode_llgr(value, into);
    case cap_code::kRole:
      if (value.size() != 1) return false;
      into.role = static_cast<Role>(r.u8().value_or(0));
      return true;
    case cap_code::kFqdn:
      decode_fqdn(value, into);
      return true;
    default:
      keep_unknown(code, value, into);
      return true;
  }
}

// Writes one capability whose value the callback appends.
template <typename F>
void put_cap(bytes::Writer& w, uint8_t code, F&& write_value) {
  w.u8(code);
  size_t len_at = w.reserve(1);
  size_t start = w.size();
  write_value();
  size_t len = w.size() - start;
  assert(len <= kMaxCapValue);
  w.patch_u8(len_at, static_cast<uint8_t>(len));
}

// Writes a list capability, split into as many capabilities of the same
// code as needed to keep each value within 255 octets.
template <typename T, typename F>
void put_list(bytes::Writer& w, uint8_t code, const std::vector<T>& items, size_t head_len,
              size_t item_len, F&& write_head, auto&& write_item) {
  size_t per_cap = (kMaxCapValue - head_len) / item_len;
  size_t i = 0;
  do {
    size_t end = std::min(items.size(), i + per_cap);
    put_cap(w, code, [&] {
      write_head();
      for (size_t j = i; j < end; ++j) write_item(items[j]);
    });
    i = end;
  } while (i < items.size());
}

void put_family(bytes::Writer& w, Family f) {
  w.u16(f.afi);
  w.u8(f.safi);
}

void put_bounded_string(bytes::Writer& w, const std::string& s) {
  size_t n = std::min(s.size(), kMaxCapValue);
  w.u8(static_cast<uint8_t>(n));
  w.raw(s.data(), n);
}

}  // namespace

bool Capabilities::has_family(Family f) const {
  return std::find(multiprotocol.begin(), multiprotocol.end(), f) != multiprotocol.end();
}

FamilySet Capabilities::families() const {
  FamilySet s;
  for (Family f : multiprotocol) s.add(f);
  return s;
}

std::optional<AddPathMode> Capabilities::add_path_mode(Family f) const {
  std::optional<AddPathMode> mode;
  for (const auto& e : add_path)
    if (e.family == f) mode = e.mode;
  return mode;
}

bool Capabilities::extended_next_hop_allowed(Family f, uint16_t next_hop_afi) const {
  return std::any_of(extended_next_hop.begin(), extended_next_hop.end(), [&](const ExtendedNextHop& e) {
    return e.family == f && e.next_hop_afi == next_hop_afi;
  });
}

Result<void, NotifyError> decode_capabilities(bytes::Span value, Capabilities& into) {
  bytes::Reader r(value);
  while (!r.empty()) {
    size_t start = r.offset();
    auto code = r.u8();
    auto len = r.u8();
    if (!code || !len || r.remaining() < *len) return fail(malformed(value.subspan(start)));
    bytes::Span cap_value = r.take(*len).value_or(bytes::Span{});
    bytes::Span tlv = value.subspan(start, size_t{2} + *len);
    std::optional<Role> role_before = into.role;
    if (!decode_one(*code, cap_value, into)) return fail(malformed(tlv));
    // RFC 9234 section 4.2: several Role capabilities must agree.
    if (*code == cap_code::kRole && role_before && *role_before != *into.role)
      return fail(NotifyError::make(ErrorCode::kOpenMessage, open_error::kRoleMismatch));
  }
  return {};
}

void encode_capabilities(const Capabilities& caps, bytes::Writer& w) {
  for (Family f : caps.multiprotocol) {
    put_cap(w, cap_code::kMultiprotocol, [&] {
      w.u16(f.afi);
      w.u8(0);
      w.u8(f.safi);
    });
  }
  auto nothing = [] {};
  if (caps.route_refresh) put_cap(w, cap_code::kRouteRefresh, nothing);
  if (caps.route_refresh_old) put_cap(w, cap_code::kRouteRefreshOld, nothing);
  if (caps.enhanced_route_refresh) put_cap(w, cap_code::kEnhancedRouteRefresh, nothing);
  if (caps.four_octet_as) put_cap(w, cap_code::kFourOctetAs, [&] { w.u32(*caps.four_octet_as); });
  if (!caps.extended_next_hop.empty()) {
    put_list(w, cap_code::kExtendedNextHop, caps.extended_next_hop, 0, 6, nothing,
             [&](const ExtendedNextHop& e) {
               w.u16(e.family.afi);
               w.u16(e.family.safi);
               w.u16(e.next_hop_afi);
             });
  }
  if (caps.extended_message) put_cap(w, cap_code::kExtendedMessage, nothing);
  if (!caps.add_path.empty()) {
    put_list(w, cap_code::kAddPath, caps.add_path, 0, 4, nothing, [&](const AddPathFamily& e) {
      put_family(w, e.family);
      w.u8(static_cast<uint8_t>(e.mode));
    });
  }
  if (const auto& gr = caps.graceful_restart) {
    // One capability: a receiver keeps only the last of several (RFC 4724
    // section 3), so the list is not split; it is cut at the 63 entries
    // that fit (there are far fewer families).
    auto head = static_cast<uint16_t>((gr->restarting ? 0x8000 : 0) | (gr->notification ? 0x4000 : 0) |
                                      (gr->restart_time & 0x0fff));
    const size_t n = std::min(gr->families.size(), kMaxGracefulRestartFamilies);
    put_cap(w, cap_code::kGracefulRestart, [&] {
      w.u16(head);
      for (size_t i = 0; i < n; ++i) {
        put_family(w, gr->families[i].family);
        w.u8(gr->families[i].forwarding_preserved ? 0x80 : 0);
      }
    });
  }
  if (const auto& llgr = caps.long_lived_graceful_restart) {
    put_list(w, cap_code::kLongLivedGracefulRestart, llgr->families, 0, 7, nothing,
             [&](const LongLivedGracefulRestart::PerFamily& e) {
               put_family(w, e.family);
               w.u8(e.forwarding_preserved ? 0x80 : 0);
               w.u8(static_cast<uint8_t>(e.stale_time >> 16));
               w.u16(static_cast<uint16_t>(e.stale_time));
             });
  }
  if (caps.role) put_cap(w, cap_code::kRole, [&] { w.u8(static_cast<uint8_t>(*caps.role)); });
  if (caps.fqdn) {
    // Each string is cut to fit; together they must fit in one capability.
    std::string host = caps.fqdn->hostname.substr(0, kMaxCapValue - 2);
    std::string domain = caps.fqdn->domain.substr(0, kMaxCapValue - 2 - host.size());
    put_cap(w, cap_code::kFqdn, [&] {
      put_bounded_string(w, host);
      put_bounded_string(w, domain);
    });
  }
  for (const auto& u : caps.unknown) {
    put_cap(w, u.code, [&] {
      w.bytes(bytes::Span(u.value).first(std::min(u.value.size(), kMaxCapValue)));
    });
  }
}

}  // namespace petrel::codec
