#include "engines/actions/actions.h"

#include <algorithm>
#include <set>

#include "core/ids.h"
#include "core/json_text.h"
#include "core/time.h"
#include "engines/actions/action_policy.h"
#include "engines/actions/drafter.h"
#include "engines/actions/idempotency.h"
#include "engines/actions/ledger.h"
#include "engines/delivery/outgoing_mail.h"
#include "engines/delivery/pushes.h"
#include "engines/triage/rules.h"
#include "engines/triage/signals.h"
#include "engines/world/identifiers.h"
#include "store/actions.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/episodes.h"
#include "store/ledger.h"
#include "store/rules.h"
#include "store/trust.h"
#include "store/workspaces.h"

namespace cortex {

using nlohmann::json;

namespace {

constexpr char kClass[] = "communicate";
constexpr auto kTriageLinkWindow = std::chrono::hours(24 * 7);
constexpr size_t kMaxContributingEpisodes = 20;

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

// Who action.communicate writes to, as `to` names them: a known entity, or an address never
// seen (normalised), which becomes a new entity when the proposal is recorded.
struct Recipient {
  std::optional<Entity> known;
  std::string identifier;
  const std::string& Name() const { return known ? known->name : identifier; }
};

// InvalidArgument naming field 'to' for an unknown entity id or a malformed address.
Result<Recipient> FindRecipient(ReadTx& tx, const std::string& ws, const std::string& to) {
  Recipient r;
  if (to.rfind("entity_", 0) == 0) {
    auto e = tx.entities().Get(ws, to);
    if (!e.ok()) {
      return e.status().code() == Code::kNotFound
                 ? Status::InvalidArgument("field 'to': no entity " + to + " in this workspace")
                 : e.status();
    }
    r.known = std::move(*e);
    return r;
  }
  auto ident = NormalizeIdentifier(to);
  if (!ident.ok()) return Status::InvalidArgument("field 'to': " + ident.status().message());
  auto e = tx.entities().FindByIdentifier(ws, *ident);
  if (e.ok()) {
    r.known = std::move(*e);
  } else if (e.status().code() != Code::kNotFound) {
    return e.status();
  }
  r.identifier = std::move(*ident);
  return r;
}

// Checks the optional subject and in_reply_to of `req`; returns the subject to store:
// as given, else "Re: " and the answered message's subject, else "" (the draft's first
// line, at delivery). InvalidArgument naming the field.
Result<std::string> CheckMailFields(ReadTx& tx, const std::string& ws,
                                    const CommunicateRequest& req) {
  for (char c : req.subject) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return Status::InvalidArgument(
          "field 'subject': control characters (CR, LF, NUL, TAB...) are not allowed in a "
          "subject");
    }
  }
  if (req.in_reply_to.empty()) return req.subject;
  auto ep = tx.episodes().Get(ws, req.in_reply_to);
  if (!ep.ok()) {
    return ep.status().code() == Code::kNotFound
               ? Status::InvalidArgument("field 'in_reply_to': no episode " + req.in_reply_to +
                                         " in this workspace")
               : ep.status();
  }
  if (ep->kind != "message_received" && ep->kind != "message_sent") {
    return Status::InvalidArgument("field 'in_reply_to': episode " + req.in_reply_to + " is a " +
                                   ep->kind + ", not a message");
  }
  if (!req.subject.empty()) return req.subject;
  return ep->subject.empty() ? std::string() : ReplySubject(ep->subject);
}

// What rule `r` did to a message: "cap the level at 1 (draft), block the send, ...".
std::string EffectOf(const Rule& r) {
  std::string effect;
  if (r.then.max_level) {
    effect = "cap the level at " + std::to_string(*r.then.max_level) + " (" +
             LevelName(*r.then.max_level) + ")";
  }
  if (r.then.block) effect += std::string(effect.empty() ? "" : ", ") + "block the send";
  if (r.then.urgent) effect += std::string(effect.empty() ? "" : ", ") + "mark it urgent";
  return effect;
}

// The notification a message to `entity_id` answers, if one from them surfaced lately:
// usually the latest triage; past a few silent ones (newsletters), none.
Result<std::optional<TriageLink>> FindTriageLink(ReadTx& tx, const std::string& ws,
                                                 const std::string& entity_id, TimePoint now) {
  std::string since = IdFloor("dec_", now - kTriageLinkWindow);
  for (int limit : {1, 5}) {
    auto recent = tx.decisions().RecentTriage(ws, entity_id, since, limit);
    if (!recent.ok()) return recent.status();
    for (TriageLink& t : *recent) {
      if (t.triage_class != TriageClass::kHandleSilently) return std::optional(std::move(t));
    }
    if (static_cast<int>(recent->size()) < limit) break;
  }
  return std::optional<TriageLink>();
}
}  // namespace

std::string ActionResultJson(const ActionResult& r) {
  return DumpJson({{"status", Name(r.outcome)},
                   {"decision_id", r.decision_id},
                   {"action_id", r.action_id},
                   {"message", r.message},
                   {"draft", r.draft},
                   {"error", r.error},
                   {"level", r.level}});
}

ActionResult ActionResultFromJson(const std::string& text) {
  json j = ParseStoredJson(text);
  ActionResult r;
  r.outcome = ParseStored<ActionOutcome>(j.value("status", ""));
  r.decision_id = j.value("decision_id", "");
  r.action_id = j.value("action_id", "");
  r.message = j.value("message", "");
  r.draft = j.value("draft", "");
  r.error = j.value("error", "");
  r.level = j.value("level", -1);
  return r;
}

ActionResult ActionResultOf(ActionOutcome outcome, const Action& a, std::string message) {
  ActionResult r;
  r.outcome = outcome;
  r.decision_id = a.decision_id;
  r.action_id = a.id;
  r.message = std::move(message);
  r.draft = a.draft;
  r.level = a.level;
  return r;
}

ActionEngine::ActionEngine(Store& store, const Clock& clock, const ActionConfig& config)
    : store_(store), clock_(clock), config_(config) {}

Result<ActionResult> ActionEngine::Communicate(const std::string& ws,
                                               const CommunicateRequest& req) {
  // A retry of a call that was recorded gets its result, before anything is spent.
  bool keyed = !req.idempotency_key.empty();
  if (keyed) {
    auto replay = ReadReplay(ws, req);
    if (!replay.ok()) return replay.status();
    if (*replay) return **replay;
  }
  ModelDraft model;
  if (config_.drafter.CallsModel()) {
    auto refused = DraftByModel(ws, req, &model);
    if (!refused.ok()) return refused.status();
    if (*refused) return **refused;  // over budget: quota_exceeded
  }
  ActionResult result;
  bool raced = false;  // a concurrent call with the same key was recorded first
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    TimePoint now = clock_.Now();
    if (keyed) {  // again, in the transaction: a retry may have raced the first call
      auto found = FindReplay(tx, ws, req);
      if (!found.ok()) return found.status();
      if (*found) {
        result = std::move(**found);
        return Status::Ok();  // nothing written
      }
    }
    Proposal p;
    Facts facts;  // what p's verdict points into
    CORTEX_RETURN_IF_ERROR(Propose(tx, ws, now, req, model.text, &p, &facts));
    // 5. Record it all: decisions, the action, the ledger and, when executing, the outbox.
    auto action = RecordProposal(tx, p, req, model.note);
    if (!action.ok()) return action.status();
    result = Outcome(p, *action);
    if (keyed) {
      auto remembered = RememberResult(tx, clock_, ws, req, result);
      if (!remembered.ok()) return remembered.status();
      if (!*remembered) {
        raced = true;
        return Status::Conflict("idempotency key taken");  // roll this call back
      }
    }
    return Status::Ok();
  });
  if (raced) {
    auto found = ReadReplay(ws, req);
    if (!found.ok()) return found.status();
    if (!*found) return Status::Unavailable("the call with this idempotency key vanished");
    return **found;
  }
  if (!st.ok()) return st;
  return result;
}

Result<std::optional<ActionResult>> ActionEngine::ReadReplay(const std::string& ws,
                                                             const CommunicateRequest& req) {
  std::optional<ActionResult> replay;
  CORTEX_RETURN_IF_ERROR(store_.Read([&](ReadTx& tx) -> Status {
    auto found = FindReplay(tx, ws, req);
    if (!found.ok()) return found.status();
    replay = std::move(*found);
    return Status::Ok();
  }));
  return replay;
}

Result<std::optional<ActionResult>> ActionEngine::DraftByModel(const std::string& ws,
                                                               const CommunicateRequest& req,
                                                               ModelDraft* out) {
  // A bad recipient or tone costs nothing: check them before spending budget.
  std::string name;
  CORTEX_RETURN_IF_ERROR(store_.Read([&](ReadTx& tx) -> Status {
    auto to = FindRecipient(tx, ws, req.to);
    if (!to.ok()) return to.status();
    name = to->Name();
    CORTEX_RETURN_IF_ERROR(CheckMailFields(tx, ws, req).status());
    return DraftMessage(req.message, req.tone, name).status();
  }));
  auto spent = SpendInference(ws, req.token_id);
  if (!spent.ok()) return spent.status();
  if (*spent) return spent;  // over budget: quota_exceeded
  auto drafted = DraftWithModel(config_.drafter, req.message, req.tone, req.context, name);
  if (drafted.ok()) {
    out->text = *drafted;
    out->note = {{"drafter", "openai"}, {"model", config_.drafter.model}};
  } else {
    out->note = {{"drafter", "builtin"}, {"model_error", drafted.status().message()}};
  }
  return std::optional<ActionResult>();
}

Status ActionEngine::Propose(WriteTx& tx, const std::string& ws, TimePoint now,
                             const CommunicateRequest& req,
                             const std::optional<std::string>& model_draft, Proposal* p,
                             Facts* facts) {
  auto workspace = tx.workspaces().Get(ws);
  if (!workspace.ok()) return workspace.status();
  p->ws = ws;
  p->agent_version = workspace->agent_version;
  p->world_version = workspace->world_version;
  p->now = now;

  // 1. The recipient, resolved once; an address never seen becomes a new entity.
  auto to = FindRecipient(tx, ws, req.to);
  if (!to.ok()) return to.status();
  if (to->known) {
    p->who = std::move(*to->known);
  } else {
    p->who =
        Entity{NewId("entity_", clock_), ws, "person", to->identifier, {to->identifier}, {}, now};
    CORTEX_RETURN_IF_ERROR(tx.entities().Insert(p->who));
    p->world_version = NewIdAfter("wv_", clock_, p->world_version);
    CORTEX_RETURN_IF_ERROR(tx.workspaces().SetWorldVersion(ws, p->world_version));
    p->first_contact = true;
  }

  auto subject = CheckMailFields(tx, ws, req);
  if (!subject.ok()) return subject.status();
  p->subject = std::move(*subject);

  // 2. Draft (the model's, when it answered; else the built-in drafter's).
  auto draft = DraftMessage(req.message, req.tone, p->who.name);
  if (!draft.ok()) return draft.status();
  p->draft = model_draft ? *model_draft : *draft;

  // 3. The facts the decision rests on, then the decision itself.
  auto read = ReadFacts(tx, *p, req.message);
  if (!read.ok()) return read.status();
  *facts = std::move(*read);
  Situation situation;
  situation.episode = &facts->outgoing;
  situation.counterparty = &p->who;
  situation.signals = facts->signals;
  LocalTime lt = ToLocal(now, facts->settings);
  situation.local_minute_of_day = lt.minute_of_day;
  situation.local_weekday = lt.weekday;
  p->verdict = DecideAction(kClass, facts->trust, config_.trust, facts->rules, situation);
  p->signals = std::move(facts->signals);

  // 4. Why, in the words the provenance keeps.
  auto triage = FindTriageLink(tx, ws, p->who.id, now);
  if (!triage.ok()) return triage.status();
  p->triage = std::move(*triage);
  return Explain(tx, *p);
}

Result<ActionEngine::Facts> ActionEngine::ReadFacts(ReadTx& tx, const Proposal& p,
                                                    const std::string& message) {
  Facts f;
  auto trust = tx.trust().List(p.ws);
  if (!trust.ok()) return trust.status();
  f.trust = std::move(*trust);
  auto settings = tx.workspaces().Settings(p.ws);
  if (!settings.ok()) return settings.status();
  f.settings = *settings;
  // The situation action rules see: the outgoing message, with its signals.
  f.outgoing.workspace_id = p.ws;
  f.outgoing.kind = "message_sent";
  f.outgoing.occurred_at = p.now;
  f.outgoing.entity_id = p.who.id;
  f.outgoing.channel = "email";
  f.outgoing.summary = message;
  f.outgoing.body = p.draft;
  auto signals = ComputeSignals(tx, f.settings, f.outgoing, &p.who);
  if (!signals.ok()) return signals.status();
  f.signals = std::move(signals->signals);
  auto rules = tx.rules().List(p.ws, /*active_only=*/true);
  if (!rules.ok()) return rules.status();
  for (Rule& r : *rules) {
    if (r.kind == RuleKind::kAction && r.action_class == kClass) f.rules.push_back(std::move(r));
  }
  SortForEvaluation(f.rules);
  return f;
}

std::string ActionEngine::LevelReason(const Proposal& p) {
  const ActionVerdict& v = p.verdict;
  const EffectiveTrust& t = v.trust;
  std::string out = v.level == 0   ? "Not sent"
                    : v.level == 3 ? "Sent without asking"
                    : v.level == 2 ? "Sent after the undo window unless you reject it"
                                   : "Held for your approval";
  out += ": trust for " + std::string(kClass) + " with " + p.who.name + " is level " +
         std::to_string(t.level) + " (" + LevelName(t.level) + ", from " + t.source + ")";
  if (t.capped) out += ", held there by the ceiling of their tags";
  if (v.blocked_by != nullptr) {
    out += "; rule '" + v.blocked_by->name + "' blocks the send";
  } else if (v.level < t.level) {
    for (const Rule* r : v.fired) {
      if (r->then.max_level && *r->then.max_level == v.level) {
        out += "; rule '" + r->name + "' caps it at " + std::to_string(v.level) + " (" +
               LevelName(v.level) + ")";
        break;
      }
    }
  }
  return out + ".";
}

Status ActionEngine::Explain(ReadTx& tx, Proposal& p) {
  const ActionVerdict& v = p.verdict;
  ConfidenceThresholds thresholds;
  if (!v.fired.empty()) {
    p.rule_summary = v.fired.front()->summary;
    p.confidence = ConfidenceLabel(*v.fired.front(), thresholds);
    p.rule_id = v.fired.front()->id;
  } else if (p.triage && p.triage->rule_id && p.triage->rule_summary) {
    // The rule behind the message this answers ("Reply to Marcus quickly on Tuesdays"); a
    // default policy's text says nothing about sending, so it does not count.
    p.rule_summary = *p.triage->rule_summary;
    p.confidence = p.triage->confidence;
    p.rule_id = p.triage->rule_id;
  } else {
    p.rule_summary = LevelReason(p);
    p.confidence = "just_guessing";
  }
  std::vector<std::string> episode_ids;
  if (p.triage) episode_ids = p.triage->source_episode_ids;
  for (const Rule* r : v.fired) {
    episode_ids.insert(episode_ids.end(), r->evidence.begin(), r->evidence.end());
  }
  std::set<std::string> seen;
  p.contributing = json::array();
  for (const std::string& id : episode_ids) {
    if (!seen.insert(id).second || p.contributing.size() >= kMaxContributingEpisodes) continue;
    auto ep = tx.episodes().GetSummary(p.ws, id);
    if (!ep.ok()) continue;  // evidence always exists; be lenient rather than fail a send
    // Built member by member: an initializer list copies every value it is given.
    json& c = p.contributing.emplace_back(json::object());
    c["id"] = ep->id;
    c["summary"] = std::move(ep->summary);
    c["occurred_at"] = FormatTime(ep->occurred_at);
    p.source_ids.push_back(std::move(ep->id));
  }
  return Status::Ok();
}

Result<Action> ActionEngine::RecordProposal(WriteTx& tx, const Proposal& p,
                                            const CommunicateRequest& req,
                                            const json& drafter_note) {
  std::string trace = NewId("trc_", clock_);
  Action action = NewAction(p, req);
  // One decision per fired rule, then the proposal itself.
  auto fired_ids = RecordFiredRules(tx, p, trace, action.id);
  if (!fired_ids.ok()) return fired_ids.status();
  const std::string level_reason = LevelReason(p);
  Decision proposal =
      ProposalDecision(p, action, trace, std::move(*fired_ids), drafter_note, level_reason);
  std::string ledger_id = NewId("led_", clock_);  // the entry below, named at insert
  proposal.ledger_entry_id = ledger_id;
  action.decision_id = proposal.id;
  CORTEX_RETURN_IF_ERROR(tx.decisions().Insert(proposal));
  CORTEX_RETURN_IF_ERROR(tx.actions().Insert(action));
  CORTEX_RETURN_IF_ERROR(RecordInLedger(tx, p, action, level_reason, ledger_id));
  if (action.status == ActionStatus::kPending && p.verdict.level == 1) {
    CORTEX_RETURN_IF_ERROR(RequestApproval(tx, p, action, level_reason));
  }
  return action;
}

Action ActionEngine::NewAction(const Proposal& p, const CommunicateRequest& req) const {
  const ActionVerdict& v = p.verdict;
  Action action;
  action.id = NewId("act_", clock_);
  action.workspace_id = p.ws;
  action.action_class = kClass;
  action.entity_id = p.who.id;
  action.recipient = AddressOf(p.who);
  action.level = v.level;
  action.urgent = v.urgent;
  action.message = req.message;
  action.tone = req.tone;
  action.context = req.context;
  action.draft = p.draft;
  action.subject = p.subject;
  action.in_reply_to = req.in_reply_to;
  action.created_at = p.now;
  action.updated_at = p.now;
  action.status = v.status();
  if (v.level == 1) action.due_at = p.now + config_.draft_expiry;
  if (v.level == 2) action.due_at = p.now + config_.undo_window;
  return action;
}

Result<json> ActionEngine::RecordFiredRules(WriteTx& tx, const Proposal& p,
                                            const std::string& trace,
                                            const std::string& action_id) {
  ConfidenceThresholds thresholds;
  json fired_ids = json::array();
  for (const Rule* r : p.verdict.fired) {
    Decision d;
    d.id = NewId("dec_", clock_);
    d.workspace_id = p.ws;
    d.decision_class = DecisionClass::kRuleFired;
    d.status = DecisionStatus::kRecorded;
    d.occurred_at = p.now;
    d.entity_id = p.who.id;
    d.payload_summary =
        "Rule '" + r->name + "' fired on the message to " + p.who.name + ": " + EffectOf(*r) + ".";
    d.rule_id = r->id;
    d.rule_summary = r->summary;
    d.confidence = ConfidenceLabel(*r, thresholds);
    d.trace_id = trace;
    d.agent_version = p.agent_version;
    d.world_version = p.world_version;
    d.source_episode_ids = r->evidence;
    d.details_json = DumpJson({{"action_id", action_id}, {"rule_name", r->name}});
    CORTEX_RETURN_IF_ERROR(tx.decisions().Insert(d));
    CORTEX_RETURN_IF_ERROR(tx.rules().AddHits(p.ws, r->id, 1));
    fired_ids.push_back(d.id);
  }
  return fired_ids;
}

Decision ActionEngine::ProposalDecision(const Proposal& p, const Action& action,
                                        const std::string& trace, json fired_ids,
                                        const json& drafter_note,
                                        const std::string& level_reason) const {
  const ActionVerdict& v = p.verdict;
  Decision proposal;
  proposal.id = NewId("dec_", clock_);
  proposal.workspace_id = p.ws;
  proposal.decision_class = DecisionClass::kActionProposed;
  proposal.status = DecisionStatusOf(action.status);
  proposal.occurred_at = p.now;
  proposal.entity_id = p.who.id;
  proposal.payload_summary = "Send " + p.who.name + " (" + action.recipient + ") a message: '" +
                             Excerpt(p.draft) + "' at trust level " + std::to_string(v.level) +
                             " (" + LevelName(v.level) + ").";
  proposal.rule_id = p.rule_id;
  proposal.rule_summary = p.rule_summary;
  proposal.confidence = p.confidence;
  proposal.trace_id = trace;
  proposal.agent_version = p.agent_version;
  proposal.world_version = p.world_version;
  proposal.source_episode_ids = p.source_ids;
  json details = json::object();
  details["signals"] = SignalsJson(p.signals);
  details["action_id"] = action.id;
  details["level"] = v.level;
  details["trust_level"] = v.trust.level;
  details["trust_source"] = v.trust.source;
  details["urgent"] = v.urgent;
  details["rules_fired"] = std::move(fired_ids);
  details["first_contact"] = p.first_contact;
  details["drafting"] = drafter_note;
  details["level_reason"] = level_reason;  // decision.inspect shows it from here
  proposal.details_json = DumpJson(details);
  if (p.triage) proposal.triage_decision_id = p.triage->decision_id;
  return proposal;
}

Status ActionEngine::RecordInLedger(WriteTx& tx, const Proposal& p, const Action& action,
                                    const std::string& level_reason, const std::string& ledger_id) {
  const ActionVerdict& v = p.verdict;
  json provenance = json::object();
  provenance["rule_summary"] = p.rule_summary;
  provenance["level_reason"] = level_reason;
  provenance["confidence"] = p.confidence;
  provenance["contributing_episodes"] = p.contributing;
  provenance["agent_version"] = p.agent_version;
  provenance["world_version"] = p.world_version;
  json detail = json::object();
  detail["level"] = v.level;
  detail["recipient"] = action.recipient;
  detail["draft"] = action.draft;
  detail["urgent"] = v.urgent;
  if (action.due_at) detail["due_at"] = FormatTime(*action.due_at);
  auto led = AppendLedgerEntry(tx, clock_, p.ws, action.id, action.decision_id,
                               v.level == 0 ? LedgerEvent::kRefused : LedgerEvent::kProposed,
                               provenance, detail, ledger_id);
  if (!led.ok()) return led.status();
  if (action.status == ActionStatus::kExecuted) {
    auto exec = AppendLedgerEntry(tx, clock_, p.ws, action.id, action.decision_id,
                                  LedgerEvent::kExecuted, provenance,
                                  {{"by", Actor::Engine().Json()}, {"because", "trust level 3"}});
    if (!exec.ok()) return exec.status();
    CORTEX_RETURN_IF_ERROR(EnqueueDelivery(tx, action, p.now));
  }
  return Status::Ok();
}

Status ActionEngine::RequestApproval(WriteTx& tx, const Proposal& p, const Action& action,
                                     const std::string& level_reason) {
  json data = json::object();
  data["decision_id"] = action.decision_id;
  data["action_id"] = action.id;
  data["counterparty"] = {{"entity_id", p.who.id}, {"name", p.who.name}};
  data["recipient"] = action.recipient;
  data["draft"] = action.draft;
  data["level_reason"] = level_reason;
  data["expires_at"] = FormatTime(*action.due_at);
  return QueuePush(tx, clock_, p.ws, kApprovalRequested, std::move(data));
}

ActionResult ActionEngine::Outcome(const Proposal& p, const Action& action) const {
  const ActionVerdict& v = p.verdict;
  const std::string& name = p.who.name;
  if (v.level == 0) {
    ActionResult r;
    if (v.blocked_by != nullptr) {
      r = ActionResultOf(ActionOutcome::kError, action,
                         "Cortex may not send this to " + name + ": rule '" + v.blocked_by->name +
                             "' blocks it (" + v.blocked_by->summary +
                             "). The refusal is recorded as decision " + action.decision_id + ".");
    } else {
      r = ActionResultOf(ActionOutcome::kError, action,
                         "Cortex may not send messages to " + name +
                             " (trust level 0: off). The refusal is recorded as decision " +
                             action.decision_id + ".");
    }
    r.error = "trust_insufficient";
    return r;
  }
  if (v.level == 3) {
    return ActionResultOf(
        ActionOutcome::kSuccess, action,
        "Sent on your behalf (trust level 3, autonomous); delivery is under way.");
  }
  if (v.level == 2) {
    return ActionResultOf(
        ActionOutcome::kPendingApproval, action,
        "Will be sent at " + FormatTime(*action.due_at) +
            " unless rejected (trust level 2, supervised); a person's approval sends it now.");
  }
  return ActionResultOf(
      ActionOutcome::kPendingApproval, action,
      "Draft awaiting a person's approval (trust level 1, draft): nothing is sent "
      "until they approve it (the inbox, or action.approve with the approve scope); "
      "it expires at " +
          FormatTime(*action.due_at) + ".");
}

Result<std::optional<ActionResult>> ActionEngine::SpendInference(const std::string& ws,
                                                                 const std::string& token_id) {
  std::optional<ActionResult> over;
  Status st = store_.Write([&](WriteTx& tx) -> Status {
    auto refused = SpendInferenceUnit(tx, ws, token_id, config_.quotas, clock_.Now());
    if (!refused.ok()) return refused.status();
    if (*refused) {
      over.emplace();
      over->outcome = ActionOutcome::kError;
      over->error = "quota_exceeded";
      over->quota = (*refused)->quota;
      over->retry_after_s = (*refused)->retry_after_s;
      over->message = (*refused)->Message("Nothing was drafted or sent.");
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return over;
}

}  // namespace cortex
