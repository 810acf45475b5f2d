// The last hour of the daemon's figures, for the status page's charts and
// GET /api/history (docs/http-api.md): per peer its prefixes in the table
// and its UPDATEs per second in and out; for the table its prefixes,
// routes and memory.
//
// A timer on the main loop (Server) calls sample() every
// kHistoryIntervalSeconds with counters the daemon already keeps; each
// series is a fixed ring of kHistorySamples samples allocated whole when
// the series starts, so the memory is bounded and known: 16 bytes a
// sample, 360 samples, about 5.8 KB per peer and 8.6 KB for the table. A
// peer that leaves the configuration loses its series at the next sample;
// one whose counters went back (a new session object after a reload) has
// a rate of 0 for that sample.
//
// No clock here: the caller passes the times. HTTP threads read a copy
// (view()) under the lock the sampler takes once per sample.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace petrel::daemon {

inline constexpr size_t kHistorySamples = 360;
inline constexpr int kHistoryIntervalSeconds = 10;

// time: Unix seconds when taken. Rates: UPDATE messages per second since
// the sample before (0 for a series' first sample).
struct PeerSample {
  uint32_t time = 0;
  uint32_t prefixes = 0;  // the peer's routes in the table, every family
  float updates_in = 0;
  float updates_out = 0;
};
struct TableSample {
  uint32_t time = 0;
  uint32_t prefixes = 0;  // every family
  uint64_t routes = 0;
  uint64_t memory = 0;  // bytes: jemalloc's allocated, or the table's own count without jemalloc
};

// A fixed ring: the newest kHistorySamples values.
template <typename T>
class Ring {
 public:
  Ring() : slots_(kHistorySamples) {}
  void push(const T& v) {
    slots_[next_] = v;
    next_ = (next_ + 1) % slots_.size();
    if (count_ < slots_.size()) ++count_;
  }
  // Oldest first.
  [[nodiscard]] std::vector<T> values() const {
    std::vector<T> out;
    out.reserve(count_);
    size_t first = (next_ + slots_.size() - count_) % slots_.size();
    for (size_t i = 0; i < count_; ++i) out.push_back(slots_[(first + i) % slots_.size()]);
    return out;
  }
  [[nodiscard]] size_t size() const { return count_; }

 private:
  std::vector<T> slots_;
  size_t next_ = 0;
  size_t count_ = 0;
};

// What the sampler reads of one peer: totals since the peer started.
struct PeerCounts {
  std::string name;
  uint64_t prefixes = 0;
  uint64_t updates_in = 0;
  uint64_t updates_out = 0;
};
struct TableCounts {
  uint64_t prefixes = 0;
  uint64_t routes = 0;
  uint64_t memory = 0;
};

struct PeerSeries {
  std::string name;
  std::vector<PeerSample> samples;  // oldest first
};
struct HistoryView {
  int interval_seconds = kHistoryIntervalSeconds;
  size_t capacity = kHistorySamples;
  std::vector<TableSample> table;  // oldest first
  std::vector<PeerSeries> peers;   // by name
  // The series of the peer named `name`, or nullptr.
  [[nodiscard]] const PeerSeries* peer(std::string_view name) const;
};

class History {
 public:
  // One sample of every peer and of the table: unix_s the wall clock,
  // now_ms a monotonic one (for the rates).
  void sample(int64_t unix_s, int64_t now_ms, const std::vector<PeerCounts>& peers, const TableCounts& table);
  // A copy; only the peer `peer` when not empty.
  [[nodiscard]] HistoryView view(std::string_view peer = {}) const;

 private:
  struct PeerState {
    Ring<PeerSample> ring;
    uint64_t last_in = 0, last_out = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, PeerState, std::less<>> peers_;
  Ring<TableSample> table_;
  int64_t last_ms_ = 0;
  bool sampled_ = false;
};

// GET /api/history as JSON (docs/http-api.md): columns of numbers, oldest
// first.
std::string history_json(const HistoryView& h);

}  // namespace petrel::daemon
