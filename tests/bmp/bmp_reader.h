// A small reader of BMP framing for the tests (RFC 7854 section 4.1):
// whole messages off the front of a byte buffer, and the prefixes a Route
// Monitoring message's UPDATE announces and withdraws. Test-only: Petrel
// sends BMP, it never reads it.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "bmp/bmp.h"
#include "codec/update.h"

namespace petrel::bmp::testing {

struct Framed {
  MessageType type;
  std::vector<std::byte> body;  // after the common header
};

// The whole messages at the front of `buf`, taken off it (a partial one
// stays). Checks the version and the length.
inline std::vector<Framed> take_messages(std::vector<std::byte>& buf) {
  std::vector<Framed> out;
  size_t at = 0;
  while (buf.size() - at >= kCommonHeaderLen) {
    EXPECT_EQ(static_cast<uint8_t>(buf[at]), kVersion);
    const size_t len = (static_cast<size_t>(buf[at + 1]) << 24) | (static_cast<size_t>(buf[at + 2]) << 16) |
                       (static_cast<size_t>(buf[at + 3]) << 8) | static_cast<size_t>(buf[at + 4]);
    EXPECT_GE(len, kCommonHeaderLen);
    if (len < kCommonHeaderLen || buf.size() - at < len) break;
    out.push_back({static_cast<MessageType>(buf[at + 5]),
                   std::vector<std::byte>(buf.begin() + static_cast<std::ptrdiff_t>(at + kCommonHeaderLen),
                                          buf.begin() + static_cast<std::ptrdiff_t>(at + len))});
    at += len;
  }
  buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(at));
  return out;
}

// The UPDATE of a Route Monitoring body, decoded with `params`.
inline codec::UpdateView update_of(const Framed& m, const codec::SessionParams& params = {}) {
  const bytes::Span update = bytes::Span(m.body).subspan(kPerPeerHeaderLen);
  return codec::UpdateView::decode(update.subspan(codec::kHeaderLen), params, codec::PeerType::kExternal);
}

}  // namespace petrel::bmp::testing
