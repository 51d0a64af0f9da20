// action.communicate: draft and route a message through the action engine (seed 000).
#include "engines/drafter.h"
#include "tools/action_tools.h"
#include "tools/cortex_tools.h"

namespace cortex {

using nlohmann::json;

ToolDef ActionCommunicateTool(const EngineConfig& config) {
  json tones = json::array();
  for (const char* t : kTones) tones.push_back(t);
  return ToolDef{
      .name = "action.communicate",
      .title = "Send a message (through the action engine)",
      .description =
          "Drafts and routes a message through the action engine. The engine checks trust, "
          "fires applicable rules, and either executes immediately (Level 3) or returns "
          "pending_approval with a decision id (Levels 1-2). Send-class operations always "
          "route through the engine; there is no raw connector tool.",
      .input_schema = {{"type", "object"},
                       {"required", {"to", "message"}},
                       {"additionalProperties", false},
                       {"properties",
                        {{"to",
                          {{"type", "string"},
                           {"minLength", 1},
                           {"maxLength", 320},
                           {"description", "Recipient identifier (entity id, email, handle)."}}},
                         {"message",
                          {{"type", "string"},
                           {"minLength", 1},
                           {"maxLength", 10000},
                           {"description", "Message body."}}},
                         {"tone",
                          {{"enum", tones},
                           {"description", "Optional tone hint (e.g. direct, warm)."}}},
                         {"context",
                          {{"type", "string"},
                           {"maxLength", 2000},
                           {"description", "Optional context for the action."}}}}}},
      .output_schema = ActionResultSchema(),
      .annotations = {{"readOnlyHint", false},
                      {"destructiveHint", false},
                      {"idempotentHint", false},
                      {"openWorldHint", true}},
      .scope = kScopeAct,
      // A model drafts before the write (engines/actions.cc): a network call.
      .calls_out = config.actions.drafter.CallsModel(),
      .handler = [&config](ToolContext& ctx, const json& args) -> ToolReply {
        CommunicateRequest req{args.at("to"), args.at("message"), args.value("tone", ""),
                               args.value("context", ""), ctx.auth.token_id};
        ActionEngine engine(ctx.store, ctx.clock, config.actions);
        return ActionReply(engine.Communicate(ctx.auth.workspace_id, req));
      },
  };
}

}  // namespace cortex
