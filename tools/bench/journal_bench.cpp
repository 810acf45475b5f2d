// Benchmark of the journal: appends per second into a full-size ring (the
// table's hot path: one append per changed prefix), and entries per second
// read back by a follower in batches.
// Run: meson test -C BUILD --benchmark journal
#include <chrono>
#include <cstdint>
#include <cstdio>

#include "crates/journal/journal.h"

namespace {

// About what a shard journals per change: a prefix, a peer, an attribute set.
struct Change {
  uint64_t prefix[3];
  uint32_t peer;
  uint32_t path_id;
  const void* attrs;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main() {
  constexpr size_t kRetention = 1 << 20;
  constexpr uint64_t kAppends = 50'000'000;
  petrel::journal::Journal<Change> j(kRetention);
  for (size_t n = 0; n < kRetention; ++n) (void)j.append(Change{});  // full-size before timing

  auto start = std::chrono::steady_clock::now();
  uint64_t sum = 0;
  for (uint64_t n = 0; n < kAppends; ++n) {
    sum += j.append(Change{{n, n, n}, static_cast<uint32_t>(n), 0, nullptr});
  }
  double append_secs = seconds_since(start);

  start = std::chrono::steady_clock::now();
  uint64_t cursor = j.first();
  uint64_t read = 0;
  for (int pass = 0; pass < 20; ++pass) {
    cursor = j.first();
    while (cursor != j.end()) {
      cursor = *j.read(cursor, 4096, [&](uint64_t, const Change& c) { sum += c.prefix[0]; });
    }
    read += kRetention;
  }
  double read_secs = seconds_since(start);

  std::printf("journal: %llu appends in %.3f s: %.1f million appends/s"
              " (entry %zu bytes, ring %zu MB)\n",
              static_cast<unsigned long long>(kAppends), append_secs,
              static_cast<double>(kAppends) / append_secs / 1e6, sizeof(Change),
              j.memory_bytes() >> 20);
  std::printf("journal: %llu entries read in %.3f s: %.1f million entries/s (checksum %llu)\n",
              static_cast<unsigned long long>(read), read_secs,
              static_cast<double>(read) / read_secs / 1e6, static_cast<unsigned long long>(sum));
  return 0;
}
