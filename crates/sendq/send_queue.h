// The bytes a connection has queued for its socket and not yet sent: the
// pure part of the daemon's buffered writers (a BGP session's in
// daemon/peer.cpp, an RTR cache's in daemon/rpki.cpp). The caller does the
// send() and tells the queue how much went (consume); the queue keeps the
// unsent bytes in one contiguous run, so a send takes them in one call.
// Header only; no I/O.
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace petrel::sendq {

class SendQueue {
 public:
  // Bytes queued and not yet sent.
  [[nodiscard]] size_t unsent() const { return buf_.size() - off_; }
  // What to hand send() next: every unsent byte, in order.
  [[nodiscard]] std::span<const std::byte> pending() const { return {buf_.data() + off_, unsent()}; }
  // Bytes held, sent or not (0 once cleared or released).
  [[nodiscard]] size_t stored() const { return buf_.size(); }

  // Queues `bytes` after what is queued; when everything before went out,
  // it takes their storage instead of copying them.
  void append(std::vector<std::byte>&& bytes) {
    if (off_ == buf_.size()) clear();
    if (buf_.empty()) {
      buf_ = std::move(bytes);
    } else {
      buf_.insert(buf_.end(), bytes.begin(), bytes.end());
    }
  }
  void append(std::span<const std::byte> bytes) { buf_.insert(buf_.end(), bytes.begin(), bytes.end()); }

  // The storage itself, for a producer that appends in place (the BGP
  // exporter packs UPDATEs straight into it): bytes added at its end are
  // queued. Nothing else may change it.
  [[nodiscard]] std::vector<std::byte>& tail() { return buf_; }

  // n bytes of pending() went out.
  void consume(size_t n) { off_ += n; }

  // Forgets every byte; the storage is kept for the next ones.
  void clear() {
    buf_.clear();
    off_ = 0;
  }
  // Forgets every byte and gives the storage back if it grew past `keep`
  // bytes (a burst's buffer is not held by an idle connection).
  void release(size_t keep) {
    if (buf_.capacity() > keep) {
      std::vector<std::byte>().swap(buf_);
    } else {
      buf_.clear();
    }
    off_ = 0;
  }
  // Moves the unsent bytes to the front once more than `past` bytes were
  // sent and they are over half of what is held: a slow reader's buffer
  // does not keep growing at the front.
  void compact(size_t past) {
    if (off_ > past && off_ * 2 > buf_.size()) {
      buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(off_));
      off_ = 0;
    }
  }

 private:
  std::vector<std::byte> buf_;
  size_t off_ = 0;  // bytes of buf_ already sent
};

}  // namespace petrel::sendq
