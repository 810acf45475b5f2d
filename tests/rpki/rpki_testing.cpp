// Generators shared by the rpki tests (declared in rpki_testing.h), in one
// translation unit: rapidcheck's generator templates are costly to compile,
// and three test files use them.
#include "tests/rpki/rpki_testing.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace petrel::rpki::testing {

rc::Gen<Vrp> gen_vrp() {
  return rc::gen::apply(
      [](bool v6, std::vector<uint8_t> addr, unsigned len, unsigned extra, uint32_t asn) {
        addr.resize(16);
        auto family = v6 ? net::IpFamily::V6 : net::IpFamily::V4;
        unsigned bits = v6 ? 128u : 32u;
        len %= bits + 1;
        unsigned max_len = std::min(bits, len + extra % 8);
        auto p = net::Prefix::make(net::IpAddress::from_bytes(family, addr.data()), len);
        return Vrp{*p, static_cast<uint8_t>(max_len), asn};
      },
      rc::gen::arbitrary<bool>(), rc::gen::container<std::vector<uint8_t>>(16, rc::gen::arbitrary<uint8_t>()),
      rc::gen::arbitrary<unsigned>(), rc::gen::arbitrary<unsigned>(), rc::gen::arbitrary<uint32_t>());
}

rc::Gen<RouterKey> gen_router_key() {
  return rc::gen::apply(
      [](std::vector<uint8_t> ski, uint32_t asn, std::vector<uint8_t> spki) {
        RouterKey k;
        std::copy_n(ski.begin(), 20, k.ski.begin());
        k.asn = asn;
        k.spki = std::move(spki);
        return k;
      },
      rc::gen::container<std::vector<uint8_t>>(20, rc::gen::arbitrary<uint8_t>()), rc::gen::arbitrary<uint32_t>(),
      rc::gen::resize(100, rc::gen::arbitrary<std::vector<uint8_t>>()));
}

// An ASPA PDU as the decoder hands it out: providers sorted and distinct,
// none in a withdrawal; now and then in 8210bis-10's layout.
rc::Gen<AspaPdu> gen_aspa_pdu() {
  return rc::gen::apply(
      [](bool announce, uint32_t customer, std::vector<uint32_t> providers, int legacy) {
        AspaPdu a;
        a.announce = announce;
        a.aspa.customer = customer;
        if (announce) {
          std::sort(providers.begin(), providers.end());
          providers.erase(std::unique(providers.begin(), providers.end()), providers.end());
          a.aspa.providers = std::move(providers);
        }
        if (legacy < 2) a.legacy_afi = static_cast<uint8_t>(legacy);
        return a;
      },
      rc::gen::arbitrary<bool>(), rc::gen::arbitrary<uint32_t>(),
      rc::gen::resize(40, rc::gen::arbitrary<std::vector<uint32_t>>()), rc::gen::inRange(0, 6));
}

// Any message valid in its version.
rc::Gen<Message> gen_message() {
  return rc::gen::mapcat(rc::gen::inRange<uint8_t>(0, 3), [](uint8_t version) {
    int kinds = version == kVersion0 ? 9 : version == kVersion1 ? 10 : 11;
    return rc::gen::mapcat(rc::gen::inRange(0, kinds), [version](int kind) -> rc::Gen<Message> {
      auto msg = [version](auto gen) {
        return rc::gen::map(gen, [version](auto pdu) { return Message{version, Pdu{std::move(pdu)}}; });
      };
      switch (kind) {
        case 0:
          return msg(rc::gen::apply([](uint16_t s, uint32_t n) { return SerialNotify{s, n}; },
                                    rc::gen::arbitrary<uint16_t>(), rc::gen::arbitrary<uint32_t>()));
        case 1:
          return msg(rc::gen::apply([](uint16_t s, uint32_t n) { return SerialQuery{s, n}; },
                                    rc::gen::arbitrary<uint16_t>(), rc::gen::arbitrary<uint32_t>()));
        case 2: return msg(rc::gen::just(ResetQuery{}));
        case 3:
          return msg(rc::gen::map(rc::gen::arbitrary<uint16_t>(), [](uint16_t s) { return CacheResponse{s}; }));
        case 4:
          return msg(rc::gen::apply([](bool a, Vrp v) { return PrefixPdu{a, v}; }, rc::gen::arbitrary<bool>(),
                                    gen_vrp()));
        case 5:
          return msg(rc::gen::apply(
              [version](uint16_t s, uint32_t n, uint32_t a, uint32_t b, uint32_t c) {
                EndOfData e{s, n, std::nullopt};
                if (version >= kVersion1) e.intervals = Intervals{a, b, c};
                return e;
              },
              rc::gen::arbitrary<uint16_t>(), rc::gen::arbitrary<uint32_t>(), rc::gen::arbitrary<uint32_t>(),
              rc::gen::arbitrary<uint32_t>(), rc::gen::arbitrary<uint32_t>()));
        case 6: return msg(rc::gen::just(CacheReset{}));
        case 7:
          return msg(rc::gen::apply(
              [](uint16_t code, std::vector<uint8_t> pdu, std::string text) {
                ErrorReport r;
                r.code = static_cast<ErrorCode>(code % 12);
                for (uint8_t b : pdu) r.pdu.push_back(std::byte{b});
                r.text = std::move(text);
                return r;
              },
              rc::gen::arbitrary<uint16_t>(), rc::gen::resize(60, rc::gen::arbitrary<std::vector<uint8_t>>()),
              rc::gen::resize(60, rc::gen::arbitrary<std::string>())));
        case 8:
          return msg(rc::gen::apply([](bool a, Vrp v) { return PrefixPdu{a, v}; }, rc::gen::arbitrary<bool>(),
                                    gen_vrp()));
        case 9:
          return msg(rc::gen::apply([](bool a, RouterKey k) { return RouterKeyPdu{a, std::move(k)}; },
                                    rc::gen::arbitrary<bool>(), gen_router_key()));
        default: return msg(gen_aspa_pdu());
      }
    });
  });
}

}  // namespace petrel::rpki::testing
