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
  // Connect to loopback, private, link-local and other non-public addresses too. Off: such
  // an address is refused after the name is resolved, so a document URL cannot make the
  // server reach into its own network (nor a name that resolves there).
  bool private_addresses = false;
};

// Whether `ip` (a numeric IPv4 or IPv6 address) is a public unicast address: not
// unspecified, loopback, private (RFC 1918, unique local), shared (100.64/10), link-local,
// multicast, reserved or documentation, also when written as IPv4-mapped IPv6.
bool IsPublicAddress(const std::string& ip);

// GETs `url` over HTTPS only (no redirects, no other protocol). InvalidArgument, saying why,
// for a body over `max_bytes`, a status other than 200, a URL curl cannot fetch, or a host
// whose address is not public (unless `private_addresses`);
// Unavailable for a network failure or timeout.
Result<std::string> HttpsGet(const std::string& url, const HttpsFetchLimits& limits);

}  // namespace cortex
