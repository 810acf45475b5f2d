// Tests of crates/timing/timing.h: the time pure modules are handed is
// steady_clock's in milliseconds, and the session machine and the RTR
// client take that very type (a daemon converts once for both).
#include "crates/timing/timing.h"

#include <gtest/gtest.h>

#include <chrono>
#include <type_traits>

#include "fsm/config.h"
#include "rpki/client.h"

namespace petrel::timing {
namespace {

static_assert(std::is_same_v<fsm::Time, Time>);
static_assert(std::is_same_v<rpki::Time, Time>);
static_assert(std::is_same_v<fsm::Duration, Duration>);
static_assert(std::is_same_v<rpki::Duration, Duration>);
static_assert(std::is_same_v<Time::clock, std::chrono::steady_clock>);

TEST(Timing, MillisecondsOnTheMonotonicClock) {
  const Time t{Duration{1000}};
  EXPECT_EQ((t + std::chrono::seconds{2}).time_since_epoch().count(), 3000);
  EXPECT_EQ(std::chrono::duration_cast<Duration>(std::chrono::microseconds{2500}).count(), 2);
  EXPECT_LT(t, t + Duration{1});
}

}  // namespace
}  // namespace petrel::timing
