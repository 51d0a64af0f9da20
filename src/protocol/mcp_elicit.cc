// A 2025-11-25 session's tools/call that asks the user first (engines/actions/elicitation.h): the
// tool's input-required result becomes an elicitation/create request sent on the call's
// own event stream, which stays open until the client's response (POSTed to any instance)
// has been applied or the form expired, and then carries the call's result. What links
// the three is in the store: the elicitation row, keyed by the request's id.
#include <spdlog/spdlog.h>

#include "core/ids.h"
#include "core/json_text.h"
#include "engines/actions/elicitation.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_server.h"
#include "tools/action_tools.h"

namespace cortex {
namespace {

using json = nlohmann::json;

// "held:<workspace id> <elicitation id> <the tools/call's JSON-RPC id, as JSON>"
constexpr std::string_view kHeld = "held:";

}  // namespace

bool McpServer::IsHeldStream(std::string_view stream) {
  return stream.rfind(kHeld, 0) == 0 || stream.rfind(kAskStream, 0) == 0 || IsTaskStream(stream);
}

McpResponse McpServer::HoldForAnswer(const AuthContext& auth, const json& id,
                                     const json& input_required, McpResponse out) {
  const std::string state = input_required.value("requestState", "");
  const std::string eli = state.substr(0, state.find('.'));
  // One input request (the approval form); sent as a request of ours, with the
  // elicitation's id as its JSON-RPC id.
  const json& asked = input_required["inputRequests"].begin().value();
  out.requests.push_back(
      {{"jsonrpc", "2.0"}, {"id", eli}, {"method", asked["method"]}, {"params", asked["params"]}});
  out.held_stream = std::string(kHeld) + auth.workspace_id + " " + eli + " " + DumpJson(id);
  out.status = "asked";
  return out;
}

bool McpServer::ResponderSessionLive(const McpRequest& req, McpResponse& out) {
  auto live = SessionExists(*req.session_id, *req.auth);
  if (live.ok() && *live) return true;
  out.status = live.ok() ? "session_not_found" : "unavailable";
  out.disposition = live.ok() ? Disposition::kUnknownSession : Disposition::kUnavailable;
  out.body = rpc::MakeError(nullptr, {live.ok() ? rpc::kSessionNotFound : rpc::kInternalError,
                                      live.ok() ? "Session not found" : "Service unavailable",
                                      {}});
  return false;
}

McpResponse McpServer::TakeAnswer(const McpRequest& req, const rpc::Message& msg, McpResponse out) {
  out.method = "(response)";
  out.disposition = Disposition::kAccepted;
  if (TakeClientResponse(req, msg, out)) return out;
  // Only answers to our elicitation requests mean anything; any other response is dropped,
  // as before (202).
  if (!msg.id.is_string() || !IsId(msg.id.get<std::string>(), "eli_") ||
      req.transport != McpTransport::kHttp || !req.session_id) {
    return out;
  }
  if (!ResponderSessionLive(req, out)) return out;
  const AuthContext& auth = *req.auth;
  Status st = AnswerElicitationRequest(store_, clock_, actions_, auth.workspace_id, auth.token_id,
                                       msg.id, msg.result);
  if (!st.ok()) {
    // The response is the client's; its errors are not a reply to anything. Log them.
    spdlog::info("elicitation answer {} not taken: {}", msg.id.get<std::string>(), st.message());
    out.status = "answer_refused";
  }
  return out;
}

std::optional<std::string> McpServer::HeldStreamNext(const std::string& stream,
                                                     std::string& state) {
  if (state == "done") return std::nullopt;  // the result went out
  if (stream.rfind(kAskStream, 0) == 0) return AskStreamNext(stream, state);
  if (IsTaskStream(stream)) return TaskStreamNext(stream, state);
  std::string_view rest = std::string_view(stream).substr(kHeld.size());
  size_t a = rest.find(' '), b = rest.find(' ', a + 1);
  if (a == std::string_view::npos || b == std::string_view::npos) return std::nullopt;
  std::string ws(rest.substr(0, a)), eli(rest.substr(a + 1, b - a - 1));
  auto outcome = ElicitationOutcome(store_, clock_, ws, eli);
  if (!outcome.ok()) return std::string();  // the store is busy: look again at the next poll
  if (!*outcome) return std::string();      // still waiting for the person
  McpResponse done;
  done.body = rpc::MakeResult(ParseStoredJson(std::string(rest.substr(b + 1))),
                              ActionReply(**outcome).ToCallToolResult());
  state = "done";
  return "event: message\ndata: " + DumpBody(done) + "\n\n";
}

}  // namespace cortex
