// Splits a TCP byte stream into BGP messages (RFC 4271 section 4.1).
//
// The header is checked as soon as its 19 bytes are in: marker, length
// (19..4096, or ..65535 with RFC 8654 extended messages), type, and the
// per-type minimum lengths of section 6.1. A bad header is an error at
// once, before the rest of the message is waited for. The stream may be
// split anywhere: feed() what arrived, then call next() until it says
// kNeedMore.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/result/result.h"

namespace petrel::codec {

struct Header {
  uint16_t length = 0;
  uint8_t type = 0;
};

// Checks a 19-byte header. max_len is 4096 or, with extended messages,
// 65535. Errors are Message Header Errors (RFC 4271 section 6.1) with the
// data the RFC asks for.
Result<Header, NotifyError> check_header(bytes::Span header19, size_t max_len);

// One whole message: its type and the bytes after the header. `whole` is
// the message including its header.
struct Message {
  MessageType type;
  bytes::Span body;
  bytes::Span whole;
};

class Framer {
 public:
  enum class Status : uint8_t { kMessage, kNeedMore, kError };

  explicit Framer(size_t max_len = kMaxMessageLen) : max_len_(max_len) {}

  // RFC 8654: raise the limit once extended messages are negotiated.
  void set_max_len(size_t max_len) { max_len_ = max_len; }
  [[nodiscard]] size_t max_len() const { return max_len_; }

  void feed(bytes::Span data);
  // kMessage fills msg (valid until the next feed() or next()); kError fills
  // err and the framer stays in error (the session must close).
  Status next(Message& msg, NotifyError& err);

  // Bytes held that are not yet a whole message.
  [[nodiscard]] size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::vector<std::byte> buf_;
  size_t pos_ = 0;
  size_t max_len_;
  bool failed_ = false;
  NotifyError error_;
};

// Writes a header (marker, length placeholder, type); finish_message()
// patches the length once the body is written.
size_t begin_message(bytes::Writer& w, MessageType t);
void finish_message(bytes::Writer& w, size_t start);
// A message of type t again from its body as received (at most 65516
// octets, as a received message's is): header and body.
std::vector<std::byte> whole_message(MessageType t, bytes::Span body);

// The KEEPALIVE message: a header and nothing else (RFC 4271 section 4.4).
void encode_keepalive(std::vector<std::byte>& out);

}  // namespace petrel::codec
