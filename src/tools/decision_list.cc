// decision.list: decisions newest first, filtered by class, status, counterparty and time,
// with cursor paging. The approval inbox is `decision_class: action_proposed, status: pending`.
#include "core/ids.h"
#include "core/limits.h"
#include "core/time.h"
#include "engines/world/identifiers.h"
#include "store/decisions.h"
#include "tools/cortex_tools.h"
#include "tools/read_tools.h"

namespace cortex {

using nlohmann::json;

namespace {

constexpr int kDefaultPageSize = 20;

// One row of the answer.
json DecisionJson(const Decision& d) {
  json item = {{"decision_id", d.id},
               {"decision_class", Name(d.decision_class)},
               {"status", Name(d.status)},
               {"payload_summary", d.payload_summary},
               {"confidence", d.confidence},
               {"occurred_at", FormatTime(d.occurred_at)},
               {"agent_version", d.agent_version},
               {"world_version", d.world_version}};
  if (d.rule_summary) item["rule_summary"] = *d.rule_summary;
  if (d.entity_id) item["counterparty_id"] = *d.entity_id;
  if (d.notification_id) item["notification_id"] = *d.notification_id;
  if (d.triage_class) item["triage_class"] = Name(*d.triage_class);
  return item;
}

// The tool's handler: the filter from `args`, then one page of decisions.
ToolReply ListDecisions(ToolContext& ctx, const json& args) {
  DecisionFilter filter;
  // (Both checked against their enums by the input schema.)
  if (args.contains("decision_class")) {
    filter.decision_class = Parse<DecisionClass>(args["decision_class"].get<std::string>());
  }
  if (args.contains("status")) {
    filter.status = Parse<DecisionStatus>(args["status"].get<std::string>());
  }
  if (args.contains("triage_class")) {
    if (filter.decision_class && *filter.decision_class != DecisionClass::kTriage) {
      return ToolReply::Error("invalid_arguments",
                              "field 'triage_class': only triage decisions have one "
                              "(decision_class must be triage or left out)");
    }
    filter.triage_class = Parse<TriageClass>(args["triage_class"].get<std::string>());
  }
  std::optional<TimePoint> since, until;
  for (const char* field : {"since", "until"}) {
    if (!args.contains(field)) continue;
    auto t = ParseTime(args[field].get<std::string>());
    if (!t.ok()) {
      return ToolReply::Error("invalid_arguments",
                              std::string("field '") + field + "': " + t.status().message());
    }
    (std::string(field) == "since" ? since : until) = *t;
  }
  if (since && until && *since >= *until) {
    return ToolReply::Error("invalid_arguments",
                            "field 'since': must be before 'until' (nothing lies between)");
  }
  // Decision ids are minted at decision time, so a time bound is an id bound.
  if (since) filter.min_id = IdFloor("dec_", *since);
  if (until) filter.max_id = IdFloor("dec_", *until);
  auto page = ReadPageCursor(args, "dec_", "decision.list");
  if (!page.ok()) return ToolReply::FromStatus(page.status());
  if (page->after && (!filter.max_id || *page->after < *filter.max_id)) {
    filter.max_id = page->after;
  }
  int limit = args.value("limit", kDefaultPageSize);
  json body;
  Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
    if (args.contains("counterparty")) {
      auto who = ResolveCounterparty(tx, ctx.auth.workspace_id, args["counterparty"]);
      if (!who.ok()) return who.status();
      filter.entity_id = who->id;
    }
    // One extra row says whether there is a next page.
    auto rows = tx.decisions().List(ctx.auth.workspace_id, filter, limit + 1);
    if (!rows.ok()) return rows.status();
    json items = json::array();
    for (int i = 0; i < static_cast<int>(rows->size()) && i < limit; ++i) {
      items.push_back(DecisionJson((*rows)[i]));
    }
    body = {{"decisions", items}};
    if (static_cast<int>(rows->size()) > limit) {
      body["next_cursor"] = page->Next((*rows)[limit - 1].id);
    }
    return Status::Ok();
  });
  if (st.code() == Code::kNotFound) {
    return ToolReply::Error("not_found", "field 'counterparty': " + st.message());
  }
  if (st.code() == Code::kInvalidArgument) {
    return ToolReply::Error("invalid_arguments", "field 'counterparty': " + st.message());
  }
  return st.ok() ? ToolReply::Ok(std::move(body)) : ToolReply::FromStatus(st);
}

}  // namespace

ToolDef DecisionListTool(const EngineConfig&) {
  json classes = json::array(), statuses = json::array(), triage_classes = json::array();
  for (DecisionClass c : AllOf<DecisionClass>()) classes.push_back(Name(c));
  for (DecisionStatus s : AllOf<DecisionStatus>()) statuses.push_back(Name(s));
  for (TriageClass t : AllOf<TriageClass>()) triage_classes.push_back(Name(t));
  json item = {{"type", "object"},
               {"required",
                {"decision_id", "decision_class", "status", "payload_summary", "confidence",
                 "occurred_at", "agent_version", "world_version"}},
               {"properties",
                {{"decision_id", {{"type", "string"}}},
                 {"decision_class", {{"type", "string"}}},
                 {"status", {{"type", "string"}}},
                 {"payload_summary", {{"type", "string"}}},
                 {"rule_summary", {{"type", "string"}}},
                 {"confidence", {{"type", "string"}}},
                 {"counterparty_id", {{"type", "string"}}},
                 {"notification_id", {{"type", "string"}}},
                 {"triage_class", {{"type", "string"}}},
                 {"occurred_at", {{"type", "string"}}},
                 {"agent_version", {{"type", "string"}}},
                 {"world_version", {{"type", "string"}}}}}};
  return ToolDef{
      .name = "decision.list",
      .title = "List decisions",
      .description =
          "Lists the workspace's decisions newest first. Filter by decision_class (triage, "
          "action_proposed, rule_fired, trust_transition, digest: the daily digests sent, "
          "rule_proposed / rule_retired: rules the learner proposed or retired), "
          "status (action_proposed + pending: the approval inbox; digest + delivered: the "
          "digests that went out), triage_class (triage decisions only: interrupt_now, "
          "surface_at_transition = held for the next focus-block break, daily_digest, "
          "handle_silently), counterparty (entity id, email, @handle or a name Cortex knows) and "
          "time "
          "(since/until, RFC 3339). Triage rows carry their triage_class. Pages with "
          "next_cursor.",
      .input_schema = {{"type", "object"},
                       {"additionalProperties", false},
                       {"properties",
                        {{"decision_class", {{"enum", classes}}},
                         {"status", {{"enum", statuses}}},
                         {"triage_class",
                          {{"enum", triage_classes},
                           {"description",
                            "Only triage decisions of this class (surface_at_transition: held "
                            "for the next focus-block break)."}}},
                         {"counterparty",
                          {{"type", "string"},
                           {"minLength", 1},
                           {"maxLength", 320},
                           {"description",
                            "Entity id, email, @handle, +phone, or a name Cortex knows (a name of "
                            "several people is an error listing them)."}}},
                         {"since", TimeSchema("Only decisions made at or after this time.")},
                         {"until", TimeSchema("Only decisions made before this time.")},
                         {"cursor",
                          {{"type", "string"},
                           {"maxLength", 64},
                           {"description", "next_cursor from the previous page."}}},
                         {"limit",
                          {{"type", "integer"},
                           {"minimum", 1},
                           {"maximum", limits::kMaxDecisionPage},
                           {"description", "Page size (default 20)."}}}}}},
      .output_schema = {{"type", "object"},
                        {"required", {"decisions"}},
                        {"properties",
                         {{"decisions", {{"type", "array"}, {"items", item}}},
                          {"next_cursor", {{"type", "string"}}}}}},
      .annotations = {{"readOnlyHint", true}, {"idempotentHint", true}, {"openWorldHint", false}},
      .scope = kScopeRead,
      .handler = ListDecisions,
  };
}

}  // namespace cortex
