#include "tools/cortex_tools.h"

namespace cortex {

Status RegisterCortexTools(ToolRegistry& registry, const EngineConfig& config) {
  CORTEX_RETURN_IF_ERROR(registry.Add(WorkspaceStatusTool()));
  CORTEX_RETURN_IF_ERROR(registry.Add(EntityLookupTool()));
  CORTEX_RETURN_IF_ERROR(registry.Add(WhyThisNotificationTool()));
  CORTEX_RETURN_IF_ERROR(registry.Add(DecisionInspectTool()));
  CORTEX_RETURN_IF_ERROR(registry.Add(DecisionListTool()));
  CORTEX_RETURN_IF_ERROR(registry.Add(NotificationListTool()));
  CORTEX_RETURN_IF_ERROR(registry.Add(ActionCommunicateTool(config)));
  CORTEX_RETURN_IF_ERROR(registry.Add(ActionApproveTool(config)));
  CORTEX_RETURN_IF_ERROR(registry.Add(ActionRejectTool(config)));
  CORTEX_RETURN_IF_ERROR(registry.Add(WhyThisActionTool()));
  CORTEX_RETURN_IF_ERROR(registry.Add(RuleListTool()));
  CORTEX_RETURN_IF_ERROR(registry.Add(RuleAcceptTool()));
  CORTEX_RETURN_IF_ERROR(registry.Add(RuleRejectTool()));
  CORTEX_RETURN_IF_ERROR(registry.Add(EpisodeIngestTool()));
  CORTEX_RETURN_IF_ERROR(registry.Add(RuleLearnTool(config)));
  return RegisterCortexResources(registry);
}

}  // namespace cortex
