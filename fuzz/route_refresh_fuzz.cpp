// Fuzz target: ROUTE-REFRESH bodies (the whole message is the body with a
// header in front). What decodes must encode back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "codec/framer.h"
#include "codec/route_refresh.h"
#include "fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace petrel::codec;
  auto body = petrel::fuzz::span(data, size);
  std::vector<std::byte> whole;
  petrel::bytes::Writer w(whole);
  size_t start = begin_message(w, MessageType::kRouteRefresh);
  w.bytes(body);
  finish_message(w, start);
  auto r = decode_route_refresh(body, whole);
  if (!r) {
    if (r.error().data().size() != whole.size()) std::abort();
    return 0;
  }
  std::vector<std::byte> out;
  encode_route_refresh(*r, out);
  if (out != whole) std::abort();
  return 0;
}
