// The resident size of the RTR client (rpki/client.h) before, during and
// after an answer of N VRPs that never ends, the cache then going:
//   answer_memory N [max_vrps]
// With max_vrps above N the whole answer is buffered (28 bytes a record)
// and must be handed back when the cache goes; with the default (4
// million) the answer is cut off at the limit. Figures in docs/rpki.md.
// Linux only (/proc/self/status).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "rpki/client.h"

namespace {

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace petrel::rpki;
  if (argc < 2) {
    std::fprintf(stderr, "usage: answer_memory N [max_vrps]\n");
    return 2;
  }
  const size_t n = std::strtoull(argv[1], nullptr, 10);
  ClientConfig cfg;
  if (argc > 2) cfg.max_vrps = std::strtoull(argv[2], nullptr, 10);
  Client client(cfg);
  const Time now{std::chrono::seconds(1)};
  (void)client.step(Connected{}, now);
  const long before = rss_kib();
  std::vector<std::byte> wire;
  encode(1, CacheResponse{1}, wire);
  bool cut = false;
  for (size_t i = 0; i < n && !cut; ++i) {
    const auto addr = petrel::net::IpAddress::v4(0x0a000000u + static_cast<uint32_t>((i & 0xffffff) << 8));
    const Vrp v{*petrel::net::Prefix::make(addr, 24), 24, static_cast<uint32_t>(64496 + (i >> 24))};
    encode(1, PrefixPdu{true, v}, wire);
    if (wire.size() >= 65536) {  // what one read brings
      for (const auto& a : client.step(Received{wire}, now)) cut = cut || std::holds_alternative<CloseConnection>(a);
      wire.clear();
    }
  }
  if (!cut) (void)client.step(Received{wire}, now);
  const long during = rss_kib();
  (void)client.step(Disconnected{}, now);
  const long after = rss_kib();
  std::printf("records %zu, max_vrps %zu%s: RSS %ld KiB before, %ld KiB with the answer buffered, %ld KiB after the "
              "cache went (client holds %zu bytes)\n",
              n, cfg.max_vrps, cut ? " (cut off)" : "", before, during, after, client.held_bytes());
  return 0;
}
