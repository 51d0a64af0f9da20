#include "core/status.h"

namespace cortex {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid_arguments";
    case Code::kNotFound:
      return "not_found";
    case Code::kUnauthorized:
      return "unauthorized";
    case Code::kConflict:
      return "conflict";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kCancelled:
      return "cancelled";
    case Code::kInternal:
      return "internal";
  }
  return "internal";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace cortex
