// Tests of crates/sort/radix_sort.h: radix_sort_by orders values by
// the chosen bits of their word as std::stable_sort does (equal digits
// keep their order; the other bits and the rest of the value ride
// along), for any range of bits, one pass or several.
#include "crates/sort/radix_sort.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace petrel::sort {
namespace {

struct Value {
  uint64_t w;
  uint32_t tag;  // its place before the sort
  bool operator==(const Value&) const = default;
};

RC_GTEST_PROP(RadixSort, OrdersAsAStableSortByTheChosenBits, ()) {
  const auto words = *rc::gen::container<std::vector<uint64_t>>(rc::gen::arbitrary<uint64_t>());
  const unsigned from = *rc::gen::inRange(0u, 64u);
  const unsigned to = *rc::gen::inRange(from, 65u);
  // Few distinct digits one time in two, so that equal keys are common.
  const bool narrow = *rc::gen::arbitrary<bool>();
  std::vector<Value> a;
  for (size_t i = 0; i < words.size(); ++i)
    a.push_back({narrow ? words[i] & 0x0303030303030303u : words[i], static_cast<uint32_t>(i)});
  const uint64_t mask = to - from >= 64 ? ~uint64_t{0} : (uint64_t{1} << (to - from)) - 1;
  auto digits = [&](const Value& v) { return from >= 64 ? 0 : (v.w >> from) & mask; };
  std::vector<Value> want = a;
  std::stable_sort(want.begin(), want.end(), [&](const Value& x, const Value& y) { return digits(x) < digits(y); });
  std::vector<Value> tmp;
  radix_sort_by(a, tmp, from, to, [](const Value& v) { return v.w; });
  RC_ASSERT(a == want);
}

TEST(RadixSort, ManyValuesOverSeveralPasses) {
  std::vector<uint64_t> a;
  uint64_t x = 88172645463325252u;
  for (int i = 0; i < 100000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    a.push_back(x);
  }
  std::vector<uint64_t> want = a;
  std::sort(want.begin(), want.end());
  std::vector<uint64_t> tmp;
  radix_sort_by(a, tmp, 0, 64, [](uint64_t v) { return v; });
  EXPECT_EQ(a, want);
}

}  // namespace
}  // namespace petrel::sort
