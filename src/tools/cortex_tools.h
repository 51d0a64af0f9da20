// The product's tools. Each lives in its own file, named after the tool.
#pragma once

#include "tools/registry.h"

namespace cortex {

ToolDef WorkspaceStatusTool();  // workspace.status
ToolDef EntityLookupTool();     // entity.lookup
ToolDef WhyThisNotificationTool();  // meta.why_this_notification
ToolDef DecisionInspectTool();      // decision.inspect
ToolDef DecisionListTool();         // decision.list
ToolDef NotificationListTool();     // notification.list

// decision.inspect's body for `d` (seed 003's shape).
nlohmann::json DecisionInspectBody(const Decision& d);

// Registers every Cortex tool, in the order tools/list shows them.
Status RegisterCortexTools(ToolRegistry& registry);

}  // namespace cortex
