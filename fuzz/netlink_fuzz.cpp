// Fuzz target: the rtnetlink decoder (fib/netlink.h) over a buffer as the
// kernel sends it (several messages), and the interface model fed what
// decodes. Whatever decodes as a route or a nexthop object must encode
// and decode again to the same message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fib/interfaces.h"
#include "fib/netlink.h"
#include "fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace petrel;
  bytes::Reader r(fuzz::span(data, size));
  fib::Interfaces ifs;
  for (int i = 0; i < 1024 && !r.empty(); ++i) {
    auto one = fib::next_message(r);
    if (!one) break;
    auto m = fib::decode(*one);
    if (!m) continue;
    if (std::holds_alternative<fib::Route>(m->body) || std::holds_alternative<fib::NexthopObject>(m->body)) {
      std::vector<std::byte> out;
      fib::encode(*m, out);
      auto again = fib::decode(bytes::Span(out.data(), out.size()));
      if (!again || !(*again == *m)) std::abort();
    }
    if (std::holds_alternative<fib::Route>(m->body)) {
      for (const auto& nh : std::get<fib::Route>(m->body).nexthops)
        if (nh.has_gateway) (void)ifs.resolve(nh.gateway, nh.ifindex);
    }
    (void)ifs.apply(*m);
  }
  return 0;
}
