// The synthetic table's random numbers: xoshiro256** seeded by splitmix64,
// and the few shapes the generator draws from (uniform, a share in parts
// per million, a table of shares, two power-law tails).
//
// Everything here gives the same numbers on every machine: integer
// arithmetic, and for the tails only IEEE 754 division and square root,
// which are correctly rounded (no libm function, no fused multiply-add
// pattern, no <random> distribution).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

namespace petrel::synth::internal {

// splitmix64's output function (Steele, Lea, Flood 2014): a 64-bit mixer.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// xoshiro256** 1.0 (Blackman, Vigna 2018). `stream` separates independent
// sequences from one seed (the shared table, each peer's own draws).
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream) {
    uint64_t x = mix64(seed) ^ mix64(~stream);
    for (uint64_t& w : s_) {
      x += 0x9e3779b97f4a7c15ull;
      w = mix64(x);
    }
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n), n > 0 (Lemire's multiply-shift on the top 32 bits;
  // its bias, below n / 2^32, does not matter here).
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(((next() >> 32) * n) >> 32); }

  bool chance_ppm(uint32_t ppm) { return below(1'000'000) < ppm; }

  // An index into `ppm`, drawn with the shares it holds (summing to 10^6).
  size_t pick(std::span<const uint32_t> ppm) {
    uint32_t r = below(1'000'000);
    for (size_t i = 0; i < ppm.size(); ++i) {
      if (r < ppm[i]) return i;
      r -= ppm[i];
    }
    return ppm.size() - 1;
  }

  // An integer x >= 1 with P(X >= x) = 1/x (Pareto, alpha 1), redrawn above
  // cap so that the tail is cut rather than piled up at cap.
  uint64_t pareto1(uint64_t cap) {
    for (;;) {
      const uint64_t x = (uint64_t{1} << 32) / ((next() >> 32) + 1);
      if (x <= cap) return x;
    }
  }

  // scale * (u^(-3/4) - 1) for u uniform in (0, 1]: P(X >= x) =
  // (1 + x/scale)^(-4/3), a Pareto tail with alpha 4/3 starting at 0,
  // capped at cap. u^(-3/4) is 1 / (sqrt(u) * sqrt(sqrt(u))).
  uint64_t pareto43(double scale, uint64_t cap) {
    const double u = static_cast<double>((next() >> 11) + 1) * 0x1.0p-53;
    const double root = std::sqrt(u);
    const double x = (1.0 / (root * std::sqrt(root)) - 1.0) * scale;
    return x >= static_cast<double>(cap) ? cap : static_cast<uint64_t>(x);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  std::array<uint64_t, 4> s_{};
};

}  // namespace petrel::synth::internal
