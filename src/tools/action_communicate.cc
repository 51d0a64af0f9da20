// action.communicate: draft and route a message through the action engine (seed 000).
#include "engines/actions/drafter.h"
#include "engines/actions/elicitation.h"
#include "tools/action_tools.h"
#include "tools/cortex_tools.h"

namespace cortex {
namespace {

// Whether the person can be asked inside the calling client: a client that can ask its
// user by a form, a token with the approve scope (a person's client; an agent's could
// answer its own question), and the config allows it.
bool MayAskInClient(const ToolContext& ctx, const ActionConfig& config) {
  return config.approve_in_client && ctx.client_elicits && (ctx.auth.scopes & kScopeApprove);
}

}  // namespace

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
                           {"description", "Optional context for the action."}}},
                         {"subject",
                          {{"type", "string"},
                           {"minLength", 1},
                           {"maxLength", 200},
                           {"description",
                            "Optional subject line (email). Default: for a reply, \"Re: \" "
                            "and the answered message's subject; otherwise the message's "
                            "first line. Control characters are refused."}}},
                         {"in_reply_to",
                          {{"type", "string"},
                           {"pattern", "^ep_[0-7][0-9A-HJKMNP-TV-Z]{25}$"},
                           {"description",
                            "Optional episode id (ep_...) of the message this answers: the "
                            "mail carries In-Reply-To/References and joins its thread."}}},
                         {"idempotency_key",
                          {{"type", "string"},
                           {"minLength", 1},
                           {"maxLength", 200},
                           {"pattern", "^[\\x21-\\x7e]+$"},
                           {"description",
                            "Optional. A retry with the same key and arguments (within 24 h, "
                            "same token) returns the first call's result and sends nothing "
                            "more; with other arguments it is refused. Use a new key (e.g. a "
                            "UUID) per message."}}}}}},
      .output_schema = ActionResultSchema(),
      .annotations = {{"readOnlyHint", false},
                      {"destructiveHint", false},
                      {"idempotentHint", false},
                      {"openWorldHint", true}},
      .scope = kScopeAct,
      // A model drafts before the write (engines/actions/actions.cc): a network call.
      .calls_out = config.actions.drafter.CallsModel(),
      .handler = [&config](ToolContext& ctx, const json& args) -> ToolReply {
        const std::string& ws = ctx.auth.workspace_id;
        if (!ctx.request_state.empty()) {
          // The retry of a call that asked the person: their answer, not a new draft.
          return ActionReply(AnswerInClient(ctx.store, ctx.clock, config.actions, ws,
                                            ctx.auth.token_id, args, ctx.request_state,
                                            ctx.input_responses));
        }
        CommunicateRequest req{args.at("to"),
                               args.at("message"),
                               args.value("tone", ""),
                               args.value("context", ""),
                               ctx.auth.token_id,
                               args.value("idempotency_key", ""),
                               args.value("subject", ""),
                               args.value("in_reply_to", "")};
        ActionEngine engine(ctx.store, ctx.clock, config.actions);
        auto result = engine.Communicate(ws, req);
        if (result.ok() && result->outcome == ActionOutcome::kPendingApproval &&
            result->level == 1 && MayAskInClient(ctx, config.actions)) {
          auto asked = AskInClient(ctx.store, ctx.clock, ws, ctx.auth.token_id, args, *result);
          if (asked.ok()) {
            return ToolReply::InputRequired(std::move(asked->input_requests),
                                            std::move(asked->request_state));
          }
          // Could not ask: the draft waits in the inbox, as for any other client.
        }
        return ActionReply(result);
      },
  };
}

}  // namespace cortex
