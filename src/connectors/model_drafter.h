// The optional model drafter: an OpenAI-compatible chat-completions endpoint rewrites the
// message in the requested tone. Each call spends one inference unit of the workspace's
// daily budget (engines/actions/actions.cc keeps the count).
#pragma once

#include <string>

#include "core/status.h"

namespace cortex {

struct DrafterConfig {
  std::string kind = "builtin";  // builtin | openai
  std::string url;               // e.g. http://127.0.0.1:8080/v1/chat/completions
  std::string model;
  std::string api_key;  // sent as a bearer token if set
  int timeout_seconds = 20;

  // True when drafting a message calls a model over the network (before its write).
  bool CallsModel() const { return kind == "openai"; }
};

// Asks the model for a draft. Unavailable on any transport or shape error.
Result<std::string> DraftWithModel(const DrafterConfig& config, const std::string& message,
                                   const std::string& tone, const std::string& context,
                                   const std::string& recipient_name);

}  // namespace cortex
