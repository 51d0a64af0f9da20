// Socket handling after Boost.Beast's example/advanced/server: a listener accepts, each
// connection runs on one worker thread's io_context, and the request handler (HttpRouter)
// does no socket I/O of its own. Reads are handled on the worker thread. A request that may
// write (HttpRouter::MayWrite) runs there too as a fiber when the store can suspend it while
// its write waits for a group commit (RequestFiber) and nothing else it does waits
// (HttpRouter::MayCallOut: a model call); otherwise it goes to the write pool, whose threads
// block, and its response comes back to the connection's worker to be sent. The read, write and
// idle timeouts are deadlines stored on the connection, enforced by one sweep per worker.
// It stays one file, past the ~600-line rule, on purpose: it is the only file that includes
// Boost.Beast, whose headers are slow to compile, so Beast is compiled once, here (routing,
// which needs none of it, is in http_router.cc).
#include "transport/http_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cctype>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/json_text.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/suspend.h"
#include "core/thread_name.h"
#include "transport/flood_guard.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORTEX_ASAN 1
#endif
#elif defined(__SANITIZE_ADDRESS__)
#define CORTEX_ASAN 1
#endif
#ifdef CORTEX_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace cortex {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ctx = boost::context;
using tcp = net::ip::tcp;

class Connection;

constexpr size_t kReadBufferBytes = 4096;

// AddressSanitizer keeps track of the stack a thread runs on; a fiber switch must tell it
// (before: where the thread goes; after: where it came from). No-ops in other builds.
struct StackSwitch {
  static void Start(void** save, const void* bottom, size_t size) {
#ifdef CORTEX_ASAN
    __sanitizer_start_switch_fiber(save, bottom, size);
#else
    (void)save, (void)bottom, (void)size;
#endif
  }
  static void Finish(void* saved, const void** bottom_old, size_t* size_old) {
#ifdef CORTEX_ASAN
    __sanitizer_finish_switch_fiber(saved, bottom_old, size_old);
#else
    (void)saved, (void)bottom_old, (void)size_old;
#endif
  }
};

// Fiber stacks kept for reuse. Touched only by its worker's thread (and, after the workers
// have stopped, by the thread that drains them).
class StackPool {
 public:
  StackPool() = default;
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  ~StackPool() {
    for (ctx::stack_context& s : free_) make_.deallocate(s);
  }

  ctx::stack_context Allocate() {
    if (free_.empty()) return make_.allocate();
    ctx::stack_context s = free_.back();
    free_.pop_back();
    return s;
  }

  void Deallocate(ctx::stack_context& s) noexcept {
    if (free_.size() < limits::kKeptFiberStacks) return free_.push_back(s);
    make_.deallocate(s);
  }

  // What Boost.Context takes: a copyable allocator. `given` learns the stack handed out.
  struct Allocator {
    StackPool* pool;
    ctx::stack_context* given;
    ctx::stack_context allocate() { return *given = pool->Allocate(); }
    void deallocate(ctx::stack_context& s) noexcept { pool->Deallocate(s); }
  };

 private:
  ctx::protected_fixedsize_stack make_{limits::kFiberStackBytes};
  std::vector<ctx::stack_context> free_;
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

// A write request run as a fiber on its connection's worker, so that the wait for its group
// commit suspends the request instead of holding a thread (core/suspend.h). The write pool's
// way costs two more hand-offs per write: to a pool thread and back to the worker.
class RequestFiber final : public Suspender {
 public:
  // `body` runs on the fiber; `done` on the worker once it has ended, and may destroy this.
  RequestFiber(HttpServer::Impl::Worker& worker, std::function<void()> body,
               std::function<void()> done)
      : worker_(worker), body_(std::move(body)), done_(std::move(done)) {
    fiber_ = ctx::fiber(std::allocator_arg, StackPool::Allocator{&worker.stacks, &stack_},
                        [this](ctx::fiber&& worker_side) {
                          StackSwitch::Finish(nullptr, &worker_bottom_, &worker_size_);
                          worker_side_ = std::move(worker_side);
                          body_();
                          StackSwitch::Start(nullptr, worker_bottom_, worker_size_);  // ends
                          return std::move(worker_side_);
                        });
    ++worker_.fibers;
  }
  RequestFiber(const RequestFiber&) = delete;
  RequestFiber& operator=(const RequestFiber&) = delete;

  // Runs the request until it suspends or ends. On the worker's thread.
  void Run() {
    {
      Suspender::Scope scope(this);
      StackSwitch::Start(&worker_fake_stack_, static_cast<char*>(stack_.sp) - stack_.size,
                         stack_.size);
      fiber_ = std::move(fiber_).resume();
      StackSwitch::Finish(worker_fake_stack_, nullptr, nullptr);
    }
    if (fiber_) return;  // suspended: Suspend() posts the next Run()
    --worker_.fibers;
    auto done = std::move(done_);
    done();  // may destroy this: nothing here is touched after it
  }

  void Suspend(const std::function<void(Resume)>& start) override {
    start([this] { net::post(worker_.ioc, [this] { Run(); }); });
    StackSwitch::Start(&fake_stack_, worker_bottom_, worker_size_);
    worker_side_ = std::move(worker_side_).resume();  // back in Run() once resumed
    // Resumed, maybe on another thread (the shutdown drain): that thread's stack is the
    // worker side now.
    StackSwitch::Finish(fake_stack_, &worker_bottom_, &worker_size_);
  }

 private:
  HttpServer::Impl::Worker& worker_;
  std::function<void()> body_;
  std::function<void()> done_;
  ctx::fiber fiber_;          // the request's side while the worker runs
  ctx::fiber worker_side_;    // the worker's side while the request runs
  ctx::stack_context stack_;  // the request's stack
  // For AddressSanitizer (StackSwitch): the worker side's stack, and each side's state
  // while the other runs.
  const void* worker_bottom_ = nullptr;
  size_t worker_size_ = 0;
  void* worker_fake_stack_ = nullptr;
  void* fake_stack_ = nullptr;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, HttpServer::Impl& server, HttpServer::Impl::Worker& worker,
             std::string peer)
      : socket_(std::move(socket)),
        server_(server),
        worker_(worker),
        timer_(socket_.get_executor()),
        peer_(std::move(peer)),
        idle_since_(Ticks()) {
    // Beast reads as much as the buffer has room for, at least 512 bytes: room for a whole
    // typical request takes one recv instead of two.
    buffer_.reserve(kReadBufferBytes);
  }

  ~Connection() { server_.ConnectionClosed(peer_); }

  const std::string& peer() const { return peer_; }

  // When the connection went idle (waiting for a request's first byte, a new connection
  // included), or kNotIdle. Read from the accept thread.
  int64_t IdleSince() const {
    int64_t v = idle_since_.load(std::memory_order_acquire);
    return v == kShed ? kNotIdle : v;
  }

  // From the accept thread, to make room for a new connection: closes this one if it is
  // still idle since `seen` (IdleSince()), and then returns true. A request whose first
  // bytes arrive meanwhile finds it shed, as if the close had come a moment sooner (HTTP
  // lets a server close an idle keep-alive connection at any time).
  bool Shed(int64_t seen) {
    if (seen == kNotIdle || !idle_since_.compare_exchange_strong(seen, kShed)) return false;
    net::post(socket_.get_executor(), [self = shared_from_this()] { self->Close(); });
    return true;
  }

  void Start() {
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] {
      self->server_.Watch(self->worker_, self);
      self->ReadHeader();
    });
  }

  // Called by the worker's sweep: past its deadline, a connection is closed, and whatever
  // it was waiting for completes with an error.
  void CloseIfPast(std::chrono::steady_clock::time_point now) {
    if (now >= deadline_) Close();
  }

  // Called on shutdown: idle and streaming connections close now; a busy one closes after
  // its response is written.
  void Stop() {
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] {
      if (self->streaming_ && !self->stream_writing_ && !self->closed_) {
        // A stream with a last word (a subscriptions/listen's result) ends with it.
        std::string last = self->server_.router.StreamEnd(self->stream_);
        if (!last.empty()) {
          self->timer_.cancel();
          return self->WriteStream(Chunk(last) + "0\r\n\r\n", /*then_close=*/true);
        }
      }
      if (!self->busy_ || self->streaming_) self->Close();
    });
  }

 private:
  void ReadHeader() {
    busy_ = false;
    if (server_.stopping) return Close();
    parser_.emplace();
    parser_->header_limit(limits::kMaxHeaderBytes);
    // The body limit depends on the route: it is set once the header names the target.
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    if (buffer_.size() > 0) return ReadRestOfHeader();  // a pipelined request is under way
    // Between requests the idle timeout applies; once the first bytes of a request arrive,
    // the whole of it must arrive within the read timeout (a slowloris is cut there). The
    // first read is speculative: a request already in is read at once, and one not yet in
    // waits on the socket's standing epoll registration (an async_wait re-armed it with an
    // epoll_ctl on every request).
    SetDeadline(server_.options.http.idle_timeout);
    // Idle from now (a new connection: since it was accepted), unless already shed.
    int64_t was = idle_since_.load(std::memory_order_acquire);
    if (was == kShed ||
        !idle_since_.compare_exchange_strong(was, was == kNotIdle ? Ticks() : was)) {
      return Close();
    }
    socket_.async_read_some(buffer_.prepare(kReadBufferBytes), [self = shared_from_this()](
                                                                   beast::error_code ec, size_t n) {
      if (ec) return self->Close();
      // Busy from here on, unless the server shed it meanwhile.
      int64_t seen = self->idle_since_.load(std::memory_order_acquire);
      if (seen == kShed || !self->idle_since_.compare_exchange_strong(seen, kNotIdle)) {
        return self->Close();
      }
      self->buffer_.commit(n);
      self->ReadRestOfHeader();
    });
  }

  void ReadRestOfHeader() {
    SetDeadline(server_.options.http.read_timeout);
    http::async_read_header(socket_, buffer_, *parser_,
                            beast::bind_front_handler(&Connection::OnHeader, shared_from_this()));
  }

  // `header_bytes`: what the parser consumed, request line to blank line. Beast's own limit
  // leaves uncounted the lines it completed within its first read, so it bounds memory
  // only; the exact limit is checked here.
  void OnHeader(beast::error_code ec, size_t header_bytes) {
    if (ec == http::error::header_limit || (!ec && header_bytes > limits::kMaxHeaderBytes)) {
      return Refuse(431, "headers_too_large",
                    HttpRouter::Problem(431, "headers_too_large",
                                        "request headers exceed " +
                                            std::to_string(limits::kMaxHeaderBytes) + " bytes"));
    }
    if (Malformed(ec)) return BadRequest("malformed request: " + ec.message());
    if (ec) return Close();  // closed or timed out: nobody to answer
    busy_ = true;
    if (int wait = server_.flood.Admit(peer_, std::chrono::steady_clock::now()); wait > 0) {
      return Flooded(wait);
    }
    auto& req = parser_->get();
    // The head as the router sees it, checked before the body is read; the body joins it in
    // OnRead.
    head_.method = std::string(req.method_string());
    head_.target = std::string(req.target());
    head_.headers.clear();
    head_.body.clear();
    for (const auto& field : req) {
      head_.headers.emplace_back(AsciiLower(field.name_string()), std::string(field.value()));
    }
    if (auto problem = HttpRouter::FramingProblem(head_, req.version() >= 11)) {
      return BadRequest(*problem);
    }
    size_t limit = HttpRouter::BodyLimit(head_);
    if (parser_->content_length() && *parser_->content_length() > limit) {
      return Refuse(413, "payload_too_large", HttpRouter::TooLarge(head_));
    }
    parser_->body_limit(limit);
    // The deadline set when the request's first byte arrived covers the body too.
    if (AsciiLower(req[http::field::expect]) == "100-continue") {
      auto msg = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      net::async_write(socket_, net::buffer(*msg),
                       [self = shared_from_this(), msg](beast::error_code ec2, size_t) {
                         if (ec2) return self->Close();
                         self->ReadBody();
                       });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(socket_, buffer_, *parser_,
                     beast::bind_front_handler(&Connection::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, size_t) {
    if (ec == http::error::body_limit) {
      return Refuse(413, "payload_too_large", HttpRouter::TooLarge(head_));
    }
    if (Malformed(ec)) return BadRequest("malformed request body: " + ec.message());
    if (ec) return Close();
    deadline_ = kNoDeadline;  // the request is in; handling it has no time limit here
    auto& raw = parser_->get();
    HttpRequest req = std::move(head_);
    req.body = std::move(raw.body());
    bool keep_alive = raw.keep_alive();

    // From here the request counts as in flight, including any wait for a pool thread.
    auto start = std::chrono::steady_clock::now();
    server_.metrics.BeginRequest();
    if (server_.router.MayWrite(req)) {
      if (server_.cut_off) {
        // Past the shutdown grace period (the drain in Run()): no new write starts.
        server_.metrics.EndRequest();
        return Close();
      }
      // A long-running tool's call goes to the write pool with a live response: its
      // progress is sent as it comes, and the client's leaving cancels it.
      bool long_call = server_.router.IsLongCall(req);
      if (long_call) GoLive(req);
      if (!long_call && server_.options.write_fibers &&
          req.body.size() <= limits::kMaxFiberBodyBytes && !server_.router.MayCallOut(req) &&
          RunAsFiber(req, keep_alive, start)) {
        return;
      }
      // Off the worker: its other connections keep being served while this one waits for
      // its commit. The response is sent from the connection's own worker.
      net::post(server_.write_pool, [self = shared_from_this(), req = std::move(req), keep_alive,
                                     start]() mutable {
        thread_local bool named = (NameThread(pthread_self(), "cortex-write"), true);
        (void)named;
        if (self->server_.cut_off) {
          // Past the shutdown grace period nothing more is answered: do not start work
          // whose acknowledgement could never be sent.
          self->server_.metrics.EndRequest();
          return;
        }
        HttpResponse res = self->server_.Respond(req, start);
        net::post(self->socket_.get_executor(), [self, res = std::move(res), keep_alive]() mutable {
          self->Send(std::move(res), keep_alive);
        });
      });
      return;
    }
    Send(server_.Respond(req, start), keep_alive);
  }

  // On this worker, as a fiber: its other connections are served while it waits for its
  // commit, and it goes on here once its write is durable.
  // False, with `req` left as it was, if no stack could be had for the fiber (memory, or
  // the kernel's limit on mappings): the write pool takes the request instead.
  bool RunAsFiber(HttpRequest& req, bool keep_alive, std::chrono::steady_clock::time_point start) {
    auto request = std::make_shared<HttpRequest>(std::move(req));
    auto res = std::make_shared<HttpResponse>();
    try {
      fiber_ = std::make_unique<RequestFiber>(
          worker_, [this, request, res, start] { *res = server_.Respond(*request, start); },
          [self = shared_from_this(), res, keep_alive] {
            auto ended = std::move(self->fiber_);
            self->Send(std::move(*res), keep_alive);
          });
    } catch (const std::bad_alloc&) {
      spdlog::warn("no stack for a write request's fiber; the write pool takes it");
      req = std::move(*request);
      return false;
    }
    fiber_->Run();
    return true;
  }

  // A long-running call's live response (HttpRequest::emit, gone). While the call runs, a
  // read watches the socket: its end (the client closed) cancels the call; bytes of a next
  // request are kept for it. The events go out in order, one write at a time; the response
  // to the call ends the stream (LiveEnd).
  void GoLive(HttpRequest& req) {
    live_gone_ = std::make_shared<std::atomic<bool>>(false);
    req.gone = live_gone_;
    std::weak_ptr<Connection> weak = weak_from_this();
    auto executor = socket_.get_executor();
    req.emit = [weak, executor](std::string event) {
      net::post(executor, [weak, event = std::move(event)]() mutable {
        if (auto self = weak.lock()) self->LiveWrite(std::move(event));
      });
    };
    watching_ = true;
    socket_.async_read_some(buffer_.prepare(kReadBufferBytes),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->watching_ = false;
                              if (ec) {
                                if (self->live_gone_) self->live_gone_->store(true);
                                return self->Close();
                              }
                              self->buffer_.commit(n);  // a pipelined request's first bytes
                              if (self->resume_after_watch_) {
                                self->resume_after_watch_ = false;
                                self->ReadHeader();
                              }
                            });
  }

  void LiveWrite(std::string event) {
    if (closed_) return;
    if (!live_head_sent_) {
      live_head_sent_ = true;
      live_out_.push_back(
          "HTTP/1.1 200 OK\r\nServer: cortex\r\nContent-Type: text/event-stream\r\n"
          "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n");
    }
    live_out_.push_back(Chunk(event));
    LivePump();
  }

  // The call's response after its live events: the rest of the stream (its result, none
  // if it was cancelled), then the stream's end.
  void LiveEnd(HttpResponse res, bool keep_alive) {
    if (!res.body.empty()) live_out_.push_back(Chunk(res.body));
    live_out_.push_back("0\r\n\r\n");
    live_then_ = [keep_alive, this] {
      if (!keep_alive || server_.stopping) return Close();
      AfterResponse();
    };
    LivePump();
  }

  void LivePump() {
    if (live_writing_ || closed_) return;
    if (live_out_.empty()) {
      if (live_then_) std::exchange(live_then_, nullptr)();
      return;
    }
    live_writing_ = true;
    SetDeadline(server_.options.http.read_timeout);
    auto msg = std::make_shared<std::string>(std::move(live_out_.front()));
    live_out_.pop_front();
    net::async_write(socket_, net::buffer(*msg),
                     [self = shared_from_this(), msg](beast::error_code ec, size_t) {
                       self->live_writing_ = false;
                       self->deadline_ = kNoDeadline;
                       if (ec) {
                         if (self->live_gone_) self->live_gone_->store(true);
                         return self->Close();
                       }
                       self->LivePump();
                     });
  }

  // The next request, once a response is sent: the watch read of a long call, if still
  // waiting, is the read of it.
  void AfterResponse() {
    live_head_sent_ = false;
    live_gone_.reset();
    if (watching_) {
      resume_after_watch_ = true;
      SetDeadline(server_.options.http.idle_timeout);
      busy_ = false;
      return;
    }
    ReadHeader();
  }

  void Send(HttpResponse res, bool keep_alive) {
    busy_ = true;
    if (live_head_sent_) return LiveEnd(std::move(res), keep_alive);
    if (res.open_stream) return OpenStream(std::move(res));
    keep_alive = keep_alive && !server_.stopping;
    // A response to HEAD has the headers of the GET response, Content-Length included, and
    // no body: the client reads none, so a body would be taken for the next response.
    bool head = parser_ && parser_->get().method() == http::verb::head;
    auto out = std::make_shared<std::pair<std::string, std::string>>();
    out->first = ResponseHead(res, keep_alive);
    if (!head && HasBody(res.status)) out->second = std::move(res.body);
    // A client that stops reading its response is cut off after the read timeout too.
    SetDeadline(server_.options.http.read_timeout);
    std::array<net::const_buffer, 2> buffers{net::buffer(out->first), net::buffer(out->second)};
    net::async_write(socket_, buffers,
                     [self = shared_from_this(), out, keep_alive](beast::error_code ec, size_t) {
                       if (ec || !keep_alive) return self->Close();
                       self->AfterResponse();
                     });
  }

  // One header line; a CR or LF in a value becomes a space, so no value can add a line.
  static void AppendField(std::string& head, std::string_view name, std::string_view value) {
    head += name;
    head += ": ";
    for (char c : value) head.push_back(c == '\r' || c == '\n' ? ' ' : c);
    head += "\r\n";
  }

  // The status line and headers, written out here rather than through Beast's message and
  // serializer, which allocates a few times per header (docs/performance.md). A status that
  // has no body (1xx, 204, 304) gets no Content-Length, as Beast's prepare_payload did.
  static std::string ResponseHead(const HttpResponse& res, bool keep_alive) {
    std::string head = "HTTP/1.1 " + std::to_string(res.status) + " ";
    head += http::obsolete_reason(static_cast<http::status>(res.status));
    head += "\r\nServer: cortex\r\n";
    for (const auto& [name, value] : res.headers) AppendField(head, name, value);
    if (!res.content_type.empty()) AppendField(head, "Content-Type", res.content_type);
    if (HasBody(res.status)) AppendField(head, "Content-Length", std::to_string(res.body.size()));
    if (!keep_alive) AppendField(head, "Connection", "close");
    head += "\r\n";
    return head;
  }

  static bool HasBody(int status) { return status >= 200 && status != 204 && status != 304; }

  // Whether `ec` says the client sent something that is not HTTP (a 400), rather than that
  // it went away, took too long or sent too much (answered elsewhere).
  static bool Malformed(const beast::error_code& ec) {
    if (!ec || ec.category() != http::make_error_code(http::error::bad_method).category()) {
      return false;
    }
    switch (static_cast<http::error>(ec.value())) {
      case http::error::end_of_stream:
      case http::error::partial_message:
      case http::error::need_more:
      case http::error::need_buffer:
      case http::error::buffer_overflow:
      case http::error::header_limit:
      case http::error::body_limit:
      case http::error::stale_parser:
      case http::error::short_read:
        return false;
      default:
        return true;
    }
  }

  // Over the flood guard: 429 before the body is read, then hang up.
  void Flooded(int retry_after_s) {
    HttpResponse r = HttpRouter::Problem(
        429, "rate_limited",
        "Too many requests from this address; retry in " + std::to_string(retry_after_s) + " s.");
    r.headers.emplace_back("Retry-After", std::to_string(retry_after_s));
    Refuse(429, "rate_limited", std::move(r));
  }

  // Not HTTP Cortex reads (RFC 9112 framing): 400, then hang up, since what follows on the
  // connection cannot be told apart from this request's remains.
  void BadRequest(const std::string& why) {
    Refuse(400, "bad_request", HttpRouter::Problem(400, "bad_request", Utf8Prefix(why, 300)));
  }

  // A refusal made here rather than by the router (400 framing, 413, 429, 431): logged and
  // counted as the router's answers are, then the connection is closed.
  void Refuse(int http_status, const char* status, HttpResponse res) {
    std::string route =
        parser_ ? server_.router.RouteName(parser_->get().method_string(), parser_->get().target())
                : std::string("OTHER other");
    server_.metrics.Record(route, "", status, 0);
    AccessLog().info("request route=\"{}\" status={} http={} peer={}", route, status, http_status,
                     peer_);
    Send(std::move(res), false);
  }

  // A server-to-client event stream (GET /mcp, GET /inbox/api/events): chunked; every poll
  // sends what the router has for it, or an SSE comment once the stream has been quiet for
  // kSseKeepAlive, until the router ends it, the client goes away, or the server stops.
  void OpenStream(HttpResponse res) {
    streaming_ = true;
    stream_ = res.stream;
    stream_state_ = res.stream_state;
    stream_poll_ =
        res.stream_poll.count() > 0
            ? res.stream_poll
            : std::chrono::duration_cast<std::chrono::milliseconds>(limits::kSseKeepAlive);
    std::string head =
        "HTTP/1.1 200 OK\r\nServer: cortex\r\nContent-Type: text/event-stream\r\n"
        "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n";
    for (const auto& [name, value] : res.headers) AppendField(head, name, value);
    head += "\r\n";
    if (!res.body.empty()) head += Chunk(res.body);  // what the stream starts with
    WriteStream(std::move(head));
    last_sent_ = std::chrono::steady_clock::now();
    // Notice the client leaving: any read completes only with an error (or stray bytes).
    auto sink = std::make_shared<std::array<char, 256>>();
    socket_.async_read_some(net::buffer(*sink), [self = shared_from_this(), sink](
                                                    beast::error_code, size_t) { self->Close(); });
    Tick();
  }

  void Tick() {
    timer_.expires_after(stream_poll_);
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->closed_) return;
      if (self->stream_writing_) {
        // The last write is still waiting for the client to read: its deadline runs, and a
        // second write must not interleave with it.
        if (self->server_.stopping) return self->Close();
        return self->Tick();
      }
      std::optional<std::string> next;
      if (!self->server_.stopping) {
        next = self->server_.router.StreamNext(self->stream_, self->stream_state_);
      }
      if (!next) return self->WriteStream("0\r\n\r\n", /*then_close=*/true);
      auto now = std::chrono::steady_clock::now();
      if (!next->empty()) {
        self->WriteStream(Chunk(*next));
        self->last_sent_ = now;
      } else if (now - self->last_sent_ >= limits::kSseKeepAlive) {
        self->WriteStream(Chunk(": keep-alive\n\n"));
        self->last_sent_ = now;
      }
      self->Tick();
    });
  }

  static std::string Chunk(std::string_view data) {
    char size[20];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return std::string(size) + std::string(data) + "\r\n";
  }

  // One write at a time; a client that does not take it within the read timeout is cut
  // off, as for any response.
  void WriteStream(std::string bytes, bool then_close = false) {
    stream_writing_ = true;
    SetDeadline(server_.options.http.read_timeout);
    auto msg = std::make_shared<std::string>(std::move(bytes));
    net::async_write(socket_, net::buffer(*msg),
                     [self = shared_from_this(), msg, then_close](beast::error_code ec, size_t) {
                       self->stream_writing_ = false;
                       self->deadline_ = kNoDeadline;
                       if (ec || then_close) self->Close();
                     });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    if (streaming_) server_.router.StreamClosed(stream_);
    timer_.cancel();
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    socket_.close(ec);
  }

  static constexpr auto kNoDeadline = std::chrono::steady_clock::time_point::max();
  static constexpr int64_t kShed = INT64_MIN;  // closed to make room (IdleSince: not idle)

  static int64_t Ticks() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

  // A deadline is a time stored per step, checked by the worker's sweep: no timer is set
  // or cancelled per request (each was a timerfd_settime system call).
  void SetDeadline(std::chrono::seconds from_now) {
    deadline_ = std::chrono::steady_clock::now() + from_now;
  }

  tcp::socket socket_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest head_;  // the request being read, as far as it has come (OnHeader)
  HttpServer::Impl& server_;
  HttpServer::Impl::Worker& worker_;
  net::steady_timer timer_;  // the event stream's keep-alive
  std::chrono::steady_clock::time_point deadline_ = kNoDeadline;
  bool busy_ = false;
  bool streaming_ = false;
  bool stream_writing_ = false;  // an event-stream write is in progress
  bool closed_ = false;
  std::string stream_;        // the event stream, as the router names it
  std::string stream_state_;  // the router's, between polls
  std::chrono::milliseconds stream_poll_{0};
  std::chrono::steady_clock::time_point last_sent_;  // the stream's last bytes
  std::string peer_;                     // the client's address: flood guard, connection bounds
  std::atomic<int64_t> idle_since_;      // Ticks() when it went idle; kNotIdle; kShed (IdleSince)
  std::unique_ptr<RequestFiber> fiber_;  // the request running as a fiber, if one is
  // A long-running call's live response (GoLive).
  std::shared_ptr<std::atomic<bool>> live_gone_;
  bool live_head_sent_ = false;
  bool live_writing_ = false;
  std::deque<std::string> live_out_;
  std::function<void()> live_then_;  // once live_out_ is sent
  bool watching_ = false;            // the watch read is pending
  bool resume_after_watch_ = false;  // the response is sent: the watch read is the next's
};

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
  acceptor.async_accept(worker.ioc, [this, &worker](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (!stopping) spdlog::warn("accept: {}", ec.message());
      if (stopping || ec == net::error::operation_aborted) return;
      return Accept();
    }
    if (stopping) return;
    beast::error_code pec;
    std::string peer = socket.remote_endpoint(pec).address().to_string();
    // An event stream's events (a long call's progress, a subscription's updates) are small
    // writes that must leave at once: with Nagle's algorithm on, each waited for the client
    // to acknowledge the one before (up to its 40 ms delayed ACK).
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
      conn = std::make_shared<Connection>(std::move(socket), *this, worker, peer);
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
  beast::error_code wec;
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
  worker.sweep.async_wait([this, &worker](beast::error_code ec) {
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
    beast::error_code ec;
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
    grace_timer.async_wait([this](beast::error_code ec) {
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
  beast::error_code ec;
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
  impl_->signals->async_wait([this](beast::error_code ec, int) {
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
