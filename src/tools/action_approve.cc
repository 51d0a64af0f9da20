// action.approve: execute a pending action, optionally with edited text.
#include "tools/action_tools.h"
#include "tools/cortex_tools.h"
#include "tools/read_tools.h"

namespace cortex {

using nlohmann::json;

ToolDef ActionApproveTool(const EngineConfig& config) {
  return ToolDef{
      .name = "action.approve",
      .title = "Approve a pending action",
      .description =
          "A person executes a pending action (from action.communicate's decision_id); needs "
          "the `approve` scope: an agent's read,act token cannot approve. Give `message` "
          "to send your edited text instead of the draft; the edit is recorded. A decision "
          "that is no longer pending answers not_pending, saying what state it is in.",
      .input_schema = {{"type", "object"},
                       {"required", {"decision_id"}},
                       {"additionalProperties", false},
                       {"properties",
                        {{"decision_id", IdSchema("dec_", "The pending action's decision id.")},
                         {"message",
                          {{"type", "string"},
                           {"minLength", 1},
                           {"maxLength", 10000},
                           {"description", "Edited text to send instead."}}}}}},
      .output_schema = ActionResultSchema(),
      .annotations = {{"readOnlyHint", false},
                      {"destructiveHint", false},
                      {"idempotentHint", false},
                      {"openWorldHint", true}},
      .scope = kScopeApprove,  // a person's: an agent never approves its own drafts
      .handler = [&config](ToolContext& ctx, const json& args) -> ToolReply {
        std::optional<std::string> text;
        if (args.contains("message")) text = args["message"].get<std::string>();
        ActionEngine engine(ctx.store, ctx.clock, config.actions);
        return ActionReply(engine.Approve(ctx.auth.workspace_id, args.at("decision_id"), text,
                                          Actor{"mcp", ctx.auth.token_id, ""}));
      },
  };
}

}  // namespace cortex
