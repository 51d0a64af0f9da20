#include "engines/triage/triage.h"

#include <algorithm>
#include <tuple>

#include "core/ids.h"
#include "core/json_text.h"
#include "core/time.h"
#include "engines/delivery/pushes.h"
#include "engines/triage/signals.h"
#include "store/decisions.h"
#include "store/episodes.h"
#include "store/notifications.h"
#include "store/rules.h"
#include "store/workspaces.h"

namespace cortex {
namespace {

bool Has(const std::vector<Signal>& signals, SignalKind kind) {
  return std::any_of(signals.begin(), signals.end(),
                     [&](const Signal& s) { return s.kind == kind; });
}

struct PolicyChoice {
  TriageClass triage_class;
  std::string summary;
};

// The default policy, used when no rule matches (docs/rules.md). Its decisions are
// `just_guessing`.
PolicyChoice DefaultPolicy(const std::vector<Signal>& s, const Entity* who) {
  bool vip = Has(s, SignalKind::kVipCounterparty);
  bool urgent = Has(s, SignalKind::kUrgentLanguage);
  bool newsletter = who != nullptr &&
                    std::find(who->tags.begin(), who->tags.end(), "newsletter") != who->tags.end();
  if (newsletter) {
    return {TriageClass::kHandleSilently,
            "No rule matched; default policy: newsletters are recorded silently."};
  }
  if (vip && urgent) {
    return {TriageClass::kInterruptNow,
            "No rule matched; default policy: urgent messages from VIPs interrupt, even in a "
            "focus block."};
  }
  if (Has(s, SignalKind::kActiveFocusBlock)) {
    return {TriageClass::kSurfaceAtTransition,
            "No rule matched; default policy: hold messages until the focus block ends."};
  }
  if (vip || urgent) {
    // The clause that applied, and its evidence (the signal's own sentence): never "VIP"
    // for a message that is only urgent, nor "urgent" for a VIP's calm one.
    SignalKind kind = urgent ? SignalKind::kUrgentLanguage : SignalKind::kVipCounterparty;
    auto evidence =
        std::find_if(s.begin(), s.end(), [&](const Signal& x) { return x.kind == kind; });
    return {TriageClass::kInterruptNow,
            std::string("No rule matched; default policy: ") +
                (urgent ? "urgent messages interrupt. " : "messages from VIPs interrupt. ") +
                evidence->summary};
  }
  return {TriageClass::kDailyDigest,
          "No rule matched; default policy: everything else waits for the daily digest."};
}

std::string Quote(const Episode& ep) {
  std::string s = ep.subject.empty() ? ep.summary : ep.subject;
  if (s.size() > 80) {
    s = Utf8Prefix(s, 77);
    s += "...";
  }
  return "'" + s + "'";
}

// What triage made of a message: the rule that decided it (nullptr: the default policy),
// its class and why, and when its notification surfaces, in the decision's words.
struct Choice {
  const Rule* rule = nullptr;
  TriageClass triage_class;
  std::string rule_summary, confidence;
  std::optional<TimePoint> surface_at;  // none: recorded silently
  std::string when;
};

// The first of `rules` (in evaluation order) that matches the message, else the default
// policy; then when it surfaces: at once, when the focus block ends, or at the next digest.
Choice Choose(const std::vector<Rule>& rules, const ConfidenceThresholds& thresholds,
              const WorkspaceSettings& settings, const Episode& ep, const Entity* who,
              const SignalReport& report) {
  Situation situation;
  situation.episode = &ep;
  situation.counterparty = who;
  situation.signals = report.signals;
  LocalTime lt = ToLocal(ep.occurred_at, settings);
  situation.local_minute_of_day = lt.minute_of_day;
  situation.local_weekday = lt.weekday;

  Choice c;
  for (const Rule& r : rules) {
    if (RuleMatches(r, situation)) {
      c.rule = &r;
      break;
    }
  }
  if (c.rule != nullptr) {
    c.triage_class = *c.rule->then.triage_class;
    c.rule_summary = c.rule->summary;
    c.confidence = ConfidenceLabel(*c.rule, thresholds);
  } else {
    PolicyChoice p = DefaultPolicy(report.signals, who);
    c.triage_class = p.triage_class;
    c.rule_summary = p.summary;
    c.confidence = "just_guessing";
  }

  if (c.triage_class == TriageClass::kInterruptNow) {
    c.surface_at = ep.occurred_at;
    c.when = "interrupt now";
  } else if (c.triage_class == TriageClass::kSurfaceAtTransition) {
    if (report.focus_block) {
      c.surface_at = *report.focus_block->ends_at;
      c.when = "hold until the focus block ends at " + LocalClock(*c.surface_at, settings);
    } else {
      c.surface_at = ep.occurred_at;  // no block to wait for: the transition is now
      c.when = "surface now (no focus block active)";
    }
  } else if (c.triage_class == TriageClass::kDailyDigest) {
    c.surface_at = NextDigest(ep.occurred_at, settings);
    c.when = "put in the digest of " + FormatTime(*c.surface_at);
  } else {
    c.when = "record silently";
  }
  return c;
}

// What every decision of one triage is stamped with.
struct Stamp {
  const Clock& clock;
  const std::string& ws_id;
  const std::string& agent_version;
  const std::string& world_version;
};

std::string NameOf(const Entity* who) { return who != nullptr ? who->name : "unknown sender"; }

// The `triage` decision that records why: its class, rule (or policy), signals and evidence.
Decision TriageDecision(const Stamp& stamp, const Episode& ep, const Entity* who, const Choice& c,
                        const std::vector<Signal>& signals) {
  Decision d;
  d.id = NewId("dec_", stamp.clock);
  d.workspace_id = stamp.ws_id;
  d.decision_class = DecisionClass::kTriage;
  d.triage_class = c.triage_class;
  d.status = DecisionStatus::kRecorded;
  d.occurred_at = stamp.clock.Now();
  d.entity_id = ep.entity_id;
  d.payload_summary =
      "Triage " + NameOf(who) + "'s " + ep.channel + " " + Quote(ep) + ": " + c.when + ".";
  if (c.rule != nullptr) d.rule_id = c.rule->id;
  d.rule_summary = c.rule_summary;
  d.confidence = c.confidence;
  d.trace_id = NewId("trc_", stamp.clock);
  d.agent_version = stamp.agent_version;
  d.world_version = stamp.world_version;
  d.source_episode_ids.push_back(ep.id);
  if (c.rule != nullptr) {
    for (const std::string& e : c.rule->evidence) d.source_episode_ids.push_back(e);
  }
  // Built member by member: an initializer list copies every value it is given.
  nlohmann::json details = nlohmann::json::object();
  details["signals"] = SignalsJson(signals);
  details["triage_class"] = Name(c.triage_class);
  details["episode_id"] = ep.id;
  details["surface_at"] = c.surface_at ? nlohmann::json(FormatTime(*c.surface_at)) : nullptr;
  d.details_json = DumpJson(details);
  return d;
}

// The notification of triage decision `d`, surfacing when `c` says.
Notification NotificationOf(const Stamp& stamp, const Episode& ep, const Choice& c,
                            const Decision& d) {
  Notification n;
  n.id = NewId("ntf_", stamp.clock);
  n.workspace_id = stamp.ws_id;
  n.episode_id = ep.id;
  n.decision_id = d.id;
  n.entity_id = ep.entity_id;
  n.triage_class = c.triage_class;
  n.surface_at = c.surface_at;
  n.created_at = d.occurred_at;
  return n;
}

// Queues the push of an interrupting notification `n` (of decision `d`).
Status PushInterrupt(WriteTx& tx, const Stamp& stamp, const Episode& ep, const Entity* who,
                     const Choice& c, const Decision& d, const Notification& n) {
  nlohmann::json data = nlohmann::json::object();
  data["notification_id"] = n.id;
  data["decision_id"] = d.id;
  data["episode_id"] = ep.id;
  data["counterparty"] = {{"entity_id", ep.entity_id.value_or("")}, {"name", NameOf(who)}};
  data["summary"] = d.payload_summary;
  data["why"] = {{"rule_summary", c.rule_summary}, {"confidence", c.confidence}};
  data["surface_at"] = FormatTime(*c.surface_at);
  return QueuePush(tx, stamp.clock, stamp.ws_id, kNotificationCreated, std::move(data));
}

// The rule that decided it fired: a decision of its own, on the same trace, naming the
// rule, its confidence and evidence, and the triage decision `d` it made
// (docs/learning.md). REQUIRES: c.rule != nullptr.
Decision FiredDecision(const Stamp& stamp, const Episode& ep, const Entity* who, const Choice& c,
                       const Decision& d) {
  const Rule& rule = *c.rule;
  Decision f;
  f.id = NewId("dec_", stamp.clock);
  f.workspace_id = stamp.ws_id;
  f.decision_class = DecisionClass::kRuleFired;
  f.status = DecisionStatus::kRecorded;
  f.occurred_at = d.occurred_at;
  f.entity_id = ep.entity_id;
  f.payload_summary = "Rule '" + rule.name + "' fired on " + NameOf(who) + "'s " + ep.channel +
                      " " + Quote(ep) + ": " + std::string(Name(c.triage_class)) + ".";
  f.rule_id = rule.id;
  f.rule_summary = c.rule_summary;
  f.confidence = c.confidence;
  f.trace_id = d.trace_id;
  f.agent_version = stamp.agent_version;
  f.world_version = stamp.world_version;
  f.source_episode_ids = d.source_episode_ids;
  f.triage_decision_id = d.id;
  nlohmann::json fd = nlohmann::json::object();
  fd["rule_name"] = rule.name;
  fd["origin"] = std::string(Name(rule.origin));
  fd["episode_id"] = ep.id;
  fd["then"] = {{"triage", Name(c.triage_class)}};
  f.details_json = DumpJson(fd);
  return f;
}

// Decisions and notifications held to be stored in index order (~2.8 KB each): most of
// what holding a whole batch gains, in bounded memory (docs/performance.md).
constexpr size_t kMaxHeldOutcomes = 4000;

}  // namespace

bool IsInbound(const std::string& kind) { return kind == "message_received"; }

Triager::Triager(WriteTx& tx, const Clock& clock, std::string ws_id)
    : tx_(tx), clock_(clock), ws_id_(std::move(ws_id)) {}

Status Triager::Load() {
  if (loaded_) return Status::Ok();
  auto ws = tx_.workspaces().Get(ws_id_);
  if (!ws.ok()) return ws.status();
  agent_version_ = ws->agent_version;
  auto settings = tx_.workspaces().Settings(ws_id_);
  if (!settings.ok()) return settings.status();
  settings_ = *settings;
  auto rules = tx_.rules().List(ws_id_, /*active_only=*/true);
  if (!rules.ok()) return rules.status();
  for (Rule& r : *rules) {
    if (r.kind == RuleKind::kTriage) rules_.push_back(std::move(r));
  }
  SortForEvaluation(rules_);
  loaded_ = true;
  return Status::Ok();
}

Status Triager::Triage(const Episode& ep, const Entity* who, const std::string& world_version) {
  CORTEX_RETURN_IF_ERROR(Load());
  auto report = ComputeSignals(tx_, settings_, ep, who);
  if (!report.ok()) return report.status();
  CORTEX_RETURN_IF_ERROR(tx_.episodes().Insert(ep));

  Choice c = Choose(rules_, thresholds_, settings_, ep, who, *report);
  if (c.rule != nullptr) ++hits_[c.rule->id];

  Stamp stamp{clock_, ws_id_, agent_version_, world_version};
  Outcome o;
  o.decision = TriageDecision(stamp, ep, who, c, report->signals);
  o.notification = NotificationOf(stamp, ep, c, o.decision);
  o.decision.notification_id = o.notification.id;
  if (c.triage_class == TriageClass::kInterruptNow &&
      *c.surface_at >= o.decision.occurred_at - kPushFreshness) {
    CORTEX_RETURN_IF_ERROR(PushInterrupt(tx_, stamp, ep, who, c, o.decision, o.notification));
  }
  if (c.rule != nullptr) o.fired = FiredDecision(stamp, ep, who, c, o.decision);
  outcomes_.push_back(std::move(o));
  if (outcomes_.size() >= kMaxHeldOutcomes) return StoreOutcomes();
  return Status::Ok();
}

Status Triager::StoreOutcomes() {
  // A batch's messages come from many counterparties, at many times, in no order. Each
  // index is written in its own key order, so that consecutive inserts land on the same
  // pages: decisions by counterparty (decisions_by_entity_class), then notifications by
  // class and time (notifications_by_class). Ties keep the order they were triaged in
  // (stable sorts).
  std::vector<const Outcome*> order;
  order.reserve(outcomes_.size());
  for (const Outcome& o : outcomes_) order.push_back(&o);
  std::stable_sort(order.begin(), order.end(), [](const Outcome* a, const Outcome* b) {
    return a->decision.entity_id < b->decision.entity_id;
  });
  for (const Outcome* o : order) CORTEX_RETURN_IF_ERROR(tx_.decisions().Insert(o->decision));
  // The rules' rule_fired decisions after: by counterparty within their own class.
  for (const Outcome* o : order) {
    if (o->fired) CORTEX_RETURN_IF_ERROR(tx_.decisions().Insert(*o->fired));
  }
  std::stable_sort(order.begin(), order.end(), [](const Outcome* a, const Outcome* b) {
    // (By the class's spelling, as the index holds it.)
    return std::make_tuple(Name(a->notification.triage_class), a->notification.surface_at) <
           std::make_tuple(Name(b->notification.triage_class), b->notification.surface_at);
  });
  for (const Outcome* o : order)
    CORTEX_RETURN_IF_ERROR(tx_.notifications().Insert(o->notification));
  outcomes_.clear();
  return Status::Ok();
}

Status Triager::Finish() {
  CORTEX_RETURN_IF_ERROR(StoreOutcomes());
  for (const auto& [rule_id, n] : hits_) {
    CORTEX_RETURN_IF_ERROR(tx_.rules().AddHits(ws_id_, rule_id, n));
  }
  hits_.clear();
  return Status::Ok();
}

}  // namespace cortex
