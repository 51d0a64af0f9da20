// The product's tools. Each lives in its own file, named after the tool.
#pragma once

#include "tools/registry.h"

namespace cortex {

ToolDef WorkspaceStatusTool();  // workspace.status
ToolDef EntityLookupTool();     // entity.lookup

// Registers every Cortex tool, in the order tools/list shows them.
Status RegisterCortexTools(ToolRegistry& registry);

}  // namespace cortex
