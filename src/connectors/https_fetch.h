// One bounded HTTPS GET, for documents the server reads from the web (an OAuth client's
// metadata document, docs/authorization.md). libcurl, as the webhook connector.
#pragma once

#include <chrono>
#include <string>

#include "core/status.h"

namespace cortex {

struct HttpsFetchLimits {
  size_t max_bytes = 5 * 1024;
  std::chrono::seconds timeout{5};
  std::string ca_file;  // trust these CAs instead of the system's, if set
};

// GETs `url` over HTTPS only (no redirects, no other protocol). InvalidArgument, saying why,
// for a body over `max_bytes`, a status other than 200, or a URL curl cannot fetch;
// Unavailable for a network failure or timeout.
Result<std::string> HttpsGet(const std::string& url, const HttpsFetchLimits& limits);

}  // namespace cortex
