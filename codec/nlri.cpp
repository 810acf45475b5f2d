// NLRI encoding: RFC 4271 section 4.3, RFC 4760 section 5, RFC 7911
// section 3; syntax errors per RFC 7606 section 5.3.
#include "codec/nlri.h"

#include <array>
#include <bit>
#include <cstring>

namespace petrel::codec {

Result<size_t, std::string_view> validate_nlri(bytes::Span field, NlriFormat fmt) {
  bytes::Reader r(field);
  const unsigned max = net::IpAddress::max_len(fmt.ip);
  size_t count = 0;
  while (!r.empty()) {
    if (fmt.add_path && !r.skip(4)) return fail(std::string_view("path identifier truncated"));
    auto len = r.u8();
    if (!len) return fail(std::string_view("prefix length missing after path identifier"));
    if (*len > max) return fail(std::string_view("prefix length exceeds the family's maximum"));
    if (!r.skip((*len + 7u) / 8u)) return fail(std::string_view("prefix overruns its field"));
    ++count;
  }
  return count;
}

void NlriIterator::advance() {
  // The field was validated; the checks here only keep a misuse in bounds.
  if (fmt_.add_path) {
    auto id = r_.u32();
    if (!id) {
      done_ = true;
      return;
    }
    cur_.path_id = *id;
  }
  auto len = r_.u8();
  if (!len || *len > net::IpAddress::max_len(fmt_.ip)) {
    done_ = true;
    return;
  }
  const size_t n = (*len + 7u) / 8u;
  auto b = r_.take(n);
  if (!b) {
    done_ = true;
    return;
  }
  // Gather the address into big-endian words in registers: byte-wise
  // stores followed by wide loads would stall.
  uint64_t w[2] = {0, 0};
  for (size_t i = 0; i < n; ++i)
    w[i >> 3] |= std::to_integer<uint64_t>((*b)[i]) << (56u - 8u * (i & 7u));
  if (fmt_.ip == net::IpFamily::V4) {
    cur_.prefix = *net::Prefix::make(net::IpAddress::v4(static_cast<uint32_t>(w[0] >> 32)), *len);
  } else {
    std::array<uint8_t, 16> addr;
    for (size_t i = 0; i < 8; ++i) {
      addr[i] = static_cast<uint8_t>(w[0] >> (56u - 8u * i));
      addr[8 + i] = static_cast<uint8_t>(w[1] >> (56u - 8u * i));
    }
    cur_.prefix = *net::Prefix::make(net::IpAddress::from_bytes(fmt_.ip, addr.data()), *len);
  }
  done_ = false;
}

void encode_nlri(bytes::Writer& w, const NlriPrefix& p, bool add_path) {
  if (add_path) w.u32(p.path_id);
  w.u8(p.prefix.len());
  w.raw(p.prefix.addr().data(), p.prefix.wire_bytes());
}

size_t encode_nlri_at(std::span<std::byte> out, size_t pos, const NlriPrefix& p, bool add_path) {
  if (add_path) {
    out[pos] = std::byte(p.path_id >> 24);
    out[pos + 1] = std::byte((p.path_id >> 16) & 0xff);
    out[pos + 2] = std::byte((p.path_id >> 8) & 0xff);
    out[pos + 3] = std::byte(p.path_id & 0xff);
    pos += 4;
  }
  out[pos++] = std::byte{p.prefix.len()};
  size_t n = p.prefix.wire_bytes();
  std::memcpy(out.subspan(pos, n).data(), p.prefix.addr().data(), n);
  return pos + n;
}

}  // namespace petrel::codec
