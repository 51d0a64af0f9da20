// HTTP routing for `cortex serve`, with no I/O: one parsed request in, one response out.
// http_server.cc does the sockets (Boost.Beast); this file decides what each request gets,
// so every status, header and body can be tested without a network.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/metrics.h"
#include "core/status.h"
#include "protocol/mcp_server.h"
#include "store/store.h"
#include "transport/http_types.h"

namespace cortex {

struct RouterOptions {
  // Test mode for the conformance suite: no bearer token; every request acts as
  // `anonymous` (a workspace named "conformance" with all scopes).
  bool insecure_no_auth = false;
  // Origins allowed besides loopback ones (http(s)://localhost|127.0.0.1|[::1][:port]).
  std::vector<std::string> allowed_origins;
  // Host header values allowed besides loopback names; empty = allow any Host (only when
  // the server listens beyond loopback and the operator chose so).
  std::vector<std::string> allowed_hosts;
  bool check_host = true;
  // If set, GET /metrics needs "Authorization: Bearer <it>" ([http] metrics_token).
  std::string metrics_token;
  // Where clients reach this server (--base-url, [http] public_url): http(s)://host[:port],
  // the issuer and the resource (<it>/mcp) named in the OAuth metadata. Empty: the request's
  // own Host, over http.
  std::string public_url;
};

// What the router serves besides MCP, wired in by app (CortexRouterParts in app.h): the
// transport reaches nothing above the protocol but through these.
struct RouterParts {
  // Who a bearer token `secret` is, for a request to `resource` (an OAuth token is good
  // only for the resource it was issued for). Unauthorized for a token that is not good;
  // any other error answers 503. Required unless RouterOptions::insecure_no_auth.
  std::function<Result<AuthContext>(const std::string& secret, const std::string& resource)>
      authenticate;
  // POST /v1/episodes: ingests a JSONL body into a workspace and returns the report's
  // JSON. Null: no such endpoint.
  std::function<Result<nlohmann::json>(const std::string& workspace_id, const std::string& body)>
      ingest;
  // Paths answered above the transport (the web inbox, OAuth), in order of precedence:
  // the first that handles a path gets it.
  std::vector<PathHandler*> handlers;
};

class HttpRouter {
 public:
  HttpRouter(McpServer& mcp, Store& store, Metrics& metrics, RouterOptions options,
             AuthContext anonymous, RouterParts parts);

  // Handles one request. Thread-safe.
  HttpResponse Handle(const HttpRequest& req, RequestLog& log);

  // Why a request's head is not one to answer, before its body is read or anything routed:
  // HTTP/1.1 without Host (`http11`), a field that must appear once appearing twice (Host,
  // Authorization, Content-Type, Origin, the Mcp-* fields), a control character (NUL, ...)
  // in a value, a Transfer-Encoding other than exactly "chunked" or in HTTP/1.0. Nullopt if
  // none. The transport answers 400 with this message and closes.
  static std::optional<std::string> FramingProblem(const HttpRequest& head, bool http11);

  // Whether handling `req` may wait for a durable write: a tool call that is not read-only,
  // an ingest, a session started, used or ended. The transport runs those off its I/O
  // threads, so reads never queue behind a commit and concurrent writes share one. Decided
  // from the method, path, session and the Mcp-Method / Mcp-Name headers; without them a
  // POST counts as a write. The MCP server refuses a request whose Mcp-* headers contradict
  // its body, so a request judged read-only writes nothing a client asked for: at most
  // bookkeeping it never reads back (a GET /mcp stream's session touch; on PostgreSQL, the
  // call counters). It runs on the I/O thread and reads one snapshot (SharedReads); its
  // answer is the same either way.
  bool MayWrite(const HttpRequest& req) const;

  // Whether handling `req` may wait on the network: a call of a tool that may (a model
  // drafting action.communicate's message), or, while any tool may, a POST whose headers do
  // not name a known tool (the session era has no Mcp-Method; McpServer::ToolCallMayCallOut).
  // The transport never runs those on an I/O thread.
  bool MayCallOut(const HttpRequest& req) const;

  // Whether `req` (body read) may call a long-running tool (McpServer::LongRunningCall):
  // the transport runs it on the write pool with HttpRequest::emit and gone set.
  bool IsLongCall(const HttpRequest& req) const;

  // What the event stream `stream` that Handle() opened sends next: events (empty if none
  // now), or nullopt once it has ended (its MCP session deleted, its inbox session over).
  // `state` is the stream's own, kept by the transport between polls, empty at first.
  std::optional<std::string> StreamNext(const std::string& stream, std::string& state);
  // The transport closed a stream that Handle() opened.
  void StreamClosed(const std::string& stream);
  // What stream `stream` sends last when the server stops (empty: nothing, it just ends):
  // a subscriptions/listen stream's result, its graceful end.
  std::string StreamEnd(const std::string& stream);

  // The answer for a request to `target` whose body exceeded its limit (the transport
  // stops reading).
  static HttpResponse TooLarge(std::string_view target);
  // An error outside JSON-RPC: {"status":"error","error":code,"message":...} with `status`.
  static HttpResponse Problem(int status, const std::string& code, const std::string& message);
  // "METHOD /path" for logs and metrics; unknown methods and paths collapse to one name.
  std::string RouteName(std::string_view method, std::string_view target) const;
  // The body limit for a request to `target`.
  static size_t BodyLimit(std::string_view target);
  // The body limit for a request with head `head`: POST /v1/episodes's for a POST /mcp whose
  // Mcp-Name is episode.ingest (kIngestTool), else BodyLimit(head.target).
  static size_t BodyLimit(const HttpRequest& head);
  static HttpResponse TooLarge(const HttpRequest& head);
  static constexpr std::string_view kIngestTool = "episode.ingest";

 private:
  HttpResponse HandleMcp(const HttpRequest& req, const AuthContext& auth, RequestLog& log);
  // GET /mcp: the session era's server-to-client stream (`session`: its Mcp-Session-Id).
  HttpResponse OpenMcpStream(const HttpRequest& req, const std::string* session,
                             const AuthContext& auth, RequestLog& log);
  // DELETE /mcp: ends the session.
  HttpResponse EndMcpSession(const std::string* session, const AuthContext& auth, RequestLog& log);
  // POST /mcp: a JSON-RPC message, answered as JSON or as an event stream.
  HttpResponse PostMcp(const HttpRequest& req, const AuthContext& auth, RequestLog& log);
  HttpResponse HandleIngest(const HttpRequest& req, const AuthContext& auth, RequestLog& log);
  // Authenticates the bearer token; on failure fills `reject` with the 401.
  bool Authenticate(const HttpRequest& req, AuthContext* auth, HttpResponse* reject,
                    RequestLog& log);
  bool OriginAllowed(const std::string& origin) const;
  // The server's base URL as this request's client sees it (RouterOptions::public_url).
  std::string BaseUrl(const HttpRequest& req) const;
  // The 401 challenge: names the protected-resource metadata (RFC 9728 §5.1), and `extra`
  // (error, scope) after it.
  std::string Challenge(const HttpRequest& req, const std::string& extra) const;
  // GET /.well-known/oauth-protected-resource[/mcp] (RFC 9728).
  HttpResponse ProtectedResourceMetadata(const HttpRequest& req, RequestLog& log);
  bool HostAllowed(const std::string& host) const;
  // The handler of `path`, or null.
  PathHandler* HandlerOf(std::string_view path) const;

  // GET /metrics: its bearer token, if the operator set one; the Host must be allowed.
  HttpResponse HandleMetrics(const HttpRequest& req, RequestLog& log);

  McpServer& mcp_;
  Store& store_;
  Metrics& metrics_;
  RouterOptions options_;
  AuthContext anonymous_;
  RouterParts parts_;
};

}  // namespace cortex
