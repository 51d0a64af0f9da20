// Sessions of the 2025-11-25 era: initialize (with the session caps), the capabilities
// offered, resource subscriptions and the changes a session's stream carries, the log
// level, and a session's life (looked up, touched, ended; its open streams counted).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/crypto.h"
#include "core/ids.h"
#include "core/json_text.h"
#include "core/limits.h"
#include "protocol/mcp_parts.h"
#include "protocol/mcp_server.h"
#include "store/sessions.h"

namespace cortex {

using nlohmann::json;

std::variant<json, RpcFailure> McpServer::Initialize(const json& params, const AuthContext& auth,
                                                     McpTransport transport, McpResponse& out) {
  std::string requested = params["protocolVersion"];
  // Version negotiation: echo a version we speak, else offer our newest session-era one.
  std::string version = IsLegacyVersion(requested) ? requested : kLegacyVersions[0];
  std::string session_id = RandomHex(16);
  if (transport == McpTransport::kHttp) {
    TimePoint now = clock_.Now();
    // Which cap is full, if one is: each is a bound of its own (limits.h).
    const char* full = nullptr;
    size_t cap = 0;
    Status st = store_.Write([&](WriteTx& tx) -> Status {
      // Idle sessions are swept by the background loop (app.cc); here they just don't count.
      auto n = tx.sessions().CountFor(now - limits::kSessionIdleExpiry, auth.workspace_id,
                                      auth.token_id);
      if (!n.ok()) return n.status();
      const SessionLimits& lim = session_limits_;
      if (!auth.token_id.empty() && n->token >= static_cast<int64_t>(lim.per_token)) {
        full = "this token", cap = lim.per_token;
      } else if (n->workspace >= static_cast<int64_t>(lim.per_workspace)) {
        full = "this workspace", cap = lim.per_workspace;
      } else if (n->total >= static_cast<int64_t>(lim.total)) {
        full = "the server", cap = lim.total;
      }
      if (full != nullptr) return Status::Ok();
      bool elicits = FormElicitation(params.value("capabilities", json::object()));
      return tx.sessions().Insert(McpSession{session_id, auth.workspace_id, now, now, elicits, ""},
                                  auth.token_id);
    });
    if (!st.ok()) {
      spdlog::warn("opening a session: {}", st.message());
      return RpcFailure{
          {rpc::kInternalError, "Service unavailable: no session can be opened now; retry", {}},
          Disposition::kUnavailable};
    }
    if (full != nullptr) {
      std::string message = std::string("Too many open sessions for ") + full + " (at most " +
                            std::to_string(cap) +
                            "): end sessions you no longer use (DELETE /mcp), or wait for idle "
                            "ones to expire (after 24 h unused)";
      // The server's own cap is everyone's: retry later. A workspace's or token's is the
      // caller's to free.
      bool everyone = std::string_view(full) == "the server";
      return RpcFailure{{rpc::kInternalError, std::move(message), {}},
                        everyone ? Disposition::kUnavailable : Disposition::kLimited};
    }
  }
  out.new_session_id = session_id;
  json caps = Capabilities(transport == McpTransport::kHttp);
  // 2025-11-25 tasks: a tools/call may ask for one (a draft waiting for approval is one).
  caps["tasks"] = {{"cancel", json::object()},
                   {"requests", {{"tools", {{"call", json::object()}}}}}};
  json result = {{"protocolVersion", version},
                 {"capabilities", std::move(caps)},
                 {"serverInfo", server_info_}};
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  return result;
}

json McpServer::Capabilities(bool subscribe) const {
  json caps = {{"tools", {{"listChanged", false}}}, {"logging", json::object()}};
  const Catalog& catalog = tools_.catalog();
  if (catalog.has_resources()) {
    caps["resources"] = {{"subscribe", subscribe}, {"listChanged", false}};
  }
  if (catalog.has_prompts()) caps["prompts"] = {{"listChanged", false}};
  if (catalog.has_resources() || catalog.has_prompts()) caps["completions"] = json::object();
  return caps;
}

std::variant<json, RpcFailure> McpServer::Subscription(const McpRequest& req,
                                                       const std::string& method,
                                                       const json& params) {
  const std::string* uri = StringParam(params, "uri");
  if (uri == nullptr) {
    return RpcFailure{{rpc::kInvalidParams, "Invalid params: \"uri\" must be a string", {}}};
  }
  TimePoint now = clock_.Now();
  bool subscribe = method == "resources/subscribe";
  if (subscribe && !tools_.catalog().Matches(*uri)) {
    return RpcFailure{{kLegacyResourceNotFound,
                       "Resource not found",
                       {{"uri", Utf8Prefix(*uri, limits::kMaxResourceUriChars)}}}};
  }
  bool full = false, found = true;
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    if (!subscribe) return tx.sessions().Unsubscribe(*req.session_id, *uri);
    auto subs = tx.sessions().Subscriptions(*req.session_id);
    if (!subs.ok()) return subs.status();
    if (std::find(subs->begin(), subs->end(), *uri) != subs->end()) return Status::Ok();
    if (subs->size() >= limits::kMaxSubscriptionsPerSession) {
      full = true;
      return Status::Ok();
    }
    auto added = tx.sessions().Subscribe(req.auth->workspace_id, *req.session_id, *uri, now);
    if (!added.ok()) return added.status();
    found = *added;
    return Status::Ok();
  });
  if (!st.ok()) {
    spdlog::warn("{}: {}", method, st.message());
    return RpcFailure{{rpc::kInternalError, "Service unavailable: retry", {}},
                      Disposition::kUnavailable};
  }
  if (!found) {
    return RpcFailure{{rpc::kSessionNotFound, "Session not found", {}},
                      Disposition::kUnknownSession};
  }
  if (full) {
    return RpcFailure{{rpc::kInvalidParams,
                       "Invalid params: at most " +
                           std::to_string(limits::kMaxSubscriptionsPerSession) +
                           " subscriptions per session; unsubscribe from one first",
                       {}}};
  }
  return json::object();
}

std::optional<std::string> McpServer::SessionStreamNext(const std::string& id, std::string& state) {
  auto session = LiveSession(id);
  // A store that cannot answer keeps the stream: it will ask again at the next poll.
  if (!session.ok()) return std::string();
  if (!session->has_value()) return std::nullopt;
  std::vector<std::string> uris;
  Status st = store_.Read([&](ReadTx& tx) -> Status {
    auto subs = tx.sessions().Subscriptions(id);
    if (!subs.ok()) return subs.status();
    uris = std::move(*subs);
    return Status::Ok();
  });
  if (!st.ok() || (uris.empty() && state.empty())) return std::string();
  return ResourceChanges((*session)->workspace_id, uris, state, nullptr);
}

std::string McpServer::ResourceChanges(const std::string& ws, const std::vector<std::string>& uris,
                                       std::string& state, const json& subscription_id) {
  json before = state.empty() ? json::object() : json::parse(state, nullptr, false);
  if (!before.is_object()) before = json::object();
  json after = json::object();
  AuthContext reader{ws, "", "", kScopeRead};
  // Not while a large ingest batch of the workspace lands: asked again at the next poll.
  auto pass = store_.TryEnterWorkspace(reader.workspace_id);
  if (!pass) return std::string();
  std::string events;
  for (const std::string& uri : uris) {
    std::string trace = NewId("trc_", clock_);
    ToolContext ctx{reader, store_, clock_, trace, nullptr, [](json) {}};
    auto read = tools_.catalog().Read(uri, ctx);
    if (!read.ok()) {
      // Not found, or the store cannot answer now: unchanged until it reads again.
      if (before.contains(uri)) after[uri] = before[uri];
      continue;
    }
    // The digest of what a reader sees, less the moment it was read ("as_of").
    std::string seen;
    for (json& c : *read) {
      if (c.contains("text") && c["text"].is_string()) {
        json body = json::parse(c["text"].get<std::string>(), nullptr, false);
        if (body.is_object()) body.erase("as_of");
        seen += body.dump();
      } else {
        seen += c.dump();
      }
    }
    std::string digest = Sha256Hex(seen);
    after[uri] = digest;
    if (before.contains(uri) && before[uri] != digest) {
      json params = {{"uri", uri}};
      if (!subscription_id.is_null()) {
        params["_meta"] = {{"io.modelcontextprotocol/subscriptionId", subscription_id}};
      }
      json note = {{"jsonrpc", "2.0"},
                   {"method", "notifications/resources/updated"},
                   {"params", std::move(params)}};
      events += "event: message\ndata: " + note.dump() + "\n\n";
    }
  }
  state = after.dump();
  return events;
}

std::variant<json, RpcFailure> McpServer::SetLogLevel(const McpRequest& req, const json& params) {
  const std::string* level = StringParam(params, "level");
  if (level == nullptr || LogLevelIndex(*level) < 0) {
    return RpcFailure{{rpc::kInvalidParams,
                       "Invalid params: level must be one of debug, info, notice, warning, "
                       "error, critical, alert, emergency",
                       {}}};
  }
  if (req.transport == McpTransport::kStdio) {
    std::lock_guard<std::mutex> lock(stdio_mu_);
    stdio_log_level_ = *level;
    return json::object();
  }
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    auto set = tx.sessions().SetLogLevel(req.auth->workspace_id, *req.session_id, *level);
    if (!set.ok()) return set.status();
    return *set ? Status::Ok() : Status::NotFound("Session not found");
  });
  if (st.code() == Code::kNotFound) {
    return RpcFailure{{rpc::kSessionNotFound, "Session not found", {}},
                      Disposition::kUnknownSession};
  }
  if (!st.ok()) {
    spdlog::warn("logging/setLevel: {}", st.message());
    return RpcFailure{
        {rpc::kInternalError, "Service unavailable: the level cannot be kept now; retry", {}},
        Disposition::kUnavailable};
  }
  return json::object();
}

Result<std::optional<McpSession>> McpServer::LiveSession(const std::string& id) {
  std::optional<McpSession> session;
  Status st = store_.Read([&](ReadTx& tx) -> Status {
    auto found = tx.sessions().Get(id);
    if (!found.ok()) return found.status();
    session = std::move(*found);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  if (session && clock_.Now() - session->last_used > limits::kSessionIdleExpiry) {
    session.reset();  // expired; the background sweep deletes it
  }
  return session;
}

Result<bool> McpServer::SessionExists(const std::string& id, const AuthContext& auth,
                                      McpSession* found) {
  auto session = LiveSession(id);
  if (!session.ok()) return session.status();
  if (!*session || (*session)->workspace_id != auth.workspace_id) return false;
  if (found != nullptr) *found = **session;
  // Refreshing last_used on every message would make every read a write; a minute's
  // precision is plenty for a 24-hour idle expiry.
  TimePoint now = clock_.Now();
  if (now - (*session)->last_used >= limits::kSessionTouchInterval) {
    // Bookkeeping: a touch lost to a database crash costs a minute of idle time at most.
    CORTEX_RETURN_IF_ERROR(store_.Write([&](WriteTx& tx) { return tx.sessions().Touch(id, now); },
                                        Store::Durability::kRelaxed));
  }
  return true;
}

Result<bool> McpServer::EndSession(const std::string& id, const AuthContext& auth) {
  bool deleted = false;
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    auto gone = tx.sessions().Delete(auth.workspace_id, id);
    if (!gone.ok()) return gone.status();
    deleted = *gone;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return deleted;
}

bool McpServer::OpenStream(const std::string& id) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  size_t& n = streams_[id];
  if (n >= limits::kMaxStreamsPerSession) return false;
  ++n;
  return true;
}

void McpServer::CloseStream(const std::string& id) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  auto it = streams_.find(id);
  if (it != streams_.end() && --it->second == 0) streams_.erase(it);
}

bool McpServer::HasSession(const std::string& id) {
  auto session = LiveSession(id);
  // A store that cannot answer keeps the stream: it will ask again at the next keep-alive.
  return !session.ok() || session->has_value();
}

}  // namespace cortex
