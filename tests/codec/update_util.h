// Helpers for the UPDATE tests: hex vectors, message bodies, generators.
#pragma once

#include <rapidcheck.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <vector>

#include "codec/attribute_set.h"
#include "codec/nlri.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"

namespace petrel::codec::testing {

inline std::vector<std::byte> hx(std::string_view s) {
  auto v = bytes::from_hex(s);
  if (!v) std::abort();
  return *v;
}

// An UPDATE body from its three parts in hex; the lengths are computed.
inline std::vector<std::byte> body(std::string_view withdrawn, std::string_view attrs,
                                   std::string_view nlri) {
  auto w = hx(withdrawn), a = hx(attrs), n = hx(nlri);
  std::vector<std::byte> out;
  bytes::Writer wr(out);
  wr.u16(static_cast<uint16_t>(w.size()));
  wr.bytes(w);
  wr.u16(static_cast<uint16_t>(a.size()));
  wr.bytes(a);
  wr.bytes(n);
  return out;
}

// The usual mandatory attributes: ORIGIN IGP, AS_PATH 65001 65002 (4-octet),
// NEXT_HOP 192.0.2.1.
inline constexpr std::string_view kOrigin = "40010100";
inline constexpr std::string_view kAsPath4 = "40020a02020000fde90000fdea";
inline constexpr std::string_view kNextHop = "400304c0000201";
inline std::string base_attrs() {
  return std::string(kOrigin) + std::string(kAsPath4) + std::string(kNextHop);
}

// Files under tests/codec/data, found from the source path whatever the
// working directory.
inline std::vector<std::byte> read_data_file(std::string_view name) {
  namespace fs = std::filesystem;
  fs::path src = fs::path(__FILE__).parent_path() / "data" / name;
  std::vector<fs::path> tries = {src};
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) tries.push_back(exe.parent_path() / ".." / ".." / src);
  if (const char* root = std::getenv("MESON_SOURCE_ROOT"))
    tries.push_back(fs::path(root) / "tests" / "codec" / "data" / name);
  for (const auto& p : tries) {
    std::ifstream in(p, std::ios::binary);
    if (!in) continue;
    std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(c.size());
    for (size_t i = 0; i < c.size(); ++i) out[i] = std::byte(static_cast<unsigned char>(c[i]));
    return out;
  }
  return {};
}

// Generators.
inline rc::Gen<NlriPrefix> gen_prefix(net::IpFamily f, bool path_id) {
  return rc::gen::apply(
      [f, path_id](std::vector<uint8_t> b, unsigned len, uint32_t id) {
        b.resize(16);
        unsigned max = net::IpAddress::max_len(f);
        NlriPrefix p;
        p.prefix = *net::Prefix::make(net::IpAddress::from_bytes(f, b.data()), len % (max + 1));
        p.path_id = path_id ? id : 0;
        return p;
      },
      rc::gen::container<std::vector<uint8_t>>(16, rc::gen::arbitrary<uint8_t>()),
      rc::gen::arbitrary<unsigned>(), rc::gen::arbitrary<uint32_t>());
}

}  // namespace petrel::codec::testing
