// meta.why_this_notification: the triage class of a notification and why (seed 001).
// Read back from the triage decision; no model is called.
#include "store/decisions.h"
#include "store/notifications.h"
#include "tools/cortex_tools.h"
#include "tools/read_tools.h"

namespace cortex {

using nlohmann::json;

ToolDef WhyThisNotificationTool(const EngineConfig&) {
  json confidence = {{"enum", {"strong_pattern", "pretty_sure", "just_guessing"}}};
  return ToolDef{
      .name = "meta.why_this_notification",
      .title = "Why this notification",
      .description =
          "Returns the triage class (interrupt_now / surface_at_transition / daily_digest / "
          "handle_silently), contributing signals, and rule_summary for any notification "
          "Cortex surfaced, with the confidence and the agent and world versions it was "
          "decided under.",
      .input_schema = {{"type", "object"},
                       {"required", {"notification_id"}},
                       {"additionalProperties", false},
                       {"properties",
                        {{"notification_id", IdSchema("ntf_", "The notification id.")}}}},
      .output_schema =
          {{"type", "object"},
           {"required",
            {"notification_id", "triage_class", "rule_summary", "confidence",
             "contributing_signals", "agent_version", "world_version"}},
           {"properties",
            {{"notification_id", {{"type", "string"}}},
             {"triage_class",
              {{"enum",
                {"interrupt_now", "surface_at_transition", "daily_digest", "handle_silently"}}}},
             {"rule_summary", {{"type", "string"}}},
             {"confidence", confidence},
             {"contributing_signals",
              {{"type", "array"},
               {"items",
                {{"type", "object"},
                 {"required", {"kind", "summary"}},
                 {"properties",
                  {{"kind", {{"type", "string"}}}, {"summary", {{"type", "string"}}}}}}}}},
             {"agent_version", {{"type", "string"}}},
             {"world_version", {{"type", "string"}}}}}},
      .annotations = {{"readOnlyHint", true}, {"idempotentHint", true}, {"openWorldHint", false}},
      .scope = kScopeRead,
      .handler = [](ToolContext& ctx, const json& args) -> ToolReply {
        const std::string id = args.at("notification_id");
        json body;
        Status st = ctx.store.Read([&](ReadTx& tx) {
          auto n = tx.notifications().Get(ctx.auth.workspace_id, id);
          if (!n.ok()) return n.status();
          auto d = tx.decisions().Get(ctx.auth.workspace_id, n->decision_id);
          if (!d.ok()) return d.status();
          body = {{"notification_id", n->id},
                  {"triage_class", Name(n->triage_class)},
                  {"rule_summary", d->rule_summary.value_or("")},
                  {"confidence", d->confidence},
                  {"contributing_signals", d->Details().value("signals", json::array())},
                  {"agent_version", d->agent_version},
                  {"world_version", d->world_version}};
          return Status::Ok();
        });
        if (st.code() == Code::kNotFound) {
          return ToolReply::Error("not_found", "no notification " + id + " in this workspace");
        }
        return st.ok() ? ToolReply::Ok(std::move(body)) : ToolReply::FromStatus(st);
      },
  };
}

}  // namespace cortex
