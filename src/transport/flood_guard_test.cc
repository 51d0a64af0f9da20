#include "transport/flood_guard.h"

#include <gtest/gtest.h>

namespace cortex {
namespace {

using std::chrono::milliseconds;

TEST(FloodGuardTest, AdmitsABurstThenRefillsAtTheRate) {
  FloodGuard guard(/*rate=*/2, /*burst=*/3, /*max_addresses=*/16);
  auto t = FloodGuard::Clock::time_point{} + std::chrono::hours(1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(guard.Admit("10.0.0.1", t), 0) << i;
  EXPECT_EQ(guard.Admit("10.0.0.1", t), 1);  // empty: wait a second (0.5 s, rounded up)
  EXPECT_EQ(guard.Admit("10.0.0.2", t), 0);  // another address has its own bucket
  EXPECT_EQ(guard.Admit("10.0.0.1", t + milliseconds(499)), 1);
  EXPECT_EQ(guard.Admit("10.0.0.1", t + milliseconds(500)), 0);  // one token back
  EXPECT_EQ(guard.Admit("10.0.0.1", t + milliseconds(500)), 1);
  // Refusals do not dig the hole deeper: a full second later, two tokens are back.
  EXPECT_EQ(guard.Admit("10.0.0.1", t + milliseconds(1500)), 0);
  EXPECT_EQ(guard.Admit("10.0.0.1", t + milliseconds(1500)), 0);
  EXPECT_EQ(guard.Admit("10.0.0.1", t + milliseconds(1500)), 1);
}

TEST(FloodGuardTest, RateZeroAdmitsEverything) {
  FloodGuard guard(0, 1, 16);
  auto t = FloodGuard::Clock::time_point{};
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(guard.Admit("a", t), 0);
}

TEST(FloodGuardTest, TracksABoundedNumberOfAddresses) {
  FloodGuard guard(/*rate=*/1, /*burst=*/1, /*max_addresses=*/2);
  auto t = FloodGuard::Clock::time_point{} + std::chrono::hours(1);
  EXPECT_EQ(guard.Admit("a", t), 0);
  EXPECT_EQ(guard.Admit("b", t), 0);
  // Both buckets are empty and owed tokens: a third address is refused, not tracked.
  EXPECT_GT(guard.Admit("c", t), 0);
  // Once a's bucket has refilled it is forgotten, and c gets its place.
  EXPECT_EQ(guard.Admit("c", t + std::chrono::seconds(2)), 0);
}

// An address at its own bound makes room among its own connections, even when the server
// has room; the server's bound makes room among anyone's; within both, admitted.
TEST(ConnectionBoundsTest, EachBoundShedsWithinItsScope) {
  EXPECT_EQ(AdmitConnection(0, 8, 0, 2), ConnectionAdmission::kAdmit);
  EXPECT_EQ(AdmitConnection(7, 8, 1, 2), ConnectionAdmission::kAdmit);
  EXPECT_EQ(AdmitConnection(3, 8, 2, 2), ConnectionAdmission::kShedOwnAddress);
  EXPECT_EQ(AdmitConnection(8, 8, 1, 2), ConnectionAdmission::kShedAny);
  EXPECT_EQ(AdmitConnection(8, 8, 2, 2), ConnectionAdmission::kShedOwnAddress);
}

// The longest-idle connection gives way: never a busy one, and only the newcomer's own
// address's when that is the bound reached.
TEST(ConnectionBoundsTest, TheLongestIdleGivesWay) {
  std::vector<IdleCandidate> open = {{"10.0.0.1", 50},
                                     {"10.0.0.2", 20},
                                     {"10.0.0.1", kNotIdle},  // mid-request or streaming
                                     {"10.0.0.1", 30},
                                     {"10.0.0.3", kNotIdle}};
  EXPECT_EQ(LongestIdle(open, ""), 1u);
  EXPECT_EQ(LongestIdle(open, "10.0.0.1"), 3u);
  EXPECT_EQ(LongestIdle(open, "10.0.0.3"), std::string_view::npos);
  EXPECT_EQ(LongestIdle(open, "10.0.0.9"), std::string_view::npos);
  open[1].idle_since = kNotIdle;  // the idle one took a request
  EXPECT_EQ(LongestIdle(open, ""), 3u);
  EXPECT_EQ(LongestIdle({}, ""), std::string_view::npos);
}

}  // namespace
}  // namespace cortex
