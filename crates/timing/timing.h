// The time as the daemon hands it to pure modules (fsm/, rpki/): a
// monotonic clock in milliseconds. Pure modules only compare and add
// these; they never read a clock (docs/ARCHITECTURE.md). One definition, so
// the session machine and the RTR client take the very same type.
#pragma once

#include <chrono>

namespace petrel::timing {

using Duration = std::chrono::milliseconds;
// steady_clock's epoch, in milliseconds: the daemon converts
// steady_clock::now() to it; tests make any value they like.
using Time = std::chrono::time_point<std::chrono::steady_clock, Duration>;

}  // namespace petrel::timing
