// Tests of crates/cpu/prefetch.h: a prefetch is a hint, so it must neither
// change memory nor fault, whatever the address (valid, one past the end,
// null: the table prefetches stale addresses by design).
#include "crates/cpu/prefetch.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace petrel::cpu {
namespace {

TEST(Prefetch, IsOnlyAHint) {
  std::vector<uint64_t> v(4096, 7);
  for (size_t i = 0; i < v.size(); i += 8) prefetch_line(&v[i]);
  prefetch_line(v.data() + v.size());
  prefetch_line(nullptr);
  prefetch_line(reinterpret_cast<const void*>(uintptr_t{0xdead0000}));
  for (uint64_t x : v) ASSERT_EQ(x, 7u);
}

}  // namespace
}  // namespace petrel::cpu
