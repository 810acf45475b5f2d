// Tests of crates/sendq/send_queue.h against a model (a plain byte string
// of what was queued, less what was consumed): whatever the order of
// appends, partial sends, compactions and releases, pending() is exactly
// the bytes not yet sent, in order.
#include "crates/sendq/send_queue.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

namespace petrel::sendq {
namespace {

std::vector<std::byte> bytes_of(const std::vector<uint8_t>& v) {
  std::vector<std::byte> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = std::byte{v[i]};
  return b;
}

TEST(SendQueue, TakesTheStorageWhenDrained) {
  SendQueue q;
  auto first = bytes_of({1, 2, 3});
  const std::byte* storage = first.data();
  q.append(std::move(first));
  EXPECT_EQ(q.pending().data(), storage);
  q.consume(3);
  EXPECT_EQ(q.unsent(), 0u);
  EXPECT_EQ(q.stored(), 3u);
  auto second = bytes_of({4});
  storage = second.data();
  q.append(std::move(second));
  EXPECT_EQ(q.pending().data(), storage);
  EXPECT_EQ(q.stored(), 1u);
}

TEST(SendQueue, ReleaseGivesBackABigBuffer) {
  SendQueue q;
  q.append(std::vector<std::byte>(1000));
  q.consume(1000);
  q.release(100);
  EXPECT_EQ(q.tail().capacity(), 0u);
  q.append(std::vector<std::byte>(50));
  q.consume(50);
  q.release(100);
  EXPECT_GE(q.tail().capacity(), 50u);
  EXPECT_EQ(q.stored(), 0u);
}

TEST(SendQueue, CompactsOnlyPastTheThresholdAndHalf) {
  SendQueue q;
  q.append(std::vector<std::byte>(100));
  q.consume(40);
  q.compact(10);
  EXPECT_EQ(q.stored(), 100u);  // 40 sent is not over half
  q.consume(20);
  q.compact(100);
  EXPECT_EQ(q.stored(), 100u);  // not past the threshold
  q.compact(10);
  EXPECT_EQ(q.stored(), 40u);
  EXPECT_EQ(q.unsent(), 40u);
}

// Shared ranges go out without being copied, in order with the queue's own
// bytes, and keep their storage alive until sent.
TEST(SendQueue, SharedRangesAreSentInPlaceAndInOrder) {
  auto stream = std::make_shared<std::vector<std::byte>>(bytes_of({10, 11, 12, 13, 14, 15}));
  const std::byte* base = stream->data();
  SendQueue a, b;
  a.append(bytes_of({1, 2}));
  a.append_shared(stream, 0, 2);
  a.append_shared(stream, 2, 2);  // continues the last range: one run
  a.tail().push_back(std::byte{3});
  b.append_shared(stream, 1, 5);
  EXPECT_EQ(a.unsent(), 7u);
  EXPECT_EQ(a.shared_runs(), 2u);  // its own first bytes, then the stream's
  std::array<std::span<const std::byte>, 8> runs;
  ASSERT_EQ(a.gather(runs), 3u);
  EXPECT_EQ(runs[0].size(), 2u);
  EXPECT_EQ(runs[1].data(), base);  // the stream's bytes themselves
  EXPECT_EQ(runs[1].size(), 4u);
  EXPECT_EQ(runs[2].size(), 1u);
  EXPECT_EQ(b.pending().data(), base + 1);
  stream.reset();  // the queues keep it
  a.consume(3);
  EXPECT_EQ(std::to_integer<int>(a.pending()[0]), 11);
  a.consume(4);
  EXPECT_EQ(a.unsent(), 0u);
  EXPECT_EQ(std::to_integer<int>(b.pending()[4]), 15);
}

// A reader that never quite catches up: each shared buffer is let go of
// as soon as its bytes went (not when the queue drains), the sent runs are
// dropped as it goes, and what is left is intact.
TEST(SendQueue, SentRunsLetGoOfTheirBuffersAsTheyGo) {
  SendQueue q;
  std::vector<std::weak_ptr<std::vector<std::byte>>> owners;
  for (int i = 0; i < 300; ++i) {
    auto owner = std::make_shared<std::vector<std::byte>>(1, std::byte{static_cast<uint8_t>(i)});
    owners.push_back(owner);
    q.append_shared(owner, 0, 1);  // each its own buffer: a run of its own
  }
  ASSERT_EQ(q.shared_runs(), 300u);
  for (int i = 0; i < 290; ++i) {
    ASSERT_EQ(std::to_integer<int>(q.pending()[0]), i % 256);
    q.consume(1);
    EXPECT_TRUE(owners[static_cast<size_t>(i)].expired());
    EXPECT_FALSE(owners[static_cast<size_t>(i) + 1].expired());
    q.append_shared(std::make_shared<std::vector<std::byte>>(1, std::byte{0xEE}), 0, 1);  // one more behind
  }
  EXPECT_EQ(q.unsent(), 300u);
  EXPECT_EQ(q.shared_runs(), 300u);
  EXPECT_EQ(std::to_integer<int>(q.pending()[0]), 290 % 256);
}

RC_GTEST_PROP(SendQueue, PendingIsWhatWasQueuedLessWhatWent, ()) {
  SendQueue q;
  std::deque<uint8_t> model;
  uint8_t next = 0;
  const auto ops = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 7));
  for (int op : ops) {
    switch (op) {
      case 0:
      case 1: {
        const size_t n = *rc::gen::inRange<size_t>(0, 40);
        std::vector<std::byte> b(n);
        for (auto& x : b) {
          x = std::byte{next};
          model.push_back(next++);
        }
        if (op == 0) {
          q.append(std::move(b));
        } else {
          q.append(std::span<const std::byte>(b));
        }
        break;
      }
      case 2: {
        const size_t n = *rc::gen::inRange<size_t>(0, q.unsent() + 1);
        q.consume(n);
        model.erase(model.begin(), model.begin() + static_cast<std::ptrdiff_t>(n));
        break;
      }
      case 3:
        q.compact(*rc::gen::inRange<size_t>(0, 20));
        break;
      case 4:
        q.tail().push_back(std::byte{next});
        model.push_back(next++);
        break;
      case 5: {
        // A range of a buffer shared with others (and let go of here).
        const size_t n = *rc::gen::inRange<size_t>(0, 40);
        auto shared = std::make_shared<std::vector<std::byte>>(n + 3);
        for (size_t i = 0; i < n; ++i) {
          (*shared)[i + 1] = std::byte{next};
          model.push_back(next++);
        }
        q.append_shared(shared, 1, n);
        break;
      }
      default:
        if (q.unsent() == 0) q.release(16);
        break;
    }
    RC_ASSERT(q.unsent() == model.size());
    const auto p = q.pending();
    RC_ASSERT(p.size() <= model.size());
    for (size_t i = 0; i < p.size(); ++i) RC_ASSERT(std::to_integer<uint8_t>(p[i]) == model[i]);
    // Every run, in order, is the model.
    std::array<std::span<const std::byte>, 64> runs;
    const size_t n = q.gather(runs);
    size_t at = 0;
    for (size_t r = 0; r < n; ++r)
      for (std::byte x : runs[r]) RC_ASSERT(std::to_integer<uint8_t>(x) == model[at++]);
    if (n < runs.size()) RC_ASSERT(at == model.size());
  }
}

}  // namespace
}  // namespace petrel::sendq
