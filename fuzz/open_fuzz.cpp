// Fuzz target: OPEN bodies (capabilities included). What decodes must
// encode and decode again to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "codec/open.h"
#include "codec/types.h"
#include "fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace petrel::codec;
  auto r = decode_open(petrel::fuzz::span(data, size));
  if (!r) return 0;
  std::vector<std::byte> out;
  encode_open(*r, out);
  auto again = decode_open(petrel::bytes::Span(out).subspan(kHeaderLen));
  if (!again) std::abort();
  Open back = *again;
  back.extended_params = r->extended_params;  // the encoder may need the extended form
  if (!(back == *r)) std::abort();
  return 0;
}
