#include "transport/flood_guard.h"

#include <algorithm>
#include <cmath>

namespace cortex {

FloodGuard::FloodGuard(int64_t rate, int64_t burst, size_t max_addresses)
    : rate_(static_cast<double>(rate)),
      burst_(static_cast<double>(std::max<int64_t>(burst, 1))),
      max_addresses_(max_addresses) {}

int FloodGuard::Admit(const std::string& address, Clock::time_point now) {
  if (rate_ <= 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(address);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_addresses_ && now - last_sweep_ >= std::chrono::seconds(1)) {
      // Forget the addresses whose buckets have refilled: they are owed nothing. At most
      // once a second, so that a wide flood does not buy a full scan per request.
      last_sweep_ = now;
      std::erase_if(buckets_, [&](const auto& kv) {
        double idle = std::chrono::duration<double>(now - kv.second.at).count();
        return kv.second.tokens + idle * rate_ >= burst_;
      });
    }
    // Still full: a wide flood. Refuse newcomers rather than grow without bound.
    if (buckets_.size() >= max_addresses_) return 1;
    it = buckets_.emplace(address, Bucket{burst_, now}).first;
  }
  Bucket& b = it->second;
  double elapsed = std::chrono::duration<double>(now - b.at).count();
  b.tokens = std::min(burst_, b.tokens + std::max(0.0, elapsed) * rate_);
  b.at = now;
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return 0;
  }
  return std::max(1, static_cast<int>(std::ceil((1.0 - b.tokens) / rate_)));
}

}  // namespace cortex
