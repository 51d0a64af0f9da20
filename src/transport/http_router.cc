#include "transport/http_router.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "core/crypto.h"
#include "core/json_text.h"
#include "core/limits.h"
#include "protocol/jsonrpc.h"

namespace cortex {

using nlohmann::json;

namespace {

// Protected-resource metadata (RFC 9728 §3): the bare well-known path and the one suffixed
// with the resource's path, which MCP clients try first.
constexpr std::string_view kResourceMetadata = "/.well-known/oauth-protected-resource";
constexpr std::string_view kResourceMetadataMcp = "/.well-known/oauth-protected-resource/mcp";

// A request target's path: without its query.
std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }

HttpResponse Json(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = DumpJson(body);
  return r;
}

// A JSON-RPC error with no id, for refusals that happen before the message is read.
HttpResponse RpcProblem(int status, int code, const std::string& message) {
  return Json(status, rpc::MakeError(nullptr, rpc::Error{code, message, {}}));
}

// The store could not answer: a refusal the client may retry (never a 404, which would
// tell it to forget its session).
HttpResponse StoreUnavailable(RequestLog& log) {
  log.status = "unavailable";
  HttpResponse r =
      RpcProblem(503, rpc::kInternalError, "Service unavailable: the store cannot answer; retry");
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

// The host part of "host[:port]" / "[v6]:port", lowercased.
std::string HostOnly(const std::string& hostport) {
  std::string h = AsciiLower(hostport);
  if (!h.empty() && h[0] == '[') {
    size_t close = h.find(']');
    return close == std::string::npos ? h : h.substr(0, close + 1);
  }
  size_t colon = h.find(':');
  return colon == std::string::npos ? h : h.substr(0, colon);
}

bool IsLoopbackName(const std::string& host) {
  return host == "localhost" || host == "127.0.0.1" || host == "[::1]";
}

// Accept-header negotiation for POST /mcp.
struct Accepts {
  bool json = false;
  bool sse = false;
};

Accepts ParseAccept(const std::string* accept) {
  if (accept == nullptr) return {true, false};
  std::string a = AsciiLower(*accept);
  Accepts out;
  out.sse = a.find("text/event-stream") != std::string::npos;
  out.json = a.find("application/json") != std::string::npos ||
             a.find("application/*") != std::string::npos || a.find("*/*") != std::string::npos;
  return out;
}

std::string SseEvent(std::string_view json_text) {
  std::string event = "event: message\ndata: ";
  event += json_text;
  event += "\n\n";
  return event;
}

int StatusFor(Disposition d) {
  switch (d) {
    case Disposition::kReply:
      return 200;
    case Disposition::kAccepted:
      return 202;
    case Disposition::kRejected:
      return 400;
    case Disposition::kUnknownMethod:
      return 404;
    case Disposition::kUnknownSession:
      return 404;
    case Disposition::kUnavailable:
      return 503;
    case Disposition::kLimited:
      return 429;
  }
  return 500;
}

// The HTTP answer to a POST /mcp that `mres` answers, for a client that accepts `accepts`
// (`streamed`: its notifications went out live already, as a stream).
HttpResponse McpHttpResponse(const McpResponse& mres, const Accepts& accepts, bool streamed) {
  HttpResponse r;
  r.status = StatusFor(mres.disposition);
  if (mres.disposition == Disposition::kUnavailable) r.headers.emplace_back("Retry-After", "1");
  if (mres.disposition == Disposition::kLimited) r.headers.emplace_back("Retry-After", "60");
  if (!mres.new_session_id.empty()) r.headers.emplace_back("Mcp-Session-Id", mres.new_session_id);
  if (!mres.held_stream.empty()) {
    // A tools/call that asks the user first: our request now, its result when answered. Or
    // a subscriptions/listen: its acknowledgement now, the updates as they come.
    r.content_type = "text/event-stream";
    r.headers.emplace_back("Cache-Control", "no-cache");
    r.headers.emplace_back("X-Accel-Buffering", "no");
    for (const json& n : mres.notifications) r.body += SseEvent(DumpJson(n));
    for (const json& q : mres.requests) r.body += SseEvent(DumpJson(q));
    r.open_stream = true;
    r.stream = mres.held_stream;
    r.stream_state = mres.held_stream_state;
    r.stream_poll = McpServer::IsListenStream(mres.held_stream) ? limits::kSubscriptionPoll
                                                                : McpServer::kHeldStreamPoll;
    return r;
  }
  if (mres.body.is_null()) return r;  // 202 Accepted: no body
  bool stream = accepts.sse && (!accepts.json || !mres.notifications.empty() || streamed) &&
                mres.disposition == Disposition::kReply;
  if (stream) {
    r.content_type = "text/event-stream";
    r.headers.emplace_back("Cache-Control", "no-cache");
    r.headers.emplace_back("X-Accel-Buffering", "no");
    for (const json& n : mres.notifications) r.body += SseEvent(DumpJson(n));
    r.body += SseEvent(DumpBody(mres));
  } else {
    r.content_type = "application/json";
    r.body = DumpBody(mres);
  }
  return r;
}

}  // namespace

HttpResponse HttpRouter::Problem(int status, const std::string& code, const std::string& message) {
  return Json(status, {{"status", "error"}, {"error", code}, {"message", message}});
}

const std::string* HttpRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

HttpRouter::HttpRouter(McpServer& mcp, Store& store, Metrics& metrics, RouterOptions options,
                       AuthContext anonymous, RouterParts parts)
    : mcp_(mcp),
      store_(store),
      metrics_(metrics),
      options_(std::move(options)),
      anonymous_(std::move(anonymous)),
      parts_(std::move(parts)) {}

PathHandler* HttpRouter::HandlerOf(std::string_view path) const {
  for (PathHandler* h : parts_.handlers) {
    if (h->Handles(path)) return h;
  }
  return nullptr;
}

std::optional<std::string> HttpRouter::FramingProblem(const HttpRequest& head, bool http11) {
  // Fields whose second copy would make two readers (a proxy, this server) see two requests.
  static constexpr std::string_view kOnce[] = {
      "host",          "authorization",        "content-type",
      "origin",        "mcp-session-id",       "mcp-method",
      "mcp-name",      "mcp-protocol-version", "transfer-encoding",
      "content-length"};
  size_t hosts = 0;
  for (size_t i = 0; i < head.headers.size(); ++i) {
    const auto& [name, value] = head.headers[i];
    if (name == "host") ++hosts;
    for (unsigned char c : value) {
      if ((c < 0x20 && c != '\t') || c == 0x7f) {
        return "header " + Utf8Prefix(name, 64) + " holds a control character";
      }
    }
    for (std::string_view once : kOnce) {
      if (name != once) continue;
      for (size_t j = i + 1; j < head.headers.size(); ++j) {
        if (head.headers[j].first == name) {
          return "header " + std::string(name) + " appears more than once";
        }
      }
    }
  }
  if (http11 && hosts == 0) return std::string("an HTTP/1.1 request needs a Host header");
  if (const std::string* te = head.Header("transfer-encoding")) {
    std::string_view v = *te;
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    if (!http11) return std::string("Transfer-Encoding needs HTTP/1.1");
    if (AsciiLower(v) != "chunked") {
      return std::string("Transfer-Encoding must be exactly 'chunked' (no other coding)");
    }
  }
  return std::nullopt;
}

size_t HttpRouter::BodyLimit(std::string_view target) {
  return target.rfind("/v1/episodes", 0) == 0 ? limits::kMaxIngestBodyBytes
                                              : limits::kMaxRequestBodyBytes;
}

size_t HttpRouter::BodyLimit(const HttpRequest& head) {
  if (PathOf(head.target) == "/mcp" && head.method == "POST") {
    const std::string* name = head.Header("mcp-name");
    if (name != nullptr && *name == kIngestTool) return limits::kMaxIngestBodyBytes;
  }
  return BodyLimit(head.target);
}

HttpResponse HttpRouter::TooLarge(const HttpRequest& head) {
  if (PathOf(head.target) != "/mcp") return TooLarge(head.target);
  return RpcProblem(
      413, rpc::kInvalidRequest,
      "Request body exceeds the limit of " + std::to_string(BodyLimit(head)) + " bytes");
}

bool HttpRouter::IsLongCall(const HttpRequest& req) const {
  if (req.method != "POST" || PathOf(req.target) != "/mcp") return false;
  const std::string* method = req.Header("mcp-method");
  if (method != nullptr && *method != "tools/call") return false;
  return mcp_.LongRunningCall(method != nullptr ? req.Header("mcp-name") : nullptr, req.body);
}

HttpResponse HttpRouter::TooLarge(std::string_view target) {
  size_t limit = BodyLimit(target);
  std::string message = "Request body exceeds the limit of " + std::to_string(limit) + " bytes";
  // Each route answers in its own error shape: JSON-RPC for /mcp, a status body for ingest.
  if (PathOf(target) == "/v1/episodes") {
    return Problem(413, "payload_too_large", message);
  }
  return RpcProblem(413, rpc::kInvalidRequest, message);
}

bool HttpRouter::OriginAllowed(const std::string& origin) const {
  std::string o = AsciiLower(origin);
  if (!options_.public_url.empty() && o == AsciiLower(options_.public_url)) return true;
  for (const std::string& allowed : options_.allowed_origins) {
    if (o == AsciiLower(allowed)) return true;
  }
  for (const char* scheme : {"http://", "https://"}) {
    size_t n = std::char_traits<char>::length(scheme);
    if (o.compare(0, n, scheme) == 0) return IsLoopbackName(HostOnly(o.substr(n)));
  }
  return false;
}

bool HttpRouter::HostAllowed(const std::string& host) const {
  if (!options_.check_host) return true;
  std::string h = HostOnly(host);
  if (IsLoopbackName(h)) return true;
  for (const std::string& allowed : options_.allowed_hosts) {
    if (h == HostOnly(allowed)) return true;
  }
  return false;
}

std::optional<std::string> HttpRouter::StreamNext(const std::string& stream, std::string& state) {
  for (PathHandler* h : parts_.handlers) {
    if (h->OwnsStream(stream)) return h->StreamNext(stream, state);
  }
  if (McpServer::IsHeldStream(stream)) return mcp_.HeldStreamNext(stream, state);
  if (McpServer::IsListenStream(stream)) return mcp_.ListenStreamNext(stream, state);
  // An MCP session's stream: updates of the resources it subscribed to, for as long as the
  // session lasts.
  return mcp_.SessionStreamNext(stream, state);
}

std::string HttpRouter::StreamEnd(const std::string& stream) {
  return McpServer::IsListenStream(stream) ? mcp_.ListenStreamEnd(stream) : std::string();
}

void HttpRouter::StreamClosed(const std::string& stream) {
  if (McpServer::IsListenStream(stream)) return mcp_.ListenClosed(stream);
  for (PathHandler* h : parts_.handlers) {
    if (h->OwnsStream(stream)) return;
  }
  if (!McpServer::IsHeldStream(stream)) mcp_.CloseStream(stream);
}

std::string HttpRouter::BaseUrl(const HttpRequest& req) const {
  if (!options_.public_url.empty()) return options_.public_url;
  // Without a configured URL the client's own Host names us. It passed HostAllowed (a
  // loopback name or an allowed one) unless the operator turned Host checks off; what it
  // says only shapes the answer to this client.
  const std::string* host = req.Header("host");
  std::string h = host != nullptr && !host->empty() ? *host : "localhost";
  if (h.find_first_of("\"\\/?#@ ") != std::string::npos) h = "localhost";
  return "http://" + h;
}

std::string HttpRouter::Challenge(const HttpRequest& req, const std::string& extra) const {
  std::string c = "Bearer realm=\"cortex\", resource_metadata=\"" + BaseUrl(req) +
                  std::string(kResourceMetadataMcp) + "\"";
  if (!extra.empty()) c += ", " + extra;
  return c;
}

HttpResponse HttpRouter::ProtectedResourceMetadata(const HttpRequest& req, RequestLog& log) {
  if (req.method != "GET" && req.method != "HEAD") {
    log.status = "method_not_allowed";
    HttpResponse r = Problem(405, "method_not_allowed", "use GET");
    r.headers.emplace_back("Allow", "GET");
    return r;
  }
  std::string base = BaseUrl(req);
  HttpResponse r = Json(200, {{"resource", base + "/mcp"},
                              {"authorization_servers", json::array({base})},
                              {"scopes_supported", json::array({"read", "act", "approve"})},
                              {"bearer_methods_supported", json::array({"header"})},
                              {"resource_name", "Cortex"},
                              {"resource_documentation", base + "/inbox/"}});
  // Public, and read by browser-based clients from their own origin.
  r.headers.emplace_back("Access-Control-Allow-Origin", "*");
  r.headers.emplace_back("Cache-Control", "max-age=300");
  return r;
}

bool HttpRouter::Authenticate(const HttpRequest& req, AuthContext* auth, HttpResponse* reject,
                              RequestLog& log) {
  if (options_.insecure_no_auth) {
    *auth = anonymous_;
    return true;
  }
  const std::string* header = req.Header("authorization");
  std::string error;
  if (header == nullptr) {
    *reject = Problem(401, "unauthorized", "missing bearer token");
    reject->headers.emplace_back("WWW-Authenticate", Challenge(req, "scope=\"read act\""));
  } else if (AsciiLower(header->substr(0, 7)) != "bearer ") {
    *reject = Problem(401, "unauthorized", "the Authorization header must be 'Bearer <token>'");
    reject->headers.emplace_back("WWW-Authenticate", Challenge(req, "error=\"invalid_request\""));
  } else {
    // An OAuth token is good only for the resource it was issued for (its audience).
    auto ctx = parts_.authenticate(header->substr(7), BaseUrl(req) + "/mcp");
    if (ctx.ok()) {
      *auth = std::move(*ctx);
      return true;
    }
    if (ctx.status().code() != Code::kUnauthorized) {
      *reject = Problem(503, "unavailable", "cannot check the token now; retry");
      reject->headers.emplace_back("Retry-After", "1");
      log.status = "unavailable";
      return false;
    }
    // One answer for a token that never existed, was revoked or is malformed: the reason
    // would tell a prober which of its guesses were once real. The operator sees tokens with
    // `cortex token list`.
    *reject = Problem(401, "unauthorized", "invalid token");
    reject->headers.emplace_back(
        "WWW-Authenticate",
        Challenge(req, "error=\"invalid_token\", error_description=\"invalid token\""));
  }
  log.status = "unauthorized";
  return false;
}

std::string HttpRouter::RouteName(std::string_view method, std::string_view target) const {
  std::string_view path = PathOf(target);
  // Metrics and logs are keyed by route: only known ones, so that no client can mint keys.
  bool known = path == "/healthz" || path == "/metrics" || path == "/mcp" ||
               path == "/v1/episodes" || path == kResourceMetadata || path == kResourceMetadataMcp;
  bool known_method = method == "GET" || method == "POST" || method == "DELETE" || method == "HEAD";
  std::string route(known_method ? method : "OTHER");
  route += ' ';
  if (known) return route.append(path);
  if (const PathHandler* h = HandlerOf(path)) return route + h->RouteOf(path);
  return route + "other";
}

bool HttpRouter::MayWrite(const HttpRequest& req) const {
  if (const PathHandler* h = HandlerOf(PathOf(req.target))) return h->MayWrite(req);
  if (req.method == "DELETE") return true;
  if (req.method != "POST") return false;
  std::string_view path = PathOf(req.target);
  if (path == "/v1/episodes") return true;
  if (path != "/mcp") return false;
  // A session-era request may touch its session's last use (a write, once a minute).
  if (req.Header("mcp-session-id") != nullptr) return true;
  const std::string* method = req.Header("mcp-method");
  if (method == nullptr) return true;
  // tasks/update and tasks/cancel write the task; tasks/get may too (a draft's task records
  // the person's decision when it sees it).
  if (*method != "tools/call") return *method == "initialize" || method->rfind("tasks/", 0) == 0;
  const std::string* name = req.Header("mcp-name");
  return name == nullptr || !mcp_.IsReadOnlyTool(*name);
}

bool HttpRouter::MayCallOut(const HttpRequest& req) const {
  if (const PathHandler* h = HandlerOf(PathOf(req.target))) return h->MayCallOut(req);
  if (req.method != "POST") return false;
  if (PathOf(req.target) != "/mcp") return false;
  const std::string* method = req.Header("mcp-method");
  if (method != nullptr && *method != "tools/call") return false;
  // Without Mcp-Method (the session era) the body may call any tool, whatever Mcp-Name says.
  return mcp_.ToolCallMayCallOut(method != nullptr ? req.Header("mcp-name") : nullptr);
}

HttpResponse HttpRouter::Handle(const HttpRequest& req, RequestLog& log) {
  std::string_view path = PathOf(req.target);
  log.route = RouteName(req.method, req.target);
  log.status = "ok";

  if (path == "/healthz") {
    if (req.method != "GET" && req.method != "HEAD")
      return Problem(405, "method_not_allowed", "use GET");
    return Json(200, {{"status", "ok"}});
  }
  bool is_resource_metadata = path == kResourceMetadata || path == kResourceMetadataMcp;
  bool is_metrics = path == "/metrics";
  bool is_mcp = path == "/mcp";
  bool is_ingest = path == "/v1/episodes" && parts_.ingest != nullptr;
  PathHandler* handler =
      is_metrics || is_mcp || is_resource_metadata || is_ingest ? nullptr : HandlerOf(path);
  if (!is_metrics && !is_mcp && !is_resource_metadata && !is_ingest && handler == nullptr) {
    log.status = "not_found";
    return Problem(404, "not_found", "no such endpoint: " + Utf8Prefix(path, 200));
  }

  // DNS-rebinding protection (MCP transports §Security): a browser page on another origin
  // must not reach a local server, whatever name it resolved.
  if (const std::string* host = req.Header("host"); host != nullptr && !HostAllowed(*host)) {
    log.status = "forbidden_host";
    return RpcProblem(403, rpc::kInvalidRequest, "Forbidden: Host '" + *host + "' is not allowed");
  }
  // Public metadata, for any origin (after the Host check: it names the server by its Host).
  if (is_resource_metadata) return ProtectedResourceMetadata(req, log);
  // The authorization server's endpoints for clients, which a browser-based client calls
  // from its own origin; the consent page (/inbox/authorize) keeps the Origin check.
  if (handler != nullptr && handler->AnyOrigin(path)) {
    std::optional<SharedReads> reads;
    if (!MayWrite(req)) reads.emplace(store_);
    return handler->Handle(req, BaseUrl(req), log);
  }
  if (const std::string* origin = req.Header("origin");
      origin != nullptr && !OriginAllowed(*origin)) {
    log.status = "forbidden_origin";
    return RpcProblem(403, rpc::kInvalidRequest,
                      "Forbidden: Origin '" + *origin + "' is not allowed");
  }

  if (is_metrics) return HandleMetrics(req, log);

  // A request that does not write reads one snapshot, from authentication to its reply.
  std::optional<SharedReads> snapshot;
  if (!MayWrite(req)) snapshot.emplace(store_);
  // The inbox signs its person in with its own session cookie, not a bearer token.
  if (handler != nullptr) return handler->Handle(req, BaseUrl(req), log);
  AuthContext auth;
  HttpResponse reject;
  if (!Authenticate(req, &auth, &reject, log)) return reject;

  if (is_mcp) return HandleMcp(req, auth, log);
  return HandleIngest(req, auth, log);
}

HttpResponse HttpRouter::HandleMetrics(const HttpRequest& req, RequestLog& log) {
  if (req.method != "GET") {
    log.status = "method_not_allowed";
    return Problem(405, "method_not_allowed", "use GET");
  }
  if (!options_.metrics_token.empty()) {
    const std::string* header = req.Header("authorization");
    bool ok = header != nullptr && AsciiLower(header->substr(0, 7)) == "bearer " &&
              ConstantTimeEquals(std::string_view(*header).substr(7), options_.metrics_token);
    if (!ok) {
      log.status = "unauthorized";
      HttpResponse r = Problem(401, "unauthorized",
                               "GET /metrics needs the metrics token ([http] metrics_token) "
                               "as 'Authorization: Bearer <token>'");
      r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"cortex-metrics\"");
      return r;
    }
  }
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4";
  r.body = metrics_.RenderPrometheus();
  return r;
}

HttpResponse HttpRouter::HandleMcp(const HttpRequest& req, const AuthContext& auth,
                                   RequestLog& log) {
  const std::string* session = req.Header("mcp-session-id");
  if (req.method == "GET") return OpenMcpStream(req, session, auth, log);
  if (req.method == "DELETE") return EndMcpSession(session, auth, log);
  if (req.method != "POST") {
    log.status = "method_not_allowed";
    HttpResponse r = Problem(405, "method_not_allowed", "use POST");
    r.headers.emplace_back("Allow", "POST, GET, DELETE");
    return r;
  }
  return PostMcp(req, auth, log);
}

HttpResponse HttpRouter::OpenMcpStream(const HttpRequest& req, const std::string* session,
                                       const AuthContext& auth, RequestLog& log) {
  // The session era's server-to-client stream. We send nothing unprompted yet, but the
  // stream is real: it stays open (with keep-alive comments) until the session ends.
  const std::string* accept = req.Header("accept");
  if (session == nullptr) {
    log.status = "method_not_allowed";
    HttpResponse r = RpcProblem(405, rpc::kInvalidRequest,
                                "Method Not Allowed: GET /mcp needs an Mcp-Session-Id "
                                "(stateless clients use POST)");
    r.headers.emplace_back("Allow", "POST, GET, DELETE");
    return r;
  }
  if (accept == nullptr || !ParseAccept(accept).sse) {
    log.status = "not_acceptable";
    return RpcProblem(406, rpc::kInvalidRequest,
                      "Not Acceptable: GET /mcp requires Accept: text/event-stream");
  }
  auto exists = mcp_.SessionExists(*session, auth);
  if (!exists.ok()) return StoreUnavailable(log);
  if (!*exists) {
    log.status = "session_not_found";
    return RpcProblem(404, rpc::kSessionNotFound, "Session not found");
  }
  if (!mcp_.OpenStream(*session)) {
    log.status = "too_many_streams";
    HttpResponse r = RpcProblem(429, rpc::kInvalidRequest,
                                "Too many open streams for this session (at most " +
                                    std::to_string(limits::kMaxStreamsPerSession) + ")");
    r.headers.emplace_back("Retry-After", "15");
    return r;
  }
  HttpResponse r;
  r.status = 200;
  r.content_type = "text/event-stream";
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("X-Accel-Buffering", "no");
  r.headers.emplace_back("Mcp-Session-Id", *session);
  r.open_stream = true;
  r.stream = *session;
  r.stream_poll = limits::kSubscriptionPoll;
  return r;
}

HttpResponse HttpRouter::EndMcpSession(const std::string* session, const AuthContext& auth,
                                       RequestLog& log) {
  if (session == nullptr) {
    log.status = "method_not_allowed";
    HttpResponse r = RpcProblem(405, rpc::kInvalidRequest,
                                "Method Not Allowed: DELETE /mcp needs an Mcp-Session-Id");
    r.headers.emplace_back("Allow", "POST, GET, DELETE");
    return r;
  }
  auto ended = mcp_.EndSession(*session, auth);
  if (!ended.ok()) return StoreUnavailable(log);
  if (!*ended) {
    log.status = "session_not_found";
    return RpcProblem(404, rpc::kSessionNotFound, "Session not found");
  }
  HttpResponse r;
  r.status = 200;
  return r;
}

HttpResponse HttpRouter::PostMcp(const HttpRequest& req, const AuthContext& auth, RequestLog& log) {
  const std::string* content_type = req.Header("content-type");
  if (content_type == nullptr || AsciiLower(*content_type).rfind("application/json", 0) != 0) {
    log.status = "unsupported_media_type";
    return RpcProblem(415, rpc::kInvalidRequest,
                      "Unsupported Media Type: Content-Type must be application/json");
  }
  Accepts accepts = ParseAccept(req.Header("accept"));
  if (!accepts.json && !accepts.sse) {
    log.status = "not_acceptable";
    return RpcProblem(406, rpc::kInvalidRequest,
                      "Not Acceptable: Accept must include application/json or "
                      "text/event-stream");
  }

  McpRequest mreq;
  mreq.body = req.body;
  mreq.transport = McpTransport::kHttp;
  mreq.auth = &auth;
  auto opt = [&](const char* name) -> std::optional<std::string> {
    const std::string* v = req.Header(name);
    return v ? std::optional<std::string>(*v) : std::nullopt;
  };
  mreq.protocol_version_header = opt("mcp-protocol-version");
  mreq.method_header = opt("mcp-method");
  mreq.name_header = opt("mcp-name");
  mreq.session_id = opt("mcp-session-id");
  mreq.accepts_stream = accepts.sse;
  // A long-running call's notifications go out as they come, to a client that takes a
  // stream; once one has, the answer is that stream.
  bool streamed = false;
  if (req.emit && accepts.sse) {
    mreq.live_notify = [&req, &streamed](const json& n) {
      streamed = true;
      req.emit(SseEvent(DumpJson(n)));
    };
  }
  mreq.cancelled = req.gone;
  McpResponse mres = mcp_.Handle(mreq);

  log.method = mres.method;
  log.tool = mres.tool;
  log.status = mres.status;
  log.trace_id = mres.trace_id;

  return McpHttpResponse(mres, accepts, streamed);
}

HttpResponse HttpRouter::HandleIngest(const HttpRequest& req, const AuthContext& auth,
                                      RequestLog& log) {
  log.method = "ingest";
  if (req.method != "POST") {
    log.status = "method_not_allowed";
    HttpResponse r = Problem(405, "method_not_allowed", "use POST with a JSONL body");
    r.headers.emplace_back("Allow", "POST");
    return r;
  }
  if (!auth.Has(kScopeAct)) {
    log.status = "unauthorized";
    HttpResponse r = Problem(403, "unauthorized", "ingest needs a token with the 'act' scope");
    r.headers.emplace_back("WWW-Authenticate",
                           Challenge(req, R"(error="insufficient_scope", scope="act")"));
    return r;
  }
  auto report = parts_.ingest(auth.workspace_id, req.body);
  if (!report.ok()) {
    log.status = CodeName(report.status().code());
    int status = report.status().code() == Code::kInvalidArgument ? 400
                 : report.status().code() == Code::kUnavailable   ? 503
                                                                  : 500;
    return Problem(status, CodeName(report.status().code()), report.status().message());
  }
  return Json(200, *report);
}

}  // namespace cortex
