// Splits an RTR byte stream into PDUs (RFC 8210 section 5, RFC 6810
// section 5).
//
// The 8-byte header is checked as soon as it is in (check_header in
// rpki/pdu.h): an unknown version or type, or a length wrong for the type
// or beyond kMaxPduLen, is an error at once, before the rest of the PDU is
// waited for. The stream may be split anywhere: feed() what arrived, then
// call next() until it says kNeedMore.
#pragma once

#include <cstddef>
#include <vector>

#include "crates/bytes/bytes.h"
#include "rpki/pdu.h"

namespace petrel::rpki {

class Framer {
 public:
  enum class Status : uint8_t { kPdu, kNeedMore, kError };

  void feed(bytes::Span data);
  // kPdu sets pdu to one whole PDU, header included (valid until the next
  // feed() or next()). kError sets err; the framer stays in error and the
  // connection must close.
  Status next(bytes::Span& pdu, DecodeError& err);

  // After kError: the offending PDU's bytes that arrived (at least its
  // header, at most its declared length), to quote in an Error Report.
  [[nodiscard]] bytes::Span offending() const;
  // Bytes held that are not yet a whole PDU.
  [[nodiscard]] size_t buffered() const { return buf_.size() - pos_; }
  // Bytes of buffer the framer holds (capacity).
  [[nodiscard]] size_t held_bytes() const { return buf_.capacity(); }
  void reset();

 private:
  std::vector<std::byte> buf_;
  size_t pos_ = 0;
  bool failed_ = false;
  DecodeError error_;
};

}  // namespace petrel::rpki
