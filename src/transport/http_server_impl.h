// The HTTP server's shared state (HttpServer::Impl) and the face a connection shows it:
// internal to the transport. http_server.cc accepts, bounds, sweeps and stops connections
// (Boost.Asio); http_connection.cc is one connection (Boost.Beast, and only there).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/flood_guard.h"
#include "transport/http_server.h"
#include "transport/request_fiber.h"

namespace cortex {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// One client connection as the server sees it (HttpConnection, in http_connection.cc, is
// the only kind).
class Connection {
 public:
  virtual ~Connection() = default;
  virtual const std::string& peer() const = 0;
  // When the connection went idle (waiting for a request's first byte, a new connection
  // included), or kNotIdle. Read from the accept thread.
  virtual int64_t IdleSince() const = 0;
  // From the accept thread, to make room for a new connection: closes this one if it is
  // still idle since `seen` (IdleSince()), and then returns true. A request whose first
  // bytes arrive meanwhile finds it shed, as if the close had come a moment sooner (HTTP
  // lets a server close an idle keep-alive connection at any time).
  virtual bool Shed(int64_t seen) = 0;
  // Joins its worker's sweep and reads the first request.
  virtual void Start() = 0;
  // Called by the worker's sweep: past its deadline, a connection is closed, and whatever
  // it was waiting for completes with an error.
  virtual void CloseIfPast(std::chrono::steady_clock::time_point now) = 0;
  // Called on shutdown: idle and streaming connections close now; a busy one closes after
  // its response is written.
  virtual void Stop() = 0;
};

struct HttpServer::Impl {
  Impl(HttpRouter& r, Metrics& m, HttpServerOptions o)
      : router(r),
        metrics(m),
        options(std::move(o)),
        flood(options.http.flood_rate, options.http.flood_burst, limits::kMaxFloodAddresses),
        write_pool(limits::kWriteThreads),
        acceptor(ioc),
        grace_timer(ioc) {
    for (int i = 0; i < std::max(1, options.threads); ++i) {
      workers.push_back(std::make_unique<Worker>());
      work.push_back(net::make_work_guard(workers.back()->ioc));
    }
  }

  // One thread's connections and the sweep that enforces their deadlines.
  struct Worker {
    StackPool stacks;  // first, so that it outlives any fiber the context still holds
    net::io_context ioc{1};
    std::vector<std::weak_ptr<Connection>> conns;  // touched only on this worker's thread
    net::steady_timer sweep{ioc};
    bool sweeping = false;
    int fibers = 0;  // requests running or suspended as fibers here (RequestFiber)
  };
  // Adds a connection to its worker's sweep. Runs on that worker's thread.
  void Watch(Worker& worker, const std::shared_ptr<Connection>& conn);
  void Sweep(Worker& worker);

  void Accept();
  // Admits the connection `socket` from `peer` within the connection bounds, making room by
  // closing an idle connection if it must; null if it is refused. On the accept thread.
  std::shared_ptr<Connection> Admit(tcp::socket& socket, const std::string& peer, Worker& worker);
  void Refuse(tcp::socket& socket, const std::string& peer, const char* bound);
  void BeginStop();
  void ConnectionClosed(const std::string& peer);
  // Routes one request that arrived at `start` (and was counted by Metrics::BeginRequest),
  // with its metrics and log line. Runs on a worker or the write pool.
  HttpResponse Respond(const HttpRequest& req, std::chrono::steady_clock::time_point start);

  HttpRouter& router;
  Metrics& metrics;
  HttpServerOptions options;
  FloodGuard flood;
  // The main context accepts, watches signals and times the shutdown. Each connection lives
  // on one worker context, run by one thread: its handlers never hop threads, so a request
  // costs no cross-thread wake-ups and needs no strand.
  net::io_context ioc;
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<net::executor_work_guard<net::io_context::executor_type>> work;
  size_t next_worker = 0;  // round robin; touched only by the accept handler
  net::thread_pool write_pool;
  tcp::acceptor acceptor;
  net::steady_timer grace_timer;
  std::optional<net::signal_set> signals;
  std::atomic<bool> stopping{false};
  std::atomic<bool> cut_off{false};  // the grace period ran out: queued writes are dropped
  std::atomic<size_t> live{0};
  std::mutex conns_mu;
  std::vector<std::weak_ptr<Connection>> conns;
  std::unordered_map<std::string, size_t> per_address;  // open connections; under conns_mu

  // Connections still held by a worker (after a grace-period cutoff) are destroyed with
  // it and report to `live`: destroy the workers while everything else is still here.
  ~Impl() {
    write_pool.join();
    work.clear();
    workers.clear();
  }
};

// A new connection on `socket` from `peer`, served on `worker`. Its destructor tells the
// server (ConnectionClosed).
std::shared_ptr<Connection> NewConnection(tcp::socket socket, HttpServer::Impl& server,
                                          HttpServer::Impl::Worker& worker, std::string peer);

}  // namespace cortex
