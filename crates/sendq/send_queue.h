// The bytes a connection has queued for its socket and not yet sent: the
// pure part of the daemon's buffered writers (a BGP session's in
// daemon/peer.cpp, an RTR cache's in daemon/rpki.cpp). The caller does the
// send() and tells the queue how much went (consume); the queue keeps its
// own unsent bytes in one contiguous run, so a send takes them in one call,
// and ranges of buffers shared with other queues (an update group's
// stream) as runs of their own before it. Header only; no I/O.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace petrel::sendq {

// Bytes several queues send without copying them: an update group's stream
// (table/export_group.h), encoded once and written to every member's
// socket. Whoever shares a range must not change those bytes while any
// queue holds them; the queue keeps the storage alive.
using Shared = std::shared_ptr<const std::vector<std::byte>>;

class SendQueue {
 public:
  // Bytes queued and not yet sent.
  [[nodiscard]] size_t unsent() const { return shared_bytes_ + buf_.size() - off_; }
  // What to hand send() next: the first run of unsent bytes (all of them
  // unless shared ranges are queued; gather() gives the runs after it).
  [[nodiscard]] std::span<const std::byte> pending() const {
    if (first_ < pieces_.size()) return {pieces_[first_].data, pieces_[first_].len};
    return {buf_.data() + off_, buf_.size() - off_};
  }
  // The first runs of unsent bytes, in order, into `runs` (for sendmsg);
  // returns how many it filled.
  size_t gather(std::span<std::span<const std::byte>> runs) const {
    size_t n = 0;
    for (size_t i = first_; i < pieces_.size() && n < runs.size(); ++i) runs[n++] = {pieces_[i].data, pieces_[i].len};
    if (n < runs.size() && buf_.size() > off_) runs[n++] = {buf_.data() + off_, buf_.size() - off_};
    return n;
  }
  // Bytes held, sent or not (0 once cleared or released).
  [[nodiscard]] size_t stored() const { return shared_bytes_ + buf_.size(); }
  // Shared ranges queued and not yet sent (each a run of its own).
  [[nodiscard]] size_t shared_runs() const { return pieces_.size() - first_; }

  // Queues `bytes` after what is queued; when everything before went out,
  // it takes their storage instead of copying them.
  void append(std::vector<std::byte>&& bytes) {
    if (off_ == buf_.size()) {
      buf_.clear();
      off_ = 0;
    }
    if (buf_.empty()) {
      buf_ = std::move(bytes);
    } else {
      buf_.insert(buf_.end(), bytes.begin(), bytes.end());
    }
  }
  void append(std::span<const std::byte> bytes) { buf_.insert(buf_.end(), bytes.begin(), bytes.end()); }
  // Queues `len` bytes of `owner` from `at` without copying them; a range
  // that continues the last one queued extends it.
  void append_shared(const Shared& owner, size_t at, size_t len) {
    if (len == 0) return;
    seal();
    const std::byte* data = owner->data() + at;
    if (first_ < pieces_.size() && pieces_.back().owner == owner && pieces_.back().data + pieces_.back().len == data) {
      pieces_.back().len += len;
    } else {
      pieces_.push_back(Piece{owner, data, len});
    }
    shared_bytes_ += len;
  }

  // The storage itself, for a producer that appends in place (the BGP
  // exporter packs UPDATEs straight into it): bytes added at its end are
  // queued after everything else. Nothing else may change it.
  [[nodiscard]] std::vector<std::byte>& tail() { return buf_; }

  // n bytes of what gather() gives (pending() first) went out.
  void consume(size_t n) {
    while (n > 0 && first_ < pieces_.size()) {
      Piece& p = pieces_[first_];
      const size_t k = std::min(n, p.len);
      p.data += k;
      p.len -= k;
      shared_bytes_ -= k;
      n -= k;
      if (p.len == 0) {
        p.owner.reset();  // its storage may go now
        ++first_;
      }
    }
    if (first_ == pieces_.size()) {
      pieces_.clear();
      first_ = 0;
    } else if (first_ > 64 && first_ * 2 > pieces_.size()) {
      // A peer that never quite catches up: the sent runs do not pile up.
      pieces_.erase(pieces_.begin(), pieces_.begin() + static_cast<std::ptrdiff_t>(first_));
      first_ = 0;
    }
    off_ += n;
  }

  // Forgets every byte; the storage is kept for the next ones.
  void clear() {
    pieces_.clear();
    first_ = 0;
    shared_bytes_ = 0;
    buf_.clear();
    off_ = 0;
  }
  // Forgets every byte and gives the storage back if it grew past `keep`
  // bytes (a burst's buffer is not held by an idle connection).
  void release(size_t keep) {
    std::vector<Piece>().swap(pieces_);
    first_ = 0;
    shared_bytes_ = 0;
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
  struct Piece {
    Shared owner;
    const std::byte* data;  // taken when queued: the owner's vector is not touched again
    size_t len;
  };
  // The bytes of buf_ not yet sent become a piece of their own (moved, not
  // copied), so that what is queued next comes after them.
  void seal() {
    if (buf_.size() == off_) {
      buf_.clear();
      off_ = 0;
      return;
    }
    auto owner = std::make_shared<std::vector<std::byte>>(std::move(buf_));
    pieces_.push_back(Piece{owner, owner->data() + off_, owner->size() - off_});
    shared_bytes_ += owner->size() - off_;
    buf_ = std::vector<std::byte>();
    off_ = 0;
  }

  // Queued before buf_'s bytes: shared ranges (and sealed own bytes).
  std::vector<Piece> pieces_;
  size_t first_ = 0;         // pieces_ before it were sent
  size_t shared_bytes_ = 0;  // unsent bytes in pieces_
  std::vector<std::byte> buf_;
  size_t off_ = 0;  // bytes of buf_ already sent
};

}  // namespace petrel::sendq
