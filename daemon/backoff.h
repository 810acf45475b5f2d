// Exponential back-off with jitter for the dialer: after each failed
// attempt the wait doubles up to a ceiling, and a random factor in
// [1 - jitter, 1] spreads peers that failed together (RFC 4271 section
// 8.1.1 leaves ConnectRetryTime to the implementation; a fixed value makes
// many peers retry in lockstep). A session that stayed up long enough
// resets it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>

namespace petrel::daemon {

class Backoff {
 public:
  Backoff(double initial_s, double max_s, double jitter = 0.25, uint64_t seed = 0)
      : initial_(initial_s), max_(max_s), jitter_(jitter), rng_(seed), current_(initial_s) {}

  // The wait before the next attempt; each call doubles the base.
  double next() {
    std::uniform_real_distribution<double> d(1.0 - jitter_, 1.0);
    double wait = current_ * d(rng_);
    current_ = std::min(current_ * 2, max_);
    return wait;
  }
  void reset() { current_ = initial_; }
  [[nodiscard]] double base() const { return current_; }

 private:
  double initial_, max_, jitter_;
  std::mt19937_64 rng_;
  double current_;
};

}  // namespace petrel::daemon
