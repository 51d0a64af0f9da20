#include "transport/stdio.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/json_text.h"
#include "core/limits.h"
#include "core/log.h"
#include "protocol/jsonrpc.h"

namespace cortex {
namespace {

using nlohmann::json;

// The process's subscriptions/listen streams: a thread of their own looks at each every
// limits::kSubscriptionPoll and writes what it has to `out`, which the answers share (under
// `out_mu`, one whole line at a time). Each notification carries its subscription id, which
// is how a client tells them apart on the one channel.
class StdioListens {
 public:
  StdioListens(McpServer& server, std::ostream& out, std::mutex& out_mu)
      : server_(server), out_(out), out_mu_(out_mu) {}
  ~StdioListens() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    for (const Listen& l : listens_) server_.ListenClosed(l.stream);
  }

  // A listen acknowledged (the acknowledgement already written).
  void Add(json id, std::string stream, std::string state) {
    std::lock_guard<std::mutex> lock(mu_);
    listens_.push_back({std::move(id), std::move(stream), std::move(state)});
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  }

  // notifications/cancelled naming request `id`: its listen ends, if it is one.
  void Cancel(const json& id) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = listens_.begin(); it != listens_.end(); ++it) {
      if (it->id == id) {
        server_.ListenClosed(it->stream);
        listens_.erase(it);
        return;
      }
    }
  }

 private:
  struct Listen {
    json id;
    std::string stream, state;
  };

  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, limits::kSubscriptionPoll, [this] { return stop_; })) {
      for (auto it = listens_.begin(); it != listens_.end();) {
        std::optional<std::string> next = server_.ListenStreamNext(it->stream, it->state);
        if (next) {
          Write(*next);
          ++it;
          continue;
        }
        // Ended by the server (the token was revoked or expired): on stdio, said with
        // notifications/cancelled naming the listen request.
        json end = {{"jsonrpc", "2.0"},
                    {"method", "notifications/cancelled"},
                    {"params",
                     {{"requestId", it->id},
                      {"reason", "the subscription ended: the token no longer authenticates"},
                      {"_meta", {{"io.modelcontextprotocol/subscriptionId", it->id}}}}}};
        Write("data: " + DumpJson(end) + "\n\n");
        server_.ListenClosed(it->stream);
        it = listens_.erase(it);
      }
    }
  }

  // Writes the messages of SSE events ("event: message\ndata: {...}\n\n"...) as lines.
  void Write(const std::string& events) {
    if (events.empty()) return;
    std::lock_guard<std::mutex> lock(out_mu_);
    size_t at = 0;
    while ((at = events.find("data: ", at)) != std::string::npos) {
      size_t end = events.find('\n', at);
      out_ << events.substr(at + 6, end == std::string::npos ? end : end - at - 6) << '\n';
      if (end == std::string::npos) break;
      at = end;
    }
    out_.flush();
  }

  McpServer& server_;
  std::ostream& out_;
  std::mutex& out_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<Listen> listens_;
  std::thread thread_;  // started with the first listen
};

// One stdio client: its messages answered on `out` in the order read, a long-running tool
// call (McpServer::LongRunningCall) on a thread of its own so that the loop goes on
// reading (a notifications/cancelled naming one is read while it runs, and its progress is
// written as it comes), its session and its subscriptions.
class StdioClient {
 public:
  StdioClient(McpServer& server, Metrics& metrics, std::ostream& out)
      : server_(server), metrics_(metrics), out_(out), listens_(server, out, out_mu_) {}

  // Answers `line` (a message, not blank), read from a client acting as `auth`.
  void Answer(const std::string& line, AuthContext auth) {
    auth_ = std::move(auth);
    auto start = std::chrono::steady_clock::now();
    McpResponse res;
    // A long-running tool's call (episode.ingest) may be as large as POST /v1/episodes.
    bool long_call =
        line.find("tools/call") != std::string::npos && server_.LongRunningCall(nullptr, line);
    size_t line_limit = long_call ? limits::kMaxIngestBodyBytes : limits::kMaxStdioLineBytes;
    if (line.size() > line_limit) {
      res.body = rpc::MakeError(
          nullptr, {rpc::kInvalidRequest,
                    "Invalid Request: message exceeds " + std::to_string(line_limit) + " bytes",
                    {}});
      res.status = "invalid_request";
    } else if (long_call) {
      StartLongCall(line, start);
      return;
    } else {
      McpRequest req;
      req.body = line;
      req.transport = McpTransport::kStdio;
      req.auth = &auth_;
      req.session_id = session_;
      res = Handle(req);
      if (!res.new_session_id.empty()) {
        // A new initialize replaces the old session: the process serves one client.
        if (session_) (void)server_.EndSession(*session_, auth_);
        session_ = res.new_session_id;
      }
    }
    WriteLines(res);
    if (McpServer::IsListenStream(res.held_stream) && !res.notifications.empty()) {
      // Acknowledged (written above): from now on the listen thread tells its changes.
      listens_.Add(
          res.notifications.front()["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
          res.held_stream, res.held_stream_state);
    } else if (res.method == "notifications/cancelled") {
      json msg = json::parse(line, nullptr, false);
      if (msg.is_object() && msg.contains("params") && msg["params"].is_object() &&
          msg["params"].contains("requestId")) {
        listens_.Cancel(msg["params"]["requestId"]);
      }
    }
    Record(res, start);
  }

  // The answer to a message the store could not authenticate (it is failing, not the token).
  void WriteInternalError() {
    std::lock_guard<std::mutex> lock(out_mu_);
    out_ << DumpJson(rpc::MakeError(nullptr, {rpc::kInternalError, "Internal error", {}})) << '\n';
    out_.flush();
  }

  // Waits for the long calls still running, then ends the session.
  void End() {
    JoinLongCalls(/*all=*/true);
    if (session_) (void)server_.EndSession(*session_, auth_);
  }

 private:
  struct LongCall {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  // The long calls that have ended (all: every one, waiting for those that run) joined.
  void JoinLongCalls(bool all) {
    for (auto it = long_calls_.begin(); it != long_calls_.end();) {
      if (!all && !it->done->load()) {
        ++it;
        continue;
      }
      it->thread.join();
      it = long_calls_.erase(it);
    }
  }

  void StartLongCall(const std::string& line, std::chrono::steady_clock::time_point start) {
    JoinLongCalls(/*all=*/false);
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::thread thread([this, body = line, caller = auth_, session = session_, start, done] {
      McpRequest req;
      req.body = body;
      req.transport = McpTransport::kStdio;
      req.auth = &caller;
      req.session_id = session;
      req.live_notify = [this](const json& n) {
        std::lock_guard<std::mutex> lock(out_mu_);
        out_ << DumpJson(n) << '\n';
        out_.flush();
      };
      McpResponse res = Handle(req);
      WriteLines(res);  // nothing if it was cancelled
      Record(res, start);
      done->store(true);
    });
    long_calls_.push_back({std::move(thread), std::move(done)});
  }

  void WriteLines(const McpResponse& res) {
    std::lock_guard<std::mutex> lock(out_mu_);
    for (const auto& n : res.notifications) out_ << DumpJson(n) << '\n';
    if (!res.body.is_null()) out_ << DumpBody(res) << '\n';
    out_.flush();
  }

  void Record(const McpResponse& res, std::chrono::steady_clock::time_point start) {
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    metrics_.Record(res.method, res.tool, res.status, seconds);
    AccessLog().info(
        "request route=stdio method={} tool={} status={} latency_ms={:.3f} trace_id={}",
        res.method.empty() ? "-" : res.method, res.tool.empty() ? "-" : res.tool, res.status,
        seconds * 1000, res.trace_id.empty() ? "-" : res.trace_id);
  }

  // server_.Handle, its exception an internal error answered as such.
  McpResponse Handle(const McpRequest& req) {
    try {
      return server_.Handle(req);
    } catch (const std::exception& e) {
      spdlog::error("request failed: {}", e.what());
      McpResponse res;
      res.body = rpc::MakeError(nullptr, {rpc::kInternalError, "Internal error", {}});
      res.status = "internal_error";
      return res;
    }
  }

  McpServer& server_;
  Metrics& metrics_;
  std::ostream& out_;
  std::mutex out_mu_;  // one whole line at a time on out_
  std::optional<std::string> session_;
  AuthContext auth_;  // of the last message read
  StdioListens listens_;
  std::vector<LongCall> long_calls_;  // joined (End) before the client goes
};

}  // namespace

int ServeStdio(McpServer& server, const StdioAuthenticator& authenticate, Metrics& metrics,
               std::istream& in, std::ostream& out) {
  StdioClient client(server, metrics, out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    auto current = authenticate();
    if (!current.ok() && current.status().code() == Code::kUnauthorized) {
      spdlog::error("CORTEX_TOKEN: {}; stopping", current.status().message());
      client.End();
      return 1;
    }
    if (!current.ok()) {  // the store is failing, not the token: refuse this message only
      spdlog::error("authentication failed: {}", current.status().message());
      client.WriteInternalError();
      continue;
    }
    client.Answer(line, *std::move(current));
  }
  client.End();
  return 0;
}

}  // namespace cortex
