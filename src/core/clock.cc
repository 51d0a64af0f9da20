#include "core/clock.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "core/time.h"

namespace cortex {

// CORTEX_TEST_HOOKS is defined for this file alone, and only in test builds (CMakeLists.txt):
// the frozen clock's code is not in a release binary.
bool FakeNowHonoured() {
#ifdef CORTEX_TEST_HOOKS
  return true;
#else
  return false;
#endif
}

const Clock& ProcessClock() {
  static const Clock* clock = []() -> const Clock* {
    const char* fake = std::getenv("CORTEX_FAKE_NOW");
    if (fake == nullptr || *fake == '\0') return new SystemClock();
#ifdef CORTEX_TEST_HOOKS
    Result<TimePoint> t = ParseTime(fake);
    if (t.ok()) return new FixedClock(*t);
    spdlog::warn("ignoring CORTEX_FAKE_NOW: {}", t.status().message());
#else
    spdlog::warn(
        "ignoring CORTEX_FAKE_NOW: the frozen clock is for tests, and this is not a test build "
        "(one configured with -DCORTEX_TEST_HOOKS=ON); the system clock is used");
#endif
    return new SystemClock();
  }();
  return *clock;
}

}  // namespace cortex
