#include "transport/stdio.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <string>

#include "core/json_text.h"
#include "core/limits.h"
#include "core/log.h"
#include "protocol/jsonrpc.h"

namespace cortex {

int ServeStdio(McpServer& server, const StdioAuthenticator& authenticate, Metrics& metrics,
               std::istream& in, std::ostream& out) {
  std::optional<std::string> session;
  AuthContext auth;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    auto current = authenticate();
    if (!current.ok() && current.status().code() == Code::kUnauthorized) {
      spdlog::error("CORTEX_TOKEN: {}; stopping", current.status().message());
      if (session) (void)server.EndSession(*session, auth);
      return 1;
    }
    if (!current.ok()) {  // the store is failing, not the token: refuse this message only
      spdlog::error("authentication failed: {}", current.status().message());
      out << DumpJson(rpc::MakeError(nullptr, {rpc::kInternalError, "Internal error", {}})) << '\n';
      out.flush();
      continue;
    }
    auth = *std::move(current);
    auto start = std::chrono::steady_clock::now();
    McpResponse res;
    if (line.size() > limits::kMaxStdioLineBytes) {
      res.body = rpc::MakeError(nullptr, {rpc::kInvalidRequest,
                                          "Invalid Request: message exceeds " +
                                              std::to_string(limits::kMaxStdioLineBytes) + " bytes",
                                          {}});
      res.status = "invalid_request";
    } else {
      McpRequest req;
      req.body = line;
      req.transport = McpTransport::kStdio;
      req.auth = &auth;
      req.session_id = session;
      try {
        res = server.Handle(req);
      } catch (const std::exception& e) {
        spdlog::error("request failed: {}", e.what());
        res = McpResponse{};
        res.body = rpc::MakeError(nullptr, {rpc::kInternalError, "Internal error", {}});
        res.status = "internal_error";
      }
      if (!res.new_session_id.empty()) {
        // A new initialize replaces the old session: the process serves one client.
        if (session) (void)server.EndSession(*session, auth);
        session = res.new_session_id;
      }
    }
    for (const auto& n : res.notifications) out << DumpJson(n) << '\n';
    if (!res.body.is_null()) out << DumpBody(res) << '\n';
    out.flush();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    metrics.Record(res.method, res.tool, res.status, seconds);
    AccessLog().info(
        "request route=stdio method={} tool={} status={} latency_ms={:.3f} trace_id={}",
        res.method.empty() ? "-" : res.method, res.tool.empty() ? "-" : res.tool, res.status,
        seconds * 1000, res.trace_id.empty() ? "-" : res.trace_id);
  }
  if (session) (void)server.EndSession(*session, auth);
  return 0;
}

}  // namespace cortex
