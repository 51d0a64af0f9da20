// The one source of time. Everything that reads "now" takes a Clock so tests can set it.
#pragma once

#include <atomic>
#include <chrono>

namespace cortex {

using TimePoint = std::chrono::system_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now(); }
};

// A clock that stands still until told to move. Thread-safe.
class FixedClock final : public Clock {
 public:
  explicit FixedClock(TimePoint t) : t_(t.time_since_epoch().count()) {}
  TimePoint Now() const override { return TimePoint(TimePoint::duration(t_.load())); }
  void Set(TimePoint t) { t_ = t.time_since_epoch().count(); }
  void Advance(std::chrono::milliseconds d) {
    t_ += std::chrono::duration_cast<TimePoint::duration>(d).count();
  }

 private:
  std::atomic<TimePoint::rep> t_;
};

// The process clock: the system clock, unless CORTEX_FAKE_NOW (RFC 3339) is set in a test
// build, in which case a FixedClock at that instant (for end-to-end tests that need a known
// "now"). Test builds are those configured with -DCORTEX_TEST_HOOKS=ON (scripts/test's);
// any other build ignores the variable and, if it is set, logs a warning once saying so.
const Clock& ProcessClock();

// Whether ProcessClock() honours CORTEX_FAKE_NOW: true only in a test build.
bool FakeNowHonoured();

}  // namespace cortex
