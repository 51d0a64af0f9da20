// One HTTP connection, after Boost.Beast's example/advanced/server: it reads requests on
// its worker thread's io_context, hands each to the router (HttpServer::Impl::Respond) on
// the worker, as a fiber (RequestFiber) or on the write pool (HttpRouter::MayWrite,
// MayCallOut), and writes the response, an event stream or a long call's live response
// back. Its read, write and idle timeouts are deadlines the worker's sweep enforces. The
// only file that includes Boost.Beast, whose headers are slow to compile: Beast is compiled
// once, here.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <deque>
#include <functional>
#include <limits>
#include <new>

#include "core/json_text.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/thread_name.h"
#include "transport/http_server_impl.h"

namespace cortex {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr size_t kReadBufferBytes = 4096;

class HttpConnection final : public Connection,
                             public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(tcp::socket socket, HttpServer::Impl& server, HttpServer::Impl::Worker& worker,
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

  ~HttpConnection() override { server_.ConnectionClosed(peer_); }

  const std::string& peer() const override { return peer_; }

  int64_t IdleSince() const override {
    int64_t v = idle_since_.load(std::memory_order_acquire);
    return v == kShed ? kNotIdle : v;
  }

  bool Shed(int64_t seen) override {
    if (seen == kNotIdle || !idle_since_.compare_exchange_strong(seen, kShed)) return false;
    net::post(socket_.get_executor(), [self = shared_from_this()] { self->Close(); });
    return true;
  }

  void Start() override {
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] {
      self->server_.Watch(self->worker_, self);
      self->ReadHeader();
    });
  }

  void CloseIfPast(std::chrono::steady_clock::time_point now) override {
    if (now >= deadline_) Close();
  }

  void Stop() override {
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
    http::async_read_header(
        socket_, buffer_, *parser_,
        beast::bind_front_handler(&HttpConnection::OnHeader, shared_from_this()));
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
                     beast::bind_front_handler(&HttpConnection::OnRead, shared_from_this()));
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
          worker_.ioc, worker_.stacks, worker_.fibers,
          [this, request, res, start] { *res = server_.Respond(*request, start); },
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
    std::weak_ptr<HttpConnection> weak = weak_from_this();
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

}  // namespace

std::shared_ptr<Connection> NewConnection(tcp::socket socket, HttpServer::Impl& server,
                                          HttpServer::Impl::Worker& worker, std::string peer) {
  return std::make_shared<HttpConnection>(std::move(socket), server, worker, std::move(peer));
}

}  // namespace cortex
