// A hash map in one flat array (open addressing, linear probing), for the
// exporter's hot lookups: one cache line per lookup where std::unordered_map
// takes two or three dependent misses (bucket, node, next node), and a
// slot that can be prefetched before it is needed.
//
// Keys and values are small and trivially copyable. A key equal to
// `Traits::empty()` marks a free slot and is never stored. Erasing shifts
// the following entries back (no tombstones), so lookups stay short after
// many erasures. Not thread-safe.
//
// Traits: static K empty(); static uint64_t hash(const K&).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "table/prefix_map.h"  // prefetch_line

namespace petrel::table {

template <typename K, typename V, typename Traits>
class FlatMap {
  static_assert(std::is_trivially_copyable_v<K> && std::is_trivially_copyable_v<V>);

 public:
  struct Slot {
    K key;
    V value;
  };

  FlatMap() { slots_.assign(kMinSlots, Slot{Traits::empty(), V{}}); }

  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  // Bytes held by the slot array.
  [[nodiscard]] size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

  // Brings the slot where k's search starts into the cache.
  void prefetch(const K& k) const { prefetch_line(&slots_[home(k)]); }

  [[nodiscard]] V* find(const K& k) {
    for (size_t i = home(k);; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.key == k) return &s.value;
      if (s.key == Traits::empty()) return nullptr;
    }
  }

  // The value of k, inserted as `v` if k is absent; second: inserted.
  std::pair<V*, bool> try_emplace(const K& k, const V& v) {
    if ((size_ + 1) * 8 > slots_.size() * 7) grow();
    for (size_t i = home(k);; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.key == k) return {&s.value, false};
      if (s.key == Traits::empty()) {
        s.key = k;
        s.value = v;
        ++size_;
        return {&s.value, true};
      }
    }
  }

  bool erase(const K& k) {
    size_t i = home(k);
    for (;; i = (i + 1) & mask()) {
      if (slots_[i].key == k) break;
      if (slots_[i].key == Traits::empty()) return false;
    }
    // Backward shift: move later entries of the run into the hole when
    // their home is not between the hole and them.
    for (size_t j = (i + 1) & mask();; j = (j + 1) & mask()) {
      if (slots_[j].key == Traits::empty()) break;
      size_t h = home(slots_[j].key);
      bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i].key = Traits::empty();
    --size_;
    return true;
  }

  template <typename F>
  void for_each(F&& f) {
    for (Slot& s : slots_)
      if (!(s.key == Traits::empty())) f(s.key, s.value);
  }

  // Empties the map and gives back its memory beyond the minimum.
  void clear() {
    std::vector<Slot>(kMinSlots, Slot{Traits::empty(), V{}}).swap(slots_);
    size_ = 0;
  }

 private:
  static constexpr size_t kMinSlots = 16;

  [[nodiscard]] size_t mask() const { return slots_.size() - 1; }
  [[nodiscard]] size_t home(const K& k) const {
    return static_cast<size_t>((Traits::hash(k) * 0x9E3779B97F4A7C15ull) >> 20) & mask();
  }

  void grow() {
    std::vector<Slot> old(slots_.size() * 2, Slot{Traits::empty(), V{}});
    old.swap(slots_);
    for (const Slot& s : old) {
      if (s.key == Traits::empty()) continue;
      size_t i = home(s.key);
      while (!(slots_[i].key == Traits::empty())) i = (i + 1) & mask();
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace petrel::table
