#include "table/nexthop_registry.h"

namespace petrel::table {

uint32_t NexthopRegistry::bind(Attrs& a) {
  const auto by = a.resolved_by();
  std::lock_guard lock(mu_);
  if (const uint32_t c = a.nexthop_code(); c != 0) return c;  // another writer bound it
  uint32_t code = kNone;
  if (by) {
    const Key k{by->address, by->link_local};
    if (auto it = by_key_.find(k); it != by_key_.end()) {
      ++slot(it->second).sets;
      code = it->second + kFirstSlot;
    } else if (!free_.empty() || used_ < kChunkSize * kChunks) {
      uint32_t i;
      if (!free_.empty()) {
        i = free_.back();
        free_.pop_back();
      } else {
        i = used_++;
        if (!chunks_[i / kChunkSize]) chunks_[i / kChunkSize] = std::make_unique<std::array<Slot, kChunkSize>>();
      }
      Slot& s = slot(i);
      s.address = by->address;
      s.link_local = by->link_local;
      s.sets = 1;
      // Under the lock, so that an update() of this address cannot pass
      // between the resolver's answer and the slot's being found.
      s.state.store(pack(resolver_.resolve(by->address)), std::memory_order_release);
      by_key_.emplace(k, i);
      code = i + kFirstSlot;
    }
  }
  a.set_nexthop_code(code);
  return code;
}

void NexthopRegistry::release(uint32_t code) {
  if (code < kFirstSlot) return;
  std::lock_guard lock(mu_);
  const uint32_t i = code - kFirstSlot;
  Slot& s = slot(i);
  if (--s.sets != 0) return;
  by_key_.erase(Key{s.address, s.link_local});
  free_.push_back(i);
}

bool NexthopRegistry::update(std::span<const NexthopUpdate> changed, std::vector<uint8_t>& touched) {
  std::lock_guard lock(mu_);
  touched.assign(used_ + kFirstSlot, 0);
  bool any = false;
  for (const NexthopUpdate& u : changed) {
    for (const bool ll : {false, true}) {
      auto it = by_key_.find(Key{u.address, ll});
      if (it == by_key_.end()) continue;
      const uint32_t code = it->second + kFirstSlot;
      const NexthopState before = state(code);
      slot(it->second).state.store(pack(u.state), std::memory_order_release);
      if (state(code) != before) {
        touched[code] = 1;
        any = true;
      }
    }
  }
  return any;
}

std::vector<NexthopRegistry::Entry> NexthopRegistry::entries() const {
  std::lock_guard lock(mu_);
  std::vector<Entry> out;
  out.reserve(by_key_.size());
  for (const auto& [k, i] : by_key_) out.push_back({i + kFirstSlot, k.address, k.link_local, state(i + kFirstSlot)});
  return out;
}

uint32_t NexthopRegistry::code_end() const {
  std::lock_guard lock(mu_);
  return used_ + kFirstSlot;
}

}  // namespace petrel::table
