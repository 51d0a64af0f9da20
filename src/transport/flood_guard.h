// The transport's flood guard: a token bucket per client address, checked as soon as a
// request's headers arrive — before authentication, before the body is read or parsed; and
// the connection bounds' choices (which connection gives way to a new one). No I/O;
// http_server.cc asks them, tests drive them with their own clock and candidates.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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

// Connection bounds: http.max_connections in all and http.max_connections_per_address from
// one client address. A new connection within both is admitted; at a bound it must first
// close the longest-idle connection in that bound's scope (its own address's, or any), and
// is refused only if there is none. Idle = between requests, or opened with no request yet.
enum class ConnectionAdmission { kAdmit, kShedOwnAddress, kShedAny };

// `open`, `open_from_address`: connections open now, in all and from the newcomer's address.
ConnectionAdmission AdmitConnection(size_t open, size_t max_open, size_t open_from_address,
                                    size_t max_per_address);

// A connection the server might close to make room, as the server sees it at the moment.
struct IdleCandidate {
  std::string_view address;
  int64_t idle_since;  // when it went idle (any monotonic unit); kNotIdle if it is not
};
inline constexpr int64_t kNotIdle = INT64_MAX;

// The index of the longest-idle candidate, of `address` only unless it is empty; npos if
// none is idle.
size_t LongestIdle(const std::vector<IdleCandidate>& candidates, std::string_view address);

}  // namespace cortex
