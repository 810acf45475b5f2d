// The libFuzzer entry point every target defines.
#pragma once

#include <cstddef>
#include <cstdint>

#include "crates/bytes/bytes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace petrel::fuzz {
inline bytes::Span span(const uint8_t* data, size_t size) {
  return bytes::Span(reinterpret_cast<const std::byte*>(data), size);
}
}  // namespace petrel::fuzz
