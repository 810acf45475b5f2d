// Fuzz target: the RTR framer and PDU decoder (rpki/framer.h, rpki/pdu.h),
// versions 0 to 2 (the ASPA PDU of draft-ietf-sidrops-8210bis in both of
// its layouts), and the RTR client fed the same bytes as a cache's answer. The first
// byte picks where the stream is split; whatever decodes must encode and
// decode again to the same message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fuzz/fuzz.h"
#include "rpki/client.h"
#include "rpki/framer.h"
#include "rpki/pdu.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace petrel;
  if (size == 0) return 0;
  auto all = fuzz::span(data + 1, size - 1);
  size_t cut = all.empty() ? 0 : data[0] % (all.size() + 1);

  rpki::Framer f;
  bytes::Span pdu;
  rpki::DecodeError err;
  auto drain = [&] {
    while (f.next(pdu, err) == rpki::Framer::Status::kPdu) {
      auto m = rpki::decode(pdu);
      if (!m) continue;
      // Router Key cannot be written in version 0; the decoder refuses it.
      auto again = rpki::decode(rpki::encode(m->version, m->pdu));
      if (!again || !(*again == *m)) std::abort();
    }
  };
  f.feed(all.first(cut));
  drain();
  f.feed(all.subspan(cut));
  drain();

  // The client after a Reset Query, then the same bytes as the answer.
  rpki::Client c;
  rpki::Time now{};
  (void)c.step(rpki::Connected{}, now);
  (void)c.step(rpki::Received{all.first(cut)}, now);
  (void)c.step(rpki::Received{all.subspan(cut)}, now);
  // What the client holds stays sorted, one ASPA per customer, and the
  // figures it keeps of what it holds equal a count of it.
  auto counted = [&] {
    if (c.held_bytes() != c.held_bytes_by_walk() || c.held_records() != c.held_records_by_walk()) std::abort();
  };
  for (size_t i = 1; i < c.aspas().size(); ++i) {
    if (!(c.aspas()[i - 1].customer < c.aspas()[i].customer)) std::abort();
  }
  counted();
  now += std::chrono::hours(1);
  (void)c.step(rpki::Tick{}, now);
  counted();
  return 0;
}
