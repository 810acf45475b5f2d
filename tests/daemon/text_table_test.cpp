// Tests of daemon/text_table.h: `petrel show`'s aligned columns, and a
// cell past its column's largest width (a long peer name) wrapped after.
#include "daemon/text_table.h"

#include <gtest/gtest.h>

#include <string>

namespace petrel::daemon {
namespace {

TEST(TextTable, ColumnsAsWideAsTheirWidestCell) {
  TextTable t({"NAME", "AS", "STATE"});
  t.add({"bird", "65002", "established"});
  t.add({"a-longer-name", "1", ""});
  EXPECT_EQ(t.text(),
            "NAME           AS     STATE\n"
            "bird           65002  established\n"
            "a-longer-name  1\n");
}

TEST(TextTable, ALongCellEndsItsLineAndTheRowGoesOnUnderTheNextColumn) {
  TextTable t({"NAME", "AS", "STATE"}, {8});
  t.add({"bird", "65002", "established"});
  t.add({"transit-provider-one", "65003", "connect"});
  t.add({"frr", "65004", "idle"});
  EXPECT_EQ(t.text(),
            "NAME  AS     STATE\n"
            "bird  65002  established\n"
            "transit-provider-one\n"
            "      65003  connect\n"
            "frr   65004  idle\n");
}

TEST(TextTable, AMiddleColumnWrapsToo) {
  // PEER (column 1) at most 5 wide: the long one is written whole.
  TextTable t({"PREFIX", "PEER", "NEXT HOP", "AS PATH"}, {0, 5, 0});
  t.add({"192.0.2.0/24", "bird", "198.51.100.2", "65002"});
  t.add({"2001:db8::/32", "upstream-2", "2001:db8::2 (fe80::2)", "65003 65010"});
  EXPECT_EQ(t.text(),
            "PREFIX         PEER  NEXT HOP               AS PATH\n"
            "192.0.2.0/24   bird  198.51.100.2           65002\n"
            "2001:db8::/32  upstream-2\n"
            "                     2001:db8::2 (fe80::2)  65003 65010\n");
}

TEST(TextTable, TheHeaderIsNeverWrappedAndALongLastCellNeedsNoNewLine) {
  TextTable t({"NAME", "LAST ERROR"}, {2, 3});
  t.add({"ab", "connect: No route to host"});
  EXPECT_EQ(t.text(),
            "NAME  LAST ERROR\n"
            "ab    connect: No route to host\n");
}

}  // namespace
}  // namespace petrel::daemon
