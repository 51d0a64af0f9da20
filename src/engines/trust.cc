#include "engines/trust.h"

#include <algorithm>

#include "core/ids.h"
#include "core/json_text.h"
#include "engines/identifiers.h"
#include "engines/rules.h"
#include "store/decisions.h"
#include "store/trust.h"
#include "store/workspaces.h"

namespace cortex {

const char* LevelName(int level) {
  switch (level) {
    case 0:
      return "off";
    case 1:
      return "draft";
    case 2:
      return "supervised";
    default:
      return "autonomous";
  }
}

Result<EffectiveTrust> LookupTrust(ReadTx& tx, const std::string& ws, const std::string& cls,
                                   const Entity& who, const TrustConfig& config) {
  auto settings = tx.trust().List(ws);
  if (!settings.ok()) return settings.status();
  return ResolveTrust(*settings, cls, who, config);
}

EffectiveTrust ResolveTrust(const std::vector<TrustSetting>& settings, const std::string& cls,
                            const Entity& who, const TrustConfig& config) {
  std::optional<int> entity_level, default_level, tag_level, ceiling;
  std::string tag_source;
  for (const TrustSetting& t : settings) {
    if (t.action_class != cls) continue;
    if (t.scope == "entity:" + who.id) {
      entity_level = t.level;
    } else if (t.scope == "default") {
      default_level = t.level;
    } else if (t.scope.rfind("tag:", 0) == 0 &&
               std::find(who.tags.begin(), who.tags.end(), t.scope.substr(4)) != who.tags.end()) {
      if (t.level && (!tag_level || *t.level < *tag_level)) {
        tag_level = t.level;
        tag_source = t.scope;
      }
      if (t.ceiling && (!ceiling || *t.ceiling < *ceiling)) ceiling = t.ceiling;
    }
  }
  EffectiveTrust out;
  if (entity_level) {
    out.level = *entity_level;
    out.source = "entity";
  } else if (tag_level) {
    out.level = *tag_level;
    out.source = tag_source;
  } else if (default_level) {
    out.level = *default_level;
    out.source = "default";
  } else {
    out.level = config.default_level;
    out.source = "built-in default";
  }
  out.ceiling = ceiling;
  if (ceiling) out.level = std::min(out.level, *ceiling);
  return out;
}

namespace {

Result<Decision> Transition(WriteTx& tx, const Clock& clock, const std::string& ws,
                            const std::string& cls, const Entity& who, int from, int to,
                            const std::string& why, const std::string& rule_summary,
                            const std::vector<std::string>& evidence) {
  TrustSetting setting{cls, "entity:" + who.id, to, std::nullopt, clock.Now()};
  CORTEX_RETURN_IF_ERROR(tx.trust().Set(ws, setting));
  auto workspace = tx.workspaces().Get(ws);
  if (!workspace.ok()) return workspace.status();
  std::string av = NewIdAfter("av_", clock, workspace->agent_version);
  CORTEX_RETURN_IF_ERROR(tx.workspaces().SetAgentVersion(ws, av));
  Rule basis;  // confidence from the evidence behind the move
  basis.support = static_cast<int64_t>(evidence.size());
  Decision d;
  d.id = NewId("dec_", clock);
  d.workspace_id = ws;
  d.decision_class = DecisionClass::kTrustTransition;
  d.status = DecisionStatus::kRecorded;
  d.occurred_at = clock.Now();
  d.entity_id = who.id;
  d.payload_summary = std::string(to > from ? "Raise" : "Lower") + " " + cls + " trust for " +
                      who.name + " from " + std::to_string(from) + " (" + LevelName(from) +
                      ") to " + std::to_string(to) + " (" + LevelName(to) + ") " + why + ".";
  d.rule_summary = rule_summary;
  d.confidence = ConfidenceLabel(basis, ConfidenceThresholds{});
  d.trace_id = NewId("trc_", clock);
  d.agent_version = av;
  d.world_version = workspace->world_version;
  d.details_json = DumpJson({{"action_class", cls},
                             {"from_level", from},
                             {"to_level", to},
                             {"evidence_decision_ids", evidence}});
  CORTEX_RETURN_IF_ERROR(tx.decisions().Insert(d));
  return d;
}

}  // namespace

Result<std::optional<Decision>> RecordApproval(WriteTx& tx, const Clock& clock,
                                               const std::string& ws, const std::string& cls,
                                               const Entity& who, const std::string& decision_id,
                                               bool edited, const TrustConfig& config) {
  auto streak = tx.trust().GetStreak(ws, cls, who.id);
  if (!streak.ok()) return streak.status();
  TrustStreak s = *streak;
  if (edited) {
    CORTEX_RETURN_IF_ERROR(tx.trust().SetStreak(ws, cls, who.id, TrustStreak{}));
    return std::optional<Decision>();
  }
  s.streak += 1;
  s.evidence.push_back(decision_id);
  if (s.streak < config.approvals_to_raise) {
    CORTEX_RETURN_IF_ERROR(tx.trust().SetStreak(ws, cls, who.id, s));
    return std::optional<Decision>();
  }
  CORTEX_RETURN_IF_ERROR(tx.trust().SetStreak(ws, cls, who.id, TrustStreak{}));
  auto current = LookupTrust(tx, ws, cls, who, config);
  if (!current.ok()) return current.status();
  int to = std::min(current->level + 1, current->ceiling.value_or(3));
  if (to <= current->level) return std::optional<Decision>();  // at the ceiling already
  auto d = Transition(tx, clock, ws, cls, who, current->level, to,
                      "after " + std::to_string(s.streak) + " approvals without edits",
                      "Earned trust: " + std::to_string(config.approvals_to_raise) +
                          " approvals in a row without edits raise the level by one, up to "
                          "the counterparty's ceiling.",
                      s.evidence);
  if (!d.ok()) return d.status();
  return std::optional<Decision>(std::move(*d));
}

Result<std::optional<Decision>> RecordRejection(WriteTx& tx, const Clock& clock,
                                                const std::string& ws, const std::string& cls,
                                                const Entity& who, const std::string& decision_id,
                                                const TrustConfig& config) {
  CORTEX_RETURN_IF_ERROR(tx.trust().SetStreak(ws, cls, who.id, TrustStreak{}));
  auto current = LookupTrust(tx, ws, cls, who, config);
  if (!current.ok()) return current.status();
  if (current->level == 0) return std::optional<Decision>();
  auto d = Transition(tx, clock, ws, cls, who, current->level, current->level - 1,
                      "after a rejection", "A rejection lowers the level by one.", {decision_id});
  if (!d.ok()) return d.status();
  return std::optional<Decision>(std::move(*d));
}

Result<std::string> ResolveTrustScope(ReadTx& tx, const std::string& ws, const std::string& raw) {
  if (raw == "default") return raw;
  if (raw.rfind("tag:", 0) == 0) {
    std::string tag = raw.substr(4);
    bool ok = !tag.empty() && tag.size() <= 64;
    for (char c : tag)
      ok &= (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok) return Status::InvalidArgument("'" + raw + "' is not tag:<lowercase tag>");
    return raw;
  }
  auto who = ResolveEntity(tx, ws, raw);
  if (!who.ok()) {
    return Status::InvalidArgument("'" + raw +
                                   "' is neither default, tag:<tag>, nor a known "
                                   "counterparty (" +
                                   who.status().message() + ")");
  }
  return "entity:" + who->id;
}

}  // namespace cortex
