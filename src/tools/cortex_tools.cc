#include "tools/cortex_tools.h"

namespace cortex {

Status RegisterCortexTools(ToolRegistry& registry) {
  CORTEX_RETURN_IF_ERROR(registry.Add(WorkspaceStatusTool()));
  CORTEX_RETURN_IF_ERROR(registry.Add(EntityLookupTool()));
  return Status::Ok();
}

}  // namespace cortex
