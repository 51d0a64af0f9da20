#include "connectors/imap.h"

#include <gtest/gtest.h>

#include "core/time.h"

namespace cortex {
namespace {

std::string Formatted(std::string_view text) {
  auto t = ParseInternalDate(text);
  return t ? FormatTime(*t) : "none";
}

TEST(ParseInternalDate, ReadsAnImapDateTimeInUtc) {
  EXPECT_EQ(Formatted("03-Dec-2026 17:58:15 +0000"), "2026-12-03T17:58:15Z");
  EXPECT_EQ(Formatted("03-dec-2026 17:58:15 +0130"), "2026-12-03T16:28:15Z");
  EXPECT_EQ(Formatted(" 3-Jan-2027 00:10:00 -0800"), "2027-01-03T08:10:00Z");
  EXPECT_EQ(Formatted("3-Jan-2027 00:10:00 -0800"), "2027-01-03T08:10:00Z");
}

TEST(ParseInternalDate, RefusesWhatIsNotOne) {
  EXPECT_EQ(Formatted(""), "none");
  EXPECT_EQ(Formatted("Thu, 03 Dec 2026 10:00:00 +0000"), "none");
  EXPECT_EQ(Formatted("31-Feb-2026 10:00:00 +0000"), "none");
  EXPECT_EQ(Formatted("03-Foo-2026 10:00:00 +0000"), "none");
  EXPECT_EQ(Formatted("03-Dec-2026 24:00:00 +0000"), "none");
  EXPECT_EQ(Formatted("03-Dec-3396 10:00:00 +0000"), "none");  // beyond a TimePoint
  EXPECT_EQ(Formatted("03-Dec-2026 10:00:00"), "none");
}

TEST(UidSet, WritesRanges) {
  EXPECT_EQ(UidSet({1, 2, 3, 5, 7, 8}), "1:3,5,7:8");
  EXPECT_EQ(UidSet({}), "");
}

}  // namespace
}  // namespace cortex
