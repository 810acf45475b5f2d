// A stable LSD radix sort of values by bits [from, to) of a 64-bit word
// each value carries (`word(v)`), the other bits and the rest of the value
// riding along. The VRP table's build sorts its IPv4 VRPs with it (the
// value is the word), rpki's validate_batch a large batch's routes (the
// value is the route's lookup, the word its index line).
// Passes of at most 11 bits, so that a pass's counts stay in the
// first-level cache; a pass whose digit is the same in every value is
// skipped. Pure: no I/O.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace petrel::sort {

template <typename Array, typename Word>
void radix_sort_by(Array& a, Array& tmp, unsigned from, unsigned to, Word word) {
  if (a.size() < 2 || to <= from) return;
  constexpr unsigned kMaxDigit = 11;
  const unsigned passes = (to - from + kMaxDigit - 1) / kMaxDigit;
  const unsigned digit = (to - from + passes - 1) / passes;
  const size_t size = size_t{1} << digit;
  const uint64_t mask = size - 1;
  // The bits [from, to) of v's word, then pass p's digit of them (the
  // last pass's digit may be narrower: the bits past `to` are 0).
  const uint64_t keep = to - from >= 64 ? ~uint64_t{0} : (uint64_t{1} << (to - from)) - 1;
  auto digit_of = [&](const auto& v, unsigned p) { return (((word(v) >> from) & keep) >> (p * digit)) & mask; };
  // Every pass's counts in one read of the values.
  std::vector<size_t> count(passes * (size + 1));
  for (const auto& v : a)
    for (unsigned p = 0; p < passes; ++p) ++count[p * (size + 1) + digit_of(v, p) + 1];
  tmp.resize(a.size());
  for (unsigned p = 0; p < passes; ++p) {
    size_t* c = count.data() + p * (size + 1);
    if (c[digit_of(a[0], p) + 1] == a.size()) continue;  // one value: order stands
    for (size_t d = 1; d <= size; ++d) c[d] += c[d - 1];
    for (const auto& v : a) tmp[c[digit_of(v, p)]++] = v;
    a.swap(tmp);
  }
}

}  // namespace petrel::sort
