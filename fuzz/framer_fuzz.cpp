// Fuzz target: the framer, fed the input split at a point the input chooses.
#include <cstddef>
#include <cstdint>

#include "codec/framer.h"
#include "fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto all = petrel::bytes::Span(reinterpret_cast<const std::byte*>(data), size);
  size_t cut = data[0] % size;
  petrel::codec::Framer f(data[0] & 1 ? petrel::codec::kMaxExtendedMessageLen
                                      : petrel::codec::kMaxMessageLen);
  petrel::codec::Message m;
  petrel::codec::NotifyError e;
  f.feed(all.first(cut));
  while (f.next(m, e) == petrel::codec::Framer::Status::kMessage) {
  }
  f.feed(all.subspan(cut));
  while (f.next(m, e) == petrel::codec::Framer::Status::kMessage) {
  }
  return 0;
}
