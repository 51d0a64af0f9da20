#include "core/metrics.h"

#include <sstream>

namespace cortex {
namespace {

// Label values are our own method/tool names and codes, but escape anyway.
std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

void Metrics::Record(const std::string& method, const std::string& tool, const std::string& status,
                     double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{method, tool, status}];
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++bucket_counts_[i];
  }
  ++latency_count_;
  latency_sum_ += seconds;
}

std::string Metrics::RenderPrometheus() const {
  std::ostringstream out;
  std::lock_guard<std::mutex> lock(mu_);
  out << "# HELP cortex_requests_total Requests handled, by JSON-RPC method, tool and status.\n"
      << "# TYPE cortex_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    const auto& [method, tool, status] = key;
    out << "cortex_requests_total{method=\"" << Escape(method) << "\",tool=\"" << Escape(tool)
        << "\",status=\"" << Escape(status) << "\"} " << n << "\n";
  }
  out << "# HELP cortex_request_duration_seconds Time from request parsed to response ready.\n"
      << "# TYPE cortex_request_duration_seconds histogram\n";
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    out << "cortex_request_duration_seconds_bucket{le=\"" << kBuckets[i] << "\"} "
        << bucket_counts_[i] << "\n";
  }
  out << "cortex_request_duration_seconds_bucket{le=\"+Inf\"} " << latency_count_ << "\n"
      << "cortex_request_duration_seconds_sum " << latency_sum_ << "\n"
      << "cortex_request_duration_seconds_count " << latency_count_ << "\n"
      << "# HELP cortex_requests_in_flight Requests being handled now.\n"
      << "# TYPE cortex_requests_in_flight gauge\n"
      << "cortex_requests_in_flight " << in_flight_.load() << "\n";
  return out.str();
}

}  // namespace cortex
