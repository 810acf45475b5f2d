// Interned values: one copy of each distinct value, named by a small id
// and reference-counted, so that a million routes through a few gateways
// hold a few copies of their next hops and an id each (fib/plan.h).
// Pure; not thread-safe.
#pragma once

#include <cassert>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace petrel::fib {

inline constexpr uint32_t kNoId = UINT32_MAX;

template <typename T, typename Hash>
class Interned {
 public:
  // The id of v, with one more reference taken.
  uint32_t acquire(const T& v) {
    auto [it, added] = ids_.try_emplace(v, 0);
    if (!added) {
      ++slots_[it->second].refs;
      return it->second;
    }
    uint32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
      slots_[id] = Slot{v, 1};
    } else {
      id = static_cast<uint32_t>(slots_.size());
      slots_.push_back(Slot{v, 1});
    }
    it->second = id;
    return id;
  }
  // One more reference to an id held (kNoId: nothing).
  uint32_t acquire(uint32_t id) {
    if (id != kNoId) ++slots_[id].refs;
    return id;
  }
  // Drops a reference (kNoId: nothing); the value goes with its last.
  void release(uint32_t id) {
    if (id == kNoId) return;
    Slot& s = slots_[id];
    assert(s.refs > 0);
    if (--s.refs != 0) return;
    ids_.erase(s.value);
    s.value = T{};
    free_.push_back(id);
  }
  [[nodiscard]] const T& operator[](uint32_t id) const { return slots_[id].value; }
  // The references held to an id (1 after acquire(): the value is new;
  // 1 before release(): it goes).
  [[nodiscard]] uint32_t refs(uint32_t id) const { return slots_[id].refs; }
  [[nodiscard]] size_t size() const { return ids_.size(); }

 private:
  struct Slot {
    T value;
    uint32_t refs = 0;
  };
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  std::unordered_map<T, uint32_t, Hash> ids_;
};

}  // namespace petrel::fib
