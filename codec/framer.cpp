// Message framing: RFC 4271 sections 4.1 and 6.1, RFC 8654.
#include "codec/framer.h"

#include <algorithm>
#include <cstring>

namespace petrel::codec {

namespace {

// Minimum length per type (RFC 4271 section 4; RFC 2918 for ROUTE-REFRESH).
size_t min_length(uint8_t type) {
  switch (type) {
    case 1: return 29;  // OPEN
    case 2: return 23;  // UPDATE
    case 3: return 21;  // NOTIFICATION
    case 4: return 19;  // KEEPALIVE
    case 5: return 23;  // ROUTE-REFRESH
    default: return 19;
  }
}

}  // namespace

Result<Header, NotifyError> check_header(bytes::Span h, size_t max_len) {
  for (size_t i = 0; i < kMarkerLen; ++i) {
    if (h[i] != std::byte{0xff})
      return fail(NotifyError::make(ErrorCode::kMessageHeader,
                                    header_error::kConnectionNotSynchronized));
  }
  Header hd;
  hd.length = static_cast<uint16_t>((std::to_integer<unsigned>(h[16]) << 8) |
                                    std::to_integer<unsigned>(h[17]));
  hd.type = std::to_integer<uint8_t>(h[18]);
  if (hd.type < 1 || hd.type > 5)
    return fail(NotifyError::with_u8(ErrorCode::kMessageHeader, header_error::kBadMessageType, hd.type));
  // Section 6.1: too short, too long, a KEEPALIVE that is not exactly 19
  // octets, or shorter than its type's minimum; the data is the length field.
  bool bad = hd.length < kHeaderLen || hd.length > max_len || hd.length < min_length(hd.type) ||
             (hd.type == 4 && hd.length != kHeaderLen);
  if (bad)
    return fail(NotifyError::with_u16(ErrorCode::kMessageHeader, header_error::kBadMessageLength,
                                      hd.length));
  return hd;
}

void Framer::feed(bytes::Span data) {
  if (failed_) return;
  // Drop what was handed out already before growing, so the buffer holds at
  // most one partial message plus what just arrived.
  if (pos_ > 0 && (pos_ == buf_.size() || pos_ >= 65536)) {
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(pos_));
    pos_ = 0;
    // What a burst grew the buffer to goes once it is empty (a route
    // server holds hundreds of mostly idle sessions).
    if (buf_.empty() && buf_.capacity() > (size_t{128} << 10)) std::vector<std::byte>().swap(buf_);
  }
  buf_.insert(buf_.end(), data.begin(), data.end());
}

Framer::Status Framer::next(Message& msg, NotifyError& err) {
  if (failed_) {
    err = error_;
    return Status::kError;
  }
  size_t avail = buf_.size() - pos_;
  if (avail < kHeaderLen) return Status::kNeedMore;
  bytes::Span view(buf_.data() + pos_, avail);
  auto h = check_header(view.first(kHeaderLen), max_len_);
  if (!h) {
    failed_ = true;
    error_ = h.error();
    error_.view = {};  // no views into a buffer that may move
    err = error_;
    return Status::kError;
  }
  if (avail < h->length) return Status::kNeedMore;
  msg.type = static_cast<MessageType>(h->type);
  msg.whole = view.first(h->length);
  msg.body = msg.whole.subspan(kHeaderLen);
  pos_ += h->length;
  return Status::kMessage;
}

size_t begin_message(bytes::Writer& w, MessageType t) {
  size_t start = w.size();
  w.fill(std::byte{0xff}, kMarkerLen);
  w.u16(0);
  w.u8(static_cast<uint8_t>(t));
  return start;
}

void finish_message(bytes::Writer& w, size_t start) {
  size_t len = w.size() - start;
  w.patch_u16(start + kMarkerLen, static_cast<uint16_t>(len));
}

std::vector<std::byte> whole_message(MessageType t, bytes::Span body) {
  std::vector<std::byte> out;
  out.reserve(kHeaderLen + body.size());
  bytes::Writer w(out);
  const size_t start = begin_message(w, t);
  w.bytes(body);
  finish_message(w, start);
  return out;
}

void encode_keepalive(std::vector<std::byte>& out) {
  bytes::Writer w(out);
  size_t s = begin_message(w, MessageType::kKeepalive);
  finish_message(w, s);
}

}  // namespace petrel::codec
