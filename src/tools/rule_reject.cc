// rule.reject: a person rejects a learned rule (the tool's shape is rule.accept's).
#include "tools/cortex_tools.h"

namespace cortex {

ToolDef RuleRejectTool(const EngineConfig&) { return RuleDecisionTool(false); }

}  // namespace cortex
