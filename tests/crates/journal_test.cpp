// Tests for crates/journal: sequence numbers, reads in order, retention and
// falling behind, `max`, the ring's storage; a property test against a
// list model with several followers; followers and writers on threads
// sharing one journal under a mutex, as the table's shards do.
#include "crates/journal/journal.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace petrel::journal {
namespace {

// What one read() returned: the next cursor and the (seq, value) pairs seen.
struct ReadResult {
  std::optional<uint64_t> next;
  std::vector<std::pair<uint64_t, int>> got;
};

ReadResult collect(const Journal<int>& j, uint64_t from, size_t max) {
  ReadResult r;
  r.next = j.read(from, max, [&](uint64_t seq, const int& v) { r.got.emplace_back(seq, v); });
  return r;
}

Journal<int> journal_of(size_t retention, int count) {
  Journal<int> j(retention);
  for (int v = 0; v < count; ++v) (void)j.append(100 + v);
  return j;
}

TEST(Journal, SequenceNumbersStartAtOneAndIncreaseByOne) {
  Journal<int> j(8);
  EXPECT_EQ(j.first(), 1u);
  EXPECT_EQ(j.end(), 1u);
  EXPECT_EQ(j.size(), 0u);
  for (uint64_t want = 1; want <= 20; ++want) {
    EXPECT_EQ(j.append(0), want);
    EXPECT_EQ(j.end(), want + 1);
  }
  EXPECT_EQ(j.first(), 13u);
  EXPECT_EQ(j.size(), 8u);
  EXPECT_EQ(j.retention(), 8u);
}

TEST(Journal, ReadReturnsTheAppendedValuesInOrder) {
  Journal<int> j = journal_of(16, 5);
  ReadResult r = collect(j, 1, 100);
  ASSERT_EQ(r.next, std::optional<uint64_t>(6));
  std::vector<std::pair<uint64_t, int>> want{{1, 100}, {2, 101}, {3, 102}, {4, 103}, {5, 104}};
  EXPECT_EQ(r.got, want);
  // From the middle.
  r = collect(j, 4, 100);
  EXPECT_EQ(r.next, std::optional<uint64_t>(6));
  EXPECT_EQ(r.got, (std::vector<std::pair<uint64_t, int>>{{4, 103}, {5, 104}}));
}

TEST(Journal, CursorAtEndReadsNothing) {
  Journal<int> empty(4);
  ReadResult r = collect(empty, empty.end(), 10);
  EXPECT_EQ(r.next, std::optional<uint64_t>(1));
  EXPECT_TRUE(r.got.empty());

  Journal<int> j = journal_of(4, 9);
  r = collect(j, j.end(), 10);
  EXPECT_EQ(r.next, std::optional<uint64_t>(10));
  EXPECT_TRUE(r.got.empty());
}

TEST(Journal, WraparoundDropsOldEntriesAndReportsLostCursors) {
  Journal<int> j = journal_of(4, 10);  // seqs 1..10, values 100..109
  EXPECT_EQ(j.first(), 7u);
  EXPECT_EQ(j.end(), 11u);
  EXPECT_EQ(j.size(), 4u);
  for (uint64_t lost : {0, 1, 5, 6}) {
    ReadResult r = collect(j, lost, 100);
    EXPECT_FALSE(r.next.has_value()) << "from " << lost;
    EXPECT_TRUE(r.got.empty()) << "from " << lost;
  }
  ReadResult r = collect(j, j.first(), 100);
  EXPECT_EQ(r.next, std::optional<uint64_t>(11));
  EXPECT_EQ(r.got,
            (std::vector<std::pair<uint64_t, int>>{{7, 106}, {8, 107}, {9, 108}, {10, 109}}));
  // Across the ring's wrap point (head is at index 2 now).
  r = collect(j, 9, 100);
  EXPECT_EQ(r.got, (std::vector<std::pair<uint64_t, int>>{{9, 108}, {10, 109}}));
}

TEST(Journal, RetentionOfOneKeepsOnlyTheNewest) {
  Journal<int> j = journal_of(1, 3);
  EXPECT_EQ(j.first(), 3u);
  EXPECT_FALSE(collect(j, 2, 5).next.has_value());
  ReadResult r = collect(j, 3, 5);
  EXPECT_EQ(r.next, std::optional<uint64_t>(4));
  EXPECT_EQ(r.got, (std::vector<std::pair<uint64_t, int>>{{3, 102}}));
}

TEST(Journal, MaxIsHonoured) {
  Journal<int> j = journal_of(8, 6);
  ReadResult r = collect(j, 1, 3);
  EXPECT_EQ(r.next, std::optional<uint64_t>(4));
  EXPECT_EQ(r.got, (std::vector<std::pair<uint64_t, int>>{{1, 100}, {2, 101}, {3, 102}}));
  r = collect(j, 4, 0);
  EXPECT_EQ(r.next, std::optional<uint64_t>(4));
  EXPECT_TRUE(r.got.empty());
  r = collect(j, 4, 2);
  EXPECT_EQ(r.next, std::optional<uint64_t>(6));
  EXPECT_EQ(r.got.size(), 2u);
}

// Once full-size, the ring reuses its slots: no growth past retention and
// seq s + retention lands where seq s was.
TEST(Journal, FullRingReusesItsStorage) {
  constexpr size_t kRetention = 40;
  Journal<int> j(kRetention);
  EXPECT_EQ(j.memory_bytes(), 0u);
  for (size_t n = 0; n < kRetention; ++n) {
    (void)j.append(0);
    EXPECT_LE(j.memory_bytes(), kRetention * sizeof(int));
    EXPECT_GE(j.memory_bytes(), j.size() * sizeof(int));
  }
  EXPECT_EQ(j.memory_bytes(), kRetention * sizeof(int));
  auto slot_of = [&](uint64_t seq) {
    const int* p = nullptr;
    (void)j.read(seq, 1, [&](uint64_t, const int& v) { p = &v; });
    return p;
  };
  const int* before = slot_of(5);
  ASSERT_NE(before, nullptr);
  for (size_t n = 0; n < kRetention; ++n) (void)j.append(1);
  EXPECT_EQ(slot_of(5 + kRetention), before);
  EXPECT_EQ(j.memory_bytes(), kRetention * sizeof(int));
}

TEST(Journal, HoldsMoveOnlyValues) {
  Journal<std::unique_ptr<int>> j(2);
  for (int v = 1; v <= 3; ++v) (void)j.append(std::make_unique<int>(v));
  std::vector<int> got;
  auto next = j.read(j.first(), 10,
                     [&](uint64_t, const std::unique_ptr<int>& p) { got.push_back(*p); });
  EXPECT_EQ(next, std::optional<uint64_t>(4));
  EXPECT_EQ(got, (std::vector<int>{2, 3}));
}

#ifndef NDEBUG
TEST(JournalDeathTest, CursorPastTheEndIsACallerBug) {
  Journal<int> j = journal_of(4, 2);
  EXPECT_DEATH((void)collect(j, j.end() + 1, 1), "past the journal's end");
}
#endif

// Random interleavings of appends and reads by several followers, against
// a list of every value appended. A follower that never fell behind has
// seen every value exactly once, in order; read() says "lost" exactly when
// the cursor is older than the model's oldest retained entry.
RC_GTEST_PROP(Journal, FollowersAgreeWithAListModel, ()) {
  const auto retention = *rc::gen::inRange<size_t>(1, 40);
  const auto followers = *rc::gen::inRange<size_t>(1, 5);
  // (what, max, value): what < 2 appends value, otherwise follower what - 2
  // reads at most max entries.
  const auto ops = *rc::gen::container<std::vector<std::tuple<size_t, size_t, int>>>(
      rc::gen::tuple(rc::gen::inRange<size_t>(0, 2 + followers),
                     rc::gen::inRange<size_t>(0, 2 * retention + 2), rc::gen::arbitrary<int>()));

  Journal<int> j(retention);
  std::vector<int> all;
  std::vector<uint64_t> cursor(followers, j.end());
  std::vector<std::vector<int>> seen(followers);
  std::vector<bool> fell_behind(followers, false);

  auto model_first = [&] { return all.size() < retention ? 1 : all.size() - retention + 1; };
  auto follow = [&](size_t f, size_t max) {
    ReadResult r = collect(j, cursor[f], max);
    if (cursor[f] < model_first()) {
      RC_ASSERT(!r.next.has_value());
      RC_ASSERT(r.got.empty());
      fell_behind[f] = true;
      cursor[f] = j.end();  // resynchronised by the owner, then continues from the end
      return;
    }
    RC_ASSERT(r.next.has_value());
    const size_t n = std::min<size_t>(max, all.size() + 1 - cursor[f]);
    RC_ASSERT(r.got.size() == n);
    for (size_t k = 0; k < n; ++k) {
      RC_ASSERT(r.got[k].first == cursor[f] + k);
      RC_ASSERT(r.got[k].second == all[cursor[f] + k - 1]);
      seen[f].push_back(r.got[k].second);
    }
    RC_ASSERT(*r.next == cursor[f] + n);
    cursor[f] = *r.next;
  };

  for (const auto& [what, max, value] : ops) {
    if (what < 2) {
      RC_ASSERT(j.append(value) == all.size() + 1);
      all.push_back(value);
    } else {
      follow(what - 2, max);
    }
    RC_ASSERT(j.end() == all.size() + 1);
    RC_ASSERT(j.first() == model_first());
    RC_ASSERT(j.size() == std::min(all.size(), retention));
  }
  for (size_t f = 0; f < followers; ++f) {
    follow(f, retention);  // drains: at most `retention` entries are left
    RC_ASSERT(cursor[f] == j.end());
    if (!fell_behind[f]) RC_ASSERT(seen[f] == all);
  }
  const auto behind = static_cast<size_t>(std::count(fell_behind.begin(), fell_behind.end(), true));
  RC_CLASSIFY(behind > 0, "a follower fell behind");
  RC_CLASSIFY(behind < followers, "a follower kept up");
}

// Two writers and three followers on threads, one journal under one mutex.
// Each follower logs what it received and where it was resynchronised; the
// log must be the sequence 1, 2, ... with jumps only at resyncs, each to a
// later cursor, ending at the journal's final end.
enum class Got { kEntry, kResync };
struct Event {
  Got what;
  uint64_t seq;  // the entry's, or the cursor a resync continues from
};

constexpr uint64_t kAppendsPerWriter = 100'000;
constexpr uint64_t kFinalEnd = 2 * kAppendsPerWriter + 1;
constexpr size_t kFollowers = 3;
constexpr uint64_t kBatch = 64;

struct ThreadedRun {
  std::vector<std::vector<Event>> logs;
  size_t wrong_values = 0;  // an entry whose value was not the one appended with its seq
  size_t wrong_seqs = 0;    // append() did not return the previous end()
  bool timed_out = false;
};

ThreadedRun run_threads(size_t retention) {
  Journal<uint64_t> j(retention);
  std::mutex mu;
  std::vector<uint64_t> value_of(kFinalEnd, 0);  // by seq, written under mu
  std::atomic<int> writers_left{2};
  std::atomic<size_t> wrong_values{0};
  std::atomic<size_t> wrong_seqs{0};
  std::atomic<bool> timed_out{false};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  ThreadedRun run;
  run.logs.resize(kFollowers);

  auto writer = [&](uint64_t id) {
    // In batches under the lock, as a shard writes one UPDATE's prefixes.
    for (uint64_t n = 1; n <= kAppendsPerWriter;) {
      {
        std::lock_guard lock(mu);
        for (uint64_t stop = std::min(n + kBatch, kAppendsPerWriter + 1); n < stop; ++n) {
          uint64_t value = id << 32 | n;
          uint64_t expected = j.end();
          uint64_t seq = j.append(value);
          if (seq != expected) ++wrong_seqs;
          if (seq < kFinalEnd) value_of[seq] = value;
        }
      }
      std::this_thread::yield();
    }
    --writers_left;
  };
  auto follower = [&](size_t f, size_t max) {
    std::vector<Event>& log = run.logs[f];
    uint64_t cursor = 1;
    for (;;) {
      bool finished = false;
      size_t before = log.size();
      {
        std::lock_guard lock(mu);
        auto next = j.read(cursor, max, [&](uint64_t seq, const uint64_t& v) {
          log.push_back({Got::kEntry, seq});
          if (seq >= kFinalEnd || v != value_of[seq]) ++wrong_values;
        });
        if (next) {
          cursor = *next;
        } else {
          cursor = j.end();
          log.push_back({Got::kResync, cursor});
        }
        finished = writers_left == 0 && cursor == j.end();
      }
      if (finished) return;
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        return;
      }
      if (log.size() == before) std::this_thread::yield();
    }
  };

  std::vector<std::thread> threads;
  const size_t max_of[kFollowers] = {1, 17, 4096};
  for (size_t f = 0; f < kFollowers; ++f) threads.emplace_back(follower, f, max_of[f]);
  threads.emplace_back(writer, 1);
  threads.emplace_back(writer, 2);
  for (auto& t : threads) t.join();
  EXPECT_EQ(j.end(), kFinalEnd);
  EXPECT_LE(j.memory_bytes(), retention * sizeof(uint64_t));
  run.wrong_values = wrong_values;
  run.wrong_seqs = wrong_seqs;
  run.timed_out = timed_out;
  return run;
}

// Checks one follower's log; returns how many resyncs it holds.
size_t check_log(const std::vector<Event>& log, size_t f) {
  uint64_t next = 1;
  size_t resyncs = 0;
  for (const Event& e : log) {
    if (e.what == Got::kEntry) {
      EXPECT_EQ(e.seq, next) << "follower " << f;
      if (e.seq != next) return resyncs;
      ++next;
    } else {
      EXPECT_GT(e.seq, next) << "follower " << f << ": a resync must jump forward";
      next = e.seq;
      ++resyncs;
    }
  }
  EXPECT_EQ(next, kFinalEnd) << "follower " << f << " did not reach the end";
  return resyncs;
}

TEST(JournalThreads, FollowersWithAmpleRetentionReceiveEverything) {
  ThreadedRun run = run_threads(1 << 18);
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(run.wrong_values, 0u);
  EXPECT_EQ(run.wrong_seqs, 0u);
  for (size_t f = 0; f < kFollowers; ++f) {
    EXPECT_EQ(check_log(run.logs[f], f), 0u) << "follower " << f << " fell behind";
    EXPECT_EQ(run.logs[f].size(), kFinalEnd - 1) << "follower " << f;
  }
}

TEST(JournalThreads, FollowersThatFallBehindResyncAndGoOn) {
  ThreadedRun run = run_threads(256);
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(run.wrong_values, 0u);
  EXPECT_EQ(run.wrong_seqs, 0u);
  for (size_t f = 0; f < kFollowers; ++f) (void)check_log(run.logs[f], f);
}

}  // namespace
}  // namespace petrel::journal
