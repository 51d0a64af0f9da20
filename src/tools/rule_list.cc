// rule.list: the workspace's rules, a person's and learned ones, newest first, filtered by
// status and origin, with cursor paging. Learned proposals show their evidence and backtest.
#include <algorithm>

#include "engines/learning/learning.h"
#include "engines/triage/rules.h"
#include "store/rules.h"
#include "tools/cortex_tools.h"
#include "tools/read_tools.h"

namespace cortex {

using nlohmann::json;

namespace {

constexpr int kDefaultPageSize = 20;
constexpr int kMaxPageSize = 100;

}  // namespace

json RuleView(const Rule& r) {
  json then = json::object();
  if (r.then.triage_class) then["triage"] = Name(*r.then.triage_class);
  if (r.then.max_level) then["max_level"] = *r.then.max_level;
  if (r.then.block) then["block"] = true;
  if (r.then.urgent) then["urgent"] = true;
  json v = {{"rule_id", r.id},          {"name", r.name},
            {"summary", r.summary},     {"origin", Name(r.origin)},
            {"status", Name(r.status)}, {"kind", Name(r.kind)},
            {"when", RuleWhenJson(r)},  {"then", then},
            {"priority", r.priority},   {"confidence", ConfidenceLabel(r, ConfidenceThresholds{})},
            {"support", r.support},     {"contradictions", r.contradictions},
            {"evidence", r.evidence},   {"contradiction_evidence", r.contradiction_evidence},
            {"hits", r.hits},           {"created_at", FormatTime(r.created_at)}};
  if (r.backtest.is_object()) v["backtest"] = r.backtest;
  if (!r.activated_version.empty()) v["agent_version"] = r.activated_version;
  return v;
}

json RuleViewSchema() {
  auto str = json{{"type", "string"}};
  auto strings = json{{"type", "array"}, {"items", str}};
  return {{"type", "object"},
          {"required",
           {"rule_id", "name", "summary", "origin", "status", "when", "then", "confidence",
            "support", "contradictions", "evidence"}},
          {"properties",
           {{"rule_id", str},
            {"name", str},
            {"summary", str},
            {"origin", {{"enum", {"user", "learned"}}}},
            {"status", {{"enum", {"proposed", "active", "retired", "rejected"}}}},
            {"kind", str},
            {"when", {{"type", "object"}}},
            {"then", {{"type", "object"}}},
            {"priority", {{"type", "integer"}}},
            {"confidence", str},
            {"support", {{"type", "integer"}}},
            {"contradictions", {{"type", "integer"}}},
            {"evidence", strings},
            {"contradiction_evidence", strings},
            {"hits", {{"type", "integer"}}},
            {"backtest", {{"type", "object"}}},
            {"agent_version", str},
            {"created_at", str}}}};
}

ToolDef RuleListTool(const EngineConfig&) {
  return ToolDef{
      .name = "rule.list",
      .title = "List rules",
      .description =
          "Lists the workspace's rules, newest first: a person's (origin user) and those "
          "Cortex learned from the person's behaviour (origin learned). A learned rule starts "
          "proposed, with its evidence (episode ids), contradictions, confidence and a "
          "backtest (what it would have classed differently over the last 30 days); a person "
          "accepts it with rule.accept or rejects it with rule.reject. Filter by status and "
          "origin; pages with next_cursor.",
      .input_schema = {{"type", "object"},
                       {"additionalProperties", false},
                       {"properties",
                        {{"status", {{"enum", {"proposed", "active", "retired", "rejected"}}}},
                         {"origin", {{"enum", {"user", "learned"}}}},
                         {"cursor",
                          {{"type", "string"},
                           {"maxLength", 64},
                           {"description", "next_cursor from the previous page."}}},
                         {"limit",
                          {{"type", "integer"},
                           {"minimum", 1},
                           {"maximum", kMaxPageSize},
                           {"description", "Page size (default 20)."}}}}}},
      .output_schema = {{"type", "object"},
                        {"required", {"rules"}},
                        {"properties",
                         {{"rules", {{"type", "array"}, {"items", RuleViewSchema()}}},
                          {"next_cursor", {{"type", "string"}}}}}},
      .annotations = {{"readOnlyHint", true}, {"idempotentHint", true}, {"openWorldHint", false}},
      .scope = kScopeRead,
      .handler = [](ToolContext& ctx, const json& args) -> ToolReply {
        std::optional<RuleStatus> status;
        std::optional<RuleOrigin> origin;
        if (args.contains("status")) status = Parse<RuleStatus>(args["status"].get<std::string>());
        if (args.contains("origin")) origin = Parse<RuleOrigin>(args["origin"].get<std::string>());
        auto page = ReadPageCursor(args, "rul_", "rule.list");
        if (!page.ok()) return ToolReply::FromStatus(page.status());
        const std::optional<std::string>& before = page->after;
        int limit = args.value("limit", kDefaultPageSize);
        std::vector<Rule> rules;
        Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
          auto list = tx.rules().List(ctx.auth.workspace_id, /*active_only=*/false);
          if (!list.ok()) return list.status();
          rules = std::move(*list);
          return Status::Ok();
        });
        if (!st.ok()) return ToolReply::FromStatus(st);
        std::erase_if(rules, [&](const Rule& r) {
          return (status && r.status != *status) || (origin && r.origin != *origin) ||
                 (before && r.id >= *before);
        });
        std::sort(rules.begin(), rules.end(),
                  [](const Rule& a, const Rule& b) { return a.id > b.id; });
        json body = {{"rules", json::array()}};
        for (size_t i = 0; i < rules.size() && i < static_cast<size_t>(limit); ++i) {
          body["rules"].push_back(RuleView(rules[i]));
        }
        if (rules.size() > static_cast<size_t>(limit)) {
          body["next_cursor"] = page->Next(rules[limit - 1].id);
        }
        return ToolReply::Ok(std::move(body));
      },
  };
}

}  // namespace cortex
