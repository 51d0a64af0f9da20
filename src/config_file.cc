#include "config_file.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <vector>

namespace cortex {
namespace {

std::string Key(const char* section, const char* key) {
  std::string out = "config: ";
  out += section;
  out += '.';
  out += key;
  return out;
}

// Levenshtein distance of two short keys (config keys are a few dozen characters).
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

Status Unknown(const toml::table& table, const std::string& where,
               const std::set<std::string>& known) {
  for (const auto& [key, value] : table) {
    const std::string name(key.str());
    if (known.count(name)) continue;
    std::string msg = "config: unknown key '" + where + name + "'";
    // The nearest known key, if it is a typo away (at most 2 edits, fewer for short keys).
    const std::string* nearest = nullptr;
    size_t best = std::min<size_t>(2, name.size() / 3) + 1;
    for (const std::string& k : known) {
      size_t d = EditDistance(name, k);
      if (d < best) best = d, nearest = &k;
    }
    if (nearest != nullptr) msg += "; did you mean '" + where + *nearest + "'?";
    return Status::InvalidArgument(msg);
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

Status ReadStrings(const toml::table& t, const std::string& where, const char* key,
                   std::vector<std::string>* out) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return Status::Ok();
  const toml::array* a = node->as_array();
  std::string name = "config: " + where + key;
  if (a == nullptr) return Status::InvalidArgument(name + " must be an array of strings");
  out->clear();
  for (const toml::node& v : *a) {
    auto s = v.value<std::string>();
    if (!s || s->empty()) return Status::InvalidArgument(name + " must hold non-empty strings");
    for (char c : *s) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        return Status::InvalidArgument(name + ": a value holds a control character");
      }
    }
    out->push_back(*s);
  }
  return Status::Ok();
}

Status ReadAccountInt(const toml::table& t, const std::string& where, const char* key, int* out,
                      int64_t min, int64_t max) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return Status::Ok();
  auto v = node->value<int64_t>();
  if (!v || *v < min || *v > max) {
    return Status::InvalidArgument("config: " + where + key + " must be between " +
                                   std::to_string(min) + " and " + std::to_string(max));
  }
  *out = static_cast<int>(*v);
  return Status::Ok();
}

Status ReadAccountString(const toml::table& t, const std::string& where, const char* key,
                         std::string* out) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return Status::Ok();
  auto v = node->value<std::string>();
  if (!v) return Status::InvalidArgument("config: " + where + key + " must be a string");
  *out = *v;
  return Status::Ok();
}

std::string Lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// [[connectors.calendar]] tables (docs/connectors.md).
Status LoadCalendars(const toml::table& c, EngineConfig* config) {
  const toml::node* node = c.get("calendar");
  if (node == nullptr) return Status::Ok();
  const toml::array* accounts = node->as_array();
  if (accounts == nullptr) {
    return Status::InvalidArgument(
        "config: connectors.calendar must be an array of tables ([[connectors.calendar]])");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < accounts->size(); ++i) {
    const toml::table* a = (*accounts)[i].as_table();
    std::string where = "connectors.calendar[" + std::to_string(i) + "].";
    if (a == nullptr) return Status::InvalidArgument("config: " + where + " must be a table");
    CORTEX_RETURN_IF_ERROR(
        Unknown(*a, where,
                {"workspace", "url", "protocol", "username", "password", "password_file",
                 "password_env", "ca_file", "focus", "self", "past_days", "future_days",
                 "poll_seconds", "timeout_seconds"}));
    CalendarAccount acc;
    std::string password, file, env;
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "workspace", &acc.workspace));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "url", &acc.url));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "protocol", &acc.protocol));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "username", &acc.username));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "password", &password));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "password_file", &file));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "password_env", &env));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "ca_file", &acc.ca_file));
    CORTEX_RETURN_IF_ERROR(ReadStrings(*a, where, "focus", &acc.focus));
    CORTEX_RETURN_IF_ERROR(ReadStrings(*a, where, "self", &acc.self));
    CORTEX_RETURN_IF_ERROR(ReadAccountInt(*a, where, "past_days", &acc.past_days, 0, 3650));
    CORTEX_RETURN_IF_ERROR(ReadAccountInt(*a, where, "future_days", &acc.future_days, 1, 3650));
    CORTEX_RETURN_IF_ERROR(ReadAccountInt(*a, where, "poll_seconds", &acc.poll_seconds, 1, 86400));
    CORTEX_RETURN_IF_ERROR(
        ReadAccountInt(*a, where, "timeout_seconds", &acc.timeout_seconds, 1, 300));
    if (acc.workspace.empty() || acc.url.empty()) {
      return Status::InvalidArgument("config: " + where + " needs workspace and url");
    }
    bool file_url = acc.url.rfind("file://", 0) == 0;
    if (!file_url && acc.url.rfind("https://", 0) != 0 && acc.url.rfind("http://", 0) != 0) {
      return Status::InvalidArgument("config: " + where +
                                     "url must start with https://, http:// or file://");
    }
    if (acc.protocol.empty()) {
      std::string path = acc.url.substr(0, acc.url.find_first_of("?#"));
      bool ics = path.size() >= 4 && Lower(path.substr(path.size() - 4)) == ".ics";
      acc.protocol = file_url || ics ? "ics" : "caldav";
    }
    if (acc.protocol != "ics" && acc.protocol != "caldav") {
      return Status::InvalidArgument("config: " + where + "protocol must be \"ics\" or \"caldav\"");
    }
    if (acc.protocol == "caldav" && file_url) {
      return Status::InvalidArgument("config: " + where + "a CalDAV url is https:// or http://");
    }
    auto secret = ReadSecret(where + "password", password, file, env);
    if (!secret.ok()) return secret.status();
    acc.password = std::move(*secret);
    if (!acc.password.empty() && acc.username.empty()) {
      return Status::InvalidArgument("config: " + where + " has a password but no username");
    }
    for (std::string& w : acc.focus) w = Lower(w);
    for (std::string& w : acc.self) w = Lower(w);
    if (acc.self.empty() && acc.username.find('@') != std::string::npos) {
      acc.self.push_back(Lower(acc.username));
    }
    if (!names.insert(acc.workspace + " " + acc.Name()).second) {
      return Status::InvalidArgument("config: " + where + " repeats calendar " + acc.Name() +
                                     " of workspace " + acc.workspace);
    }
    config->calendars.push_back(std::move(acc));
  }
  return Status::Ok();
}

// [[connectors.imap]] tables (docs/connectors.md).
Status LoadConnectors(const toml::table& t, EngineConfig* config) {
  const toml::table* c = t["connectors"].as_table();
  if (c == nullptr) {
    if (t.contains("connectors"))
      return Status::InvalidArgument("config: connectors must be a table");
    return Status::Ok();
  }
  for (const auto& [key, value] : *c) {
    if (key.str() != "imap" && key.str() != "calendar") {
      return Status::InvalidArgument("config: unknown connector 'connectors." +
                                     std::string(key.str()) +
                                     "' (this version reads: imap, calendar)");
    }
  }
  CORTEX_RETURN_IF_ERROR(LoadCalendars(*c, config));
  const toml::node* imap = c->get("imap");
  if (imap == nullptr) return Status::Ok();
  const toml::array* accounts = imap->as_array();
  if (accounts == nullptr) {
    return Status::InvalidArgument(
        "config: connectors.imap must be an array of tables ([[connectors.imap]])");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < accounts->size(); ++i) {
    const toml::table* a = (*accounts)[i].as_table();
    std::string where = "connectors.imap[" + std::to_string(i) + "].";
    if (a == nullptr) return Status::InvalidArgument("config: " + where + " must be a table");
    CORTEX_RETURN_IF_ERROR(Unknown(*a, where,
                                   {"workspace", "url", "username", "password", "password_file",
                                    "password_env", "tls", "ca_file", "received", "sent",
                                    "backfill_days", "poll_seconds", "timeout_seconds", "idle"}));
    ImapAccount acc;
    std::string password, file, env;
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "workspace", &acc.workspace));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "url", &acc.url));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "username", &acc.username));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "password", &password));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "password_file", &file));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "password_env", &env));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "tls", &acc.tls));
    CORTEX_RETURN_IF_ERROR(ReadAccountString(*a, where, "ca_file", &acc.ca_file));
    CORTEX_RETURN_IF_ERROR(ReadStrings(*a, where, "received", &acc.received));
    CORTEX_RETURN_IF_ERROR(ReadStrings(*a, where, "sent", &acc.sent));
    CORTEX_RETURN_IF_ERROR(ReadAccountInt(*a, where, "backfill_days", &acc.backfill_days, 0, 3650));
    CORTEX_RETURN_IF_ERROR(ReadAccountInt(*a, where, "poll_seconds", &acc.poll_seconds, 1, 86400));
    CORTEX_RETURN_IF_ERROR(
        ReadAccountInt(*a, where, "timeout_seconds", &acc.timeout_seconds, 1, 300));
    if (const toml::node* idle = a->get("idle")) {
      auto v = idle->value<bool>();
      if (!v) return Status::InvalidArgument("config: " + where + "idle must be true or false");
      acc.idle = *v;
    }
    if (acc.workspace.empty() || acc.url.empty() || acc.username.empty()) {
      return Status::InvalidArgument("config: " + where + " needs workspace, url and username");
    }
    if (acc.url.rfind("imap://", 0) != 0 && acc.url.rfind("imaps://", 0) != 0) {
      return Status::InvalidArgument("config: " + where +
                                     "url must start with imaps:// (TLS) or imap:// (STARTTLS)");
    }
    if (acc.tls != "starttls" && acc.tls != "none") {
      return Status::InvalidArgument("config: " + where + "tls must be \"starttls\" or \"none\"");
    }
    auto secret = ReadSecret(where + "password", password, file, env);
    if (!secret.ok()) return secret.status();
    if (secret->empty()) {
      return Status::InvalidArgument("config: " + where +
                                     " needs password_file, password_env or password");
    }
    acc.password = std::move(*secret);
    if (!names.insert(acc.workspace + " " + acc.Name()).second) {
      return Status::InvalidArgument("config: " + where + " repeats account " + acc.Name() +
                                     " of workspace " + acc.workspace);
    }
    config->imap.push_back(std::move(acc));
  }
  return Status::Ok();
}

// [learning]'s values (its keys are checked with the top level's).
Status LoadServeLearning(const toml::table& t, EngineConfig::ServeLearning* learning) {
  CORTEX_RETURN_IF_ERROR(GetBool(t, "learning", "while_serving", &learning->enabled));
  CORTEX_RETURN_IF_ERROR(
      Get<int64_t>(t, "learning", "settle_seconds", &learning->settle_seconds, 1, 86400));
  CORTEX_RETURN_IF_ERROR(
      Get<int64_t>(t, "learning", "every_hours", &learning->every_hours, 1, 720));
  return Status::Ok();
}

// [quotas]: the defaults of every workspace's limits.
Status LoadQuotas(const toml::table& t, QuotaLimits* quotas) {
  if (auto* a = t["quotas"].as_table()) {
    std::set<std::string> names;
    for (const QuotaField& f : kQuotaFields) names.insert(f.name);
    CORTEX_RETURN_IF_ERROR(Unknown(*a, "quotas.", names));
  }
  for (const QuotaField& f : kQuotaFields) {
    CORTEX_RETURN_IF_ERROR(
        Get<int64_t>(t, "quotas", f.name, &(quotas->*(f.value)), 0, kMaxQuotaValue));
  }
  return Status::Ok();
}

// [http]: cortex serve's limits, its metrics token and public URL.
Status LoadHttp(const toml::table& t, HttpLimits* http) {
  if (auto* a = t["http"].as_table()) {
    CORTEX_RETURN_IF_ERROR(Unknown(
        *a, "http.",
        {"read_timeout_seconds", "idle_timeout_seconds", "max_connections",
         "max_connections_per_address", "flood_requests_per_second", "flood_burst", "max_sessions",
         "max_sessions_per_workspace", "max_sessions_per_token", "metrics_token", "public_url",
         "client_metadata_ca_file", "client_metadata_private_hosts"}));
  }
  HttpLimits& h = *http;
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
  CORTEX_RETURN_IF_ERROR(GetString(t, "http", "public_url", &h.public_url));
  CORTEX_RETURN_IF_ERROR(
      GetString(t, "http", "client_metadata_ca_file", &h.client_metadata_ca_file));
  CORTEX_RETURN_IF_ERROR(
      GetBool(t, "http", "client_metadata_private_hosts", &h.client_metadata_private_hosts));
  return Status::Ok();
}

// [drafter]'s values (its keys are checked earlier, see LoadConfig).
Status LoadDrafter(const toml::table& t, DrafterConfig* drafter) {
  DrafterConfig& d = *drafter;
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
  return Status::Ok();
}

// [actions]' and [trust]'s values (their keys are checked before).
Status LoadActions(const toml::table& t, ActionConfig* actions) {
  int64_t expiry = actions->draft_expiry.count() / 60;
  int64_t undo = actions->undo_window.count();
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "actions", "draft_expiry_minutes", &expiry, 1, 525600));
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "actions", "undo_window_seconds", &undo, 1, 86400));
  actions->draft_expiry = std::chrono::minutes(expiry);
  actions->undo_window = std::chrono::seconds(undo);
  CORTEX_RETURN_IF_ERROR(GetBool(t, "actions", "approve_in_client", &actions->approve_in_client));
  int64_t level = actions->trust.default_level, raise = actions->trust.approvals_to_raise;
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "trust", "default_level", &level, 0, 3));
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "trust", "approvals_to_raise", &raise, 1, 1000));
  actions->trust.default_level = static_cast<int>(level);
  actions->trust.approvals_to_raise = static_cast<int>(raise);
  return Status::Ok();
}

// [delivery]'s values (its keys are checked before): the outbox's connector.
Status LoadDelivery(const toml::table& t, DeliveryConfig* delivery) {
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "connector", &delivery->connector));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "jsonl_path", &delivery->jsonl_path));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "webhook_url", &delivery->webhook_url));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "webhook_secret", &delivery->webhook_secret));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "smtp_url", &delivery->smtp_url));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "smtp_from", &delivery->smtp_from));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "smtp_user", &delivery->smtp_user));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "smtp_password", &delivery->smtp_password));
  std::string password_file, password_env;
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "smtp_password_file", &password_file));
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "smtp_password_env", &password_env));
  auto password =
      ReadSecret("delivery.smtp_password", delivery->smtp_password, password_file, password_env);
  if (!password.ok()) return password.status();
  delivery->smtp_password = std::move(*password);
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "smtp_tls", &delivery->smtp_tls));
  if (delivery->smtp_tls != "starttls" && delivery->smtp_tls != "none") {
    return Status::InvalidArgument(
        "config: delivery.smtp_tls must be \"starttls\" or \"none\" (smtps:// URLs use "
        "implicit TLS)");
  }
  CORTEX_RETURN_IF_ERROR(GetString(t, "delivery", "smtp_ca_file", &delivery->smtp_ca_file));
  if (!delivery->smtp_url.empty() && delivery->smtp_url.rfind("smtp://", 0) != 0 &&
      delivery->smtp_url.rfind("smtps://", 0) != 0) {
    return Status::InvalidArgument(
        "config: delivery.smtp_url must start with smtp:// (STARTTLS) or smtps:// (TLS)");
  }
  for (char c : delivery->smtp_from) {
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f || c == '<' || c == '>') {
      return Status::InvalidArgument(
          "config: delivery.smtp_from must be a bare address (no spaces, brackets or control "
          "characters)");
    }
  }
  int64_t attempts = delivery->max_attempts, timeout = delivery->timeout_seconds;
  int64_t lease = delivery->lease_seconds;
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "delivery", "max_attempts", &attempts, 1, 100));
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "delivery", "timeout_seconds", &timeout, 1, 300));
  CORTEX_RETURN_IF_ERROR(Get<int64_t>(t, "delivery", "lease_seconds", &lease, 2, 3600));
  if (lease <= timeout) {
    return Status::InvalidArgument(
        "config: delivery.lease_seconds must exceed "
        "delivery.timeout_seconds");
  }
  delivery->lease_seconds = static_cast<int>(lease);
  delivery->max_attempts = static_cast<int>(attempts);
  delivery->timeout_seconds = static_cast<int>(timeout);
  return Status::Ok();
}

// [push]: the webhook events are pushed to (connector and delivery settings: LoadConfig).
Status LoadPush(const toml::table& t, DeliveryConfig* push) {
  if (auto* a = t["push"].as_table()) {
    CORTEX_RETURN_IF_ERROR(Unknown(*a, "push.", {"webhook_url", "webhook_secret"}));
  }
  CORTEX_RETURN_IF_ERROR(GetString(t, "push", "webhook_url", &push->webhook_url));
  CORTEX_RETURN_IF_ERROR(GetString(t, "push", "webhook_secret", &push->webhook_secret));
  if (push->webhook_url.empty() != push->webhook_secret.empty()) {
    return Status::InvalidArgument(
        "config: push needs both push.webhook_url and push.webhook_secret (events are signed)");
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> ReadSecret(const std::string& key, const std::string& inline_value,
                               const std::string& file, const std::string& env) {
  int given = !inline_value.empty() + !file.empty() + !env.empty();
  if (given > 1) {
    return Status::InvalidArgument("config: give one of " + key + ", " + key + "_file and " + key +
                                   "_env");
  }
  if (!env.empty()) {
    const char* v = std::getenv(env.c_str());
    if (v == nullptr) {
      return Status::InvalidArgument("config: " + key + "_env names " + env + ", which is not set");
    }
    return std::string(v);
  }
  if (file.empty()) return inline_value;
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::InvalidArgument("config: cannot read " + key + "_file " + file);
  std::string secret((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A trailing newline (echo secret > file) is not part of the secret.
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  return secret;
}

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
  // The first error found is the one reported: sections are checked in this order, some
  // sections' keys before others' values.
  CORTEX_RETURN_IF_ERROR(Unknown(t, "",
                                 {"actions", "trust", "delivery", "drafter", "quotas", "http",
                                  "push", "connectors", "learning"}));
  if (auto* a = t["learning"].as_table()) {
    CORTEX_RETURN_IF_ERROR(Unknown(
        *a, "learning.", {"while_serving", "settle_seconds", "every_hours", "auto_accept_strong"}));
  }
  CORTEX_RETURN_IF_ERROR(LoadServeLearning(t, &config.learning_serve));
  if (auto* a = t["drafter"].as_table()) {
    CORTEX_RETURN_IF_ERROR(
        Unknown(*a, "drafter.", {"kind", "url", "model", "api_key", "timeout_seconds"}));
  }
  CORTEX_RETURN_IF_ERROR(LoadQuotas(t, &config.actions.quotas));
  CORTEX_RETURN_IF_ERROR(LoadHttp(t, &config.http));
  CORTEX_RETURN_IF_ERROR(LoadDrafter(t, &config.actions.drafter));
  if (auto* a = t["actions"].as_table()) {
    CORTEX_RETURN_IF_ERROR(Unknown(
        *a, "actions.", {"draft_expiry_minutes", "undo_window_seconds", "approve_in_client"}));
  }
  if (auto* a = t["trust"].as_table()) {
    CORTEX_RETURN_IF_ERROR(Unknown(*a, "trust.", {"default_level", "approvals_to_raise"}));
  }
  if (auto* a = t["delivery"].as_table()) {
    CORTEX_RETURN_IF_ERROR(Unknown(
        *a, "delivery.",
        {"connector", "jsonl_path", "webhook_url", "webhook_secret", "max_attempts",
         "timeout_seconds", "lease_seconds", "smtp_url", "smtp_from", "smtp_user", "smtp_password",
         "smtp_password_file", "smtp_password_env", "smtp_tls", "smtp_ca_file"}));
  }
  CORTEX_RETURN_IF_ERROR(LoadActions(t, &config.actions));
  CORTEX_RETURN_IF_ERROR(LoadDelivery(t, &config.delivery));
  CORTEX_RETURN_IF_ERROR(LoadPush(t, &config.push));
  CORTEX_RETURN_IF_ERROR(LoadConnectors(t, &config));
  // Pushes are delivered as messages are: same attempts, timeout and lease.
  config.push.connector = config.push.webhook_url.empty() ? "" : "webhook";
  config.push.max_attempts = config.delivery.max_attempts;
  config.push.timeout_seconds = config.delivery.timeout_seconds;
  config.push.lease_seconds = config.delivery.lease_seconds;
  return config;
}

}  // namespace cortex
