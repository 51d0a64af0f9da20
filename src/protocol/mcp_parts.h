// What the files of McpServer share besides its class (mcp_server.h): the _meta keys, the
// error codes of the session era, and the small readers of a request every part uses.
// Internal to src/protocol/; nothing outside includes it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "protocol/jsonrpc.h"
#include "protocol/mcp_server.h"

namespace cortex {

inline constexpr char kMetaCapabilities[] = "io.modelcontextprotocol/clientCapabilities";
// The 2025-11-25 era's error for a resource that does not exist (2026-07-28: -32602).
inline constexpr int kLegacyResourceNotFound = -32002;
// How long a client may cache tools/list and server/discover (the tool set changes only
// with a new release of the server).
inline constexpr int64_t kListTtlMs = 3'600'000;

// Whether client capabilities `caps` declare elicitation by form: `elicitation: {}` (form,
// the default mode) or with `form` named.
bool FormElicitation(const nlohmann::json& caps);
// The same, of the capabilities a 2026-07-28 request's `_meta` declares (read in place: a
// call does not copy them).
bool FormElicitationIn(const nlohmann::json& meta);

bool IsLegacyVersion(const std::string& v);

// An error if a request's inputResponses (null: none) is not a map of result objects.
std::optional<rpc::Error> BadInputResponses(const nlohmann::json& responses);

// A string field of `params`, or nullptr.
const std::string* StringParam(const nlohmann::json& params, const char* name);

// A header value as sent, decoded: "=?base64?...?=" is base64 (2026-07-28 §Value
// Encoding); a plain one must be visible ASCII, space or tab. nullopt if malformed.
std::optional<std::string> DecodeHeaderValue(const std::string& v);

// The error for a header that contradicts the body (or is missing): "Header mismatch: msg".
rpc::Error HeaderMismatch(std::string msg);

// Checks the Mcp-Method and Mcp-Name headers of an HTTP request against its body. A
// stateless-era request must carry them (`required`); a session-era one need not, but any it
// carries must match as well, since the HTTP layer routes by them (HttpRouter::MayWrite).
std::optional<rpc::Error> CheckMethodHeaders(const McpRequest& req, const std::string& method,
                                             const nlohmann::json& params, bool required);
// Checks the Mcp-* headers of a stateless-era HTTP request against its body, its
// MCP-Protocol-Version first.
std::optional<rpc::Error> CheckHeaders(const McpRequest& req, const std::string& version,
                                       const std::string& method, const nlohmann::json& params);

}  // namespace cortex
