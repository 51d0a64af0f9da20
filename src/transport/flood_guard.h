// The transport's flood guard: a token bucket per client address, checked as soon as a
// request's headers arrive — before authentication, before the body is read or parsed.
// No I/O; http_server.cc asks it, tests drive it with their own clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace cortex {

class FloodGuard {
 public:
  using Clock = std::chrono::steady_clock;

  // `rate` requests per second per address, in bursts of up to `burst`. rate 0: no guard.
  FloodGuard(int64_t rate, int64_t burst, size_t max_addresses);

  // Takes one request's token for `address`. 0 if admitted; otherwise the whole seconds
  // until the address has a token again (for Retry-After).
  int Admit(const std::string& address, Clock::time_point now);

 private:
  struct Bucket {
    double tokens;
    Clock::time_point at;
  };

  double rate_;
  double burst_;
  size_t max_addresses_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
  Clock::time_point last_sweep_{};  // when full, refilled buckets are swept at most 1/s
};

}  // namespace cortex
