// Fuzz target: NOTIFICATION bodies, their shutdown communication, and the
// encoder round trip.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "codec/notification.h"
#include "fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace petrel::codec;
  auto r = decode_notification(petrel::fuzz::span(data, size));
  if (!r) return 0;
  if (auto text = shutdown_communication(*r)) {
    if (!is_valid_utf8(*text)) std::abort();
    auto again = Notification::shutdown(r->subcode, *text);
    if (!text->empty() && shutdown_communication(again) != text) std::abort();
  }
  // Data that fits the largest message survives an encode and decode.
  if (size + kHeaderLen > kMaxExtendedMessageLen) return 0;
  std::vector<std::byte> out;
  encode_notification(*r, out, kMaxExtendedMessageLen);
  auto back = decode_notification(petrel::bytes::Span(out).subspan(kHeaderLen));
  if (!back || !(*back == *r)) std::abort();
  return 0;
}
