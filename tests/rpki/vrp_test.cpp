// Tests of rpki/vrp.h: text forms and ordering of the value types.
#include "rpki/vrp.h"

#include <gtest/gtest.h>

namespace petrel::rpki {
namespace {

TEST(Vrp, TextForm) {
  Vrp v{*net::Prefix::parse("192.0.2.0/24"), 24, 64496};
  EXPECT_EQ(to_string(v), "192.0.2.0/24-24 AS64496");
  EXPECT_EQ(validity_name(Validity::kInvalid), "invalid");
  EXPECT_EQ(validity_name(Validity::kValid), "valid");
  EXPECT_EQ(validity_name(Validity::kNotFound), "not-found");
}

TEST(Vrp, OrderIsPrefixThenMaxLenThenAs) {
  Vrp a{*net::Prefix::parse("192.0.2.0/24"), 24, 2};
  Vrp b{*net::Prefix::parse("192.0.2.0/24"), 25, 1};
  Vrp c{*net::Prefix::parse("192.0.3.0/24"), 24, 1};
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(a, (Vrp{*net::Prefix::parse("192.0.2.1/24"), 24, 2}));
}

}  // namespace
}  // namespace petrel::rpki
