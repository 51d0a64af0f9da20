#include "core/clock.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <ostream>
#include <string>
#include <utility>

#include "core/log.h"
#include "core/time.h"

namespace cortex {
namespace {

// A death test's stderr holds `what` exactly `times` times.
class Holds final : public ::testing::MatcherInterface<const std::string&> {
 public:
  Holds(std::string what, size_t times) : what_(std::move(what)), times_(times) {}
  bool MatchAndExplain(const std::string& err, ::testing::MatchResultListener*) const override {
    size_t n = 0;
    for (size_t at = err.find(what_); at != std::string::npos; at = err.find(what_, at + 1)) ++n;
    return n == times_;
  }
  void DescribeTo(std::ostream* os) const override {
    *os << "holds \"" << what_ << "\" " << times_ << " time(s)";
  }

 private:
  std::string what_;
  size_t times_;
};

::testing::Matcher<const std::string&> StderrHolds(std::string what, size_t times) {
  return ::testing::MakeMatcher(new Holds(std::move(what), times));
}

// ProcessClock() decides once per process, so each case runs in a process of its own
// ("threadsafe" death tests run the test binary again, for this test alone).
// CORTEX_FAKE_NOW freezes the clock in a test build (-DCORTEX_TEST_HOOKS=ON, scripts/test's);
// any other build runs on the system clock and says once that it ignores the variable.
TEST(ProcessClockDeathTest, FakeNowFreezesTheClockOnlyInATestBuild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const bool honoured = FakeNowHonoured();
  EXPECT_EXIT(
      {
        ::setenv("CORTEX_FAKE_NOW", "2001-02-03T04:05:06Z", 1);
        InitLogging("info");  // to stderr
        const bool frozen = ProcessClock().Now() == *ParseTime("2001-02-03T04:05:06Z");
        const bool again = &ProcessClock() == &ProcessClock();
        std::exit(frozen && again ? 0 : 1);
      },
      ::testing::ExitedWithCode(honoured ? 0 : 1),
      StderrHolds("ignoring CORTEX_FAKE_NOW", honoured ? 0 : 1));
}

TEST(ProcessClockDeathTest, AnUnreadableFakeNowLeavesTheSystemClock) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("CORTEX_FAKE_NOW", "yesterday", 1);
        InitLogging("info");
        const auto skew = ProcessClock().Now() - std::chrono::system_clock::now();
        std::exit(skew < std::chrono::minutes(1) && skew > -std::chrono::minutes(1) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), StderrHolds("ignoring CORTEX_FAKE_NOW", 1));
}

TEST(ProcessClockDeathTest, WithoutFakeNowTheClockIsTheSystemsAndNothingIsSaid) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::unsetenv("CORTEX_FAKE_NOW");
        InitLogging("info");
        const auto skew = ProcessClock().Now() - std::chrono::system_clock::now();
        std::exit(skew < std::chrono::minutes(1) && skew > -std::chrono::minutes(1) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), StderrHolds("CORTEX_FAKE_NOW", 0));
}

}  // namespace
}  // namespace cortex
