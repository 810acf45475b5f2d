// Transparent huge pages for large arrays read at random (the VRP table's,
// the routing table's maps): the whole 2 MiB pages inside an array are
// advised for them (madvise MADV_HUGEPAGE: advise_huge_pages), so that a
// random lookup seldom misses the TLB (37.6 MB of 4 KiB pages is 9,200
// pages; of 2 MiB pages, 19).
//
// HugePageAllocator, for std::vector: the array itself comes from operator
// new as usual (aligned new for a T aligned past the default, such as the
// VRP table's 64-byte lines), and an array of 2 MiB or more starts on a
// 2 MiB boundary (aligned new again: the alignment's slack is address
// space never touched), so no memory is added and only its tail, past its
// last 2 MiB boundary, stays on small pages.
//
// The advice is a hint: where the kernel gives no huge pages (THP
// "never") the array is used as it is. No I/O: madvise only marks the
// process's own memory.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>

namespace petrel::alloc {

inline constexpr size_t kHugePage = size_t{2} << 20;

// Advises the whole 2 MiB pages inside [p, p + bytes) for transparent huge
// pages. A hint: its failure changes nothing but speed.
inline void advise_huge_pages(void* p, size_t bytes) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t from = (at + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t to = (at + bytes) & ~(kHugePage - 1);
  if (to > from) (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
}

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr bool kOverAligned = alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__;
  // How an array of n is aligned: the same rule in allocate and deallocate.
  static size_t alignment(size_t n) {
    if (n * sizeof(T) >= kHugePage) return kHugePage;
    return kOverAligned ? alignof(T) : 0;
  }

  HugePageAllocator() = default;
  template <typename U>
  explicit HugePageAllocator(const HugePageAllocator<U>& /*other*/) {}

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / 2 / sizeof(T)) throw std::bad_array_new_length();
    const size_t align = alignment(n);
    void* p = align != 0 ? ::operator new(n * sizeof(T), std::align_val_t{align}) : ::operator new(n * sizeof(T));
    advise_huge_pages(p, n * sizeof(T));
    return static_cast<T*>(p);
  }

  void deallocate(T* p, size_t n) {
    const size_t align = alignment(n);
    if (align != 0) {
      ::operator delete(p, std::align_val_t{align});
    } else {
      ::operator delete(p);
    }
  }

  template <typename U>
  bool operator==(const HugePageAllocator<U>& /*other*/) const {
    return true;
  }
};

}  // namespace petrel::alloc
