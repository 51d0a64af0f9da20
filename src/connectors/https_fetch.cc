#include "connectors/https_fetch.h"

#include <curl/curl.h>

#include <mutex>

namespace cortex {
namespace {

struct Sink {
  std::string body;
  size_t max_bytes = 0;
  bool too_large = false;
};

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

Result<std::string> HttpsGet(const std::string& url, const HttpsFetchLimits& limits) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Status::Unavailable("curl_easy_init failed");
  Sink sink;
  sink.max_bytes = limits.max_bytes;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(limits.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXFILESIZE, static_cast<long>(limits.max_bytes));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  if (!limits.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, limits.ca_file.c_str());
  CURLcode rc = curl_easy_perform(curl);
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(curl);
  std::string limit = std::to_string(limits.max_bytes) + " bytes";
  if (sink.too_large || rc == CURLE_FILESIZE_EXCEEDED) {
    return Status::InvalidArgument("the document exceeds " + limit);
  }
  if (rc == CURLE_UNSUPPORTED_PROTOCOL) return Status::InvalidArgument("only https:// is fetched");
  if (rc != CURLE_OK) return Status::Unavailable(curl_easy_strerror(rc));
  if (code != 200) return Status::InvalidArgument("HTTP " + std::to_string(code));
  return sink.body;
}

}  // namespace cortex
