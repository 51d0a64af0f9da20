// The catalog's methods (resources, prompts, completions): McpServer::CatalogMethod, over
// tools/catalog.h.
#include "core/json_text.h"
#include "core/limits.h"
#include "protocol/mcp_parts.h"
#include "protocol/mcp_server.h"

namespace cortex {

using nlohmann::json;

namespace {

// A catalog error (tools/catalog.h) as a JSON-RPC error.
RpcFailure CatalogFailure(const Status& st) {
  switch (st.code()) {
    case Code::kNotFound:
    case Code::kInvalidArgument:
      return RpcFailure{{rpc::kInvalidParams, "Invalid params: " + st.message(), {}}};
    case Code::kUnauthorized:
      return RpcFailure{{rpc::kInvalidRequest, st.message(), {}}};
    case Code::kUnavailable:
      return RpcFailure{
          {rpc::kInternalError, "Service unavailable: " + st.message() + "; retry", {}}};
    default:
      return RpcFailure{{rpc::kInternalError, st.message(), {}}};
  }
}

}  // namespace

std::optional<std::variant<json, RpcFailure>> McpServer::CatalogMethod(const std::string& method,
                                                                       const json& params,
                                                                       const AuthContext& auth,
                                                                       McpResponse& out,
                                                                       bool modern) {
  const Catalog& catalog = tools_.catalog();
  // List results hold no user data and change only with a release (2026-07-28 caching).
  auto cacheable = [modern](json result) {
    if (modern) {
      result["ttlMs"] = kListTtlMs;
      result["cacheScope"] = "public";
    }
    return result;
  };
  bool is_list = method == "resources/list" || method == "resources/templates/list" ||
                 method == "prompts/list";
  if (is_list && params.contains("cursor")) {
    return RpcFailure{{rpc::kInvalidParams, "Invalid params: unknown cursor", {}}};
  }
  if (method == "resources/list") return cacheable({{"resources", catalog.ResourcesJson()}});
  if (method == "resources/templates/list") {
    return cacheable({{"resourceTemplates", catalog.TemplatesJson()}});
  }
  if (method == "prompts/list") return cacheable({{"prompts", catalog.PromptsJson()}});
  if (method != "resources/read" && method != "prompts/get" && method != "completion/complete") {
    return std::nullopt;
  }
  // As a tool call: never part of a large ingest batch (Store::EnterWorkspace).
  WorkspaceGate::Pass pass = store_.EnterWorkspace(auth.workspace_id);
  ToolContext ctx{
      auth, store_, clock_, out.trace_id, params.value("_meta", json(nullptr)), [&out](json n) {
        out.notifications.push_back(std::move(n));
      }};
  if (modern) {  // a prompt, like a tool, may ask the client for input first
    ctx.client_elicits = FormElicitationIn(ctx.meta);
    ctx.input_responses = params.value("inputResponses", json(nullptr));
    if (auto bad = BadInputResponses(ctx.input_responses)) return RpcFailure{*bad};
    if (params.contains("requestState") && params["requestState"].is_string()) {
      ctx.request_state = params["requestState"];
    }
  }
  if (method == "resources/read") {
    const std::string* uri = StringParam(params, "uri");
    if (uri == nullptr) {
      return RpcFailure{{rpc::kInvalidParams, "Invalid params: \"uri\" must be a string", {}}};
    }
    auto read = catalog.Read(*uri, ctx);
    if (read.status().code() == Code::kNotFound) {
      out.status = "resource_not_found";
      return RpcFailure{{modern ? rpc::kInvalidParams : kLegacyResourceNotFound,
                         "Resource not found",
                         {{"uri", Utf8Prefix(*uri, limits::kMaxResourceUriChars)}}}};
    }
    if (!read.ok()) return CatalogFailure(read.status());
    json result = {{"contents", std::move(*read)}};
    if (modern) {
      // The caller's own data, as of now.
      result["ttlMs"] = 0;
      result["cacheScope"] = "private";
    }
    return result;
  }
  if (method == "prompts/get") {
    const std::string* name = StringParam(params, "name");
    if (name == nullptr) {
      return RpcFailure{{rpc::kInvalidParams, "Invalid params: \"name\" must be a string", {}}};
    }
    auto got = catalog.GetPrompt(*name, params.value("arguments", json(nullptr)), ctx);
    if (!got.ok()) return CatalogFailure(got.status());
    return std::move(*got);
  }
  // completion/complete
  auto ref = params.find("ref");
  auto argument = params.find("argument");
  if (ref == params.end() || argument == params.end() || !argument->is_object() ||
      StringParam(*argument, "name") == nullptr || StringParam(*argument, "value") == nullptr) {
    return RpcFailure{{rpc::kInvalidParams,
                       "Invalid params: \"ref\" and \"argument\" {name, value} are required",
                       {}}};
  }
  const std::string& value = *StringParam(*argument, "value");
  if (value.size() > limits::kMaxResourceUriChars) {
    return RpcFailure{{rpc::kInvalidParams, "Invalid params: argument value too long", {}}};
  }
  Arguments context;
  if (auto c = params.find("context"); c != params.end() && c->is_object()) {
    if (auto a = c->find("arguments"); a != c->end() && a->is_object()) {
      for (const auto& [k, v] : a->items()) {
        if (v.is_string()) context[k] = v.get<std::string>();
      }
    }
  }
  auto completed = catalog.Complete(*ref, *StringParam(*argument, "name"), value, context, ctx);
  if (!completed.ok()) return CatalogFailure(completed.status());
  return json{{"completion", std::move(*completed)}};
}

}  // namespace cortex
