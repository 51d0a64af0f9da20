// decision.inspect: any decision, its reasoning and ledger linkage (seed 003).
#include "core/json_text.h"
#include "core/time.h"
#include "store/decisions.h"
#include "store/ledger.h"
#include "tools/cortex_tools.h"
#include "tools/read_tools.h"

namespace cortex {

using nlohmann::json;

json DecisionInspectBody(const Decision& d) {
  // Built member by member: an initializer list copies each value it is given.
  json reasoning = json::object();
  reasoning["confidence"] = d.confidence;
  reasoning["trace_id"] = d.trace_id;
  if (d.rule_id) reasoning["rule_id"] = *d.rule_id;
  if (d.rule_summary) reasoning["rule_summary"] = *d.rule_summary;
  if (!d.source_episode_ids.empty()) reasoning["source_episode_ids"] = d.source_episode_ids;
  json body = json::object();
  body["decision_id"] = d.id;
  body["decision_class"] = Name(d.decision_class);
  body["payload_summary"] = d.payload_summary;
  body["reasoning"] = std::move(reasoning);
  body["occurred_at"] = FormatTime(d.occurred_at);
  body["world_version"] = d.world_version;
  if (d.ledger_entry_id) body["ledger_entry_id"] = *d.ledger_entry_id;
  if (d.triage_decision_id) body["triage_decision_id"] = *d.triage_decision_id;
  return body;
}

namespace {

// A proposed action's life from its ledger: each event, when, who moved it and, for a failed
// delivery, why and after how many attempts.
json History(const std::vector<LedgerReader::HistoryEntry>& entries) {
  json history = json::array();
  for (const LedgerReader::HistoryEntry& e : entries) {
    json& h = history.emplace_back(json::object());
    h["event"] = Name(e.event);
    h["occurred_at"] = FormatTime(e.occurred_at);
    h["ledger_entry_id"] = e.id;
    // Most entries' detail names no actor: parse only those that may.
    if (e.detail.find("\"by\"") == std::string::npos && e.event != LedgerEvent::kFailed) {
      continue;
    }
    json detail = ParseJson(e.detail);
    if (!detail.is_object()) continue;
    if (detail.contains("by")) h["by"] = std::move(detail["by"]);
    if (e.event == LedgerEvent::kFailed) {
      if (detail.contains("error")) h["error"] = std::move(detail["error"]);
      if (detail.contains("attempts")) h["attempts"] = std::move(detail["attempts"]);
    }
  }
  return history;
}

// What a proposed action adds to its decision: status, why its level, its history.
Status AddProposal(ReadTx& tx, const std::string& ws, const Decision& d, json* body) {
  (*body)["status"] = Name(d.status);
  auto entries = tx.ledger().HistoryOfDecision(ws, d.id);
  if (!entries.ok()) return entries.status();
  if (entries->empty()) return Status::NotFound("no action for decision " + d.id);
  // Why this level: on the decision since issue #41, on its ledger entry before.
  if (auto reason = StoredStringMember(d.details_json, "level_reason")) {
    (*body)["level_reason"] = std::move(*reason);
  } else {
    auto text = tx.ledger().ProposalProvenance(ws, d.id);
    if (!text.ok()) return text.status();
    json provenance = ParseJson(*text);
    if (provenance.is_object() && provenance.contains("level_reason")) {
      (*body)["level_reason"] = std::move(provenance["level_reason"]);
    }
  }
  (*body)["history"] = History(*entries);
  return Status::Ok();
}

// The tool's handler.
ToolReply InspectDecision(ToolContext& ctx, const json& args) {
  const std::string id = args.at("decision_id");
  json body;
  Status st = ctx.store.Read([&](ReadTx& tx) {
    auto d = tx.decisions().Get(ctx.auth.workspace_id, id);
    if (!d.ok()) return d.status();
    body = DecisionInspectBody(*d);
    // Who decided: a proposal's ledger, a trust move's actor.
    if (d->decision_class == DecisionClass::kTrustTransition) {
      json details = d->Details();
      if (details.contains("by")) body["by"] = details["by"];
    }
    if (d->decision_class == DecisionClass::kRuleProposed ||
        d->decision_class == DecisionClass::kRuleRetired) {
      body["learned_rule"] = d->Details();
    }
    if (d->decision_class == DecisionClass::kRuleFired) body["fired_rule"] = d->Details();
    if (d->decision_class == DecisionClass::kDigest) {
      body["status"] = Name(d->status);
      body["digest"] = d->Details();
    }
    if (d->decision_class != DecisionClass::kActionProposed) return Status::Ok();
    return AddProposal(tx, ctx.auth.workspace_id, *d, &body);
  });
  if (st.code() == Code::kNotFound) {
    return ToolReply::Error("not_found", "no decision " + id + " in this workspace");
  }
  return st.ok() ? ToolReply::Ok(std::move(body)) : ToolReply::FromStatus(st);
}

}  // namespace

ToolDef DecisionInspectTool(const EngineConfig&) {
  return ToolDef{
      .name = "decision.inspect",
      .title = "Inspect a decision",
      .description =
          "Generalized decision inspection: returns the decision class, payload summary, "
          "reasoning (rule, confidence, trace id, source episodes), ledger linkage, and "
          "occurred_at of any decision Cortex made.",
      .input_schema = {{"type", "object"},
                       {"required", {"decision_id"}},
                       {"additionalProperties", false},
                       {"properties", {{"decision_id", IdSchema("dec_", "The decision id.")}}}},
      .output_schema =
          {{"type", "object"},
           {"required",
            {"decision_id", "decision_class", "payload_summary", "reasoning", "occurred_at",
             "world_version"}},
           {"properties",
            {{"decision_id", {{"type", "string"}}},
             {"decision_class", {{"type", "string"}}},
             {"payload_summary", {{"type", "string"}}},
             {"reasoning",
              {{"type", "object"},
               {"required", {"confidence", "trace_id"}},
               {"properties",
                {{"rule_id", {{"type", "string"}}},
                 {"rule_summary", {{"type", "string"}}},
                 {"confidence", {{"enum", {"strong_pattern", "pretty_sure", "just_guessing"}}}},
                 {"trace_id", {{"type", "string"}}},
                 {"source_episode_ids", {{"type", "array"}, {"items", {{"type", "string"}}}}}}}}},
             {"ledger_entry_id", {{"type", "string"}}},
             {"triage_decision_id", {{"type", "string"}}},
             {"occurred_at", {{"type", "string"}}},
             {"world_version", {{"type", "string"}}},
             {"status", {{"type", "string"}}},
             {"level_reason",
              {{"type", "string"},
               {"description",
                "A proposed action: why it went out at its level (trust, its basis, a ceiling "
                "or rule that capped it)."}}},
             {"history",
              {{"type", "array"},
               {"description",
                "A proposed action's life, from its ledger: each event, when, and who moved it "
                "(by: channel web|cli|mcp|elicitation|engine, token_id or session) and, for a "
                "failed delivery, why (error) and after how many attempts."},
               {"items", {{"type", "object"}}}}},
             {"by",
              {{"type", "object"},
               {"description", "A trust move's actor: channel, and token_id or session."}}},
             {"learned_rule",
              {{"type", "object"},
               {"description",
                "rule_proposed / rule_retired: the rule as the learner saw it then: pattern, "
                "when, then, support, contradictions and their episodes, backtest."}}},
             {"fired_rule",
              {{"type", "object"},
               {"description",
                "rule_fired: the rule that fired (rule_name, origin user|learned) and its "
                "effect: a triage rule's class and message (then, episode_id; the triage "
                "decision is triage_decision_id), an action rule's action_id."}}},
             {"digest",
              {{"type", "object"},
               {"description",
                "A daily digest: its day, recipient, the messages it listed (each with why) "
                "and the drafts it said were waiting."}}}}}},
      .annotations = {{"readOnlyHint", true}, {"idempotentHint", true}, {"openWorldHint", false}},
      .scope = kScopeRead,
      .handler = InspectDecision,
  };
}

}  // namespace cortex
