#include "protocol/mcp_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/crypto.h"
#include "core/ids.h"
#include "core/json_text.h"
#include "core/limits.h"
#include "engines/tasks/approval_tasks.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_parts.h"
#include "store/sessions.h"
#include "store/workspaces.h"

namespace cortex {

using nlohmann::json;

namespace {

constexpr char kMetaVersion[] = "io.modelcontextprotocol/protocolVersion";
constexpr char kMetaServerInfo[] = "io.modelcontextprotocol/serverInfo";
constexpr char kMetaLogLevel[] = "io.modelcontextprotocol/logLevel";

// The methods we name in metrics and logs; anything else is "other", so that clients
// cannot mint metric keys.
const char* MetricMethod(const std::string& m) {
  static const char* const kKnown[] = {"initialize",
                                       "ping",
                                       "tools/list",
                                       "tools/call",
                                       "server/discover",
                                       "resources/list",
                                       "resources/templates/list",
                                       "resources/read",
                                       "prompts/list",
                                       "prompts/get",
                                       "completion/complete",
                                       "logging/setLevel",
                                       "subscriptions/listen",
                                       "tasks/get",
                                       "tasks/update",
                                       "tasks/cancel",
                                       "notifications/initialized",
                                       "notifications/cancelled"};
  for (const char* k : kKnown) {
    if (m == k) return k;
  }
  return "other";
}

json SupportedVersions() {
  json v = json::array({kModernVersion});
  for (const char* legacy : kLegacyVersions) v.push_back(legacy);
  return v;
}

const char* ErrorName(int code) {
  switch (code) {
    case rpc::kParseError:
      return "parse_error";
    case rpc::kInvalidRequest:
      return "invalid_request";
    case rpc::kMethodNotFound:
      return "method_not_found";
    case rpc::kInvalidParams:
      return "invalid_params";
    case rpc::kSessionRequired:
      return "session_required";
    case rpc::kSessionNotFound:
      return "session_not_found";
    case rpc::kHeaderMismatch:
      return "header_mismatch";
    case rpc::kMissingRequiredClientCapability:
      return "missing_client_capability";
    case rpc::kUnsupportedProtocolVersion:
      return "unsupported_protocol_version";
    default:
      return "internal_error";
  }
}

McpResponse Fail(McpResponse out, const json& id, Disposition d, rpc::Error error) {
  out.disposition = d;
  out.text_is_structured = false;
  out.status = d == Disposition::kUnavailable ? "unavailable"
               : d == Disposition::kLimited   ? "too_many_sessions"
                                              : ErrorName(error.code);
  out.body = rpc::MakeError(id, error);
  return out;
}

}  // namespace

// The helpers of mcp_parts.h that are not about headers.

bool FormElicitation(const json& caps) {
  if (!caps.is_object()) return false;
  auto e = caps.find("elicitation");
  return e != caps.end() && e->is_object() && (e->empty() || e->contains("form"));
}
bool FormElicitationIn(const json& meta) {
  if (!meta.is_object()) return false;
  auto caps = meta.find(kMetaCapabilities);
  return caps != meta.end() && FormElicitation(*caps);
}

bool IsLegacyVersion(const std::string& v) {
  return std::find(std::begin(kLegacyVersions), std::end(kLegacyVersions), v) !=
         std::end(kLegacyVersions);
}

std::optional<rpc::Error> BadInputResponses(const json& responses) {
  if (responses.is_null()) return std::nullopt;
  bool ok = responses.is_object();
  for (auto it = responses.begin(); ok && it != responses.end(); ++it) ok = it->is_object();
  if (ok) return std::nullopt;
  return rpc::Error{rpc::kInvalidParams,
                    "Invalid params: inputResponses must map each request key to its result "
                    "object",
                    {}};
}

const std::string* StringParam(const json& params, const char* name) {
  auto it = params.find(name);
  if (it == params.end() || !it->is_string()) return nullptr;
  return &it->get_ref<const std::string&>();
}

McpServer::McpServer(const ToolRegistry& tools, Store& store, const Clock& clock, ServerInfo info,
                     QuotaLimits quotas)
    : tools_(tools),
      store_(store),
      clock_(clock),
      info_(std::move(info)),
      server_info_{{"name", info_.name}, {"title", info_.title}, {"version", info_.version}},
      result_meta_{{kMetaServerInfo, server_info_}},
      quota_defaults_(quotas),
      call_quotas_(clock, store.MultiInstance() ? &store : nullptr) {}

json McpServer::AdmitCall(const AuthContext& auth) {
  QuotaLimits limits;
  int utc_offset = 0;
  Status st = store_.Read([&](ReadTx& tx) -> Status {
    auto settings = tx.workspaces().Settings(auth.workspace_id);
    if (!settings.ok()) return settings.status();
    utc_offset = settings->utc_offset_minutes;
    auto effective = EffectiveQuotas(tx, auth.workspace_id, quota_defaults_);
    if (!effective.ok()) return effective.status();
    limits = *effective;
    return Status::Ok();
  });
  if (!st.ok()) return ToolReply::FromStatus(st).ToCallToolResult();
  auto admitted = call_quotas_.Admit(auth.workspace_id, auth.token_id, limits, utc_offset);
  if (!admitted.ok()) return ToolReply::FromStatus(admitted.status()).ToCallToolResult();
  const std::optional<QuotaExceeded>& over = *admitted;
  if (!over) return nullptr;
  return ToolReply::ErrorBody({{"status", "error"},
                               {"error", "quota_exceeded"},
                               {"message", over->Message("Nothing was done.")},
                               {"quota", over->quota},
                               {"limit", over->limit},
                               {"retry_after_s", over->retry_after_s}})
      .ToCallToolResult();
}

McpResponse McpServer::Handle(const McpRequest& req) {
  McpResponse out;
  out.trace_id = NewId("trc_", clock_);
  auto parsed = rpc::Parse(req.body);
  if (auto* err = std::get_if<rpc::Error>(&parsed)) {
    return Fail(std::move(out), nullptr, Disposition::kRejected, *err);
  }
  rpc::Message& msg = std::get<rpc::Message>(parsed);
  if (msg.is_response) return TakeAnswer(req, msg, std::move(out));
  out.method = MetricMethod(msg.method);
  const json& params = msg.params.is_null() ? json::object() : msg.params;
  if (req.transport == McpTransport::kStdio && msg.is_notification &&
      msg.method == "notifications/cancelled") {
    // On stdio, in either era (a 2026-07-28 client has no other way to cancel).
    if (params.is_object()) CancelLongCall(req, params, /*modern=*/false);
    out.disposition = Disposition::kAccepted;
    return out;
  }

  // Era selection: `initialize` opens a session; a version in _meta is the stateless era.
  std::string meta_version;
  if (auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
    if (auto v = meta->find(kMetaVersion); v != meta->end() && v->is_string()) meta_version = *v;
  }
  // (`initialize` with a 2026-07-28 _meta is a stateless request for a removed method.)
  bool modern = !meta_version.empty() && !IsLegacyVersion(meta_version) &&
                (msg.method != "initialize" || !params.contains("protocolVersion"));
  // A stateless-era request names its version in the MCP-Protocol-Version header too; one
  // without _meta is malformed rather than a session-era request.
  if (!modern && msg.method != "initialize" && req.transport == McpTransport::kHttp &&
      !req.session_id && req.protocol_version_header &&
      !IsLegacyVersion(*req.protocol_version_header)) {
    modern = true;
  }
  if (modern) {
    return HandleModern(req, msg.id, msg.method, params, msg.is_notification, std::move(out));
  }
  return HandleLegacy(req, msg.id, msg.method, params, msg.is_notification, std::move(out));
}

McpResponse McpServer::HandleModern(const McpRequest& req, const json& id,
                                    const std::string& method, const json& params,
                                    bool is_notification, McpResponse out) {
  const json& meta = params.contains("_meta") ? params["_meta"] : json::object();
  if (!meta.is_object() || !meta.contains(kMetaVersion) || !meta[kMetaVersion].is_string()) {
    return Fail(std::move(out), id, Disposition::kRejected,
                {rpc::kInvalidParams,
                 std::string("Invalid params: _meta[\"") + kMetaVersion + "\"] is required",
                 {}});
  }
  std::string version = meta[kMetaVersion];
  // A header that contradicts the body is a mismatch before it is an unsupported version.
  if (req.transport == McpTransport::kHttp && req.protocol_version_header &&
      *req.protocol_version_header != version) {
    return Fail(
        std::move(out), id, Disposition::kRejected,
        HeaderMismatch("MCP-Protocol-Version header value '" + *req.protocol_version_header +
                       "' does not match body value '" + version + "'"));
  }
  if (version != kModernVersion) {
    return Fail(std::move(out), id, Disposition::kRejected,
                {rpc::kUnsupportedProtocolVersion,
                 "Unsupported protocol version",
                 {{"supported", SupportedVersions()}, {"requested", version}}});
  }
  if (req.transport == McpTransport::kHttp) {
    if (auto err = CheckHeaders(req, version, method, params)) {
      return Fail(std::move(out), id, Disposition::kRejected, *err);
    }
  }
  if (!meta.contains(kMetaCapabilities) || !meta[kMetaCapabilities].is_object()) {
    return Fail(std::move(out), id, Disposition::kRejected,
                {rpc::kInvalidParams,
                 std::string("Invalid params: _meta[\"") + kMetaCapabilities +
                     "\"] is required and must be an object",
                 {}});
  }
  if (is_notification) {
    if (method == "notifications/cancelled") CancelLongCall(req, params, /*modern=*/true);
    out.disposition = Disposition::kAccepted;
    return out;
  }

  json result;
  if (method == "server/discover") {
    // Resource updates reach a 2026-07-28 client on a subscriptions/listen stream.
    json caps = Capabilities(/*subscribe=*/true);
    caps["extensions"] = {{kTasksExtension, json::object()}};
    result = {{"supportedVersions", SupportedVersions()},
              {"capabilities", std::move(caps)},
              {"ttlMs", kListTtlMs},
              {"cacheScope", "public"}};
    if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  } else if (method == "subscriptions/listen") {
    return Listen(req, id, params, std::move(out));
  } else if (method == "tools/list") {
    if (params.contains("cursor")) {
      return Fail(std::move(out), id, Disposition::kReply,
                  {rpc::kInvalidParams, "Invalid params: unknown cursor", {}});
    }
    result = {{"tools", tools_.ListJson()}, {"ttlMs", kListTtlMs}, {"cacheScope", "public"}};
  } else if (method == "tools/call") {
    LongCall long_call;
    auto called = StartTask(params, *req.auth, out);
    if (!called) {
      StartLongCall(req, id, params, /*modern=*/true, long_call);
      called =
          CallTool(params, *req.auth, out, /*modern=*/true, false, -1, nullptr, false, &long_call);
      if (long_call.Cancelled()) return Unanswered(std::move(out));
    }
    if (auto* f = std::get_if<RpcFailure>(&*called)) {
      return Fail(std::move(out), id, f->disposition, f->error);
    }
    result = std::move(std::get<json>(*called));
    if (out.status != "task" && MaybeTask(params, *req.auth, out.tool, result, /*modern=*/true)) {
      out.text_is_structured = false;
      out.status = "task";
    }
  } else if (auto tasks = TaskMethod(method, params, *req.auth, /*modern=*/true, req, id, out)) {
    if (auto* f = std::get_if<RpcFailure>(&*tasks)) {
      return Fail(std::move(out), id, f->disposition, f->error);
    }
    result = std::move(std::get<json>(*tasks));
  } else if (auto served = CatalogMethod(method, params, *req.auth, out, /*modern=*/true)) {
    if (auto* f = std::get_if<RpcFailure>(&*served)) {
      return Fail(std::move(out), id, f->disposition, f->error);
    }
    result = std::move(std::get<json>(*served));
  } else {
    return Fail(std::move(out), id, Disposition::kUnknownMethod,
                {rpc::kMethodNotFound, "Method not found: " + Utf8Prefix(method, 128), {}});
  }
  if (!result.contains("resultType")) result["resultType"] = "complete";  // or input_required
  result["_meta"] = result_meta_;
  out.body = rpc::MakeResult(id, std::move(result));
  return out;
}

McpResponse McpServer::HandleLegacy(const McpRequest& req, const json& id,
                                    const std::string& method, const json& params,
                                    bool is_notification, McpResponse out) {
  const AuthContext& auth = *req.auth;
  // Before anything else: contradicting headers are refused even without a session.
  if (req.transport == McpTransport::kHttp) {
    if (auto err = CheckMethodHeaders(req, method, params, /*required=*/false)) {
      return Fail(std::move(out), id, Disposition::kRejected, *err);
    }
  }
  if (method == "initialize") {
    return LegacyInitialize(req, id, params, is_notification, std::move(out));
  }
  McpSession session;
  if (auto refused = LegacySessionRefusal(req, &session)) {
    return Fail(std::move(out), is_notification ? json(nullptr) : id, refused->disposition,
                refused->error);
  }
  if (is_notification) {
    if (method == "notifications/cancelled") CancelLongCall(req, params, /*modern=*/false);
    out.disposition = Disposition::kAccepted;
    return out;
  }

  json result;
  if (method == "ping") {
    result = json::object();
  } else if (method == "tools/list") {
    if (params.contains("cursor")) {
      return Fail(std::move(out), id, Disposition::kReply,
                  {rpc::kInvalidParams, "Invalid params: unknown cursor", {}});
    }
    result = {{"tools", tools_.ListJson()}};
  } else if (method == "tools/call") {
    return LegacyCallTool(req, id, params, session, std::move(out));
  } else if ((method == "resources/subscribe" || method == "resources/unsubscribe") &&
             req.transport == McpTransport::kHttp) {
    auto done = Subscription(req, method, params);
    if (auto* f = std::get_if<RpcFailure>(&done)) {
      return Fail(std::move(out), id, f->disposition, f->error);
    }
    result = std::move(std::get<json>(done));
  } else if (auto tasks = TaskMethod(method, params, auth, /*modern=*/false, req, id, out)) {
    if (auto* f = std::get_if<RpcFailure>(&*tasks)) {
      return Fail(std::move(out), id, f->disposition, f->error);
    }
    if (!out.held_stream.empty()) return out;  // tasks/result: when the task ends
    result = std::move(std::get<json>(*tasks));
  } else if (method == "logging/setLevel") {
    auto set = SetLogLevel(req, params);
    if (auto* f = std::get_if<RpcFailure>(&set)) {
      return Fail(std::move(out), id, f->disposition, f->error);
    }
    result = std::move(std::get<json>(set));
  } else if (auto served = CatalogMethod(method, params, auth, out, /*modern=*/false)) {
    if (auto* f = std::get_if<RpcFailure>(&*served)) {
      return Fail(std::move(out), id, f->disposition, f->error);
    }
    result = std::move(std::get<json>(*served));
  } else {
    return Fail(std::move(out), id, Disposition::kReply,
                {rpc::kMethodNotFound, "Method not found: " + Utf8Prefix(method, 128), {}});
  }
  out.body = rpc::MakeResult(id, std::move(result));
  return out;
}

McpResponse McpServer::LegacyInitialize(const McpRequest& req, const json& id, const json& params,
                                        bool is_notification, McpResponse out) {
  if (is_notification) {
    return Fail(std::move(out), nullptr, Disposition::kRejected,
                {rpc::kInvalidRequest, "Invalid Request: initialize must be a request", {}});
  }
  if (!params.contains("protocolVersion") || !params["protocolVersion"].is_string()) {
    return Fail(std::move(out), id, Disposition::kRejected,
                {rpc::kInvalidParams, "Invalid params: protocolVersion is required", {}});
  }
  auto result = Initialize(params, *req.auth, req.transport, out);
  if (auto* f = std::get_if<RpcFailure>(&result)) {
    return Fail(std::move(out), id, f->disposition, f->error);
  }
  out.body = rpc::MakeResult(id, std::move(std::get<json>(result)));
  return out;
}

std::optional<RpcFailure> McpServer::LegacySessionRefusal(const McpRequest& req,
                                                          McpSession* session) {
  // Every other session-era message belongs to a session.
  if (!req.session_id) {
    const char* msg = req.transport == McpTransport::kHttp
                          ? "Bad Request: Mcp-Session-Id header is required"
                          : "Bad Request: send initialize first";
    return RpcFailure{{rpc::kSessionRequired, msg, {}}, Disposition::kRejected};
  }
  // On stdio the session is the process's own, and the loop holds only the id that
  // initialize gave it: nothing to look up.
  auto live = req.transport == McpTransport::kStdio
                  ? Result<bool>(true)
                  : SessionExists(*req.session_id, *req.auth, session);
  if (!live.ok()) {
    spdlog::warn("session look-up: {}", live.status().message());
    return RpcFailure{
        {rpc::kInternalError, "Service unavailable: sessions cannot be checked now; retry", {}},
        Disposition::kUnavailable};
  }
  if (!*live) {
    return RpcFailure{{rpc::kSessionNotFound, "Session not found", {}},
                      Disposition::kUnknownSession};
  }
  if (req.transport == McpTransport::kHttp && req.protocol_version_header &&
      !IsLegacyVersion(*req.protocol_version_header)) {
    return RpcFailure{{rpc::kSessionRequired,
                       "Bad Request: Unsupported protocol version: " + *req.protocol_version_header,
                       {}},
                      Disposition::kRejected};
  }
  return std::nullopt;
}

McpResponse McpServer::LegacyCallTool(const McpRequest& req, const json& id, const json& params,
                                      const McpSession& session, McpResponse out) {
  const AuthContext& auth = *req.auth;
  // Asking the user needs the call's own event stream to send the request on. A client
  // that asks for a task gets one for a draft instead (it carries the decision).
  bool task = params.contains("task") && params["task"].is_object();
  bool elicits = session.client_elicits && req.accepts_stream && !task;
  std::string log_level = session.log_level;
  if (req.transport == McpTransport::kStdio) {
    std::lock_guard<std::mutex> lock(stdio_mu_);
    log_level = stdio_log_level_;
  }
  LongCall long_call;
  StartLongCall(req, id, params, /*modern=*/false, long_call);
  auto called = CallTool(params, auth, out, /*modern=*/false, elicits, LogLevelIndex(log_level),
                         nullptr, false, &long_call);
  if (long_call.Cancelled()) return Unanswered(std::move(out));
  if (auto* f = std::get_if<RpcFailure>(&called)) {
    return Fail(std::move(out), id, f->disposition, f->error);
  }
  json result = std::move(std::get<json>(called));
  if (MaybeTask(params, auth, out.tool, result, /*modern=*/false)) {
    out.text_is_structured = false;
    out.status = "task";
  }
  if (result.value("resultType", "") == "input_required") {
    // action.communicate's approval form (its state names a stored elicitation) has a
    // path of its own, which ends with the draft's standing even when unanswered.
    if (result.value("requestState", "").rfind("eli_", 0) == 0) {
      return HoldForAnswer(auth, id, result, std::move(out));
    }
    return AskClient(req, id, params, result, elicits, LogLevelIndex(log_level), std::move(out));
  }
  out.body = rpc::MakeResult(id, std::move(result));
  return out;
}

std::variant<json, RpcFailure> McpServer::CallTool(const json& params, const AuthContext& auth,
                                                   McpResponse& out, bool modern,
                                                   bool session_elicits, int log_threshold,
                                                   const json* answers, bool before_task,
                                                   const LongCall* long_call) {
  auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    return RpcFailure{{rpc::kInvalidParams, "Invalid params: \"name\" must be a string", {}}};
  }
  if (!tools_.Has(*name)) {
    out.tool = "other";
    out.status = "unknown_tool";
    return RpcFailure{{rpc::kInvalidParams,
                       "Unknown tool: " + Utf8Prefix(name->get_ref<const std::string&>(),
                                                     limits::kMaxToolNameChars),
                       {}}};
  }
  out.tool = name->get<std::string>();
  // Read in place: an episode.ingest's arguments are megabytes.
  static const json kNoArguments = json::object();
  auto given = params.find("arguments");
  const json& args = given != params.end() ? *given : kNoArguments;
  if (!args.is_object()) {
    return RpcFailure{{rpc::kInvalidParams, "Invalid params: \"arguments\" must be an object", {}}};
  }
  // A tool that needs a client capability refuses a 2026-07-28 client that did not declare
  // it (most tools need none: nothing more to look at).
  if (const std::vector<std::string>& required = tools_.RequiredClientCapabilities(out.tool);
      modern && !required.empty()) {
    auto meta = params.find("_meta");
    const json* caps = nullptr;
    if (meta != params.end() && meta->is_object()) {
      if (auto c = meta->find(kMetaCapabilities); c != meta->end() && c->is_object()) caps = &*c;
    }
    json missing = json::object();
    for (const std::string& cap : required) {
      if (caps == nullptr || !caps->contains(cap)) missing[cap] = json::object();
    }
    if (!missing.empty()) {
      return RpcFailure{{rpc::kMissingRequiredClientCapability,
                         "Missing required client capability: " + missing.begin().key(),
                         {{"requiredCapabilities", missing}}},
                        Disposition::kRejected};
    }
  }
  // A tool never sees part of a large ingest batch, or builds on one: it waits for the
  // batch to land whole (Store::WriteInSteps); other workspaces' calls never wait.
  // (A long-running tool takes what it needs itself: an ingest holds the workspace.)
  bool long_running = long_call != nullptr && long_call->cancelled;
  WorkspaceGate::Pass pass =
      long_running ? WorkspaceGate::Pass() : store_.EnterWorkspace(auth.workspace_id);
  if (json refused = answers != nullptr ? json(nullptr) : AdmitCall(auth); !refused.is_null()) {
    out.status = refused["structuredContent"].value("error", std::string("tool_error"));
    return refused;
  }
  ToolContext ctx{
      auth, store_, clock_, out.trace_id, params.value("_meta", json(nullptr)), [&out](json n) {
        out.notifications.push_back(std::move(n));
      }};
  if (modern) {
    // A client that takes tasks is given one for a draft instead of the approval form: the
    // task carries the form, and also ends when a person decides elsewhere.
    ctx.client_elicits = FormElicitationIn(ctx.meta) && !DeclaresTasks(params);
    ctx.input_responses = params.value("inputResponses", json(nullptr));
    if (auto bad = BadInputResponses(ctx.input_responses)) return RpcFailure{*bad};
    if (params.contains("requestState") && params["requestState"].is_string()) {
      ctx.request_state = params["requestState"];
    }
  }
  if (!modern) ctx.client_elicits = session_elicits;
  if (answers != nullptr) {
    ctx.input_responses = answers->value("inputResponses", json(nullptr));
    ctx.request_state = answers->value("requestState", std::string());
  }
  if (long_running) {
    ctx.cancelled = long_call->cancelled;
    if (long_call->notify) ctx.notify = long_call->notify;
  }
  ctx.log_threshold = log_threshold;
  if (modern && ctx.meta.is_object()) {
    if (auto level = ctx.meta.find(kMetaLogLevel); level != ctx.meta.end() && level->is_string()) {
      ctx.log_threshold = LogLevelIndex(level->get<std::string>());
    }
  }
  ToolReply reply = tools_.Call(*name, args, ctx, before_task);
  if (reply.is_invalid_params()) {
    out.status = "invalid_params";
    return RpcFailure{{rpc::kInvalidParams,
                       "Invalid params: " + reply.body().value("message", std::string()),
                       {}}};
  }
  if (reply.is_error()) {
    const json& body = reply.body();
    out.status = body.value("error", std::string("tool_error"));
  }
  out.text_is_structured = !reply.is_raw();
  return std::move(reply).ToCallToolResult();
}

bool McpServer::ToolCallMayCallOut(const std::string* name_header) const {
  if (name_header != nullptr) {
    std::optional<std::string> name = DecodeHeaderValue(*name_header);
    if (name && tools_.Has(*name)) return tools_.CallsOut(*name);
  }
  return tools_.AnyCallsOut();
}

std::string DumpBody(const McpResponse& response) {
  const json& body = response.body;
  if (response.text_is_structured) {
    // result.content[0].text is result.structuredContent already serialized (ToolReply).
    auto result = body.find("result");
    if (result != body.end()) {
      auto structured = result->find("structuredContent");
      auto content = result->find("content");
      if (structured != result->end() && content != result->end() && content->is_array() &&
          !content->empty() && content->front().contains("text") &&
          content->front()["text"].is_string()) {
        const std::string& text = content->front()["text"].get_ref<const std::string&>();
        return DumpJson(body, {&*structured, &text});
      }
    }
  }
  return DumpJson(body);
}

}  // namespace cortex
