// Fuzz target: the value of a Capabilities optional parameter. What
// decodes must encode and decode again to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "codec/capabilities.h"
#include "fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace petrel::codec;
  Capabilities caps;
  if (!decode_capabilities(petrel::fuzz::span(data, size), caps)) return 0;
  std::vector<std::byte> out;
  petrel::bytes::Writer w(out);
  encode_capabilities(caps, w);
  Capabilities back;
  if (!decode_capabilities(out, back) || !(back == caps)) std::abort();
  return 0;
}
