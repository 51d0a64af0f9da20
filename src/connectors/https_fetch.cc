#include "connectors/https_fetch.h"

#include <arpa/inet.h>
#include <curl/curl.h>

#include <algorithm>
#include <cstdint>
#include <mutex>

namespace cortex {
namespace {

struct Sink {
  std::string body;
  size_t max_bytes = 0;
  bool too_large = false;
  bool private_addresses = false;
  std::string refused_ip;  // the non-public address the name led to, if refused
};

// `a` in host order; whether it is in a.b.c.d/bits.
bool In(uint32_t a, uint32_t net, int bits) {
  uint32_t mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
  return (a & mask) == (net & mask);
}

bool IsPublicV4(uint32_t a) {
  static constexpr struct {
    uint32_t net;
    int bits;
  } kNotPublic[] = {
      {0x00000000, 8},   // "this network"
      {0x0A000000, 8},   // 10/8, private
      {0x64400000, 10},  // 100.64/10, shared (carrier-grade NAT)
      {0x7F000000, 8},   // loopback
      {0xA9FE0000, 16},  // 169.254/16, link-local (cloud metadata services live here)
      {0xAC100000, 12},  // 172.16/12, private
      {0xC0000000, 24},  // 192.0.0/24, protocol assignments
      {0xC0000200, 24},  // 192.0.2/24, documentation
      {0xC0A80000, 16},  // 192.168/16, private
      {0xC6120000, 15},  // 198.18/15, benchmarking
      {0xC6336400, 24},  // 198.51.100/24, documentation
      {0xCB007100, 24},  // 203.0.113/24, documentation
      {0xE0000000, 3},   // multicast, reserved, broadcast
  };
  for (const auto& n : kNotPublic) {
    if (In(a, n.net, n.bits)) return false;
  }
  return true;
}

// Called by curl once connected, before the request is sent: the address actually reached
// is checked, so a name that resolves (or re-resolves) to an internal address is refused.
int CheckPeer(void* user, char* ip, char*, int, int) {
  auto* sink = static_cast<Sink*>(user);
  if (sink->private_addresses || IsPublicAddress(ip)) return CURL_PREREQFUNC_OK;
  sink->refused_ip = ip;
  return CURL_PREREQFUNC_ABORT;
}

size_t Collect(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  if (sink->body.size() + size * n > sink->max_bytes) {
    sink->too_large = true;
    return 0;  // stops the transfer: curl reports a write error
  }
  sink->body.append(data, size * n);
  return size * n;
}

}  // namespace

bool IsPublicAddress(const std::string& ip) {
  in_addr v4{};
  if (inet_pton(AF_INET, ip.c_str(), &v4) == 1) return IsPublicV4(ntohl(v4.s_addr));
  in6_addr v6{};
  if (inet_pton(AF_INET6, ip.c_str(), &v6) != 1) return false;
  const uint8_t* b = v6.s6_addr;
  auto v4_in_last = [&] {
    return IsPublicV4(uint32_t{b[12]} << 24 | uint32_t{b[13]} << 16 | uint32_t{b[14]} << 8 |
                      uint32_t{b[15]});
  };
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static constexpr uint8_t kNat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::equal(b, b + 12, kMapped) || std::equal(b, b + 12, kNat64)) return v4_in_last();
  if ((b[0] & 0xe0) != 0x20) return false;  // only 2000::/3 is global unicast
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return false;  // docs
  if (b[0] == 0x20 && b[1] == 0x02) {  // 6to4: the IPv4 address is in bytes 2..5
    return IsPublicV4(uint32_t{b[2]} << 24 | uint32_t{b[3]} << 16 | uint32_t{b[4]} << 8 |
                      uint32_t{b[5]});
  }
  return true;
}

Result<std::string> HttpsGet(const std::string& url, const HttpsFetchLimits& limits) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Status::Unavailable("curl_easy_init failed");
  Sink sink;
  sink.max_bytes = limits.max_bytes;
  sink.private_addresses = limits.private_addresses;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(limits.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXFILESIZE, static_cast<long>(limits.max_bytes));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_PREREQFUNCTION, CheckPeer);
  curl_easy_setopt(curl, CURLOPT_PREREQDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_PROXY, "");  // no proxy from the environment: the peer is checked
  if (!limits.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, limits.ca_file.c_str());
  CURLcode rc = curl_easy_perform(curl);
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(curl);
  std::string limit = std::to_string(limits.max_bytes) + " bytes";
  if (!sink.refused_ip.empty()) {
    return Status::InvalidArgument("the host resolves to " + sink.refused_ip +
                                   ", which is not a public address");
  }
  if (sink.too_large || rc == CURLE_FILESIZE_EXCEEDED) {
    return Status::InvalidArgument("the document exceeds " + limit);
  }
  if (rc == CURLE_UNSUPPORTED_PROTOCOL) return Status::InvalidArgument("only https:// is fetched");
  if (rc != CURLE_OK) return Status::Unavailable(curl_easy_strerror(rc));
  if (code != 200) return Status::InvalidArgument("HTTP " + std::to_string(code));
  return sink.body;
}

}  // namespace cortex
