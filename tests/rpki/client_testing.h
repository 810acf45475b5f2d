// Helpers shared by the RTR client tests: what the client sent, the Error
// Report among it, the first action of a kind, and a driver on a fake
// clock.
#pragma once

#include <gtest/gtest.h>

#include <variant>
#include <vector>

#include "rpki/client.h"

namespace petrel::rpki::testing {

inline std::vector<Message> sent(const ClientActions& acts) {
  std::vector<Message> out;
  for (const auto& a : acts) {
    if (const auto* s = std::get_if<SendBytes>(&a)) {
      auto m = decode(s->bytes);
      EXPECT_TRUE(m.ok());
      if (m) out.push_back(*m);
    }
  }
  return out;
}

// The Error Report the client sent (a test failure when none).
inline ErrorReport error_sent(const ClientActions& acts) {
  for (const auto& m : sent(acts)) {
    if (const auto* e = std::get_if<ErrorReport>(&m.pdu)) return *e;
  }
  ADD_FAILURE() << "no Error Report sent";
  return {};
}

template <typename T>
const T* find(const ClientActions& acts) {
  for (const auto& a : acts) {
    if (const auto* t = std::get_if<T>(&a)) return t;
  }
  return nullptr;
}

// A client and its clock; cache() feeds it PDUs as one read.
struct ClientDriver {
  Client client;
  Time now{std::chrono::seconds(1000)};

  explicit ClientDriver(ClientConfig c = {}) : client(c) {}
  ClientActions step(const ClientEvent& e) { return client.step(e, now); }
  ClientActions cache(uint8_t version, const std::vector<Pdu>& pdus) {
    std::vector<std::byte> wire;
    for (const auto& p : pdus) encode(version, p, wire);
    return step(Received{wire});
  }
  ClientActions advance(Duration d) {
    now += d;
    return step(Tick{});
  }
};

}  // namespace petrel::rpki::testing
