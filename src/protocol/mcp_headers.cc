// The Mcp-* HTTP headers a request carries, checked against its body (2026-07-28 §HTTP
// headers), and their value encoding.
#include "core/crypto.h"
#include "protocol/mcp_parts.h"

namespace cortex {

using nlohmann::json;

// Header values may carry non-ASCII text as "=?base64?...?=" (2026-07-28 §Value Encoding).
std::optional<std::string> DecodeHeaderValue(const std::string& v) {
  constexpr std::string_view kPrefix = "=?base64?", kSuffix = "?=";
  if (v.size() >= kPrefix.size() + kSuffix.size() && v.compare(0, kPrefix.size(), kPrefix) == 0 &&
      v.compare(v.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0) {
    std::string decoded;
    if (!Base64Decode(
            std::string_view(v).substr(kPrefix.size(), v.size() - kPrefix.size() - kSuffix.size()),
            &decoded)) {
      return std::nullopt;
    }
    return decoded;
  }
  // A plain value is visible ASCII, space or tab (RFC 9110, as the spec requires); anything
  // else, UTF-8 included, must come base64-encoded.
  for (unsigned char c : v) {
    if ((c < 0x20 && c != '\t') || c >= 0x7f) return std::nullopt;
  }
  return v;
}

rpc::Error HeaderMismatch(std::string msg) {
  return rpc::Error{rpc::kHeaderMismatch, "Header mismatch: " + std::move(msg), {}};
}

std::optional<rpc::Error> CheckMethodHeaders(const McpRequest& req, const std::string& method,
                                             const json& params, bool required) {
  if (!req.method_header) {
    if (required) return HeaderMismatch("Mcp-Method header is required");
  } else if (*req.method_header != method) {
    return HeaderMismatch("Mcp-Method header value '" + *req.method_header +
                          "' does not match body value '" + method + "'");
  }
  const char* name_field =
      method == "tools/call" || method == "prompts/get"                               ? "name"
      : method == "resources/read"                                                    ? "uri"
      : method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel" ? "taskId"
                                                                                      : nullptr;
  if (name_field == nullptr) return std::nullopt;
  if (!req.name_header) {
    if (required) return HeaderMismatch("Mcp-Name header is required");
    return std::nullopt;
  }
  auto decoded = DecodeHeaderValue(*req.name_header);
  if (!decoded) return HeaderMismatch("Mcp-Name header value is malformed");
  auto body_name = params.find(name_field);
  if (body_name == params.end() || !body_name->is_string() || *body_name != *decoded) {
    return HeaderMismatch(
        "Mcp-Name header value '" + *decoded + "' does not match body value " +
        (body_name == params.end() ? std::string("(absent)") : body_name->dump()));
  }
  return std::nullopt;
}

std::optional<rpc::Error> CheckHeaders(const McpRequest& req, const std::string& version,
                                       const std::string& method, const json& params) {
  if (!req.protocol_version_header) {
    return HeaderMismatch("MCP-Protocol-Version header is required");
  }
  if (*req.protocol_version_header != version) {
    return HeaderMismatch("MCP-Protocol-Version header value '" + *req.protocol_version_header +
                          "' does not match body value '" + version + "'");
  }
  return CheckMethodHeaders(req, method, params, /*required=*/true);
}

}  // namespace cortex
