// The HTTP server: a listener accepts, each connection runs on one worker thread's
// io_context (http_connection.cc), within the connection bounds (closing the longest-idle
// connection to make room), its deadlines enforced by one sweep per worker; on SIGTERM it
// stops accepting, lets requests finish and drains. Boost.Asio only: Beast stays in
// http_connection.cc.
#include "transport/http_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <thread>

#include "core/log.h"
#include "core/suspend.h"
#include "core/thread_name.h"
#include "transport/http_server_impl.h"

namespace cortex {

HttpResponse HttpServer::Impl::Respond(const HttpRequest& req,
                                       std::chrono::steady_clock::time_point start) {
  RequestLog log;
  HttpResponse res;
  try {
    res = router.Handle(req, log);
  } catch (const std::exception& e) {
    // The one boundary for exceptions: a bug answers 500, it never takes the server down.
    spdlog::error("request failed: {}", e.what());
    log.status = "internal_error";
    res = HttpResponse{};
    res.status = 500;
    res.content_type = "application/json";
    res.body = R"({"status":"error","error":"internal_error","message":"internal error"})";
  }
  metrics.EndRequest();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  metrics.Record(log.method.empty() ? log.route : log.method, log.tool, log.status, seconds);
  // One line per request; never a token or a body.
  AccessLog().info(
      "request route=\"{}\" method={} tool={} status={} http={} latency_ms={:.3f} "
      "trace_id={}",
      log.route, log.method.empty() ? "-" : log.method, log.tool.empty() ? "-" : log.tool,
      log.status, res.status, seconds * 1000, log.trace_id.empty() ? "-" : log.trace_id);
  return res;
}

void HttpServer::Impl::Accept() {
  Worker& worker = *workers[next_worker++ % workers.size()];
  acceptor.async_accept(worker.ioc,
                        [this, &worker](boost::system::error_code ec, tcp::socket socket) {
                          if (ec) {
                            if (!stopping) spdlog::warn("accept: {}", ec.message());
                            if (stopping || ec == net::error::operation_aborted) return;
                            return Accept();
                          }
                          if (stopping) return;
                          boost::system::error_code pec;
                          std::string peer = socket.remote_endpoint(pec).address().to_string();
                          // An event stream's events (a long call's progress, a subscription's
                          // updates) are small writes that must leave at once: with Nagle's
                          // algorithm on, each waited for the client to acknowledge the one before
                          // (up to its 40 ms delayed ACK).
                          socket.set_option(tcp::no_delay(true), pec);
                          if (auto conn = Admit(socket, peer, worker)) conn->Start();
                          Accept();
                        });
}

std::shared_ptr<Connection> HttpServer::Impl::Admit(tcp::socket& socket, const std::string& peer,
                                                    Worker& worker) {
  const char* refused = nullptr;
  std::shared_ptr<Connection> conn;
  // Released after the lock: the last reference to a connection may be here, and its
  // destructor takes the lock (ConnectionClosed).
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard<std::mutex> lock(conns_mu);
    std::erase_if(conns, [](const auto& w) { return w.expired(); });
    auto mine = per_address.find(peer);
    size_t from_peer = mine == per_address.end() ? 0 : mine->second;
    ConnectionAdmission admission = AdmitConnection(live, options.http.max_connections, from_peer,
                                                    options.http.max_connections_per_address);
    if (admission != ConnectionAdmission::kAdmit) {
      // Make room: the longest-idle connection in the bound's scope closes (it may take a
      // request meanwhile; then the next longest-idle one). A connection shed counts until
      // it is gone, a moment later: the bound is exceeded by the connections closing.
      bool own = admission == ConnectionAdmission::kShedOwnAddress;
      std::vector<IdleCandidate> candidates;
      for (const auto& w : conns) {
        if (auto c = w.lock()) {
          candidates.push_back(IdleCandidate{c->peer(), c->IdleSince()});
          open.push_back(std::move(c));
        }
      }
      bool shed = false;
      while (!shed) {
        size_t i = LongestIdle(candidates, own ? std::string_view(peer) : std::string_view());
        if (i == std::string_view::npos) break;
        shed = open[i]->Shed(candidates[i].idle_since);
        candidates[i].idle_since = kNotIdle;
      }
      if (!shed) refused = own ? "address" : "server";
    }
    if (refused == nullptr) {
      ++live;
      ++per_address[peer];
      conn = NewConnection(std::move(socket), *this, worker, peer);
      conns.push_back(conn);
    }
  }
  if (refused != nullptr) Refuse(socket, peer, refused);
  return conn;
}

// Over a connection bound with nothing idle to close: say so and hang up, rather than queue
// without bound. Counted and logged as every refusal is.
void HttpServer::Impl::Refuse(tcp::socket& socket, const std::string& peer, const char* bound) {
  static const std::string kBusy =
      "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
      "Connection: close\r\n\r\n";
  boost::system::error_code wec;
  net::write(socket, net::buffer(kBusy), wec);
  socket.shutdown(tcp::socket::shutdown_send, wec);
  socket.close(wec);
  metrics.Record("connection", "", "too_many_connections", 0);
  AccessLog().info("request route=connection status=too_many_connections http=503 bound={} peer={}",
                   bound, peer);
}

void HttpServer::Impl::Watch(Worker& worker, const std::shared_ptr<Connection>& conn) {
  worker.conns.push_back(conn);
  if (worker.sweeping) return;
  worker.sweeping = true;
  Sweep(worker);
}

// Four times a second while a worker has connections: each deadline is kept to within a
// quarter of a second, at the cost of one timer per thread rather than several timer
// changes per request.
void HttpServer::Impl::Sweep(Worker& worker) {
  worker.sweep.expires_after(limits::kDeadlineSweep);
  worker.sweep.async_wait([this, &worker](boost::system::error_code ec) {
    if (ec) {
      worker.sweeping = false;
      return;
    }
    auto now = std::chrono::steady_clock::now();
    std::erase_if(worker.conns, [now](const std::weak_ptr<Connection>& w) {
      auto c = w.lock();
      if (c) c->CloseIfPast(now);
      return !c;
    });
    if (worker.conns.empty()) {
      worker.sweeping = false;
      return;
    }
    Sweep(worker);
  });
}

void HttpServer::Impl::BeginStop() {
  if (stopping.exchange(true)) return;
  spdlog::info("shutting down: finishing in-flight requests");
  net::post(acceptor.get_executor(), [this] {
    boost::system::error_code ec;
    acceptor.close(ec);
  });
  net::post(ioc, [this] {
    if (signals) signals->cancel();
  });
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard<std::mutex> lock(conns_mu);
    for (auto& w : conns) {
      if (auto c = w.lock()) open.push_back(std::move(c));
    }
  }
  for (auto& c : open) c->Stop();
  // Past the grace period, whatever is still running is cut off.
  net::post(ioc, [this] {
    grace_timer.expires_after(limits::kShutdownGrace);
    grace_timer.async_wait([this](boost::system::error_code ec) {
      if (!ec) {
        spdlog::warn("shutdown grace period over; closing remaining connections");
        cut_off = true;
        ioc.stop();
      }
    });
    if (live == 0) grace_timer.cancel();
  });
}

void HttpServer::Impl::ConnectionClosed(const std::string& peer) {
  {
    std::lock_guard<std::mutex> lock(conns_mu);
    auto it = per_address.find(peer);
    if (it != per_address.end() && --it->second == 0) per_address.erase(it);
  }
  if (--live == 0 && stopping) net::post(ioc, [this] { grace_timer.cancel(); });
}

HttpServer::HttpServer(HttpRouter& router, Metrics& metrics, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(router, metrics, std::move(options))) {}

HttpServer::~HttpServer() = default;

Result<uint16_t> HttpServer::Bind() {
  boost::system::error_code ec;
  auto address = net::ip::make_address(impl_->options.host, ec);
  if (ec) return Status::InvalidArgument("bad listen address '" + impl_->options.host + "'");
  tcp::endpoint endpoint(address, impl_->options.port);
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::Unavailable("cannot listen on " + impl_->options.host + ":" +
                               std::to_string(impl_->options.port) + ": " + ec.message());
  }
  if (!address.is_loopback() && impl_->options.http.metrics_token.empty()) {
    spdlog::warn(
        "GET /metrics answers anyone who reaches {} (request counts by route, tool and status); "
        "set [http] metrics_token to require a token",
        impl_->options.host);
  }
  // Caught from here on, before the caller says it listens: a SIGTERM that follows at once
  // waits in the set for Run() instead of killing the process with the store open.
  impl_->signals.emplace(impl_->ioc, SIGINT, SIGTERM);
  return acceptor.local_endpoint().port();
}

void HttpServer::Run() {
  impl_->signals->async_wait([this](boost::system::error_code ec, int) {
    if (!ec) impl_->BeginStop();
  });
  impl_->Accept();
  std::vector<std::thread> threads;
  for (auto& worker : impl_->workers) {
    threads.emplace_back([&w = *worker] {
      Suspender::SetMustNotBlock(true);
      w.ioc.run();
    });
    NameThread(threads.back(), "cortex-io");
  }
  // The main context's run() returns once the acceptor and the signal wait are gone and
  // every connection has closed (or the shutdown grace period ran out).
  impl_->ioc.run();
  for (auto& worker : impl_->workers) worker->ioc.stop();
  for (auto& t : threads) t.join();
  // Writes still running (past the grace period) finish before the store can go away: the
  // write pool's, and those of requests suspended as fibers (each is resumed by a handler
  // its write posts to the worker).
  impl_->write_pool.join();
  for (auto& worker : impl_->workers) {
    worker->ioc.restart();
    while (worker->fibers > 0 && worker->ioc.run_one() > 0) {
    }
  }
}

void HttpServer::Stop() { impl_->BeginStop(); }

}  // namespace cortex
