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

ConnectionAdmission AdmitConnection(size_t open, size_t max_open, size_t open_from_address,
                                    size_t max_per_address) {
  // The address's own bound first: an address at its share makes room among its own
  // connections, never another client's.
  if (open_from_address >= max_per_address) return ConnectionAdmission::kShedOwnAddress;
  if (open >= max_open) return ConnectionAdmission::kShedAny;
  return ConnectionAdmission::kAdmit;
}

size_t LongestIdle(const std::vector<IdleCandidate>& candidates, std::string_view address) {
  size_t best = std::string_view::npos;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const IdleCandidate& c = candidates[i];
    if (c.idle_since == kNotIdle || (!address.empty() && c.address != address)) continue;
    if (best == std::string_view::npos || c.idle_since < candidates[best].idle_since) best = i;
  }
  return best;
}

}  // namespace cortex
