// Shared by the action tools: the McpActionResult schema and its JSON.
#pragma once

#include <nlohmann/json.hpp>

#include "engines/actions/actions.h"
#include "tools/tool_result.h"

namespace cortex {

// outputSchema of McpActionResult: success | pending_approval | error.
nlohmann::json ActionResultSchema();

// The tool reply for an engine outcome: an isError result for status "error", or for a
// failed Status (not_pending for a decision that is no longer pending).
ToolReply ActionReply(const Result<ActionResult>& result);

}  // namespace cortex
