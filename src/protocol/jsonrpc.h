// JSON-RPC 2.0 framing: parsing one message and building responses. No I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace cortex::rpc {

// The spec's error codes (JSON-RPC 2.0 and MCP 2026-07-28 §Error Codes).
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// Implementation-defined (legacy range): session errors of the 2025 transports.
inline constexpr int kSessionRequired = -32000;
inline constexpr int kSessionNotFound = -32001;
// MCP 2026-07-28.
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kMissingRequiredClientCapability = -32021;
inline constexpr int kUnsupportedProtocolVersion = -32022;

struct Error {
  int code;
  std::string message;
  nlohmann::json data;  // null when absent
};

// One parsed JSON-RPC message from a client.
struct Message {
  bool is_notification = false;  // no "id"
  bool is_response = false;      // a client's reply ("result" or "error") to our request
  nlohmann::json id;             // string or number; null for notifications
  std::string method;
  nlohmann::json params;  // object, or null when absent
  nlohmann::json result;  // a response's result; null for an error response
  nlohmann::json error;   // an error response's error object; null otherwise
};

// Parses `body` as exactly one JSON-RPC 2.0 message. Batches (arrays) are refused: no
// supported protocol revision allows them. So is a key named twice in any object of it
// (kParseError naming where), tool arguments included.
std::variant<Message, Error> Parse(std::string_view body);

nlohmann::json MakeResult(const nlohmann::json& id, nlohmann::json result);
nlohmann::json MakeError(const nlohmann::json& id, const Error& error);

}  // namespace cortex::rpc
