// meta.why_this_action: provenance of an action, from the action ledger alone (seed 002).
#include "store/ledger.h"
#include "tools/cortex_tools.h"
#include "tools/read_tools.h"

namespace cortex {

using nlohmann::json;

ToolDef WhyThisActionTool(const EngineConfig&) {
  return ToolDef{
      .name = "meta.why_this_action",
      .title = "Why this action",
      .description =
          "For any action Cortex proposed or executed, returns the rule summary, contributing "
          "episodes, confidence label, and agent_version + world_version stamps. No model in "
          "the read path: provenance is materialised in the action ledger at decision time.",
      .input_schema = {{"type", "object"},
                       {"required", {"action_id"}},
                       {"additionalProperties", false},
                       {"properties",
                        {{"action_id", IdSchema("act_", "The action id from action_ledger.")}}}},
      .output_schema = {{"type", "object"},
                        {"required",
                         {"action_id", "rule_summary", "confidence", "contributing_episodes",
                          "agent_version", "world_version"}},
                        {"properties",
                         {{"action_id", {{"type", "string"}}},
                          {"rule_summary", {{"type", "string"}}},
                          {"confidence",
                           {{"enum", {"strong_pattern", "pretty_sure", "just_guessing"}}}},
                          {"contributing_episodes",
                           {{"type", "array"},
                            {"items",
                             {{"type", "object"},
                              {"required", {"id", "summary", "occurred_at"}},
                              {"properties",
                               {{"id", {{"type", "string"}}},
                                {"summary", {{"type", "string"}}},
                                {"occurred_at", {{"type", "string"}}}}}}}}},
                          {"agent_version", {{"type", "string"}}},
                          {"world_version", {{"type", "string"}}}}}},
      .annotations = {{"readOnlyHint", true}, {"idempotentHint", true}, {"openWorldHint", false}},
      .scope = kScopeRead,
      .handler = [](ToolContext& ctx, const json& args) -> ToolReply {
        const std::string id = args.at("action_id");
        json body;
        Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
          auto entries = tx.ledger().ListForAction(ctx.auth.workspace_id, id);
          if (!entries.ok()) return entries.status();
          if (entries->empty()) return Status::NotFound("no action " + id);
          const json& p = entries->front().provenance;
          // Member by member: an initializer list would copy each value once more.
          body = json::object();
          body["action_id"] = id;
          body["rule_summary"] = p.value("rule_summary", "");
          body["confidence"] = p.value("confidence", "just_guessing");
          body["contributing_episodes"] = p.value("contributing_episodes", json::array());
          body["agent_version"] = p.value("agent_version", "");
          body["world_version"] = p.value("world_version", "");
          return Status::Ok();
        });
        if (st.code() == Code::kNotFound) {
          return ToolReply::Error("not_found", "no action " + id + " in this workspace");
        }
        return st.ok() ? ToolReply::Ok(std::move(body)) : ToolReply::FromStatus(st);
      },
  };
}

}  // namespace cortex
