#include "core/clock.h"

#include <cstdio>
#include <cstdlib>

#include "core/time.h"

namespace cortex {

const Clock& ProcessClock() {
  static const Clock* clock = []() -> const Clock* {
    const char* fake = std::getenv("CORTEX_FAKE_NOW");
    if (fake != nullptr && *fake != '\0') {
      Result<TimePoint> t = ParseTime(fake);
      if (t.ok()) return new FixedClock(*t);
      std::fprintf(stderr, "ignoring CORTEX_FAKE_NOW: %s\n", t.status().message().c_str());
    }
    return new SystemClock();
  }();
  return *clock;
}

}  // namespace cortex
