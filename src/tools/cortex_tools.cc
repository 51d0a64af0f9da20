#include "tools/cortex_tools.h"

namespace cortex {

Status RegisterCortexTools(ToolRegistry& registry, const EngineConfig& config) {
  for (const CortexTool& tool : kCortexTools) {
    ToolDef def = tool.make(config);
    if (def.name != tool.name) {
      return Status::Internal("kCortexTools: " + std::string(tool.name) + " makes " + def.name);
    }
    CORTEX_RETURN_IF_ERROR(registry.Add(std::move(def)));
  }
  return RegisterCortexResources(registry);
}

}  // namespace cortex
