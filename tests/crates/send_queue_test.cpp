// Tests of crates/sendq/send_queue.h against a model (a plain byte string
// of what was queued, less what was consumed): whatever the order of
// appends, partial sends, compactions and releases, pending() is exactly
// the bytes not yet sent, in order.
#include "crates/sendq/send_queue.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <deque>
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

RC_GTEST_PROP(SendQueue, PendingIsWhatWasQueuedLessWhatWent, ()) {
  SendQueue q;
  std::deque<uint8_t> model;
  uint8_t next = 0;
  const auto ops = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 6));
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
      default:
        if (q.unsent() == 0) q.release(16);
        break;
    }
    RC_ASSERT(q.unsent() == model.size());
    const auto p = q.pending();
    for (size_t i = 0; i < p.size(); ++i) RC_ASSERT(std::to_integer<uint8_t>(p[i]) == model[i]);
  }
}

}  // namespace
}  // namespace petrel::sendq
