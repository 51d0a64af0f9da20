// A 2025-11-25 session's tools/call whose tool needs input from the client first (an
// input-required result: elicitation/create, sampling/createMessage, roots/list...). The
// 2025 wire has no input-required result: the server sends each input request to the
// client as a JSON-RPC request of its own, on the call's event stream, and the client POSTs
// each response (to any instance). A round of requests is kept in the store
// (mcp_client_requests); the stream, held on the instance that took the call, looks every
// kHeldStreamPoll and, once every request of the round is answered, runs the tool again with
// the answers as a 2026-07-28 retry would carry them (inputResponses, requestState). Its
// result, or its next round of requests, follows on the same stream.
//
// The request ids are "<round id>/<key>": the round id (creq_ + 128 random bits) is not
// guessable, and a response is taken only from the session and token the call came from,
// once per key, before the round expires (kElicitationLifetime). A client that answers with
// an error, or not in time, ends the call with a tool error saying so.
#include <spdlog/spdlog.h>

#include "core/crypto.h"
#include "core/ids.h"
#include "core/json_text.h"
#include "engines/actions/elicitation.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_server.h"
#include "store/mcp_calls.h"

namespace cortex {
namespace {

using json = nlohmann::json;

constexpr std::string_view kRoundPrefix = "creq_";
// At most this many requests in one round (a tool asks for a few things at once).
constexpr size_t kMaxRequestsPerRound = 16;

std::string SseMessage(const std::string& data) { return "event: message\ndata: " + data + "\n\n"; }

// A tools/call result that ends the call with a tool error.
json ToolError(const std::string& code, const std::string& message) {
  return ToolReply::Error(code, message).ToCallToolResult();
}

}  // namespace

Result<std::vector<json>> McpServer::StartRound(const json& call, const json& input_requests,
                                                std::string& round_id) {
  if (!input_requests.is_object() || input_requests.empty() ||
      input_requests.size() > kMaxRequestsPerRound) {
    return Status::Internal("the tool's input requests must be a map of 1 to " +
                            std::to_string(kMaxRequestsPerRound) + " requests");
  }
  ClientRequestRound round;
  round.id = std::string(kRoundPrefix) + RandomHex(16);
  round.workspace_id = call.at("ws");
  round.session_id = call.at("sid");
  round.token_id = call.at("tok");
  round.created_at = clock_.Now();
  round.expires_at = round.created_at + kElicitationLifetime;
  std::vector<json> requests;
  for (const auto& [key, asked] : input_requests.items()) {
    if (!asked.is_object() || !asked.contains("method") || !asked["method"].is_string()) {
      return Status::Internal("input request '" + key + "' has no method");
    }
    round.pending.push_back(key);
    json request = {{"jsonrpc", "2.0"},
                    {"id", round.id + "/" + key},
                    {"method", asked["method"]},
                    {"params", asked.value("params", json::object())}};
    requests.push_back(std::move(request));
  }
  CORTEX_RETURN_IF_ERROR(store_.Write([&](WriteTx& tx) { return tx.calls().InsertRound(round); }));
  round_id = round.id;
  return requests;
}

McpResponse McpServer::AskClient(const McpRequest& req, const json& id, const json& params,
                                 const json& input_required, bool elicits, int log_threshold,
                                 McpResponse out) {
  out.text_is_structured = false;
  if (req.transport != McpTransport::kHttp || !req.accepts_stream || !req.session_id) {
    // Nowhere to send our requests: stdio answers one message with one line, and a client
    // that takes only JSON cannot take a request before the result.
    out.status = "client_input_unavailable";
    out.body = rpc::MakeResult(
        id, ToolError("client_input_unavailable",
                      "This tool asks the client for input during the call, which needs the "
                      "call's own event stream: call it over HTTP with Accept: "
                      "text/event-stream. Nothing was done."));
    return out;
  }
  const AuthContext& auth = *req.auth;
  json call = {{"ws", auth.workspace_id},
               {"wsn", auth.workspace_name},
               {"tok", auth.token_id},
               {"sc", auth.scopes},
               {"sid", Sha256Hex(*req.session_id)},
               {"id", id},
               {"p", params},
               {"el", elicits},
               {"lt", log_threshold},
               {"st", input_required.value("requestState", "")}};
  std::string round_id;
  auto requests = StartRound(call, input_required.value("inputRequests", json()), round_id);
  if (!requests.ok()) {
    spdlog::warn("tools/call {}: asking the client: {}", out.tool, requests.status().message());
    bool busy = requests.status().code() == Code::kUnavailable;
    out.status = busy ? "unavailable" : "internal_error";
    out.disposition = busy ? Disposition::kUnavailable : Disposition::kReply;
    out.body = rpc::MakeError(
        id, {rpc::kInternalError, busy ? "Service unavailable: retry" : "Internal error", {}});
    return out;
  }
  call["r"] = round_id;
  // The requests go out as the stream's first events (after any notifications).
  out.requests = std::move(*requests);
  out.held_stream = std::string(kAskStream) + DumpJson(call);
  out.status = "asked";
  return out;
}

bool McpServer::TakeClientResponse(const McpRequest& req, const rpc::Message& msg,
                                   McpResponse& out) {
  if (!msg.id.is_string()) return false;
  const std::string& rid = msg.id.get_ref<const std::string&>();
  size_t slash = rid.find('/');
  if (rid.rfind(kRoundPrefix, 0) != 0 || slash == std::string::npos) return false;
  if (req.transport != McpTransport::kHttp || !req.session_id) return true;  // dropped
  if (!ResponderSessionLive(req, out)) return true;
  const AuthContext& auth = *req.auth;
  std::string round_id = rid.substr(0, slash), key = rid.substr(slash + 1);
  json response;
  if (!msg.error.is_null()) {
    response = {{"error", msg.error}};
  } else if (msg.result.is_object()) {
    response = {{"result", msg.result}};
  } else {
    response = {
        {"error", {{"code", rpc::kInvalidRequest}, {"message", "result is not an object"}}}};
  }
  std::string refused;
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    auto round = tx.calls().GetRound(auth.workspace_id, round_id);
    if (round.status().code() == Code::kNotFound) {
      refused = "no such request";
      return Status::Ok();
    }
    if (!round.ok()) return round.status();
    if (!ConstantTimeEquals(round->session_id, Sha256Hex(*req.session_id)) ||
        round->token_id != auth.token_id) {
      refused = "sent to another session";
    } else if (clock_.Now() >= round->expires_at) {
      refused = "expired";
    }
    if (!refused.empty()) return Status::Ok();
    auto taken = tx.calls().AnswerRound(auth.workspace_id, round_id, key, response);
    if (!taken.ok()) return taken.status();
    if (!*taken) refused = "answered already, or never asked";
    return Status::Ok();
  });
  if (!st.ok()) {
    // Not recorded: the client may send it again.
    spdlog::warn("response to {}: {}", Utf8Prefix(rid, 128), st.message());
    out.status = "unavailable";
    out.disposition = Disposition::kUnavailable;
    out.body = rpc::MakeError(nullptr, {rpc::kInternalError, "Service unavailable: retry", {}});
    return true;
  }
  if (!refused.empty()) {
    // A response is not a request: nothing to answer. Log why it was not taken.
    spdlog::info("response to {} not taken: {}", Utf8Prefix(rid, 128), refused);
    out.status = "answer_refused";
  }
  return true;
}

std::optional<std::string> McpServer::AskStreamNext(const std::string& stream, std::string& state) {
  json call = json::parse(std::string_view(stream).substr(kAskStream.size()), nullptr, false);
  if (!call.is_object()) return std::nullopt;
  // `state`: the round waited on and the request state that goes with it; empty for the
  // first round (in the call).
  json now_at = state.empty() ? json{{"r", call["r"]}, {"st", call["st"]}}
                              : json::parse(state, nullptr, false);
  if (!now_at.is_object()) return std::nullopt;
  const std::string ws = call.value("ws", "");
  const std::string round_id = now_at.value("r", "");
  ClientRequestRound round;
  Status read = store_.Read([&](ReadTx& tx) -> Status {
    auto found = tx.calls().GetRound(ws, round_id);
    if (!found.ok()) return found.status();
    round = std::move(*found);
    return Status::Ok();
  });
  McpResponse out;
  out.trace_id = NewId("trc_", clock_);
  const json& id = call["id"];
  auto finish = [&](json result) {
    out.body = rpc::MakeResult(id, std::move(result));
    state = "done";
    std::string events;
    for (const json& n : out.notifications) events += SseMessage(DumpJson(n));
    return events + SseMessage(DumpBody(out));
  };
  if (read.code() == Code::kNotFound) {
    return finish(ToolError("internal_error", "The call's requests to the client were lost."));
  }
  if (!read.ok()) return std::string();  // the store is busy: look again at the next poll
  if (!round.pending.empty()) {
    if (clock_.Now() < round.expires_at) return std::string();  // still waiting
    return finish(ToolError("client_did_not_answer",
                            "The client did not answer the server's request in time (" +
                                round.pending.front().get<std::string>() +
                                "). Nothing was done; call the tool again."));
  }
  json answers = json::object();
  for (const auto& [key, response] : round.responses.items()) {
    if (response.contains("error")) {
      const json& e = response["error"];
      std::string why = e.is_object() ? e.value("message", std::string("an error")) : e.dump();
      return finish(ToolError("client_refused", "The client refused the server's request '" + key +
                                                    "': " + Utf8Prefix(why, 500) +
                                                    ". Nothing was done."));
    }
    answers[key] = response["result"];
  }
  AuthContext auth{ws, call.value("wsn", ""), call.value("tok", ""), call.value("sc", 0u)};
  json retry = {{"inputResponses", std::move(answers)}, {"requestState", now_at["st"]}};
  auto called = CallTool(call["p"], auth, out, /*modern=*/false, call.value("el", false),
                         call.value("lt", -1), &retry);
  if (auto* f = std::get_if<RpcFailure>(&called)) {
    out.body = rpc::MakeError(id, f->error);
    out.text_is_structured = false;
    state = "done";
    return SseMessage(DumpJson(out.body));
  }
  json result = std::move(std::get<json>(called));
  if (result.value("resultType", "") != "input_required") return finish(std::move(result));
  // Another round: its requests now, the result when they are answered.
  std::string next;
  auto requests = StartRound(call, result.value("inputRequests", json()), next);
  if (!requests.ok()) {
    if (requests.status().code() == Code::kUnavailable) return std::string();  // run again
    out.text_is_structured = false;
    return finish(ToolError("internal_error", requests.status().message()));
  }
  state = DumpJson(json{{"r", next}, {"st", result.value("requestState", "")}});
  std::string sent;
  for (const json& n : out.notifications) sent += SseMessage(DumpJson(n));
  for (const json& q : *requests) sent += SseMessage(DumpJson(q));
  return sent;
}

}  // namespace cortex
