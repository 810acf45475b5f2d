// The RTR framer (see framer.h).
#include "rpki/framer.h"

#include <algorithm>

namespace petrel::rpki {

void Framer::feed(bytes::Span data) {
  if (failed_) return;
  // Drop what was consumed before growing the buffer.
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > 4096 && pos_ * 2 > buf_.size()) {
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(pos_));
    pos_ = 0;
  }
  buf_.insert(buf_.end(), data.begin(), data.end());
}

Framer::Status Framer::next(bytes::Span& pdu, DecodeError& err) {
  if (failed_) {
    err = error_;
    return Status::kError;
  }
  bytes::Span avail = bytes::Span(buf_).subspan(pos_);
  if (avail.size() < kHeaderLen) return Status::kNeedMore;
  auto h = check_header(avail.first(kHeaderLen));
  if (!h) {
    failed_ = true;
    error_ = h.error();
    err = error_;
    return Status::kError;
  }
  if (avail.size() < h->length) return Status::kNeedMore;
  pdu = avail.first(h->length);
  pos_ += h->length;
  return Status::kPdu;
}

bytes::Span Framer::offending() const {
  if (!failed_) return {};
  bytes::Span avail = bytes::Span(buf_).subspan(pos_);
  bytes::Reader r(avail);
  (void)r.skip(4);
  auto len = r.u32();
  size_t n = len ? std::min<size_t>(avail.size(), std::max<size_t>(*len, kHeaderLen)) : avail.size();
  return avail.first(std::min<size_t>(n, kMaxPduLen));
}

void Framer::reset() {
  std::vector<std::byte>().swap(buf_);  // a connection's buffer goes with it
  pos_ = 0;
  failed_ = false;
  error_ = {};
}

}  // namespace petrel::rpki
