// Long-running tool calls (ToolDef::long_running): where they run is the transport's
// choice (LongRunningCall); here, their cancellation by notifications/cancelled and the
// answer a cancelled call gets (none). docs/mcp.md, "Progress and cancellation".
#include "core/crypto.h"
#include "protocol/mcp_server.h"

namespace cortex {

using nlohmann::json;

bool McpServer::LongRunningCall(const std::string* name_header, std::string_view body) const {
  if (name_header != nullptr && tools_.Has(*name_header)) return tools_.LongRunning(*name_header);
  return tools_.MayNameLongRunning(body);
}

std::string McpServer::LongCallKey(const McpRequest& req, const json& id, bool modern) {
  if (id.is_null()) return std::string();
  // On stdio the process serves one client: its ids are the key. A session-era HTTP call is
  // named within its session; a 2026-07-28 HTTP call is cancelled by closing its stream.
  if (req.transport == McpTransport::kStdio) return "stdio\n" + id.dump();
  if (modern || !req.session_id) return std::string();
  return "session\n" + *req.session_id + "\n" + id.dump();
}

void McpServer::StartLongCall(const McpRequest& req, const json& id, const json& params,
                              bool modern, LongCall& call) {
  auto name = params.find("name");
  if (name == params.end() || !name->is_string() || !tools_.LongRunning(name->get<std::string>())) {
    return;
  }
  call.cancelled = req.cancelled ? req.cancelled : std::make_shared<std::atomic<bool>>(false);
  if (req.live_notify) call.notify = req.live_notify;
  std::string key = LongCallKey(req, id, modern);
  if (key.empty()) return;
  std::lock_guard<std::mutex> lock(running_mu_);
  // A second call under the same id (a client's mistake) keeps the first one's entry.
  if (running_.emplace(key, call.cancelled).second) {
    call.server = this;
    call.key = std::move(key);
  }
}

McpServer::LongCall::~LongCall() {
  if (server == nullptr) return;
  std::lock_guard<std::mutex> lock(server->running_mu_);
  server->running_.erase(key);
}

void McpServer::CancelLongCall(const McpRequest& req, const json& params, bool modern) {
  auto id = params.find("requestId");
  if (id == params.end() || !(id->is_string() || id->is_number_integer())) return;
  std::string key = LongCallKey(req, *id, modern);
  if (key.empty()) return;
  std::lock_guard<std::mutex> lock(running_mu_);
  auto it = running_.find(key);
  // Unknown, or done already: nothing to stop (the spec lets the server ignore it).
  if (it != running_.end()) it->second->store(true);
}

McpResponse McpServer::Unanswered(McpResponse out) {
  out.disposition = Disposition::kAccepted;
  out.body = nullptr;
  out.notifications.clear();
  out.text_is_structured = false;
  out.status = "cancelled";
  return out;
}

}  // namespace cortex
