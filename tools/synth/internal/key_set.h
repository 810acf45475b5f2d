// A set of nonzero 64-bit keys (open addressing, linear probing): what the
// generator has already handed out, prefixes and AS numbers. It lives only
// while a table is generated.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tools/synth/internal/rng.h"

namespace petrel::synth::internal {

class KeySet {
 public:
  explicit KeySet(size_t expected) : slots_(std::bit_ceil(expected * 2 + 16)) {}

  // False when key was there already. key must not be 0 (the empty slot).
  bool insert(uint64_t key) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == key) return false;
      if (slots_[i] == 0) {
        slots_[i] = key;
        ++size_;
        return true;
      }
    }
  }

 private:
  void grow() {
    std::vector<uint64_t> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (uint64_t k : old)
      if (k != 0) insert(k);
  }

  std::vector<uint64_t> slots_;
  size_t size_ = 0;
};

}  // namespace petrel::synth::internal
