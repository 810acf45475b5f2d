// Stateful fuzz target: a session pair (two FSMs back to back through the
// framer and decoders) driven by operations decoded from the input. The
// first byte picks configuration variants; then each operation is an
// opcode and its arguments. Raw bytes can be put on the wire, so every
// decoder the FSM reaches sees fuzz input in every state. After each
// operation the timers must still agree with the state; a broken invariant
// traps.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fsm/session_pair.h"
#include "fuzz/fuzz.h"

namespace {

using namespace petrel;
using namespace std::chrono_literals;

class Input {
 public:
  Input(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool empty() const { return i_ >= n_; }
  uint8_t u8() { return i_ < n_ ? d_[i_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() << 8 | u8()); }
  std::vector<std::byte> take(size_t len) {
    std::vector<std::byte> out;
    while (len-- > 0 && i_ < n_) out.push_back(std::byte{d_[i_++]});
    return out;
  }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t i_ = 0;
};

fsm::PeerConfig config(uint8_t bits, bool second) {
  fsm::PeerConfig c;
  c.local_as = second ? 65002 : 65001;
  c.peer_as = second ? 65001 : 65002;
  c.local_id = second ? 0x02020202 : 0x01010101;
  c.hold_time = bits & 1 ? 0 : 90;
  c.delay_open = bits & 2 ? 5s : 0s;
  c.passive = second && (bits & 4);
  c.capabilities.multiprotocol = {codec::kIpv4Unicast, codec::kIpv6Unicast};
  c.capabilities.route_refresh = true;
  c.capabilities.extended_message = bits & 8;
  if (bits & 16) c.capabilities.add_path = {{codec::kIpv4Unicast, codec::AddPathMode::kBoth}};
  if (bits & 32) c.capabilities.role = second ? codec::Role::kCustomer : codec::Role::kProvider;
  c.strict_role = bits & 64;
  return c;
}

void check(const fsm::Fsm& f) {
  std::optional<fsm::Time> earliest;
  bool any = false;
  for (size_t i = 0; i < fsm::kTimerCount; ++i) {
    auto d = f.deadline(static_cast<fsm::Timer>(i));
    if (d && (!earliest || *d < *earliest)) earliest = d;
    any |= d.has_value();
  }
  if (earliest != f.next_deadline()) __builtin_trap();
  if (f.state() == fsm::State::kIdle && (any || f.negotiated())) __builtin_trap();
  bool exchanged = f.state() == fsm::State::kOpenConfirm || f.state() == fsm::State::kEstablished;
  if (exchanged != f.negotiated().has_value()) __builtin_trap();
  if (f.state() == fsm::State::kOpenSent && !f.deadline(fsm::Timer::kHold)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  uint8_t bits = in.u8();
  fsm::SessionPair p(config(bits, false), config(bits, true), fsm::Time{} + 1h);
  p.set_logging(false);
  for (int ops = 0; !in.empty() && ops < 256; ++ops) {
    uint8_t op = in.u8();
    fsm::Side s = op & 0x80 ? fsm::Side::kB : fsm::Side::kA;
    switch (op & 0x0f) {
      case 0: p.step_both(fsm::ManualStart{}, fsm::ManualStart{}); break;
      case 1: p.step(s, fsm::ManualStart{}); break;
      case 2: p.step(s, fsm::AutomaticStart{}); break;
      case 3: p.step(s, fsm::ManualStop{codec::cease::kAdministrativeShutdown, "fuzz"}); break;
      case 4: p.step(s, fsm::AutomaticStop{}); break;
      case 5: p.advance(std::chrono::seconds(in.u16() % 1000)); break;
      case 6: p.set_reading(s, (op & 0x10) != 0); break;
      case 7: p.send_update(s, in.take(in.u8())); break;
      case 8: p.inject(s, in.take(in.u16() % 5000)); break;
      case 9: p.break_connection(); break;
      case 10: p.step(s, fsm::CollisionDump{}); break;
      case 11: p.step(s, fsm::Tick{}); break;
      default: p.advance(std::chrono::milliseconds(in.u16())); break;
    }
    check(p.fsm(fsm::Side::kA));
    check(p.fsm(fsm::Side::kB));
  }
  return 0;
}
