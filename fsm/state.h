// The six states of the BGP finite state machine (RFC 4271 section 8.2.2).
#pragma once

#include <cstdint>
#include <string_view>

namespace petrel::fsm {

enum class State : uint8_t {
  kIdle,
  kConnect,
  kActive,
  kOpenSent,
  kOpenConfirm,
  kEstablished,
};
inline constexpr int kStateCount = 6;

std::string_view state_name(State s);

}  // namespace petrel::fsm
