#include "connectors/model_drafter.h"

#include <curl/curl.h>

#include <mutex>
#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace cortex {
namespace {

constexpr size_t kMaxResponseBytes = 1 << 20;

size_t Collect(char* data, size_t size, size_t n, void* userp) {
  auto* out = static_cast<std::string*>(userp);
  if (out->size() + size * n > kMaxResponseBytes) return 0;  // abort: too large
  out->append(data, size * n);
  return size * n;
}

}  // namespace

Result<std::string> DraftWithModel(const DrafterConfig& config, const std::string& message,
                                   const std::string& tone, const std::string& context,
                                   const std::string& recipient_name) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::string instructions =
      "You draft short messages on behalf of the user. Rewrite the user's message to " +
      recipient_name + (tone.empty() ? std::string("") : " in a " + tone + " tone") +
      ". Keep its meaning and facts; add nothing else. Reply with the message text only.";
  std::string user = message;
  if (!context.empty()) user += "\n\n(Context, do not quote: " + context + ")";
  nlohmann::json request = {
      {"model", config.model},
      {"temperature", 0},
      {"messages",
       {{{"role", "system"}, {"content", instructions}}, {{"role", "user"}, {"content", user}}}}};
  std::string body = DumpJson(request), response;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Status::Unavailable("curl_easy_init failed");
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  if (!config.api_key.empty()) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + config.api_key).c_str());
  }
  curl_easy_setopt(curl, CURLOPT_URL, config.url.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(config.timeout_seconds));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
  CURLcode rc = curl_easy_perform(curl);
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) return Status::Unavailable(std::string("model: ") + curl_easy_strerror(rc));
  if (code != 200) return Status::Unavailable("model answered HTTP " + std::to_string(code));
  nlohmann::json doc = nlohmann::json::parse(response, nullptr, false);
  const nlohmann::json* content = nullptr;
  if (doc.is_object() && doc.contains("choices") && doc["choices"].is_array() &&
      !doc["choices"].empty()) {
    const nlohmann::json& first = doc["choices"][0];
    if (first.is_object() && first.contains("message") && first["message"].is_object() &&
        first["message"].contains("content") && first["message"]["content"].is_string()) {
      content = &first["message"]["content"];
    }
  }
  if (content == nullptr || content->get_ref<const std::string&>().empty()) {
    return Status::Unavailable("model: the answer has no choices[0].message.content");
  }
  return content->get<std::string>();
}

}  // namespace cortex
