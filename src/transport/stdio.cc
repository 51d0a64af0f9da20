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

}  // namespace

int ServeStdio(McpServer& server, const StdioAuthenticator& authenticate, Metrics& metrics,
               std::istream& in, std::ostream& out) {
  std::optional<std::string> session;
  AuthContext auth;
  std::string line;
  std::mutex out_mu;
  StdioListens listens(server, out, out_mu);
  // Long-running tool calls (McpServer::LongRunningCall), each on a thread of its own so that
  // the loop goes on reading: a notifications/cancelled naming one is read while it runs,
  // and its progress is written as it comes. Those that have ended are joined when the
  // next starts; the rest before the session ends.
  struct LongCall {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<LongCall> long_calls;
  auto join_long_calls = [&long_calls](bool all) {
    for (auto it = long_calls.begin(); it != long_calls.end();) {
      if (!all && !it->done->load()) {
        ++it;
        continue;
      }
      it->thread.join();
      it = long_calls.erase(it);
    }
  };
  auto write_lines = [&](const McpResponse& res) {
    std::lock_guard<std::mutex> lock(out_mu);
    for (const auto& n : res.notifications) out << DumpJson(n) << '\n';
    if (!res.body.is_null()) out << DumpBody(res) << '\n';
    out.flush();
  };
  auto record = [&metrics](const McpResponse& res, std::chrono::steady_clock::time_point start) {
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    metrics.Record(res.method, res.tool, res.status, seconds);
    AccessLog().info(
        "request route=stdio method={} tool={} status={} latency_ms={:.3f} trace_id={}",
        res.method.empty() ? "-" : res.method, res.tool.empty() ? "-" : res.tool, res.status,
        seconds * 1000, res.trace_id.empty() ? "-" : res.trace_id);
  };
  // server.Handle, its exception an internal error answered as such.
  auto handle = [&server](const McpRequest& req) {
    try {
      return server.Handle(req);
    } catch (const std::exception& e) {
      spdlog::error("request failed: {}", e.what());
      McpResponse res;
      res.body = rpc::MakeError(nullptr, {rpc::kInternalError, "Internal error", {}});
      res.status = "internal_error";
      return res;
    }
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    auto current = authenticate();
    if (!current.ok() && current.status().code() == Code::kUnauthorized) {
      spdlog::error("CORTEX_TOKEN: {}; stopping", current.status().message());
      join_long_calls(/*all=*/true);
      if (session) (void)server.EndSession(*session, auth);
      return 1;
    }
    if (!current.ok()) {  // the store is failing, not the token: refuse this message only
      spdlog::error("authentication failed: {}", current.status().message());
      std::lock_guard<std::mutex> lock(out_mu);
      out << DumpJson(rpc::MakeError(nullptr, {rpc::kInternalError, "Internal error", {}})) << '\n';
      out.flush();
      continue;
    }
    auth = *std::move(current);
    auto start = std::chrono::steady_clock::now();
    McpResponse res;
    // A long-running tool's call (episode.ingest) may be as large as POST /v1/episodes.
    bool long_call =
        line.find("tools/call") != std::string::npos && server.LongRunningCall(nullptr, line);
    size_t line_limit = long_call ? limits::kMaxIngestBodyBytes : limits::kMaxStdioLineBytes;
    if (line.size() > line_limit) {
      res.body = rpc::MakeError(
          nullptr, {rpc::kInvalidRequest,
                    "Invalid Request: message exceeds " + std::to_string(line_limit) + " bytes",
                    {}});
      res.status = "invalid_request";
    } else if (long_call) {
      join_long_calls(/*all=*/false);
      auto done = std::make_shared<std::atomic<bool>>(false);
      std::thread thread([&handle, &out, &out_mu, &write_lines, &record, body = line, caller = auth,
                          session, start, done] {
        McpRequest req;
        req.body = body;
        req.transport = McpTransport::kStdio;
        req.auth = &caller;
        req.session_id = session;
        req.live_notify = [&out, &out_mu](const json& n) {
          std::lock_guard<std::mutex> lock(out_mu);
          out << DumpJson(n) << '\n';
          out.flush();
        };
        McpResponse res = handle(req);
        write_lines(res);  // nothing if it was cancelled
        record(res, start);
        done->store(true);
      });
      long_calls.push_back({std::move(thread), std::move(done)});
      continue;
    } else {
      McpRequest req;
      req.body = line;
      req.transport = McpTransport::kStdio;
      req.auth = &auth;
      req.session_id = session;
      res = handle(req);
      if (!res.new_session_id.empty()) {
        // A new initialize replaces the old session: the process serves one client.
        if (session) (void)server.EndSession(*session, auth);
        session = res.new_session_id;
      }
    }
    write_lines(res);
    if (McpServer::IsListenStream(res.held_stream) && !res.notifications.empty()) {
      // Acknowledged (written above): from now on the listen thread tells its changes.
      listens.Add(
          res.notifications.front()["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
          res.held_stream, res.held_stream_state);
    } else if (res.method == "notifications/cancelled") {
      json msg = json::parse(line, nullptr, false);
      if (msg.is_object() && msg.contains("params") && msg["params"].is_object() &&
          msg["params"].contains("requestId")) {
        listens.Cancel(msg["params"]["requestId"]);
      }
    }
    record(res, start);
  }
  join_long_calls(/*all=*/true);
  if (session) (void)server.EndSession(*session, auth);
  return 0;
}

}  // namespace cortex
