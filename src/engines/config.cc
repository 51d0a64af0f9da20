#include "engines/config.h"

#include <toml++/toml.h>

#include <set>

namespace cortex {
namespace {

std::string Key(const char* section, const char* key) {
  std::string out = "config: ";
  out += section;
  out += '.';
  out += key;
  return out;
}

Status Unknown(const toml::table& table, const std::string& where,
               const std::set<std::string>& known) {
  for (const auto& [key, value] : table) {
    if (!known.count(std::string(key.str()))) {
      return Status::InvalidArgument("config: unknown key '" + where + std::string(key.str()) +
                                     "'");
    }
  }
  return Status::Ok();
}

template <typename T>
Status Get(const toml::table& t, const char* section, const char* key, T* out, T min, T max) {
  const toml::node* node = t[section][key].node();
  if (node == nullptr) return Status::Ok();
  std::optional<T> v = node->value<T>();
  if (!v || *v < min || *v > max) {
    std::string msg = Key(section, key);
    msg += " must be between " + std::to_string(min) + " and " + std::to_string(max);
    return Status::InvalidArgument(msg);
  }
  *out = *v;
  return Status::Ok();
}

Status GetBool(const toml::table& t, const char* section, const char* key, bool* out) {
  const toml::node* node = t[section][key].node();
  if (node == nullptr) return Status::Ok();
  auto v = node->value_exact<bool>();
  if (!v) return Status::InvalidArgument(Key(section, key) + " must be true or false");
  *out = *v;
  return Status::Ok();
}

Status GetString(const toml::table& t, const char* section, const char* key, std::string* out) {
  const toml::node* node = t[section][key].node();
  if (node == nullptr) return Status::Ok();
  auto v = node->value<std::string>();
  if (!v) {
    std::string msg = Key(section, key);
    msg += " must be a string";
    return Status::InvalidArgument(msg);
  }
  *out = *v;
  return Status::Ok();
}

}  // namespace

Result<EngineConfig> LoadConfig(const std::string& path) {
  EngineConfig config;
  if (path.empty()) return config;
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument("config " + path + " line " +
                                   std::to_string(e.source().begin.line) + ": " +
                                   std::string(e.description()));
  }
  CORTEX_RETURN_IF_ERROR(Unknown(
      t, "", {"actions", "trust", "delivery", "drafter", "quotas", "http", "push", "learning"}));
  if (auto* a = t["learning"].as_table()) {
    CORTEX_RETURN_IF_ERROR(Unknown(
        *a, "learning.", {"while_serving", "settle_seconds", "every_hours", "auto_accept_strong"}));
  }
  CORTEX_RETURN_IF_ERROR(GetBool(t, "learning", "while_serving", &config.learning_serve.enabled));
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "learning", "settle_seconds",
                                      &config.learning_serve.settle_seconds, 1, 86400));
  CORTEX_RETURN_IF_ERROR(
      Get<int64_t>(t, "learning", "every_hours", &config.learning_serve.every_hours, 1, 720));
  if (auto* a = t["drafter"].as_table()) {
    CORTEX_RETURN_IF_ERROR(
        Unknown(*a, "drafter.", {"kind", "url", "model", "api_key", "timeout_seconds"}));
  }
  if (auto* a = t["quotas"].as_table()) {
    std::set<std::string> names;
    for (const QuotaField& f : kQuotaFields) names.insert(f.name);
    CORTEX_RETURN_IF_ERROR(Unknown(*a, "quotas.", names));
  }
  for (const QuotaField& f : kQuotaFields) {
    CORTEX_RETURN_IF_ERROR(
        Get<int64_t>(t, "quotas", f.name, &(config.actions.quotas.*(f.value)), 0, kMaxQuotaValue));
  }
  if (auto* a = t["http"].as_table()) {
    CORTEX_RETURN_IF_ERROR(Unknown(
        *a, "http.",
        {"read_timeout_seconds", "idle_timeout_seconds", "max_connections",
         "max_connections_per_address", "flood_requests_per_second", "flood_burst", "max_sessions",
         "max_sessions_per_workspace", "max_sessions_per_token", "metrics_token"}));
  }
  HttpLimits& h = config.http;
  int64_t read_s = h.read_timeout.count(), idle_s = h.idle_timeout.count();
  int64_t conns = static_cast<int64_t>(h.max_connections);
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "http", "read_timeout_seconds", &read_s, 1, 3600));
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "http", "idle_timeout_seconds", &idle_s, 1, 3600));
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "http", "max_connections", &conns, 1, 100000));
  CORTEX_RETURN_IF_ERROR(
      Get<int64_t>(t, "http", "flood_requests_per_second", &h.flood_rate, 0, 10'000'000));
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "http", "flood_burst", &h.flood_burst, 1, 10'000'000));
  h.read_timeout = std::chrono::seconds(read_s);
  h.idle_timeout = std::chrono::seconds(idle_s);
  h.max_connections = static_cast<size_t>(conns);
  int64_t per_address = static_cast<int64_t>(h.max_connections_per_address);
  CORTEX_RETURN_IF_ERROR(
      Get<int64_t>(t, "http", "max_connections_per_address", &per_address, 1, 100000));
  h.max_connections_per_address = static_cast<size_t>(per_address);
  int64_t sessions = static_cast<int64_t>(h.sessions.total);
  int64_t ws_sessions = static_cast<int64_t>(h.sessions.per_workspace);
  int64_t token_sessions = static_cast<int64_t>(h.sessions.per_token);
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "http", "max_sessions", &sessions, 1, 10'000'000));
  CORTEX_RETURN_IF_ERROR(
      Get<int64_t>(t, "http", "max_sessions_per_workspace", &ws_sessions, 1, 10'000'000));
  CORTEX_RETURN_IF_ERROR(
      Get<int64_t>(t, "http", "max_sessions_per_token", &token_sessions, 1, 10'000'000));
  h.sessions.total = static_cast<size_t>(sessions);
  h.sessions.per_workspace = static_cast<size_t>(ws_sessions);
  h.sessions.per_token = static_cast<size_t>(token_sessions);
  CORTEX_RETURN_IF_ERROR(GetString(t, "http", "metrics_token", &h.metrics_token));
  DrafterConfig& d = config.actions.drafter;
  CORTEX_RETURN_IF_ERROR(GetString(t, "drafter", "kind", &d.kind));
  CORTEX_RETURN_IF_ERROR(GetString(t, "drafter", "url", &d.url));
  CORTEX_RETURN_IF_ERROR(GetString(t, "drafter", "model", &d.model));
  CORTEX_RETURN_IF_ERROR(GetString(t, "drafter", "api_key", &d.api_key));
  int64_t dt = d.timeout_seconds;
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "drafter", "timeout_seconds", &dt, 1, 300));
  d.timeout_seconds = static_cast<int>(dt);
  if (d.kind != "builtin" && d.kind != "openai") {
    return Status::InvalidArgument("config: drafter.kind must be builtin or openai");
  }
  if (d.kind == "openai" && (d.url.empty() || d.model.empty())) {
    return Status::InvalidArgument(
        "config: drafter.kind = \"openai\" needs drafter.url and "
        "drafter.model");
  }
  if (auto* a = t["actions"].as_table()) {
    CORTEX_RETURN_IF_ERROR(Unknown(
        *a, "actions.", {"draft_expiry_minutes", "undo_window_seconds", "approve_in_client"}));
  }
  if (auto* a = t["trust"].as_table()) {
    CORTEX_RETURN_IF_ERROR(Unknown(*a, "trust.", {"default_level", "approvals_to_raise"}));
  }
  if (auto* a = t["delivery"].as_table()) {
    CORTEX_RETURN_IF_ERROR(Unknown(*a, "delivery.",
                                   {"connector", "jsonl_path", "webhook_url", "webhook_secret",
                                    "max_attempts", "timeout_seconds", "lease_seconds", "smtp_url",
                                    "smtp_from", "smtp_user", "smtp_password"}));
  }
  int64_t expiry = config.actions.draft_expiry.count() / 60;
  int64_t undo = config.actions.undo_window.count();
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "actions", "draft_expiry_minutes", &expiry, 1, 525600));
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "actions", "undo_window_seconds", &undo, 1, 86400));
  config.actions.draft_expiry = std::chrono::minutes(expiry);
  config.actions.undo_window = std::chrono::seconds(undo);
  CORTEX_RETURN_IF_ERROR(
      GetBool(t, "actions", "approve_in_client", &config.actions.approve_in_client));
  int64_t level = config.actions.trust.default_level,
          raise = config.actions.trust.approvals_to_raise;
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "trust", "default_level", &level, 0, 3));
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "trust", "approvals_to_raise", &raise, 1, 1000));
  config.actions.trust.default_level = static_cast<int>(level);
  config.actions.trust.approvals_to_raise = static_cast<int>(raise);
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "connector", &config.delivery.connector));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "jsonl_path", &config.delivery.jsonl_path));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "webhook_url", &config.delivery.webhook_url));
  CORTEX_RETURN_IF_ERROR(
      GetString(t, "delivery", "webhook_secret", &config.delivery.webhook_secret));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "smtp_url", &config.delivery.smtp_url));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "smtp_from", &config.delivery.smtp_from));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "smtp_user", &config.delivery.smtp_user));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "smtp_password", &config.delivery.smtp_password));
  int64_t attempts = config.delivery.max_attempts, timeout = config.delivery.timeout_seconds;
  int64_t lease = config.delivery.lease_seconds;
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "delivery", "max_attempts", &attempts, 1, 100));
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "delivery", "timeout_seconds", &timeout, 1, 300));
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "delivery", "lease_seconds", &lease, 2, 3600));
  if (lease <= timeout) {
    return Status::InvalidArgument(
        "config: delivery.lease_seconds must exceed "
        "delivery.timeout_seconds");
  }
  config.delivery.lease_seconds = static_cast<int>(lease);
  config.delivery.max_attempts = static_cast<int>(attempts);
  config.delivery.timeout_seconds = static_cast<int>(timeout);
  if (auto* a = t["push"].as_table()) {
    CORTEX_RETURN_IF_ERROR(Unknown(*a, "push.", {"webhook_url", "webhook_secret"}));
  }
  CORTEX_RETURN_IF_ERROR(GetString(t, "push", "webhook_url", &config.push.webhook_url));
  CORTEX_RETURN_IF_ERROR(GetString(t, "push", "webhook_secret", &config.push.webhook_secret));
  if (config.push.webhook_url.empty() != config.push.webhook_secret.empty()) {
    return Status::InvalidArgument(
        "config: push needs both push.webhook_url and push.webhook_secret (events are signed)");
  }
  // Pushes are delivered as messages are: same attempts, timeout and lease.
  config.push.connector = config.push.webhook_url.empty() ? "" : "webhook";
  config.push.max_attempts = config.delivery.max_attempts;
  config.push.timeout_seconds = config.delivery.timeout_seconds;
  config.push.lease_seconds = config.delivery.lease_seconds;
  return config;
}

}  // namespace cortex
