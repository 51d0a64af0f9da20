// HTTP routing for `cortex serve`, with no I/O: one parsed request in, one response out.
// http_server.cc does the sockets (Boost.Beast); this file decides what each request gets,
// so every status, header and body can be tested without a network.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/metrics.h"
#include "engines/tokens.h"
#include "protocol/mcp_server.h"
#include "store/store.h"

namespace cortex {

struct HttpRequest {
  std::string method;                                        // "GET", "POST", ...
  std::string target;                                        // path and query, e.g. "/mcp"
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  std::string body;

  // The first value of header `name` (lowercase), if present.
  const std::string* Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type/Length
  std::string content_type;                                  // empty when there is no body
  std::string body;
  // GET /mcp: after the headers, keep the connection open as a server-to-client event
  // stream for session `stream_session` until the session ends or the server stops.
  bool open_stream = false;
  std::string stream_session;
};

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
};

// Facts about one finished request, for the request log and metrics.
struct RequestLog {
  std::string route;   // e.g. "POST /mcp"
  std::string method;  // JSON-RPC method, if any
  std::string tool;
  std::string status;  // "ok" or an error code
  std::string trace_id;
};

class HttpRouter {
 public:
  HttpRouter(McpServer& mcp, Store& store, const Clock& clock, Metrics& metrics,
             RouterOptions options, AuthContext anonymous);

  // Handles one request. Thread-safe.
  HttpResponse Handle(const HttpRequest& req, RequestLog& log);

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

  // Whether the stream opened for `session` should stay open (false once it is deleted).
  bool StreamAlive(const std::string& session);
  // The transport closed a stream that Handle() opened.
  void StreamClosed(const std::string& session);

  // The answer for a request to `target` whose body exceeded its limit (the transport
  // stops reading).
  static HttpResponse TooLarge(std::string_view target);
  // An error outside JSON-RPC: {"status":"error","error":code,"message":...} with `status`.
  static HttpResponse Problem(int status, const std::string& code, const std::string& message);
  // "METHOD /path" for logs and metrics; unknown methods and paths collapse to one name.
  static std::string RouteName(std::string_view method, std::string_view target);
  // The body limit for a request to `target`.
  static size_t BodyLimit(std::string_view target);

 private:
  HttpResponse HandleMcp(const HttpRequest& req, const AuthContext& auth, RequestLog& log);
  HttpResponse HandleIngest(const HttpRequest& req, const AuthContext& auth, RequestLog& log);
  // Authenticates the bearer token; on failure fills `reject` with the 401.
  bool Authenticate(const HttpRequest& req, AuthContext* auth, HttpResponse* reject,
                    RequestLog& log);
  bool OriginAllowed(const std::string& origin) const;
  bool HostAllowed(const std::string& host) const;

  McpServer& mcp_;
  Store& store_;
  const Clock& clock_;
  Metrics& metrics_;
  RouterOptions options_;
  AuthContext anonymous_;
};

}  // namespace cortex
