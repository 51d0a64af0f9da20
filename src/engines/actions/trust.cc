#include "engines/actions/trust.h"

#include <algorithm>

#include "core/ids.h"
#include "core/json_text.h"
#include "engines/actions/action_policy.h"
#include "engines/triage/rules.h"
#include "engines/world/identifiers.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/rules.h"
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
  if (ceiling && *ceiling < out.level) {
    out.level = *ceiling;
    out.capped = true;
  }
  return out;
}

namespace {

// Writes (class x scope)'s new level or ceiling, moves the agent version, and records the
// move as a trust_transition decision.
struct Move {
  std::string cls;
  std::string scope;            // default | tag:<tag> | entity:<id>
  const Entity* who = nullptr;  // for an entity scope
  std::optional<int> from, to;  // levels (to: none if only the ceiling changes)
  std::optional<int> ceiling;   // tags only
  std::string why;              // "after 3 approvals without edits", "set by a person"
  std::string rule_summary;
  std::vector<std::string> evidence;  // decision ids
  Actor actor;
};

Result<Decision> Transition(WriteTx& tx, const Clock& clock, const std::string& ws, const Move& m) {
  TrustSetting setting{m.cls, m.scope, m.to, m.ceiling, clock.Now()};
  CORTEX_RETURN_IF_ERROR(tx.trust().Set(ws, setting));
  auto workspace = tx.workspaces().Get(ws);
  if (!workspace.ok()) return workspace.status();
  std::string av = NewIdAfter("av_", clock, workspace->agent_version);
  CORTEX_RETURN_IF_ERROR(tx.workspaces().SetAgentVersion(ws, av));
  Rule basis;  // confidence from the evidence behind the move
  basis.support = static_cast<int64_t>(m.evidence.size());
  std::string whom = m.who != nullptr       ? m.who->name
                     : m.scope == "default" ? "every counterparty"
                                            : "counterparties tagged " + m.scope.substr(4);
  auto level = [](std::optional<int> l) {
    return l ? std::to_string(*l) + " (" + LevelName(*l) + ")" : std::string("unset");
  };
  std::string what;
  if (m.to && m.from != m.to) {
    bool up = m.from && *m.to > *m.from;
    what = std::string(up       ? "Raise"
                       : m.from ? "Lower"
                                : "Set") +
           " " + m.cls + " trust for " + whom + (m.from ? " from " + level(m.from) : "") + " to " +
           level(m.to);
  } else if (m.to) {
    what = "Keep " + m.cls + " trust for " + whom + " at " + level(m.to);
  } else {
    what = "Set the " + m.cls + " trust of " + whom;
  }
  if (m.ceiling) what += std::string(m.to ? "," : "") + " ceiling " + level(m.ceiling);
  Decision d;
  d.id = NewId("dec_", clock);
  d.workspace_id = ws;
  d.decision_class = DecisionClass::kTrustTransition;
  d.status = DecisionStatus::kRecorded;
  d.occurred_at = clock.Now();
  if (m.who != nullptr) d.entity_id = m.who->id;
  d.payload_summary = what + " " + m.why + ".";
  d.rule_summary = m.rule_summary;
  d.confidence = ConfidenceLabel(basis, ConfidenceThresholds{});
  d.trace_id = NewId("trc_", clock);
  d.agent_version = av;
  d.world_version = workspace->world_version;
  nlohmann::json details = {{"action_class", m.cls},
                            {"scope", m.scope},
                            {"evidence_decision_ids", m.evidence},
                            {"by", m.actor.Json()}};
  details["from_level"] = m.from ? nlohmann::json(*m.from) : nlohmann::json(nullptr);
  details["to_level"] = m.to ? nlohmann::json(*m.to) : nlohmann::json(nullptr);
  if (m.ceiling) details["ceiling"] = *m.ceiling;
  d.details_json = DumpJson(details);
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
  // Never past the tags' ceiling, nor past a rule that holds this counterparty lower.
  auto rules = tx.rules().List(ws, /*active_only=*/true);
  if (!rules.ok()) return rules.status();
  int cap = std::min(current->ceiling.value_or(3), StandingRuleCap(cls, *rules, who).value_or(3));
  int to = std::min(current->level + 1, cap);
  if (to <= current->level) return std::optional<Decision>();  // at the cap already
  Move m;
  m.cls = cls;
  m.scope = "entity:" + who.id;
  m.who = &who;
  m.from = current->level;
  m.to = to;
  m.why = "after " + std::to_string(s.streak) + " approvals without edits";
  m.rule_summary = "Earned trust: " + std::to_string(config.approvals_to_raise) +
                   " approvals in a row without edits raise the level by one, up to the "
                   "counterparty's ceiling and any rule that holds it lower.";
  m.evidence = s.evidence;
  m.actor = Actor::Engine();
  auto d = Transition(tx, clock, ws, m);
  if (!d.ok()) return d.status();
  return std::optional<Decision>(std::move(*d));
}

Result<std::optional<Decision>> RecordRejection(WriteTx& tx, const Clock& clock,
                                                const std::string& ws, const std::string& cls,
                                                const Entity& who, const std::string& decision_id,
                                                const TrustConfig& config, const Actor& actor) {
  CORTEX_RETURN_IF_ERROR(tx.trust().SetStreak(ws, cls, who.id, TrustStreak{}));
  auto current = LookupTrust(tx, ws, cls, who, config);
  if (!current.ok()) return current.status();
  // A rejection never turns a counterparty off: level 0 is a person's setting alone.
  if (current->level <= 1) return std::optional<Decision>();
  Move m;
  m.cls = cls;
  m.scope = "entity:" + who.id;
  m.who = &who;
  m.from = current->level;
  m.to = current->level - 1;
  m.why = "after a rejection";
  m.rule_summary = "A rejection lowers the level by one, never below 1 (draft).";
  m.evidence = {decision_id};
  m.actor = actor;
  auto d = Transition(tx, clock, ws, m);
  if (!d.ok()) return d.status();
  return std::optional<Decision>(std::move(*d));
}

Result<Decision> SetTrustByPerson(WriteTx& tx, const Clock& clock, const std::string& ws,
                                  const std::string& cls, const std::string& scope,
                                  std::optional<int> level, std::optional<int> ceiling,
                                  const TrustConfig& config, const Actor& actor) {
  if (cls != "communicate") {
    return Status::InvalidArgument("unknown action class '" + cls + "' (communicate)");
  }
  if (!level && !ceiling) return Status::InvalidArgument("give a level, a ceiling or both");
  for (std::optional<int> v : {level, ceiling}) {
    if (v && (*v < 0 || *v > 3)) return Status::InvalidArgument("trust levels are 0-3");
  }
  if (ceiling && scope.rfind("tag:", 0) != 0) {
    return Status::InvalidArgument("a ceiling applies to tags only (tag:<tag>)");
  }
  Move m;
  m.cls = cls;
  m.scope = scope;
  m.to = level;
  m.ceiling = ceiling;
  // Keep what is not being changed.
  auto current = tx.trust().List(ws);
  if (!current.ok()) return current.status();
  for (const TrustSetting& c : *current) {
    if (c.action_class == cls && c.scope == scope) {
      m.from = c.level;
      if (!level) m.to = c.level;
      if (!ceiling) m.ceiling = c.ceiling;
    }
  }
  std::optional<Entity> who;
  if (scope.rfind("entity:", 0) == 0) {
    auto e = tx.entities().Get(ws, scope.substr(7));
    if (!e.ok()) return e.status();
    who = std::move(*e);
    m.who = &*who;
    if (!m.from) {  // what applied to them before their own setting
      auto before = ResolveTrust(*current, cls, *who, config);
      m.from = before.level;
    }
  }
  m.why = "set by a person (" + actor.channel + ")";
  m.rule_summary = "A person sets trust; Cortex never raises it past their ceilings.";
  m.actor = actor;
  return Transition(tx, clock, ws, m);
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
  auto who = ResolveCounterparty(tx, ws, raw);
  if (!who.ok()) {
    return Status::InvalidArgument("'" + raw +
                                   "' is neither default, tag:<tag>, nor a known "
                                   "counterparty (" +
                                   who.status().message() + ")");
  }
  return "entity:" + who->id;
}

}  // namespace cortex
