// The product's tools. Each lives in its own file, named after the tool.
#pragma once

#include "engines/config.h"
#include "tools/registry.h"

namespace cortex {

ToolDef WorkspaceStatusTool();                              // workspace.status
ToolDef EntityLookupTool();                                 // entity.lookup
ToolDef WhyThisNotificationTool();                          // meta.why_this_notification
ToolDef DecisionInspectTool();                              // decision.inspect
ToolDef DecisionListTool();                                 // decision.list
ToolDef NotificationListTool();                             // notification.list
ToolDef ActionCommunicateTool(const EngineConfig& config);  // action.communicate
ToolDef ActionApproveTool(const EngineConfig& config);      // action.approve
ToolDef ActionRejectTool(const EngineConfig& config);       // action.reject
ToolDef WhyThisActionTool();                                // meta.why_this_action
ToolDef RuleListTool();                                     // rule.list
ToolDef RuleAcceptTool();                                   // rule.accept
ToolDef RuleRejectTool();                                   // rule.reject
ToolDef EpisodeIngestTool();                                // episode.ingest
ToolDef RuleLearnTool(const EngineConfig& config);          // rule.learn

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

// Registers every Cortex tool, in the order tools/list shows them. The action tools keep a
// reference to `config`, which must outlive the registry.
Status RegisterCortexTools(ToolRegistry& registry, const EngineConfig& config);

}  // namespace cortex
