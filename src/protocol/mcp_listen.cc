// subscriptions/listen (2026-07-28 §Subscriptions): over HTTP the request is answered with
// an event stream that starts with notifications/subscriptions/acknowledged and then stays
// open, carrying notifications/resources/updated for the listened resources; over stdio the
// same messages go out on stdout (transport/stdio.cc). Nothing
// about a listen is kept in this process but its stream: each look reads the store, so a
// change written through any instance sharing it (PostgreSQL) is told on every stream.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/json_text.h"
#include "core/limits.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_server.h"
#include "store/tokens.h"

namespace cortex {
namespace {

using json = nlohmann::json;

// "listen:" + {"w": workspace id, "t": token id ("" without auth), "i": the request's
// JSON-RPC id, "u": [resource URIs]} as JSON.
constexpr std::string_view kListen = "listen:";
constexpr char kMetaSubscriptionId[] = "io.modelcontextprotocol/subscriptionId";

// The filter fields of a list that may change (SubscriptionFilter); Cortex's lists change
// only with a release, so none is honoured (docs/mcp.md).
constexpr const char* kListChangedFields[] = {"toolsListChanged", "promptsListChanged",
                                              "resourcesListChanged"};

McpResponse Refuse(McpResponse out, const json& id, Disposition d, int code, std::string message,
                   json data = nullptr, const char* status = "invalid_params") {
  out.disposition = d;
  out.status = status;
  out.body = rpc::MakeError(id, {code, std::move(message), std::move(data)});
  return out;
}

json ParseStream(std::string_view stream) {
  if (stream.rfind(kListen, 0) != 0) return nullptr;
  json spec = json::parse(stream.substr(kListen.size()), nullptr, false);
  if (!spec.is_object() || !spec.contains("w") || !spec["w"].is_string() || !spec.contains("t") ||
      !spec["t"].is_string() || !spec.contains("u") || !spec["u"].is_array()) {
    return nullptr;
  }
  return spec;
}

}  // namespace

bool McpServer::IsListenStream(std::string_view stream) { return stream.rfind(kListen, 0) == 0; }

McpResponse McpServer::Listen(const McpRequest& req, const json& id, const json& params,
                              McpResponse out) {
  const AuthContext& auth = *req.auth;
  // (On stdio the channel is the stream: the stdio loop holds the listen.)
  if (req.transport == McpTransport::kHttp && !req.accepts_stream) {
    return Refuse(std::move(out), id, Disposition::kRejected, rpc::kInvalidRequest,
                  "Not Acceptable: subscriptions/listen answers with an event stream; Accept "
                  "must include text/event-stream",
                  nullptr, "invalid_request");
  }
  auto filter = params.find("notifications");
  if (filter == params.end() || !filter->is_object()) {
    return Refuse(std::move(out), id, Disposition::kReply, rpc::kInvalidParams,
                  "Invalid params: \"notifications\" (the subscription filter) must be an object");
  }
  for (const char* field : kListChangedFields) {
    auto f = filter->find(field);
    if (f != filter->end() && !f->is_boolean()) {
      return Refuse(std::move(out), id, Disposition::kReply, rpc::kInvalidParams,
                    std::string("Invalid params: notifications.") + field + " must be a boolean");
    }
  }
  std::vector<std::string> uris;
  json honored = json::object();
  if (auto subs = filter->find("resourceSubscriptions"); subs != filter->end()) {
    if (!subs->is_array()) {
      return Refuse(std::move(out), id, Disposition::kReply, rpc::kInvalidParams,
                    "Invalid params: notifications.resourceSubscriptions must be an array of "
                    "resource URIs");
    }
    for (const json& u : *subs) {
      if (!u.is_string()) {
        return Refuse(std::move(out), id, Disposition::kReply, rpc::kInvalidParams,
                      "Invalid params: notifications.resourceSubscriptions must hold strings");
      }
      const std::string& uri = u.get_ref<const std::string&>();
      // Like resources/read in this era: a URI no resource matches is not found (-32602).
      if (!tools_.catalog().Matches(uri)) {
        return Refuse(
            std::move(out), id, Disposition::kReply, rpc::kInvalidParams, "Resource not found",
            {{"uri", Utf8Prefix(uri, limits::kMaxResourceUriChars)}}, "resource_not_found");
      }
      if (std::find(uris.begin(), uris.end(), uri) == uris.end()) uris.push_back(uri);
    }
    if (uris.size() > limits::kMaxListenResources) {
      return Refuse(std::move(out), id, Disposition::kReply, rpc::kInvalidParams,
                    "Invalid params: at most " + std::to_string(limits::kMaxListenResources) +
                        " resources per subscriptions/listen");
    }
    honored["resourceSubscriptions"] = uris;
  }
  if (!uris.empty() && !auth.Has(kScopeRead)) {
    return Refuse(std::move(out), id, Disposition::kReply, rpc::kInvalidRequest,
                  "this token lacks the 'read' scope that reading resources needs", nullptr,
                  "unauthorized");
  }
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    size_t& n = listens_[auth.workspace_id];
    if (n >= limits::kMaxListenStreamsPerWorkspace) {
      return Refuse(std::move(out), id, Disposition::kLimited, rpc::kInternalError,
                    "Too many subscriptions/listen streams open for this workspace (at most " +
                        std::to_string(limits::kMaxListenStreamsPerWorkspace) +
                        "): close one you no longer use",
                    nullptr, "too_many_streams");
    }
    ++n;  // until the transport closes the stream (ListenClosed)
  }
  // What each resource holds now: a change from here on is told, even one that lands
  // before the stream's first look.
  ResourceChanges(auth.workspace_id, uris, out.held_stream_state, nullptr);
  out.notifications.push_back(
      {{"jsonrpc", "2.0"},
       {"method", "notifications/subscriptions/acknowledged"},
       {"params",
        {{"_meta", {{kMetaSubscriptionId, id}}}, {"notifications", std::move(honored)}}}});
  json spec = {{"w", auth.workspace_id}, {"t", auth.token_id}, {"i", id}, {"u", uris}};
  out.held_stream = std::string(kListen) + spec.dump();
  out.status = "listening";
  return out;
}

std::optional<std::string> McpServer::ListenStreamNext(const std::string& stream,
                                                       std::string& state) {
  json spec = ParseStream(stream);
  if (spec.is_null()) return std::nullopt;
  const std::string& ws = spec["w"].get_ref<const std::string&>();
  const std::string& token_id = spec["t"].get_ref<const std::string&>();
  // A revoked or expired token stops being told anything at once, as it stops being
  // answered (docs/authorization.md).
  if (!token_id.empty()) {
    bool good = true;
    Status st = store_.Read([&](ReadTx& tx) -> Status {
      auto tok = tx.tokens().Get(ws, token_id);
      if (tok.status().code() == Code::kNotFound) {
        good = false;
        return Status::Ok();
      }
      if (!tok.ok()) return tok.status();
      good = !tok->revoked_at && (!tok->expires_at || clock_.Now() < *tok->expires_at);
      return Status::Ok();
    });
    if (!st.ok()) return std::string();  // the store is busy: look again at the next poll
    if (!good) return std::nullopt;
  }
  std::vector<std::string> uris;
  for (const json& u : spec["u"]) {
    if (u.is_string()) uris.push_back(u.get<std::string>());
  }
  if (uris.empty()) return std::string();
  return ResourceChanges(ws, uris, state, spec["i"]);
}

std::string McpServer::ListenStreamEnd(const std::string& stream) const {
  json spec = ParseStream(stream);
  if (spec.is_null()) return std::string();
  json meta = result_meta_;
  meta[kMetaSubscriptionId] = spec["i"];
  json end = rpc::MakeResult(spec["i"], {{"resultType", "complete"}, {"_meta", std::move(meta)}});
  return "event: message\ndata: " + DumpJson(end) + "\n\n";
}

void McpServer::ListenClosed(const std::string& stream) {
  json spec = ParseStream(stream);
  if (spec.is_null()) return;
  std::lock_guard<std::mutex> lock(streams_mu_);
  auto it = listens_.find(spec["w"].get<std::string>());
  if (it != listens_.end() && --it->second == 0) listens_.erase(it);
}

}  // namespace cortex
