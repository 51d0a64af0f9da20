// rule.accept: a person accepts a learned rule (and the shape rule.reject shares).
#include "engines/learning/learning.h"
#include "store/workspaces.h"
#include "tools/cortex_tools.h"
#include "tools/read_tools.h"

namespace cortex {

using nlohmann::json;

ToolDef RuleDecisionTool(bool accept) {
  return ToolDef{
      .name = accept ? "rule.accept" : "rule.reject",
      .title = accept ? "Accept a learned rule" : "Reject a learned rule",
      .description =
          accept ? "A person accepts a rule Cortex learned (proposed, or rejected before): it "
                   "becomes active, triage uses it from the next message on, and the "
                   "workspace's agent_version moves. Needs the `approve` scope (an agent's "
                   "read,act token cannot accept)."
                 : "A person rejects a rule Cortex learned (proposed or active): it stops "
                   "deciding anything, and it is not proposed again unless its evidence at "
                   "least doubles. Needs the `approve` scope (an agent's read,act token "
                   "cannot reject).",
      .input_schema = {{"type", "object"},
                       {"required", {"rule_id"}},
                       {"additionalProperties", false},
                       {"properties", {{"rule_id", IdSchema("rul_", "The learned rule's id.")}}}},
      .output_schema = {{"type", "object"},
                        {"required", {"status", "rule", "agent_version"}},
                        {"properties",
                         {{"status", {{"const", "success"}}},
                          {"rule", RuleViewSchema()},
                          {"agent_version", {{"type", "string"}}}}}},
      .annotations = {{"readOnlyHint", false},
                      {"destructiveHint", false},
                      {"idempotentHint", false},
                      {"openWorldHint", false}},
      .scope = kScopeApprove,
      .handler = [accept](ToolContext& ctx, const json& args) -> ToolReply {
        const std::string& ws = ctx.auth.workspace_id;
        std::string id = args.at("rule_id");
        auto rule = accept ? AcceptRule(ctx.store, ctx.clock, ws, id)
                           : RejectRule(ctx.store, ctx.clock, ws, id);
        if (!rule.ok()) return ToolReply::FromStatus(rule.status());
        std::string av;
        Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
          auto w = tx.workspaces().Get(ws);
          if (!w.ok()) return w.status();
          av = w->agent_version;
          return Status::Ok();
        });
        if (!st.ok()) return ToolReply::FromStatus(st);
        return ToolReply::Ok(
            {{"status", "success"}, {"rule", RuleView(*rule)}, {"agent_version", av}});
      },
  };
}

ToolDef RuleAcceptTool(const EngineConfig&) { return RuleDecisionTool(true); }

}  // namespace cortex
