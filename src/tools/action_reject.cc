// action.reject: end a pending action without sending it.
#include "tools/action_tools.h"
#include "tools/cortex_tools.h"
#include "tools/read_tools.h"

namespace cortex {

using nlohmann::json;

ToolDef ActionRejectTool(const EngineConfig& config) {
  return ToolDef{
      .name = "action.reject",
      .title = "Reject a pending action",
      .description =
          "A person ends a pending action without sending it, with an optional reason (needs "
          "the `approve` scope: an agent's read,act token cannot reject). A rejection lowers "
          "the trust level for that counterparty by one, never below 1. A decision that is no "
          "longer pending answers not_pending.",
      .input_schema = {{"type", "object"},
                       {"required", {"decision_id"}},
                       {"additionalProperties", false},
                       {"properties",
                        {{"decision_id", IdSchema("dec_", "The pending action's decision id.")},
                         {"reason",
                          {{"type", "string"},
                           {"maxLength", 2000},
                           {"description", "Why, for the record."}}}}}},
      .output_schema = ActionResultSchema(),
      .annotations = {{"readOnlyHint", false},
                      {"destructiveHint", false},
                      {"idempotentHint", false},
                      {"openWorldHint", false}},
      .scope = kScopeApprove,
      .handler = [&config](ToolContext& ctx, const json& args) -> ToolReply {
        std::optional<std::string> reason;
        if (args.contains("reason")) reason = args["reason"].get<std::string>();
        ActionEngine engine(ctx.store, ctx.clock, config.actions);
        return ActionReply(engine.Reject(ctx.auth.workspace_id, args.at("decision_id"), reason,
                                         Actor{"mcp", ctx.auth.token_id, ""}));
      },
  };
}

}  // namespace cortex
