// One HTTP request and its response, as the routing code sees them (no sockets): what
// http_server.cc parses and sends, and what http_router.cc and the web inbox decide.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cortex {

struct HttpRequest {
  std::string method;                                        // "GET", "POST", ...
  std::string target;                                        // path and query, e.g. "/mcp"
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  std::string body;
  // Set by the transport for a long-running tool call (HttpRouter::IsLongCall) it runs with
  // a live response: `emit` sends SSE event text ahead of the response (the 200 event
  // stream opens with the first); `gone` turns true once the client has closed the
  // connection. Both null otherwise.
  std::function<void(std::string)> emit = nullptr;
  std::shared_ptr<std::atomic<bool>> gone = nullptr;

  // The first value of header `name` (lowercase), if present.
  const std::string* Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type/Length
  std::string content_type;                                  // empty when there is no body
  std::string body;
  // After the headers, keep the connection open as a server-to-client event stream (GET
  // /mcp, GET /inbox/api/events): every `stream_poll` the transport asks
  // HttpRouter::StreamNext(stream) what to send, until it says the stream has ended or the
  // server stops.
  bool open_stream = false;
  std::string stream;                        // what StreamNext is asked about
  std::string stream_state;                  // its state as of the response (StreamNext)
  std::chrono::milliseconds stream_poll{0};  // 0: limits::kSseKeepAlive
};

// Facts about one finished request, for the request log and metrics.
struct RequestLog {
  std::string route;   // e.g. "POST /mcp"
  std::string method;  // JSON-RPC method, if any
  std::string tool;
  std::string status;  // "ok" or an error code
  std::string trace_id;
};

// A part of the server above the transport that answers paths of its own: the web inbox,
// the OAuth authorization server. app wires them into the router (RouterParts), which
// knows them only through this interface; they sign their callers in themselves.
class PathHandler {
 public:
  virtual ~PathHandler() = default;
  // Whether this answers `path` (a request target without its query).
  virtual bool Handles(std::string_view path) const = 0;
  // The name a request to `path` (one this handles) is logged and counted under: one of a
  // few fixed names, so that no client can mint metric keys.
  virtual std::string RouteOf(std::string_view path) const = 0;
  // Whether handling `req` may write, or wait on the network (HttpRouter::MayWrite,
  // MayCallOut).
  virtual bool MayWrite(const HttpRequest& req) const = 0;
  virtual bool MayCallOut(const HttpRequest& /*req*/) const { return false; }
  // Whether browser-based clients call `path` from their own origins (OAuth's client
  // endpoints): the router checks no Origin for it.
  virtual bool AnyOrigin(std::string_view /*path*/) const { return false; }
  // Answers `req`. `base_url` names this server as its client sees it.
  virtual HttpResponse Handle(const HttpRequest& req, const std::string& base_url,
                              RequestLog& log) = 0;
  // Whether `stream` (HttpResponse::stream) is one this handler opened, and what it sends
  // next (HttpRouter::StreamNext).
  virtual bool OwnsStream(std::string_view /*stream*/) const { return false; }
  virtual std::optional<std::string> StreamNext(const std::string& /*stream*/,
                                                std::string& /*state*/) {
    return std::nullopt;
  }
};

}  // namespace cortex
