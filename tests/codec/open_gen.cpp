// rapidcheck generators for OPEN, capabilities, NOTIFICATION and
// ROUTE-REFRESH values (declared in open_gen.h). Defined here, in one
// translation unit, rather than inline in the header: rapidcheck's
// generator templates are costly to instantiate, and four test files use
// these.
#include "tests/codec/open_gen.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace petrel::codec::gen {
namespace {

rc::Gen<Family> family() {
  return rc::gen::apply([](uint16_t afi, uint8_t safi) { return Family{afi, safi}; },
                        rc::gen::arbitrary<uint16_t>(), rc::gen::arbitrary<uint8_t>());
}

rc::Gen<std::vector<std::byte>> byte_vector(size_t max_len) {
  return rc::gen::map(rc::gen::container<std::vector<uint8_t>>(rc::gen::arbitrary<uint8_t>()),
                      [max_len](std::vector<uint8_t> v) {
                        v.resize(std::min(v.size(), max_len));
                        std::vector<std::byte> out;
                        for (uint8_t b : v) out.push_back(std::byte{b});
                        return out;
                      });
}

// A short list (sometimes long enough to be split over several capabilities).
template <typename T>
rc::Gen<std::vector<T>> list(rc::Gen<T> g) {
  return rc::gen::oneOf(rc::gen::resize(8, rc::gen::container<std::vector<T>>(g)),
                        rc::gen::resize(120, rc::gen::container<std::vector<T>>(g)));
}

bool is_known_code(uint8_t c) {
  switch (c) {
    case cap_code::kMultiprotocol:
    case cap_code::kRouteRefresh:
    case cap_code::kExtendedNextHop:
    case cap_code::kExtendedMessage:
    case cap_code::kRole:
    case cap_code::kGracefulRestart:
    case cap_code::kFourOctetAs:
    case cap_code::kAddPath:
    case cap_code::kEnhancedRouteRefresh:
    case cap_code::kLongLivedGracefulRestart:
    case cap_code::kFqdn:
    case cap_code::kRouteRefreshOld:
      return true;
    default:
      return false;
  }
}

template <typename T>
rc::Gen<std::optional<T>> maybe(rc::Gen<T> g) {
  return rc::gen::oneOf(rc::gen::just(std::optional<T>()),
                        rc::gen::map(g, [](T v) { return std::optional<T>(std::move(v)); }));
}

}  // namespace

rc::Gen<Capabilities> capabilities() {
  return rc::gen::exec([] {
    Capabilities c;
    c.multiprotocol = *rc::gen::resize(8, rc::gen::container<std::vector<Family>>(family()));
    c.route_refresh = *rc::gen::arbitrary<bool>();
    c.route_refresh_old = c.route_refresh && *rc::gen::arbitrary<bool>();
    c.enhanced_route_refresh = *rc::gen::arbitrary<bool>();
    c.four_octet_as = *maybe(rc::gen::arbitrary<uint32_t>());
    c.add_path = *list(rc::gen::apply(
        [](Family f, uint8_t m) { return AddPathFamily{f, static_cast<AddPathMode>(m)}; }, family(),
        rc::gen::inRange<uint8_t>(1, 4)));
    c.extended_next_hop = *list(rc::gen::apply(
        [](Family f, uint16_t nh) { return ExtendedNextHop{f, nh}; }, family(), rc::gen::arbitrary<uint16_t>()));
    c.extended_message = *rc::gen::arbitrary<bool>();
    if (*rc::gen::arbitrary<bool>()) {
      GracefulRestart gr;
      gr.restarting = *rc::gen::arbitrary<bool>();
      gr.notification = *rc::gen::arbitrary<bool>();
      gr.restart_time = *rc::gen::inRange<uint16_t>(0, 4096);
      // One capability, never split (RFC 4724 section 3): at most 63.
      gr.families = *rc::gen::resize(
          static_cast<int>(kMaxGracefulRestartFamilies),
          rc::gen::container<std::vector<GracefulRestart::PerFamily>>(rc::gen::apply(
              [](Family f, bool fwd) { return GracefulRestart::PerFamily{f, fwd}; }, family(),
              rc::gen::arbitrary<bool>())));
      c.graceful_restart = gr;
    }
    if (*rc::gen::arbitrary<bool>()) {
      LongLivedGracefulRestart llgr;
      llgr.families = *list(rc::gen::apply(
          [](Family f, bool fwd, uint32_t t) { return LongLivedGracefulRestart::PerFamily{f, fwd, t}; },
          family(), rc::gen::arbitrary<bool>(), rc::gen::inRange<uint32_t>(0, 1u << 24)));
      c.long_lived_graceful_restart = llgr;
    }
    if (*rc::gen::arbitrary<bool>()) c.role = static_cast<Role>(*rc::gen::arbitrary<uint8_t>());
    if (*rc::gen::arbitrary<bool>()) {
      auto s = rc::gen::resize(100, rc::gen::string<std::string>());
      c.fqdn = Fqdn{*s, *s};
    }
    auto unknown = rc::gen::apply(
        [](uint8_t code, std::vector<std::byte> v) { return UnknownCapability{code, std::move(v)}; },
        rc::gen::suchThat(rc::gen::arbitrary<uint8_t>(), [](uint8_t x) { return !is_known_code(x); }),
        byte_vector(255));
    c.unknown = *rc::gen::resize(6, rc::gen::container<std::vector<UnknownCapability>>(unknown));
    return c;
  });
}

rc::Gen<Open> open() {
  return rc::gen::exec([] {
    Open o;
    o.my_as = *rc::gen::inRange<uint16_t>(1, 65535);
    o.hold_time = *rc::gen::suchThat(rc::gen::arbitrary<uint16_t>(), [](uint16_t h) { return h != 1 && h != 2; });
    o.bgp_id = *rc::gen::inRange<uint32_t>(1, 0xffffffff);
    o.caps = *capabilities();
    if (o.caps.four_octet_as && *o.caps.four_octet_as == 0) o.caps.four_octet_as = 1;
    o.extended_params = *rc::gen::arbitrary<bool>();
    return o;
  });
}

rc::Gen<Notification> notification() {
  return rc::gen::apply(
      [](uint8_t code, uint8_t subcode, std::vector<std::byte> data) {
        return Notification{code, subcode, std::move(data)};
      },
      rc::gen::arbitrary<uint8_t>(), rc::gen::arbitrary<uint8_t>(), byte_vector(600));
}

rc::Gen<RouteRefresh> route_refresh() {
  return rc::gen::exec([] {
    RouteRefresh rr;
    rr.family = *family();
    rr.subtype = static_cast<RefreshSubtype>(*rc::gen::arbitrary<uint8_t>());
    bool demarcation = rr.subtype == RefreshSubtype::kBeginOfRefresh || rr.subtype == RefreshSubtype::kEndOfRefresh;
    if (!demarcation) rr.orf = *byte_vector(64);
    return rr;
  });
}

}  // namespace petrel::codec::gen
