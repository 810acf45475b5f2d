// Journal<T>: a bounded ring of what changed, with sequence numbers, read
// by followers through cursors (see docs/journal.md).
//
// Each table shard appends one entry per changed prefix; followers
// (exporters, the kernel installer, the event stream) keep a cursor per
// shard and read at their own pace. Retention is bounded: the oldest entry
// is overwritten by the next append once `retention` entries are kept, and
// a follower whose cursor points before first() is told so by read()
// returning std::nullopt. It must then resynchronise from the shard's
// contents and continue from end().
//
// Not thread-safe: the owner (the shard) holds its lock around append()
// and read(). The ring grows lazily (doubling, never past `retention`);
// once full-size, append() only assigns into an existing slot.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace petrel::journal {

template <typename T>
class Journal {
 public:
  // `retention`: the most entries kept, at least 1.
  explicit Journal(size_t retention) : retention_(retention) { assert(retention >= 1); }

  // Returns the entry's sequence number: 1, 2, 3, ... (never 0).
  uint64_t append(T value) {
    if (ring_.size() < retention_) {
      // Still growing: nothing has been evicted yet, so head_ is 0 and the
      // entries sit in sequence order from index 0.
      if (ring_.size() == ring_.capacity()) {
        ring_.reserve(std::min(std::max<size_t>(ring_.capacity() * 2, kFirstCapacity), retention_));
      }
      ring_.push_back(std::move(value));
    } else {
      ring_[head_] = std::move(value);
      if (++head_ == ring_.size()) head_ = 0;
    }
    return end_++;
  }

  // Oldest retained sequence number (== end() when empty).
  [[nodiscard]] uint64_t first() const { return end_ - ring_.size(); }

  // One past the newest: a follower starting "now" uses this.
  [[nodiscard]] uint64_t end() const { return end_; }

  // Calls f(seq, const T&) for the entries with seq >= from, oldest first,
  // at most `max` of them, and returns the next cursor. Returns
  // std::nullopt, calling f for nothing, if `from` < first(): entries the
  // follower had not read were overwritten (a cursor of 0 always gets
  // this, so a zero-initialised cursor starts with a resynchronisation).
  // f must not append to this journal.
  template <typename F>
  std::optional<uint64_t> read(uint64_t from, size_t max, F&& f) const {
    assert(from <= end_ && "cursor past the journal's end");
    uint64_t oldest = first();
    if (from < oldest) return std::nullopt;
    size_t n = static_cast<size_t>(std::min<uint64_t>(end_ - from, max));
    size_t i = head_ + static_cast<size_t>(from - oldest);
    if (i >= ring_.size()) i -= ring_.size();
    for (size_t k = 0; k < n; ++k) {
      f(from + k, ring_[i]);
      if (++i == ring_.size()) i = 0;
    }
    return from + n;
  }

  [[nodiscard]] size_t size() const { return ring_.size(); }
  [[nodiscard]] size_t retention() const { return retention_; }
  // The ring's allocated slots in bytes (what T owns elsewhere not counted).
  [[nodiscard]] size_t memory_bytes() const { return ring_.capacity() * sizeof(T); }

 private:
  static constexpr size_t kFirstCapacity = 16;

  std::vector<T> ring_;  // capacity never exceeds retention_
  size_t retention_;
  size_t head_ = 0;   // index of the oldest entry once the ring is full
  uint64_t end_ = 1;  // sequence number of the next append
};

// A follower's cursor over N journals (one per shard), filled by the table:
// next[i] is the sequence number to read next from shard i's journal.
struct Cursor {
  std::vector<uint64_t> next;
};

}  // namespace petrel::journal
