// The HTTP transport: Boost.Beast sockets around HttpRouter. Beast stays inside
// http_connection.cc; nothing else in the tree includes it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/limits.h"
#include "core/metrics.h"
#include "core/status.h"
#include "transport/http_router.h"

namespace cortex {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8787;  // 0: any free port
  int threads = 2;
  HttpLimits http;
  // Write requests run as fibers on the I/O threads, suspended while their writes wait for
  // a commit (needs a store whose Write() suspends: Store::SuspendsWrites), except those
  // that may wait on the network (HttpRouter::MayCallOut). Otherwise a write request is
  // handed to a pool of threads that block.
  bool write_fibers = false;
};

class HttpServer {
 public:
  HttpServer(HttpRouter& router, Metrics& metrics, HttpServerOptions options);
  ~HttpServer();

  // Binds and listens, and catches SIGTERM and SIGINT from then on. Returns the bound port.
  Result<uint16_t> Bind();

  // Serves until SIGTERM or SIGINT (or Stop()), then stops accepting, lets in-flight
  // requests finish (up to limits::kShutdownGrace), closes idle connections and returns.
  // REQUIRES: Bind() succeeded.
  void Run();

  // Starts the graceful stop from any thread.
  void Stop();

  struct Impl;  // the server's state: transport/http_server_impl.h

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cortex
