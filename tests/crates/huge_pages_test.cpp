// Tests of crates/alloc/huge_pages.h: HugePageAllocator's arrays are
// usable and aligned as it promises (2 MiB from 2 MiB up, the type's own
// alignment below), and advise_huge_pages accepts any range, aligned or
// not, empty or smaller than a page (the advice itself is a hint, not
// observable here).
#include "crates/alloc/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace petrel::alloc {
namespace {

struct alignas(64) Line {
  uint64_t w[8];
};

bool aligned(const void* p, size_t to) { return reinterpret_cast<uintptr_t>(p) % to == 0; }

TEST(HugePages, LargeArraysStartOnAHugePage) {
  std::vector<uint64_t, HugePageAllocator<uint64_t>> v(kHugePage / sizeof(uint64_t) + 3);
  EXPECT_TRUE(aligned(v.data(), kHugePage));
  std::iota(v.begin(), v.end(), uint64_t{0});
  EXPECT_EQ(v.back(), v.size() - 1);
}

TEST(HugePages, SmallArraysKeepTheTypesAlignment) {
  std::vector<Line, HugePageAllocator<Line>> v(10);
  EXPECT_TRUE(aligned(v.data(), alignof(Line)));
  std::vector<Line, HugePageAllocator<Line>> big(kHugePage / sizeof(Line) * 2);
  EXPECT_TRUE(aligned(big.data(), kHugePage));
  big[big.size() - 1].w[7] = 7;
  EXPECT_EQ(big.back().w[7], 7u);
}

TEST(HugePages, AlignmentIsTheSameRuleBothWays) {
  EXPECT_EQ(HugePageAllocator<char>::alignment(kHugePage), kHugePage);
  EXPECT_EQ(HugePageAllocator<char>::alignment(kHugePage - 1), 0u);
  EXPECT_EQ(HugePageAllocator<Line>::alignment(1), alignof(Line));
}

TEST(HugePages, AdviceTakesAnyRange) {
  std::vector<char> buf(3 * kHugePage);
  advise_huge_pages(buf.data(), 0);
  advise_huge_pages(buf.data() + 1, 100);
  advise_huge_pages(buf.data() + 1, buf.size() - 1);
  buf[buf.size() - 1] = 1;
  EXPECT_EQ(buf.back(), 1);
}

}  // namespace
}  // namespace petrel::alloc
