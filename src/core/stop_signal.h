// A stop request that sleeping threads wake for at once: the background threads of a
// serving process wait on one between rounds of work, and their owner sets it on the way
// out, before joining them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace cortex {

class StopSignal {
 public:
  // Sets the signal and wakes every waiter. Setting it again does nothing more.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }

  bool stopped() const { return stopped_.load(); }
  // For work that looks between its steps (a mail sync between batches, an IDLE wait).
  const std::atomic<bool>& flag() const { return stopped_; }

  // Sleeps until `deadline` or Stop(), whichever comes first: true once stopped.
  template <class Clock, class Duration>
  bool WaitUntil(std::chrono::time_point<Clock, Duration> deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, deadline, [this] { return stopped_.load(); });
  }
  template <class Rep, class Period>
  bool WaitFor(std::chrono::duration<Rep, Period> wait) {
    return WaitUntil(std::chrono::steady_clock::now() + wait);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> stopped_{false};
};

}  // namespace cortex
