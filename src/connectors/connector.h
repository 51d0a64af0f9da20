// Connectors deliver outbox rows: executed actions' messages to the world, daily digests
// and pushed events to the person. Delivery is at-least-once; the row's id (an action's,
// a digest decision's, an event's) is the idempotency key, so a connector (or its
// receiver) makes it effectively once.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "store/store.h"

namespace cortex {

class Connector {
 public:
  virtual ~Connector() = default;
  virtual const char* name() const = 0;
  // Delivers one message. OK means the receiver has it. InvalidArgument means it never
  // will (an SMTP 5xx, a webhook 4xx, an address the channel cannot reach): the message
  // fails at once. Any other error is retried later, with backoff.
  virtual Status Deliver(const OutboxItem& item) = 0;
};

struct DeliveryConfig {
  std::string connector = "outbox";  // outbox | webhook | smtp
  std::string jsonl_path;            // outbox: also append each delivery here, if set
  std::string webhook_url;           // webhook: where to POST
  std::string webhook_secret;        // webhook: HMAC-SHA256 key for X-Cortex-Signature
  std::string smtp_url;              // smtp: e.g. smtp://127.0.0.1:2525 or smtps://host:465
  std::string smtp_from;             // smtp: the envelope and From: address
  std::string smtp_user;             // smtp: optional login (AUTH)
  std::string smtp_password;         // from smtp_password, _file or _env (config.cc)
  // smtp://: "starttls" (required) or "none"; smtps:// is TLS throughout.
  std::string smtp_tls = "starttls";
  std::string smtp_ca_file;  // smtp: trust these CAs too (PEM), e.g. a private CA
  int max_attempts = 8;      // then the action is marked failed
  int timeout_seconds = 10;  // per webhook attempt
  int lease_seconds = 60;    // a row being delivered is retried after this if its
                             // process died mid-delivery (> timeout_seconds)
};

// The embedded default: delivered messages are kept in the store (and appended to a JSONL
// file if configured).
std::unique_ptr<Connector> MakeOutboxConnector(Store& store, const Clock& clock,
                                               const DeliveryConfig& config);

// HTTP POST of a JSON body signed with HMAC-SHA256 (header X-Cortex-Signature:
// sha256=<hex>) and carrying Idempotency-Key: <row id> and X-Cortex-Event: message,
// digest or the event's type. 2xx is delivered.
std::unique_ptr<Connector> MakeWebhookConnector(const DeliveryConfig& config);

// Real email through an SMTP server (libcurl). The Message-ID carries the action id, so a
// receiver can drop a retried duplicate.
std::unique_ptr<Connector> MakeSmtpConnector(const DeliveryConfig& config);

// The connector `config` names. InvalidArgument for an unknown one or missing settings.
Result<std::unique_ptr<Connector>> MakeConnector(Store& store, const Clock& clock,
                                                 const DeliveryConfig& config);

// The JSON body a connector sends for `item`.
std::string DeliveryBody(const OutboxItem& item);

}  // namespace cortex
