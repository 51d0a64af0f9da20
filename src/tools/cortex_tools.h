// The product's tools. Each lives in its own file, named after the tool.
#pragma once

#include <string_view>

#include "engines/config.h"
#include "tools/registry.h"

namespace cortex {

// Each tool is made by a function of its own file, src/tools/<file>.cc (the build compiles
// every .cc there), from the server's settings.
ToolDef WorkspaceStatusTool(const EngineConfig& config);
ToolDef EntityLookupTool(const EngineConfig& config);
ToolDef WhyThisNotificationTool(const EngineConfig& config);
ToolDef DecisionInspectTool(const EngineConfig& config);
ToolDef DecisionListTool(const EngineConfig& config);
ToolDef NotificationListTool(const EngineConfig& config);
ToolDef ActionCommunicateTool(const EngineConfig& config);
ToolDef ActionApproveTool(const EngineConfig& config);
ToolDef ActionRejectTool(const EngineConfig& config);
ToolDef WhyThisActionTool(const EngineConfig& config);
ToolDef RuleListTool(const EngineConfig& config);
ToolDef RuleAcceptTool(const EngineConfig& config);
ToolDef RuleRejectTool(const EngineConfig& config);
ToolDef EpisodeIngestTool(const EngineConfig& config);
ToolDef RuleLearnTool(const EngineConfig& config);

// The table of Cortex's tools, in the order tools/list shows them: the one place a tool is
// registered. RegisterCortexTools fills the registry from it (and checks each name), and
// RegistryTest holds docs/mcp.md's table of tools to it.
struct CortexTool {
  std::string_view name;
  ToolDef (*make)(const EngineConfig& config);
};
inline constexpr CortexTool kCortexTools[] = {
    {"workspace.status", WorkspaceStatusTool},
    {"entity.lookup", EntityLookupTool},
    {"meta.why_this_notification", WhyThisNotificationTool},
    {"decision.inspect", DecisionInspectTool},
    {"decision.list", DecisionListTool},
    {"notification.list", NotificationListTool},
    {"action.communicate", ActionCommunicateTool},
    {"action.approve", ActionApproveTool},
    {"action.reject", ActionRejectTool},
    {"meta.why_this_action", WhyThisActionTool},
    {"rule.list", RuleListTool},
    {"rule.accept", RuleAcceptTool},
    {"rule.reject", RuleRejectTool},
    {"episode.ingest", EpisodeIngestTool},
    {"rule.learn", RuleLearnTool},
};

// A rule as rule.list shows it, and its JSON Schema.
nlohmann::json RuleView(const Rule& r);
nlohmann::json RuleViewSchema();
// rule.accept (true) or rule.reject (false).
ToolDef RuleDecisionTool(bool accept);

// decision.inspect's body for `d` (seed 003's shape).
nlohmann::json DecisionInspectBody(const Decision& d);

// Registers the MCP resources, resource templates and prompts (cortex_resources.cc) in
// registry.catalog(). They read through the registry's tools: it must outlive them.
Status RegisterCortexResources(ToolRegistry& registry);

// Registers every tool of kCortexTools, in its order, then the resources and prompts. The
// action tools keep a reference to `config`, which must outlive the registry.
Status RegisterCortexTools(ToolRegistry& registry, const EngineConfig& config);

}  // namespace cortex
