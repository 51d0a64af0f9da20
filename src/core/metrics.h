// Process metrics, rendered in the Prometheus text format for GET /metrics. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace cortex {

class Metrics {
 public:
  // Records one finished request. `method` is the JSON-RPC method (or the HTTP route),
  // `tool` the tool name or empty, `status` "ok" or an error code name.
  void Record(const std::string& method, const std::string& tool, const std::string& status,
              double seconds);
  void BeginRequest() { in_flight_.fetch_add(1); }
  void EndRequest() { in_flight_.fetch_sub(1); }
  std::string RenderPrometheus() const;

 private:
  static constexpr std::array<double, 12> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                      0.01,   0.025,   0.05,   0.1,   0.5,    2.5};
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> requests_;
  std::array<uint64_t, kBuckets.size()> bucket_counts_{};
  uint64_t latency_count_ = 0;
  double latency_sum_ = 0;
  std::atomic<int64_t> in_flight_{0};
};

}  // namespace cortex
