#include "engines/actions.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "core/ids.h"
#include "core/json_text.h"
#include "core/time.h"
#include "engines/drafter.h"
#include "engines/identifiers.h"
#include "engines/ledger.h"
#include "engines/rules.h"
#include "engines/signals.h"

namespace cortex {

using nlohmann::json;

namespace {

constexpr char kClass[] = "communicate";
constexpr auto kTriageLinkWindow = std::chrono::hours(24 * 7);
constexpr size_t kMaxContributingEpisodes = 20;
constexpr int kDueBatch = 100;

std::string Excerpt(const std::string& s, size_t n = 80) {
  std::string one;
  for (char c : s) one += (c == '\n' || c == '\r') ? ' ' : c;
  if (one.size() <= n) return one;
  return Utf8Prefix(one, n - 3) + "...";
}

// The address a message to `who` goes to: its first email, else its first identifier.
std::string AddressOf(const Entity& who) {
  for (const std::string& id : who.identifiers) {
    if (id.find('@') != std::string::npos && id[0] != '@') return id;
  }
  return who.identifiers.empty() ? who.id : who.identifiers.front();
}

ActionResult Result_(std::string status, const Action& a, std::string message) {
  ActionResult r;
  r.status = std::move(status);
  r.decision_id = a.decision_id;
  r.action_id = a.id;
  r.message = std::move(message);
  return r;
}

// Ledger and decision bookkeeping for one state change of `action`.
Status Record(WriteTx& tx, const Clock& clock, const Action& action, const std::string& event,
              const json& provenance, const json& detail) {
  auto led = AppendLedgerEntry(tx, clock, action.workspace_id, action.id, action.decision_id, event,
                               provenance, detail);
  if (!led.ok()) return led.status();
  return tx.SetDecisionStatus(action.workspace_id, action.decision_id, event);
}

// The provenance copied into every ledger entry of an action: what its proposal decided.
Result<json> ProvenanceOf(WriteTx& tx, const Action& action) {
  auto entries = tx.ListActionLedger(action.workspace_id, action.id);
  if (!entries.ok()) return entries.status();
  if (entries->empty()) return Status::Internal("action " + action.id + " has no ledger entry");
  return entries->front().provenance;
}

}  // namespace

Status EnqueueDelivery(WriteTx& tx, const Action& action, TimePoint now) {
  OutboxItem item;
  item.action_id = action.id;
  item.workspace_id = action.workspace_id;
  item.recipient = action.recipient;
  item.body = action.draft;
  item.status = "pending";
  item.attempts = 0;
  item.next_attempt_at = now;
  item.created_at = now;
  return tx.InsertOutbox(item);
}

ActionEngine::ActionEngine(Store& store, const Clock& clock, const ActionConfig& config)
    : store_(store), clock_(clock), config_(config) {}

Result<ActionResult> ActionEngine::Communicate(const std::string& ws,
                                               const CommunicateRequest& req) {
  // The model drafter, if configured, runs before the transaction (never hold the write
  // lock across a network call) and spends one unit of today's inference budget.
  std::optional<std::string> model_draft;
  json drafter_note = {{"drafter", "builtin"}};
  if (config_.drafter.CallsModel()) {
    // A bad recipient or tone costs nothing: check them before spending budget.
    std::string name = req.to;
    CORTEX_RETURN_IF_ERROR(store_.Read([&](ReadTx& tx) -> Status {
      auto who = ResolveEntity(tx, ws, req.to);
      if (who.ok()) {
        name = who->name;
      } else if (who.status().code() == Code::kInvalidArgument || req.to.rfind("entity_", 0) == 0) {
        return Status::InvalidArgument("field 'to': " + who.status().message());
      }
      return DraftMessage(req.message, req.tone, name).status();
    }));
    auto spent = SpendInference(ws, req.token_id);
    if (!spent.ok()) return spent.status();
    if (!spent->status.empty()) return *spent;  // over budget: quota_exceeded
    auto drafted = DraftWithModel(config_.drafter, req.message, req.tone, req.context, name);
    if (drafted.ok()) {
      model_draft = *drafted;
      drafter_note = {{"drafter", "openai"}, {"model", config_.drafter.model}};
    } else {
      drafter_note = {{"drafter", "builtin"}, {"model_error", drafted.status().message()}};
    }
  }
  ActionResult result;
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    TimePoint now = clock_.Now();
    auto workspace = tx.GetWorkspace(ws);
    if (!workspace.ok()) return workspace.status();
    std::string world_version = workspace->world_version;

    // 1. Resolve the recipient; an address never seen becomes a new entity.
    std::optional<Entity> who;
    bool new_entity = false;
    if (req.to.rfind("entity_", 0) == 0) {
      auto e = tx.GetEntity(ws, req.to);
      if (!e.ok()) {
        return e.status().code() == Code::kNotFound
                   ? Status::InvalidArgument("field 'to': no entity " + req.to +
                                             " in this workspace")
                   : e.status();
      }
      who = std::move(*e);
    } else {
      auto ident = NormalizeIdentifier(req.to);
      if (!ident.ok()) return Status::InvalidArgument("field 'to': " + ident.status().message());
      auto e = tx.FindEntityByIdentifier(ws, *ident);
      if (e.ok()) {
        who = std::move(*e);
      } else if (e.status().code() != Code::kNotFound) {
        return e.status();
      } else {
        who = Entity{NewId("entity_", clock_), ws, "person", *ident, {*ident}, {}, now};
        CORTEX_RETURN_IF_ERROR(tx.InsertEntity(*who));
        world_version = NewIdAfter("wv_", clock_, world_version);
        CORTEX_RETURN_IF_ERROR(tx.SetWorldVersion(ws, world_version));
        new_entity = true;
      }
    }

    // 2. Draft (the model's, when it answered; else the built-in drafter's).
    auto draft = DraftMessage(req.message, req.tone, who->name);
    if (!draft.ok()) return draft.status();
    if (model_draft) draft = *model_draft;

    // 3. Trust.
    auto trust = LookupTrust(tx, ws, kClass, *who, config_.trust);
    if (!trust.ok()) return trust.status();
    int level = trust->level;

    // 4. The situation action rules see: the outgoing message, with its signals.
    Episode outgoing;
    outgoing.workspace_id = ws;
    outgoing.kind = "message_sent";
    outgoing.occurred_at = now;
    outgoing.entity_id = who->id;
    outgoing.channel = "email";
    outgoing.summary = req.message;
    outgoing.body = *draft;
    auto settings = tx.GetSettings(ws);
    if (!settings.ok()) return settings.status();
    auto signals = ComputeSignals(tx, *settings, outgoing, &*who);
    if (!signals.ok()) return signals.status();
    Situation situation;
    situation.episode = &outgoing;
    situation.counterparty = &*who;
    situation.signals = signals->signals;
    LocalTime lt = ToLocal(now, *settings);
    situation.local_minute_of_day = lt.minute_of_day;
    situation.local_weekday = lt.weekday;

    auto rules = tx.ListRules(ws, /*active_only=*/true);
    if (!rules.ok()) return rules.status();
    std::vector<Rule> action_rules;
    for (Rule& r : *rules) {
      if (r.kind == "action" && r.action_class == kClass) action_rules.push_back(std::move(r));
    }
    SortForEvaluation(action_rules);
    std::vector<const Rule*> fired;
    bool urgent = false, blocked = false;
    for (const Rule& r : action_rules) {
      if (!RuleMatches(r, situation)) continue;
      fired.push_back(&r);
      if (r.then.max_level) level = std::min(level, *r.then.max_level);
      blocked |= r.then.block;
      urgent |= r.then.urgent;
    }
    if (blocked) level = 0;

    // 5. The notification this answers, if one from the same counterparty surfaced lately:
    // usually the latest triage; past a few silent ones (newsletters), none.
    std::optional<TriageLink> triage;
    {
      std::string since = IdFloor("dec_", now - kTriageLinkWindow);
      for (int limit : {1, 5}) {
        auto recent = tx.RecentTriage(ws, who->id, since, limit);
        if (!recent.ok()) return recent.status();
        for (TriageLink& t : *recent) {
          if (t.triage_class != "handle_silently") {
            triage = std::move(t);
            break;
          }
        }
        if (triage || static_cast<int>(recent->size()) < limit) break;
      }
    }

    // 6. Provenance, materialised now so that reads never need anything else.
    ConfidenceThresholds thresholds;
    std::string rule_summary, confidence;
    std::optional<std::string> rule_id;
    std::vector<std::string> episode_ids;
    if (!fired.empty()) {
      rule_summary = fired.front()->summary;
      confidence = ConfidenceLabel(*fired.front(), thresholds);
      rule_id = fired.front()->id;
    } else if (triage && triage->rule_summary) {
      rule_summary = *triage->rule_summary;
      confidence = triage->confidence;
      rule_id = triage->rule_id;
    } else {
      rule_summary = "No rule applies: trust for " + std::string(kClass) + " with " + who->name +
                     " is level " + std::to_string(trust->level) + " (" + LevelName(trust->level) +
                     ", from " + trust->source + ").";
      confidence = "just_guessing";
    }
    if (triage) {
      for (const std::string& e : triage->source_episode_ids) episode_ids.push_back(e);
    }
    for (const Rule* r : fired) {
      for (const std::string& e : r->evidence) episode_ids.push_back(e);
    }
    std::set<std::string> seen;
    json contributing = json::array();
    std::vector<std::string> source_ids;
    for (const std::string& id : episode_ids) {
      if (!seen.insert(id).second || contributing.size() >= kMaxContributingEpisodes) continue;
      auto ep = tx.GetEpisodeSummary(ws, id);
      if (!ep.ok()) continue;  // evidence always exists; be lenient rather than fail a send
      // Built member by member: an initializer list copies every value it is given.
      json& c = contributing.emplace_back(json::object());
      c["id"] = ep->id;
      c["summary"] = std::move(ep->summary);
      c["occurred_at"] = FormatTime(ep->occurred_at);
      source_ids.push_back(std::move(ep->id));
    }

    // 7. The decisions: one per fired rule, then the proposal itself.
    std::string trace = NewId("trc_", clock_);
    Action action;
    action.id = NewId("act_", clock_);
    action.workspace_id = ws;
    action.action_class = kClass;
    action.entity_id = who->id;
    action.recipient = AddressOf(*who);
    action.level = level;
    action.urgent = urgent;
    action.message = req.message;
    action.tone = req.tone;
    action.context = req.context;
    action.draft = *draft;
    action.created_at = now;
    action.updated_at = now;

    json fired_ids = json::array();
    for (const Rule* r : fired) {
      Decision d;
      d.id = NewId("dec_", clock_);
      d.workspace_id = ws;
      d.decision_class = "rule_fired";
      d.status = "recorded";
      d.occurred_at = now;
      d.entity_id = who->id;
      std::string effect;
      if (r->then.max_level) {
        effect = "cap the level at " + std::to_string(*r->then.max_level) + " (" +
                 LevelName(*r->then.max_level) + ")";
      }
      if (r->then.block) effect += std::string(effect.empty() ? "" : ", ") + "block the send";
      if (r->then.urgent) effect += std::string(effect.empty() ? "" : ", ") + "mark it urgent";
      d.payload_summary =
          "Rule '" + r->name + "' fired on the message to " + who->name + ": " + effect + ".";
      d.rule_id = r->id;
      d.rule_summary = r->summary;
      d.confidence = ConfidenceLabel(*r, thresholds);
      d.trace_id = trace;
      d.agent_version = workspace->agent_version;
      d.world_version = world_version;
      d.source_episode_ids = r->evidence;
      d.details_json = DumpJson({{"action_id", action.id}, {"rule_name", r->name}});
      CORTEX_RETURN_IF_ERROR(tx.InsertDecision(d));
      CORTEX_RETURN_IF_ERROR(tx.AddRuleHits(ws, r->id, 1));
      fired_ids.push_back(d.id);
    }

    std::string event = level == 0 ? "refused" : level == 3 ? "executed" : "pending";
    Decision proposal;
    proposal.id = NewId("dec_", clock_);
    proposal.workspace_id = ws;
    proposal.decision_class = "action_proposed";
    proposal.status = event;
    proposal.occurred_at = now;
    proposal.entity_id = who->id;
    proposal.payload_summary = "Send " + who->name + " (" + action.recipient + ") a message: '" +
                               Excerpt(*draft) + "' at trust level " + std::to_string(level) +
                               " (" + LevelName(level) + ").";
    proposal.rule_id = rule_id;
    proposal.rule_summary = rule_summary;
    proposal.confidence = confidence;
    proposal.trace_id = trace;
    proposal.agent_version = workspace->agent_version;
    proposal.world_version = world_version;
    proposal.source_episode_ids = source_ids;
    json details = json::object();
    details["signals"] = SignalsJson(signals->signals);
    details["action_id"] = action.id;
    details["level"] = level;
    details["trust_level"] = trust->level;
    details["trust_source"] = trust->source;
    details["urgent"] = urgent;
    details["rules_fired"] = std::move(fired_ids);
    details["first_contact"] = new_entity;
    details["drafting"] = drafter_note;
    proposal.details_json = DumpJson(details);
    if (triage) proposal.triage_decision_id = triage->decision_id;
    std::string ledger_id = NewId("led_", clock_);  // the entry below, named at insert
    proposal.ledger_entry_id = ledger_id;
    action.decision_id = proposal.id;
    if (level == 1) action.due_at = now + config_.draft_expiry;
    if (level == 2) action.due_at = now + config_.undo_window;
    action.status = level == 0 ? "refused" : level == 3 ? "executed" : "pending";
    CORTEX_RETURN_IF_ERROR(tx.InsertDecision(proposal));
    CORTEX_RETURN_IF_ERROR(tx.InsertAction(action));

    // 8. The ledger and, when executing, the outbox row.
    json provenance = json::object();
    provenance["rule_summary"] = rule_summary;
    provenance["confidence"] = confidence;
    provenance["contributing_episodes"] = std::move(contributing);
    provenance["agent_version"] = workspace->agent_version;
    provenance["world_version"] = world_version;
    json detail = json::object();
    detail["level"] = level;
    detail["recipient"] = action.recipient;
    detail["draft"] = action.draft;
    detail["urgent"] = urgent;
    if (action.due_at) detail["due_at"] = FormatTime(*action.due_at);
    auto led =
        AppendLedgerEntry(tx, clock_, ws, action.id, proposal.id,
                          level == 0 ? "refused" : "proposed", provenance, detail, ledger_id);
    if (!led.ok()) return led.status();
    if (level == 3) {
      auto exec = AppendLedgerEntry(tx, clock_, ws, action.id, proposal.id, "executed", provenance,
                                    {{"by", "trust level 3"}});
      if (!exec.ok()) return exec.status();
      CORTEX_RETURN_IF_ERROR(EnqueueDelivery(tx, action, now));
    }

    if (level == 0) {
      result = Result_("error", action,
                       "Cortex may not send messages to " + who->name +
                           " (trust level 0: off). The refusal is recorded as decision " +
                           proposal.id + ".");
      result.error = "trust_insufficient";
      if (blocked) {
        for (const Rule* r : fired) {
          if (r->then.block) {
            result.message = "Cortex may not send this to " + who->name + ": rule '" + r->name +
                             "' blocks it (" + r->summary +
                             "). The refusal is recorded as "
                             "decision " +
                             proposal.id + ".";
            break;
          }
        }
      }
    } else if (level == 3) {
      result = Result_("success", action,
                       "Sent on your behalf (trust level 3, autonomous); delivery is under way.");
    } else if (level == 2) {
      result = Result_("pending_approval", action,
                       "Will be sent at " + FormatTime(*action.due_at) +
                           " unless rejected (trust level 2, supervised); action.approve sends "
                           "it now.");
    } else {
      result = Result_("pending_approval", action,
                       "Draft awaiting approval (trust level 1, draft): nothing is sent until "
                       "action.approve; it expires at " +
                           FormatTime(*action.due_at) + ".");
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return result;
}

Result<ActionResult> ActionEngine::SpendInference(const std::string& ws,
                                                  const std::string& token_id) {
  ActionResult over;
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    auto refused = SpendInferenceUnit(tx, ws, token_id, config_.quotas, clock_.Now());
    if (!refused.ok()) return refused.status();
    if (*refused) {
      over.status = "error";
      over.error = "quota_exceeded";
      over.quota = (*refused)->quota;
      over.retry_after_s = (*refused)->retry_after_s;
      over.message = (*refused)->Message("Nothing was drafted or sent.");
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return over;
}

Result<ActionResult> ActionEngine::Approve(const std::string& ws, const std::string& decision_id,
                                           const std::optional<std::string>& edited_text) {
  return EndPending(ws, decision_id, /*approve=*/true, edited_text);
}

Result<ActionResult> ActionEngine::Reject(const std::string& ws, const std::string& decision_id,
                                          const std::optional<std::string>& reason) {
  return EndPending(ws, decision_id, /*approve=*/false, reason);
}

Result<ActionResult> ActionEngine::EndPending(const std::string& ws, const std::string& decision_id,
                                              bool approve,
                                              const std::optional<std::string>& text) {
  ActionResult result;
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    TimePoint now = clock_.Now();
    auto action = tx.FindActionByDecision(ws, decision_id);
    if (!action.ok()) {
      if (action.status().code() != Code::kNotFound) return action.status();
      auto d = tx.GetDecision(ws, decision_id);
      if (d.ok()) {
        return Status::Conflict("decision " + decision_id + " is a " + d->decision_class +
                                " decision, not a proposed action");
      }
      return Status::NotFound("no decision " + decision_id + " in this workspace");
    }
    if (action->status != "pending") {
      return Status::Conflict("decision " + decision_id + " is " + action->status +
                              ", not pending: it can no longer be " +
                              (approve ? "approved" : "rejected"));
    }
    auto provenance = ProvenanceOf(tx, *action);
    if (!provenance.ok()) return provenance.status();
    auto who = tx.GetEntity(ws, action->entity_id);
    if (!who.ok()) return who.status();

    if (!approve) {
      CORTEX_RETURN_IF_ERROR(
          tx.TransitionAction(ws, action->id, "pending", "rejected", std::nullopt, now));
      json detail = json::object();
      if (text) detail["reason"] = *text;
      CORTEX_RETURN_IF_ERROR(Record(tx, clock_, *action, "rejected", *provenance, detail));
      auto moved =
          RecordRejection(tx, clock_, ws, action->action_class, *who, decision_id, config_.trust);
      if (!moved.ok()) return moved.status();
      result = Result_("success", *action, "Rejected: nothing will be sent.");
      if (*moved) result.message += " " + (*moved)->payload_summary;
      return Status::Ok();
    }

    bool edited = text.has_value() && *text != action->draft;
    std::optional<std::string> new_draft;
    if (edited) new_draft = *text;
    CORTEX_RETURN_IF_ERROR(
        tx.TransitionAction(ws, action->id, "pending", "executed", new_draft, now));
    json detail = {{"edited", edited}};
    if (edited) {
      detail["draft_before"] = action->draft;
      detail["draft"] = *text;
      action->draft = *text;
    }
    auto led =
        AppendLedgerEntry(tx, clock_, ws, action->id, decision_id, "approved", *provenance, detail);
    if (!led.ok()) return led.status();
    CORTEX_RETURN_IF_ERROR(
        Record(tx, clock_, *action, "executed", *provenance, {{"by", "approval"}}));
    CORTEX_RETURN_IF_ERROR(EnqueueDelivery(tx, *action, now));
    auto moved = RecordApproval(tx, clock_, ws, action->action_class, *who, decision_id, edited,
                                config_.trust);
    if (!moved.ok()) return moved.status();
    result = Result_("success", *action,
                     std::string("Approved") + (edited ? " with your edits" : "") +
                         ": sending to " + action->recipient + ".");
    if (*moved) result.message += " " + (*moved)->payload_summary;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return result;
}

Result<int> ActionEngine::ProcessDue(TimePoint now) {
  std::vector<Action> due;
  Status st = store_.Read([&](ReadTx& tx) {
    auto list = tx.DueActions(now, kDueBatch);
    if (!list.ok()) return list.status();
    due = std::move(*list);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  int handled = 0;
  for (const Action& a : due) {
    bool execute = a.level == 2;
    Status one = store_.Write([&](WriteTx& tx) -> Status {
      Status moved = tx.TransitionAction(a.workspace_id, a.id, "pending",
                                         execute ? "executed" : "expired", std::nullopt, now);
      if (moved.code() == Code::kConflict) return Status::Ok();  // approved/rejected meanwhile
      CORTEX_RETURN_IF_ERROR(moved);
      auto provenance = ProvenanceOf(tx, a);
      if (!provenance.ok()) return provenance.status();
      if (execute) {
        CORTEX_RETURN_IF_ERROR(Record(tx, clock_, a, "executed", *provenance,
                                      {{"by", "undo window passed without a rejection"}}));
        CORTEX_RETURN_IF_ERROR(EnqueueDelivery(tx, a, now));
      } else {
        CORTEX_RETURN_IF_ERROR(Record(tx, clock_, a, "expired", *provenance,
                                      {{"by", "not approved before it expired"}}));
      }
      ++handled;
      return Status::Ok();
    });
    if (!one.ok()) {
      // Keep going: one action that cannot be handled must not hold up the rest.
      spdlog::warn("due action {}: {}", a.id, one.message());
    }
  }
  return handled;
}

}  // namespace cortex
