// Prefix lengths and addresses for the synthetic table: the length shares
// of today's IPv4 and IPv6 tables, and the placement of each origin's
// prefixes in and around its own address block, never the same prefix
// twice, never in special-purpose space (RFC 6890; IPv6 only inside the
// RIRs' /12s and 2001::/16).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "crates/net/ip.h"
#include "tools/synth/internal/key_set.h"
#include "tools/synth/internal/rng.h"

namespace petrel::synth::internal {

struct LengthShare {
  uint8_t len;
  uint32_t ppm;  // parts per million of the family's prefixes
};

std::span<const LengthShare> length_shares(net::IpFamily family);

// Exactly `count` lengths in the family's shares (each share rounded, the
// largest remainders rounded up), in random order.
std::vector<uint8_t> shuffled_lengths(net::IpFamily family, uint32_t count, Rng& rng);

// An origin's address block. Addresses are held as their first 64 bits,
// most significant bit first (IPv4 in the upper 32).
struct Home {
  uint64_t top = 0;
  unsigned len = 0;
};

class Placer {
 public:
  Placer(net::IpFamily family, size_t expected);

  // A block big enough for an origin announcing `prefixes` prefixes.
  Home home(uint32_t prefixes, Rng& rng);

  // A prefix not handed out before: `len` long, in or near `home` (a
  // length no longer than the block's gives the block's own covering
  // prefix first), else anywhere. Where that space is full (far beyond
  // today's table) the length grows by one until a prefix is free.
  net::Prefix place(const Home& home, unsigned len, Rng& rng);

 private:
  [[nodiscard]] bool usable(uint64_t top, unsigned len) const;
  [[nodiscard]] uint64_t anywhere(unsigned len, Rng& rng) const;
  bool take(uint64_t top, unsigned len);
  [[nodiscard]] net::Prefix to_prefix(uint64_t top, unsigned len) const;

  net::IpFamily family_;
  // What is handed out: a bit per possible prefix up to /24 (IPv4's bulk;
  // 4 MiB at most, far faster than a hash set of a million keys), by length,
  // made on first use; a hash set for longer prefixes.
  std::vector<std::vector<uint64_t>> short_;
  KeySet long_;
};

}  // namespace petrel::synth::internal
