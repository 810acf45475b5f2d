// Prefix lengths and addresses for the synthetic table (prefixes.h).
//
// The length shares are rounded from public table reports (the CIDR Report,
// bgp.potaroo.net and APNIC's yearly BGP reviews, 2023-2024) and are meant
// as approximate: docs/synthetic-table.md lists them.
#include "tools/synth/internal/prefixes.h"

#include <algorithm>
#include <array>
#include <bit>
#include <numeric>

namespace petrel::synth::internal {
namespace {

// IPv4: /24 about 60 %, /22 and /23 about 10 % each, /20-/21 and /16-/19
// about 9 % each, /8-/15 half a percent together. Nothing longer than /24.
constexpr std::array<LengthShare, 17> kV4Lengths = {{
    {8, 15}, {9, 20}, {10, 45}, {11, 120}, {12, 300}, {13, 600}, {14, 1'200}, {15, 2'700},
    {16, 14'000}, {17, 11'000}, {18, 20'000}, {19, 40'000},
    {20, 42'000}, {21, 48'000},
    {22, 110'000}, {23, 105'000},
    {24, 605'000},
}};

// IPv6: /48 about 45 %, /32 20 %, then /44, /40, /29, /36, /46-/47; the
// rest thin. Nothing longer than /48.
constexpr std::array<LengthShare, 28> kV6Lengths = {{
    {16, 100}, {19, 100}, {20, 300}, {22, 300}, {24, 700}, {26, 500}, {27, 500},
    {28, 6'000}, {29, 45'000}, {30, 6'000}, {31, 4'000},
    {32, 200'000}, {33, 10'000}, {34, 10'000}, {35, 6'000},
    {36, 40'000}, {37, 4'000}, {38, 8'000}, {39, 6'000},
    {40, 60'000}, {41, 4'000}, {42, 12'000}, {43, 4'000},
    {44, 80'000}, {45, 6'000}, {46, 20'000}, {47, 20'000},
    {48, 446'500},
}};

constexpr uint32_t sum_ppm(std::span<const LengthShare> shares) {
  uint32_t sum = 0;
  for (const LengthShare& s : shares) sum += s.ppm;
  return sum;
}
static_assert(sum_ppm(kV4Lengths) == 1'000'000);
static_assert(sum_ppm(kV6Lengths) == 1'000'000);

struct Block {
  uint64_t top;
  unsigned len;
};

constexpr Block v4_block(uint32_t addr, unsigned len) { return {uint64_t{addr} << 32, len}; }

// Special-purpose IPv4 space (RFC 6890 and the IANA registry), multicast
// and the reserved 240/4: a real table filters these.
constexpr std::array<Block, 14> kV4Special = {{
    v4_block(0x00000000, 8),   // 0/8 "this network"
    v4_block(0x0a000000, 8),   // 10/8 private
    v4_block(0x64400000, 10),  // 100.64/10 shared address space
    v4_block(0x7f000000, 8),   // 127/8 loopback
    v4_block(0xa9fe0000, 16),  // 169.254/16 link local
    v4_block(0xac100000, 12),  // 172.16/12 private
    v4_block(0xc0000000, 24),  // 192.0.0/24 IETF protocol assignments
    v4_block(0xc0000200, 24),  // 192.0.2/24 documentation
    v4_block(0xc0586300, 24),  // 192.88.99/24 6to4 relay anycast
    v4_block(0xc0a80000, 16),  // 192.168/16 private
    v4_block(0xc6120000, 15),  // 198.18/15 benchmarking
    v4_block(0xc6336400, 24),  // 198.51.100/24 documentation
    v4_block(0xcb007100, 24),  // 203.0.113/24 documentation
    v4_block(0xe0000000, 3),   // 224/4 multicast, 240/4 reserved
}};

// Where IPv6 prefixes go: the RIRs' /12s and 2001::/16, weighted roughly by
// each RIR's share of the IPv6 table (RIPE NCC largest, AFRINIC smallest).
constexpr std::array<Block, 6> kV6Regions = {{
    {0x2001'0000'0000'0000, 16},
    {0x2400'0000'0000'0000, 12},  // APNIC
    {0x2600'0000'0000'0000, 12},  // ARIN
    {0x2800'0000'0000'0000, 12},  // LACNIC
    {0x2a00'0000'0000'0000, 12},  // RIPE NCC
    {0x2c00'0000'0000'0000, 12},  // AFRINIC
}};
constexpr std::array<uint32_t, 6> kV6RegionPpm = {40'000, 250'000, 200'000, 110'000, 380'000, 20'000};

constexpr std::array<Block, 2> kV6Special = {{
    {0x2001'0000'0000'0000, 23},  // 2001::/23 IETF protocol assignments
    {0x2001'0db8'0000'0000, 32},  // 2001:db8::/32 documentation
}};

constexpr uint64_t mask(unsigned len) { return len == 0 ? 0 : ~uint64_t{0} << (64 - len); }

// The two blocks share an address (one contains the other).
constexpr bool overlaps(uint64_t top, unsigned len, const Block& b) {
  return ((top ^ b.top) & mask(std::min(len, b.len))) == 0;
}

constexpr unsigned kMinLen[2] = {8, 12};   // IPv4, IPv6: the shortest block placed
constexpr unsigned kMaxLen[2] = {32, 56};  // 56: the length still fits in the key's low byte

size_t family_index(net::IpFamily f) { return f == net::IpFamily::V4 ? 0 : 1; }

unsigned ceil_log2(uint32_t n) { return n <= 1 ? 0 : static_cast<unsigned>(std::bit_width(n - 1)); }

}  // namespace

std::span<const LengthShare> length_shares(net::IpFamily family) {
  if (family == net::IpFamily::V4) return kV4Lengths;
  return kV6Lengths;
}

std::vector<uint8_t> shuffled_lengths(net::IpFamily family, uint32_t count, Rng& rng) {
  const std::span<const LengthShare> shares = length_shares(family);
  std::vector<uint64_t> counts(shares.size());
  std::vector<uint64_t> remainders(shares.size());
  uint64_t given = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    counts[i] = uint64_t{count} * shares[i].ppm / 1'000'000;
    remainders[i] = uint64_t{count} * shares[i].ppm % 1'000'000;
    given += counts[i];
  }
  std::vector<size_t> order(shares.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainders[a] > remainders[b]; });
  for (size_t i = 0; given < count; ++i, ++given) ++counts[order[i]];

  std::vector<uint8_t> lengths;
  lengths.reserve(count);
  for (size_t i = 0; i < shares.size(); ++i) lengths.insert(lengths.end(), counts[i], shares[i].len);
  for (uint32_t i = count; i > 1; --i) std::swap(lengths[i - 1], lengths[rng.below(i)]);  // Fisher-Yates
  return lengths;
}

constexpr unsigned kShortMax = 24;

Placer::Placer(net::IpFamily family, size_t expected)
    : family_(family), short_(kShortMax + 1), long_(family == net::IpFamily::V4 ? 0 : expected) {}

Home Placer::home(uint32_t prefixes, Rng& rng) {
  Home h;
  if (family_ == net::IpFamily::V4) {
    // A single /24 gets a /22 around it; a thousand prefixes, a /12.
    h.len = std::clamp(22u - std::min(ceil_log2(prefixes), 22u), 10u, 22u);
  } else {
    // An LIR's /29 or /32; bigger blocks for origins with many prefixes.
    const unsigned base = rng.chance_ppm(400'000) ? 29 : 32;
    h.len = std::clamp(36u - std::min(ceil_log2(prefixes), 36u), 20u, base);
  }
  h.top = anywhere(h.len, rng);
  return h;
}

net::Prefix Placer::place(const Home& home, unsigned len, Rng& rng) {
  const size_t fi = family_index(family_);
  for (unsigned l = len;; l = std::min(l + 1, kMaxLen[fi])) {
    // Nearby first: the block itself, then ever wider blocks around it.
    for (unsigned wider = 0; wider < 8; wider += 2) {
      const unsigned near = std::min(home.len, l);
      const unsigned region = near > kMinLen[fi] + wider ? near - wider : kMinLen[fi];
      const uint64_t top = ((home.top & mask(region)) | (rng.next() & ~mask(region))) & mask(l);
      if (take(top, l)) return to_prefix(top, l);
    }
    for (int tries = 0; tries < 64; ++tries) {
      const uint64_t top = anywhere(l, rng);
      if (take(top, l)) return to_prefix(top, l);
    }
  }
}

bool Placer::usable(uint64_t top, unsigned len) const {
  if (family_ == net::IpFamily::V4) {
    return std::none_of(kV4Special.begin(), kV4Special.end(),
                        [&](const Block& b) { return overlaps(top, len, b); });
  }
  const bool in_region = std::any_of(kV6Regions.begin(), kV6Regions.end(), [&](const Block& r) {
    return len >= r.len && overlaps(top, len, r);
  });
  return in_region && std::none_of(kV6Special.begin(), kV6Special.end(),
                                   [&](const Block& b) { return overlaps(top, len, b); });
}

uint64_t Placer::anywhere(unsigned len, Rng& rng) const {
  for (;;) {
    uint64_t top = rng.next();
    if (family_ == net::IpFamily::V6) {
      const Block& region = kV6Regions[rng.pick(kV6RegionPpm)];
      top = region.top | (top & ~mask(region.len));
    }
    top &= mask(len);
    if (usable(top, len)) return top;
  }
}

bool Placer::take(uint64_t top, unsigned len) {
  if (!usable(top, len)) return false;
  if (len > kShortMax) return long_.insert(top | len);
  std::vector<uint64_t>& bits = short_[len];
  if (bits.empty()) bits.resize(((uint64_t{1} << len) + 63) / 64);
  const uint64_t i = len == 0 ? 0 : top >> (64 - len);
  const uint64_t bit = uint64_t{1} << (i % 64);
  if (bits[i / 64] & bit) return false;
  bits[i / 64] |= bit;
  return true;
}

net::Prefix Placer::to_prefix(uint64_t top, unsigned len) const {
  if (family_ == net::IpFamily::V4) {
    return *net::Prefix::make(net::IpAddress::v4(static_cast<uint32_t>(top >> 32)), len);
  }
  uint8_t bytes[16] = {};
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(top >> (56 - 8 * i));
  return *net::Prefix::make(net::IpAddress::from_bytes(net::IpFamily::V6, bytes), len);
}

}  // namespace petrel::synth::internal
