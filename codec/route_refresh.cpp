// ROUTE-REFRESH: RFC 2918 section 3, RFC 7313 sections 3 and 5.
#include "codec/route_refresh.h"

#include "codec/framer.h"

namespace petrel::codec {

Result<RouteRefresh, NotifyError> decode_route_refresh(bytes::Span body, bytes::Span whole) {
  auto bad_length = [&] {
    return NotifyError::with_view(ErrorCode::kRouteRefresh, route_refresh_error::kInvalidMessageLength,
                                  whole);
  };
  bytes::Reader r(body);
  auto afi = r.u16();
  auto subtype = r.u8();
  auto safi = r.u8();
  if (!afi || !subtype || !safi) return fail(bad_length());
  RouteRefresh rr{Family{*afi, *safi}, static_cast<RefreshSubtype>(*subtype), {}};
  bool demarcation = rr.subtype == RefreshSubtype::kBeginOfRefresh || rr.subtype == RefreshSubtype::kEndOfRefresh;
  if (demarcation && !r.empty()) return fail(bad_length());
  bytes::Span rest = r.rest();
  rr.orf.assign(rest.begin(), rest.end());
  return rr;
}

void encode_route_refresh(const RouteRefresh& rr, std::vector<std::byte>& out) {
  bytes::Writer w(out);
  size_t start = begin_message(w, MessageType::kRouteRefresh);
  w.u16(rr.family.afi);
  w.u8(static_cast<uint8_t>(rr.subtype));
  w.u8(rr.family.safi);
  w.bytes(rr.orf);
  finish_message(w, start);
}

}  // namespace petrel::codec
