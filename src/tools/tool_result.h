// What a tool handler returns: a JSON body (success) or a tool error. The registry turns
// it into an MCP CallToolResult: content[0].text is the body as a string and
// structuredContent is the body itself; errors set isError and use the body
// {"status":"error","error":CODE,"message":...}.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"

namespace cortex {

class ToolReply {
 public:
  static ToolReply Ok(nlohmann::json body);
  // `code` is a tool error code from the seeds' catalogue, e.g. "not_found".
  static ToolReply Error(std::string code, std::string message);
  // A tool error whose body carries more than code and message (e.g. a decision_id).
  // REQUIRES: body has "status": "error", "error" and "message".
  static ToolReply ErrorBody(nlohmann::json body);
  // Maps a core Status to the matching tool error code.
  static ToolReply FromStatus(const Status& status);
  // A CallToolResult given verbatim (for tools whose content is not a JSON body, such as
  // the conformance fixtures' images and audio).
  static ToolReply Raw(nlohmann::json call_tool_result);
  // A 2026-07-28 InputRequiredResult: the client is to fulfil `input_requests` (e.g. an
  // elicitation) and retry the call with the answers and `request_state`.
  static ToolReply InputRequired(nlohmann::json input_requests, std::string request_state);
  // Not a result: the request's params are refused (JSON-RPC -32602), e.g. a requestState
  // that fails its integrity check.
  static ToolReply InvalidParams(std::string message);

  bool is_error() const { return is_error_; }
  bool is_raw() const { return raw_; }
  bool is_invalid_params() const { return invalid_params_; }
  const nlohmann::json& body() const { return body_; }
  // The CallToolResult for the wire (takes the body: no copy of a large result).
  nlohmann::json ToCallToolResult() &&;

 private:
  nlohmann::json body_;
  bool is_error_ = false;
  bool raw_ = false;
  bool invalid_params_ = false;  // body is {"message": ...}
};

}  // namespace cortex
