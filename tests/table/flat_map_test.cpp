// table/flat_map.h against std::unordered_map: random inserts, lookups and
// erasures (backward-shift deletion must keep every other key findable).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <unordered_map>

#include "table/flat_map.h"

namespace petrel::table {
namespace {

struct U64Key {
  static uint64_t empty() { return 0; }
  static uint64_t hash(uint64_t k) { return k; }
};
// Every key in one home slot's neighbourhood: long runs, wrap-around.
struct Colliding {
  static uint64_t empty() { return 0; }
  static uint64_t hash(uint64_t k) { return k & 3; }
};

template <typename Traits>
void agrees_with_unordered_map(const std::vector<std::pair<uint8_t, uint16_t>>& ops) {
  FlatMap<uint64_t, uint32_t, Traits> m;
  std::unordered_map<uint64_t, uint32_t> model;
  uint32_t next = 1;
  for (auto [op, raw] : ops) {
    const uint64_t k = raw % 512 + 1;  // never the empty key
    switch (op % 3) {
      case 0: {
        auto [v, fresh] = m.try_emplace(k, next);
        auto [it, mfresh] = model.try_emplace(k, next);
        RC_ASSERT(fresh == mfresh);
        RC_ASSERT(*v == it->second);
        ++next;
        break;
      }
      case 1:
        RC_ASSERT(m.erase(k) == (model.erase(k) == 1));
        break;
      default: {
        uint32_t* v = m.find(k);
        auto it = model.find(k);
        RC_ASSERT((v != nullptr) == (it != model.end()));
        if (v) RC_ASSERT(*v == it->second);
      }
    }
    RC_ASSERT(m.size() == model.size());
  }
  for (const auto& [k, v] : model) {
    uint32_t* f = m.find(k);
    RC_ASSERT(f != nullptr);
    RC_ASSERT(*f == v);
  }
  size_t seen = 0;
  m.for_each([&](uint64_t k, uint32_t v) {
    ++seen;
    RC_ASSERT(model.at(k) == v);
  });
  RC_ASSERT(seen == model.size());
}

RC_GTEST_PROP(FlatMap, AgreesWithUnorderedMap, (const std::vector<std::pair<uint8_t, uint16_t>>& ops)) {
  agrees_with_unordered_map<U64Key>(ops);
}

RC_GTEST_PROP(FlatMap, AgreesWhenEveryKeyCollides, (const std::vector<std::pair<uint8_t, uint16_t>>& ops)) {
  agrees_with_unordered_map<Colliding>(ops);
}

TEST(FlatMap, ClearGivesBackMemory) {
  FlatMap<uint64_t, uint32_t, U64Key> m;
  for (uint64_t k = 1; k <= 10000; ++k) m.try_emplace(k, 1);
  EXPECT_EQ(m.size(), 10000u);
  EXPECT_GE(m.bytes(), 10000u * 16);
  m.clear();
  EXPECT_TRUE(m.empty());
  EXPECT_LT(m.bytes(), 1024u);
  EXPECT_EQ(m.find(5), nullptr);
}

}  // namespace
}  // namespace petrel::table
