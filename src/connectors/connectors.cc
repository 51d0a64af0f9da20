#include <curl/curl.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <mutex>

#include "connectors/connector.h"
#include "connectors/mime.h"
#include "core/crypto.h"
#include "core/json_text.h"
#include "core/time.h"
#include "store/outbox.h"

namespace cortex {

std::string DeliveryBody(const OutboxItem& item) {
  switch (item.kind) {
    case OutboxKind::kEvent:
      return item.body;  // already the event's JSON (engines/delivery/pushes.h)
    case OutboxKind::kDigest:
      return DumpJson({{"type", "digest"},
                       {"digest_id", item.id},
                       {"workspace_id", item.workspace_id},
                       {"to", item.recipient},
                       {"body", item.body},
                       {"queued_at", FormatTime(item.created_at)}});
    case OutboxKind::kMessage:
      break;
  }
  return DumpJson({{"type", "message"},
                   {"action_id", item.id},
                   {"workspace_id", item.workspace_id},
                   {"to", item.recipient},
                   {"body", item.body},
                   {"queued_at", FormatTime(item.created_at)}});
}

namespace {

class OutboxConnector final : public Connector {
 public:
  OutboxConnector(Store& store, const Clock& clock, std::string jsonl)
      : store_(store), clock_(clock), jsonl_(std::move(jsonl)) {}
  const char* name() const override { return "outbox"; }

  Status Deliver(const OutboxItem& item) override {
    bool first = false;
    CORTEX_RETURN_IF_ERROR(store_.Write([&](WriteTx& tx) {
      auto added = tx.outbox().RecordDelivered(item, clock_.Now());
      if (!added.ok()) return added.status();
      first = *added;
      return Status::Ok();
    }));
    if (first && !jsonl_.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      std::ofstream out(jsonl_, std::ios::app);
      out << DeliveryBody(item) << "\n";
      out.flush();
      if (!out) return Status::Unavailable("cannot append to " + jsonl_);
    }
    return Status::Ok();
  }

 private:
  Store& store_;
  const Clock& clock_;
  std::string jsonl_;
  std::mutex mu_;
};

// An address SMTP can deliver to: local@domain, printable ASCII or UTF-8, no spaces or
// brackets (identifiers are normalised before they get here, docs/ingest.md).
bool IsMailAddress(const std::string& a) {
  size_t at = a.find('@');
  if (at == 0 || at == std::string::npos || at + 1 >= a.size()) return false;
  for (char c : a) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f || c == '<' || c == '>' || c == ',') return false;
  }
  return true;
}

size_t Discard(char*, size_t size, size_t n, void*) { return size * n; }

class WebhookConnector final : public Connector {
 public:
  explicit WebhookConnector(DeliveryConfig config) : config_(std::move(config)) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }
  const char* name() const override { return "webhook"; }

  Status Deliver(const OutboxItem& item) override {
    std::string body = DeliveryBody(item);
    CURL* curl = curl_easy_init();
    if (curl == nullptr) return Status::Unavailable("curl_easy_init failed");
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, ("Idempotency-Key: " + item.id).c_str());
    std::string event = "X-Cortex-Event: ";
    event += item.kind == OutboxKind::kEvent ? item.recipient : std::string(Name(item.kind));
    headers = curl_slist_append(headers, event.c_str());
    headers = curl_slist_append(
        headers,
        ("X-Cortex-Signature: sha256=" + HmacSha256Hex(config_.webhook_secret, body)).c_str());
    curl_easy_setopt(curl, CURLOPT_URL, config_.webhook_url.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(config_.timeout_seconds));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Discard);
    CURLcode rc = curl_easy_perform(curl);
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    if (rc != CURLE_OK)
      return Status::Unavailable(std::string("webhook: ") + curl_easy_strerror(rc));
    if (code >= 400 && code <= 499 && code != 408 && code != 425 && code != 429) {
      // The receiver refuses this request for good; sending it again cannot help.
      return Status::InvalidArgument("webhook answered HTTP " + std::to_string(code) +
                                     " (permanent)");
    }
    if (code < 200 || code > 299) {
      return Status::Unavailable("webhook answered HTTP " + std::to_string(code));
    }
    return Status::Ok();
  }

 private:
  DeliveryConfig config_;
};

struct Upload {
  std::string data;
  size_t pos = 0;
};

size_t ReadUpload(char* buffer, size_t size, size_t n, void* userp) {
  auto* up = static_cast<Upload*>(userp);
  size_t len = std::min(size * n, up->data.size() - up->pos);
  std::memcpy(buffer, up->data.data() + up->pos, len);
  up->pos += len;
  return len;
}

class SmtpConnector final : public Connector {
 public:
  explicit SmtpConnector(DeliveryConfig config) : config_(std::move(config)) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }
  const char* name() const override { return "smtp"; }

  Status Deliver(const OutboxItem& item) override {
    if (!IsMailAddress(item.recipient)) {
      return Status::InvalidArgument("smtp: " + item.recipient +
                                     " is not an email address; mail cannot reach it");
    }
    Upload up;
    up.data = ComposeMail(item, config_.smtp_from, std::chrono::system_clock::now());
    CURL* curl = curl_easy_init();
    if (curl == nullptr) return Status::Unavailable("curl_easy_init failed");
    char error[CURL_ERROR_SIZE] = {0};
    curl_slist* rcpt = curl_slist_append(nullptr, ("<" + item.recipient + ">").c_str());
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_URL, config_.smtp_url.c_str());
    // smtp:// must upgrade with STARTTLS (a server that does not offer it is refused)
    // unless smtp_tls = "none"; smtps:// is TLS from the first byte.
    curl_easy_setopt(curl, CURLOPT_USE_SSL,
                     config_.smtp_tls == "none" ? CURLUSESSL_NONE : CURLUSESSL_ALL);
    if (!config_.smtp_ca_file.empty()) {
      curl_easy_setopt(curl, CURLOPT_CAINFO, config_.smtp_ca_file.c_str());
    }
    curl_easy_setopt(curl, CURLOPT_MAIL_FROM, ("<" + config_.smtp_from + ">").c_str());
    curl_easy_setopt(curl, CURLOPT_MAIL_RCPT, rcpt);
    if (!config_.smtp_user.empty()) {
      curl_easy_setopt(curl, CURLOPT_USERNAME, config_.smtp_user.c_str());
      curl_easy_setopt(curl, CURLOPT_PASSWORD, config_.smtp_password.c_str());
    }
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, ReadUpload);
    curl_easy_setopt(curl, CURLOPT_READDATA, &up);
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(config_.timeout_seconds));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(curl);
    long code = 0;  // the SMTP server's last reply code
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(rcpt);
    curl_easy_cleanup(curl);
    if (rc == CURLE_OK) return Status::Ok();
    std::string why = std::string("smtp: ") + (error[0] != 0 ? error : curl_easy_strerror(rc));
    if (code >= 500 && code <= 599) {
      // 5xx: the server refuses for good (unknown mailbox, rejected sender, bad login).
      return Status::InvalidArgument(why + " (SMTP " + std::to_string(code) + ", permanent)");
    }
    if (code >= 400 && code <= 499) why += " (SMTP " + std::to_string(code) + ", temporary)";
    return Status::Unavailable(why);
  }

 private:
  DeliveryConfig config_;
};

}  // namespace

std::unique_ptr<Connector> MakeSmtpConnector(const DeliveryConfig& config) {
  return std::make_unique<SmtpConnector>(config);
}

std::unique_ptr<Connector> MakeOutboxConnector(Store& store, const Clock& clock,
                                               const DeliveryConfig& config) {
  return std::make_unique<OutboxConnector>(store, clock, config.jsonl_path);
}

std::unique_ptr<Connector> MakeWebhookConnector(const DeliveryConfig& config) {
  return std::make_unique<WebhookConnector>(config);
}

Result<std::unique_ptr<Connector>> MakeConnector(Store& store, const Clock& clock,
                                                 const DeliveryConfig& config) {
  if (config.connector == "outbox") return MakeOutboxConnector(store, clock, config);
  if (config.connector == "webhook") {
    if (config.webhook_url.empty() || config.webhook_secret.empty()) {
      return Status::InvalidArgument(
          "the webhook connector needs delivery.webhook_url and "
          "delivery.webhook_secret");
    }
    return MakeWebhookConnector(config);
  }
  if (config.connector == "smtp") {
    if (config.smtp_url.empty() || config.smtp_from.empty()) {
      return Status::InvalidArgument(
          "the smtp connector needs delivery.smtp_url and "
          "delivery.smtp_from");
    }
    return MakeSmtpConnector(config);
  }
  return Status::InvalidArgument("unknown connector '" + config.connector +
                                 "' (outbox, webhook, smtp)");
}

}  // namespace cortex
