#include "tools/tool_result.h"

#include "core/json_text.h"

namespace cortex {

using nlohmann::json;

ToolReply ToolReply::Ok(json body) {
  ToolReply r;
  r.body_ = std::move(body);
  return r;
}

ToolReply ToolReply::Error(std::string code, std::string message) {
  ToolReply r;
  r.body_ = json{{"status", "error"}, {"error", std::move(code)}, {"message", std::move(message)}};
  r.is_error_ = true;
  return r;
}

ToolReply ToolReply::ErrorBody(json body) {
  ToolReply r;
  r.body_ = std::move(body);
  r.is_error_ = true;
  return r;
}

ToolReply ToolReply::FromStatus(const Status& status) {
  switch (status.code()) {
    case Code::kInvalidArgument:
    case Code::kNotFound:
    case Code::kUnauthorized:
      return Error(CodeName(status.code()), status.message());
    case Code::kConflict:
      return Error("conflict", status.message());
    case Code::kUnavailable:
      return Error("unavailable", "temporarily unavailable, retry: " + status.message());
    case Code::kCancelled:
      return Error("cancelled", status.message());
    case Code::kOk:
    case Code::kInternal:
      break;
  }
  return Error("internal_error", "internal error");
}

ToolReply ToolReply::Raw(json call_tool_result) {
  ToolReply r;
  r.is_error_ = call_tool_result.value("isError", false);
  r.body_ = std::move(call_tool_result);
  r.raw_ = true;
  return r;
}

ToolReply ToolReply::InputRequired(json input_requests, std::string request_state) {
  ToolReply r;
  r.body_ = {{"resultType", "input_required"},
             {"inputRequests", std::move(input_requests)},
             {"requestState", std::move(request_state)}};
  r.raw_ = true;
  return r;
}

ToolReply ToolReply::InvalidParams(std::string message) {
  ToolReply r;
  r.body_ = {{"message", std::move(message)}};
  r.is_error_ = true;
  r.invalid_params_ = true;
  return r;
}

json ToolReply::ToCallToolResult() && {
  if (raw_) return std::move(body_);
  // Built member by member: an initializer list would copy the body's text and tree.
  json text = json::object();
  text["type"] = "text";
  text["text"] = DumpJson(body_);
  json result = json::object();
  result["content"] = json::array();
  result["content"].push_back(std::move(text));
  result["structuredContent"] = std::move(body_);
  if (is_error_) result["isError"] = true;
  return result;
}

}  // namespace cortex
