// ROUTE-REFRESH: RFC 2918 section 3, RFC 7313 sections 3 and 5.
#include "codec/route_refresh.h"

#include "codec/framer.h"

namespace petrel::codec {

namespace {
constexpr size_t kRouteRefreshBodyLen = 4;
}  // namespace

Result<RouteRefresh, NotifyError> decode_route_refresh(bytes::Span body, bytes::Span whole) {
  if (body.size() != kRouteRefreshBodyLen)
    return fail(NotifyError::with_view(ErrorCode::kRouteRefresh,
                                       route_refresh_error::kInvalidMessageLength, whole));
  bytes::Reader r(body);
  RouteRefresh rr;
  rr.family.afi = r.u16().value_or(0);
  rr.subtype = static_cast<RefreshSubtype>(r.u8().value_or(0));
  rr.family.safi = r.u8().value_or(0);
  return rr;
}

void encode_route_refresh(const RouteRefresh& rr, std::vector<std::byte>& out) {
  bytes::Writer w(out);
  size_t start = begin_message(w, MessageType::kRouteRefresh);
  w.u16(rr.family.afi);
  w.u8(static_cast<uint8_t>(rr.subtype));
  w.u8(rr.family.safi);
  finish_message(w, start);
}

}  // namespace petrel::codec
