#include "engines/learning/learning.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/ids.h"
#include "core/json_text.h"
#include "core/time.h"
#include "engines/learning/learning_parts.h"
#include "engines/triage/signals.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/rules.h"
#include "store/workspaces.h"

namespace cortex {

using nlohmann::json;
// The learner's own parts (learning_parts.h).
using learning::Backtest;
using learning::Blocks;
using learning::EntityOfPattern;
using learning::FindIn;
using learning::History;
using learning::Hours;
using learning::kDayNames;
using learning::kMaxBlockLength;
using learning::Newest;
using learning::Observation;
using learning::Observe;
using learning::Outcome;
using learning::ReevaluateWith;
using learning::SplitPattern;
using learning::Stats;

namespace {

bool SameEvidence(const Rule& a, const Rule& b) {
  return a.summary == b.summary && a.evidence == b.evidence &&
         a.contradiction_evidence == b.contradiction_evidence && a.support == b.support &&
         a.contradictions == b.contradictions && RuleDefinitionJson(a) == RuleDefinitionJson(b) &&
         a.backtest == b.backtest;
}

// One change a pass makes to the store, worked out in a read transaction and written in a
// short write transaction (so that a pass over a long history never holds up writers).
struct Change {
  Rule rule;
  bool insert = false;
  std::optional<TimePoint> retired_at;
  std::optional<DecisionClass> decision;  // and its payload summary:
  std::string what;
};

Status Decide(WriteTx& tx, const Clock& clock, const Workspace& ws, TimePoint now,
              const std::string& trace_id, const LearningConfig& config, DecisionClass cls,
              const Rule& r, const std::string& what) {
  Decision d;
  d.id = NewId("dec_", clock);
  d.workspace_id = ws.id;
  d.decision_class = cls;
  d.status = DecisionStatus::kRecorded;
  d.occurred_at = now;
  auto split = SplitPattern(r.pattern);
  if (split) d.entity_id = split->second;
  d.payload_summary = what;
  d.rule_id = r.id;
  d.rule_summary = r.summary;
  d.confidence = ConfidenceLabel(r, config.thresholds);
  d.trace_id = trace_id;
  d.agent_version = ws.agent_version;
  d.world_version = ws.world_version;
  d.source_episode_ids = r.evidence;
  json details = json::object();
  details["pattern"] = r.pattern;
  details["rule_name"] = r.name;
  details["when"] = RuleWhenJson(r);
  details["then"] = {{"triage", Name(*r.then.triage_class)}};
  details["support"] = r.support;
  details["contradictions"] = r.contradictions;
  details["contradiction_evidence"] = r.contradiction_evidence;
  details["backtest"] = r.backtest;
  d.details_json = DumpJson(details);
  return tx.decisions().Insert(d);
}

// What the rules of a workspace look like, to tell whether they changed between a
// pass's read and its write.
std::string Fingerprint(const std::vector<Rule>& rules) {
  std::string out;
  for (const Rule& r : rules) {
    out += r.id + ' ' + std::string(Name(r.status)) + ' ' + std::to_string(r.support) + ' ' +
           std::to_string(r.contradictions) + ' ' + r.summary + '\n';
  }
  return out;
}

// Brings `m` up to the workspace as `tx` sees it: the episodes stamped after the last it
// read, if their number adds up to the workspace's count; otherwise the whole lookback.
Status Recall(ReadTx& tx, const std::string& ws_id, const WorkspaceSettings& settings,
              TimePoint now, const LearningConfig& config, LearnMemory::Impl& m) {
  TimePoint since = now - std::chrono::days(config.lookback_days);
  std::string settings_json = DumpJson(SettingsToJson(settings));
  auto counts = tx.workspaces().Counts(ws_id);
  if (!counts.ok()) return counts.status();
  // Messages that left the lookback stay in memory until the next whole read: one at least
  // every kRereadAfter keeps the memory to the lookback and that much more.
  constexpr auto kRereadAfter = std::chrono::days(30);
  bool incremental = m.valid && m.ws_id == ws_id && since >= m.since &&
                     since - m.since < kRereadAfter && m.settings == settings_json;
  m.valid = false;  // until this read is whole
  if (incremental) {
    auto added = tx.episodes().EpisodesAfterVersion(ws_id, m.cursor);
    if (!added.ok()) return added.status();
    if (m.episodes + added->episodes == counts->episodes) {
      for (MessageFact& f : added->messages) m.Add(std::move(f), settings);
      if (added->world_version > m.cursor) m.cursor = added->world_version;
    } else {
      incremental = false;  // something was missed, or undone: read it all again
    }
  }
  if (!incremental) {
    auto latest = tx.episodes().LatestWorldVersion(ws_id);
    if (!latest.ok()) return latest.status();
    auto messages = tx.episodes().MessagesSince(ws_id, since);
    if (!messages.ok()) return messages.status();
    m.by_entity.clear();
    for (MessageFact& f : *messages) m.Add(std::move(f), settings);
    m.ws_id = ws_id;
    m.since = since;
    m.settings = settings_json;
    m.cursor = *latest;
  }
  m.episodes = counts->episodes;
  m.incremental = incremental;
  m.valid = true;
  return Status::Ok();
}

// Whether what the person did with a message `r` decided goes with the rule: they answered
// an interrupting message fast, a digest message not fast, a silent one never, and one held
// until a focus block ended not before it ended. nullopt when their answer says nothing of
// it (a held message with no block active surfaced at once).
std::optional<bool> Agrees(TriageClass cls, const Observation& o) {
  switch (cls) {
    case TriageClass::kInterruptNow:
      return o.outcome == Outcome::kFast;
    case TriageClass::kDailyDigest:
      return o.outcome != Outcome::kFast;
    case TriageClass::kHandleSilently:
      return !o.answered;
    case TriageClass::kSurfaceAtTransition:
      if (!o.block_end) return std::nullopt;
      return !(o.reply && *o.reply < *o.block_end);
  }
  return std::nullopt;
}

// A person's active triage rules, checked against what the person did with the messages
// each decided (its rule_fired decisions of the lookback): support is the rule's own
// evidence plus the messages that went with it (decayed), contradictions those that went
// against it. A rule with at least pretty_sure's support in contradictions and a ratio
// below pretty_sure's is retired (docs/learning.md, "A person's rules").
Status RecheckOwnRules(ReadTx& tx, const std::string& ws_id, const LearningConfig& config,
                       TimePoint now, const std::unordered_map<std::string, History>& histories,
                       const std::vector<Rule>& stored, std::vector<Change>* changes,
                       bool* rules_changed) {
  std::vector<const Rule*> own;
  for (const Rule& r : stored) {
    if (r.origin == RuleOrigin::kUser && r.status == RuleStatus::kActive &&
        r.kind == RuleKind::kTriage && r.then.triage_class) {
      own.push_back(&r);
    }
  }
  if (own.empty()) return Status::Ok();
  auto fired = tx.decisions().FiredTriageRules(
      ws_id, IdFloor("dec_", now - std::chrono::days(config.lookback_days)));
  if (!fired.ok()) return fired.status();
  std::unordered_map<std::string_view, const Observation*> judged;
  for (const auto& [id, h] : histories) {
    for (const Observation& o : h.received) judged.emplace(o.msg->id, &o);
  }
  std::unordered_map<std::string_view, std::vector<const Observation*>> by_rule;
  for (const auto& [rule_id, episode_id] : *fired) {
    auto it = judged.find(episode_id);
    if (it != judged.end()) by_rule[rule_id].push_back(it->second);
  }
  const ConfidenceThresholds& t = config.thresholds;
  for (const Rule* cur : own) {
    Stats s;
    for (const Observation* o : by_rule[cur->id]) {
      std::optional<bool> agrees = Agrees(*cur->then.triage_class, *o);
      if (!agrees) continue;
      ++s.total_n;
      if (*agrees) {
        ++s.support_n;
        s.support_w += o->weight;
      } else {
        s.contra_w += o->weight;
        s.contra_ids.emplace_back(o->msg->occurred_at, &o->msg->id);
      }
    }
    Rule r = *cur;
    r.support = static_cast<int64_t>(r.evidence.size()) + s.Support();
    r.contradictions = s.Contradictions();
    r.contradiction_evidence = Newest(s.contra_ids);
    int64_t total = r.support + r.contradictions;
    double ratio = total == 0 ? 1.0 : static_cast<double>(r.support) / static_cast<double>(total);
    if (r.contradictions >= t.pretty_min_support && ratio < t.pretty_min_ratio) {
      r.status = RuleStatus::kRetired;
      r.active = false;
      int against = s.total_n - s.support_n;
      std::string did =
          *cur->then.triage_class == TriageClass::kInterruptNow
              ? "you answered " + std::to_string(against) + " of the " + std::to_string(s.total_n) +
                    " messages it interrupted for " + "only after " + Hours(config.fast_reply)
          : *cur->then.triage_class == TriageClass::kDailyDigest
              ? "you answered " + std::to_string(against) + " of the " + std::to_string(s.total_n) +
                    " messages it put in the digest " + "within " + Hours(config.fast_reply)
          : *cur->then.triage_class == TriageClass::kSurfaceAtTransition
              ? "you answered " + std::to_string(against) + " of the " + std::to_string(s.total_n) +
                    " messages it held during a focus block before the block ended"
              : "you answered " + std::to_string(against) + " of the " + std::to_string(s.total_n) +
                    " messages it recorded silently";
      std::string why = "Retired your rule '" + r.name + "': " + did + " (support " +
                        std::to_string(r.support) + ", contradictions " +
                        std::to_string(r.contradictions) + ", below " +
                        std::to_string(static_cast<int>(t.pretty_min_ratio * 100)) +
                        " %). Import it again to put it back.";
      changes->push_back({std::move(r), false, now, DecisionClass::kRuleRetired, why});
      *rules_changed = true;
      continue;
    }
    if (r.support != cur->support || r.contradictions != cur->contradictions ||
        r.contradiction_evidence != cur->contradiction_evidence) {
      changes->push_back({std::move(r), false, std::nullopt, {}, ""});
    }
  }
  return Status::Ok();
}

// The person's active triage rule that already does what learned rule `f` would, if any:
// the same class, on every message `f` matches (no conditions beyond its counterparty,
// by identifier, entity id or tag, and weekdays that include `f`'s).
const Rule* CoveredBy(const Rule& f, const std::vector<Rule>& stored, const Entity& who) {
  for (const Rule& r : stored) {
    if (r.origin != RuleOrigin::kUser || r.status != RuleStatus::kActive ||
        r.kind != RuleKind::kTriage || r.then.triage_class != f.then.triage_class) {
      continue;
    }
    const RuleConditions& c = r.when;
    if (!c.not_signals.empty() || !c.channels.empty() || !c.words.empty()) continue;
    // Its signals and hours must not leave out a message of f's: none, or the same as f's.
    if (!c.signals.empty() && c.signals != f.when.signals) continue;
    if (c.from_minute &&
        (c.from_minute != f.when.from_minute || c.until_minute != f.when.until_minute)) {
      continue;
    }
    if (c.weekdays != 0 && (f.when.weekdays == 0 || (f.when.weekdays & ~c.weekdays) != 0)) {
      continue;
    }
    auto has = [](const std::vector<std::string>& v, const std::string& x) {
      return std::find(v.begin(), v.end(), x) != v.end();
    };
    if (!c.tags.empty() && std::none_of(c.tags.begin(), c.tags.end(),
                                        [&](const std::string& t) { return has(who.tags, t); })) {
      continue;
    }
    if (!c.counterparties.empty() &&
        std::none_of(c.counterparties.begin(), c.counterparties.end(), [&](const std::string& x) {
          return x == who.id || has(who.identifiers, x);
        })) {
      continue;
    }
    return &r;
  }
  return nullptr;
}

// What the read half of a pass works with: what it read, and where it puts the changes it
// plans.
struct PlanState {
  const Clock& clock;
  const std::string& ws_id;
  const LearningConfig& config;
  TimePoint now;
  std::vector<Change>* changes;
  bool* rules_changed;
  std::vector<std::string>* covered;

  // What it read (= {}: Plan names only the members above).
  std::vector<Rule> stored = {};                            // every rule of the workspace
  std::unordered_map<std::string, History> histories = {};  // by counterparty
  std::map<std::string, Entity> entities = {};  // the counterparties of histories and patterns
  std::map<std::string, Rule*> current = {};    // each learned pattern's row: the newest
  // What triage did with the messages of the backtest window.
  std::unordered_map<std::string, TriageClass> got = {};
  std::set<std::string> seen = {};  // the patterns found by this pass

  // Sets r.backtest from its counterparty's history.
  void BacktestOf(Rule& r) const {
    auto split = SplitPattern(r.pattern);
    static const History kNone;
    auto it = split ? histories.find(split->second) : histories.end();
    r.backtest = Backtest(r, it == histories.end() ? kNone : it->second, got, now, config);
  }
};

// Reads the rules and brings `memory` up to date; the histories it judges, their
// counterparties and those of the learned patterns, and each pattern's current row.
Status ReadRulesAndHistories(ReadTx& tx, LearnMemory::Impl& memory, PlanState* s) {
  auto settings = tx.workspaces().Settings(s->ws_id);
  if (!settings.ok()) return settings.status();
  CORTEX_RETURN_IF_ERROR(Recall(tx, s->ws_id, *settings, s->now, s->config, memory));
  auto stored = tx.rules().List(s->ws_id, /*active_only=*/false);
  if (!stored.ok()) return stored.status();
  s->stored = std::move(*stored);
  // The focus blocks are read on every pass (a few a day; no memory): a calendar change
  // retracts a block without a new episode to tell an incremental read.
  auto spans = tx.episodes().BlocksSince(
      s->ws_id, s->now - std::chrono::days(s->config.lookback_days) - kMaxBlockLength);
  if (!spans.ok()) return spans.status();
  Blocks blocks{std::move(*spans)};

  s->histories = Observe(memory, blocks, s->now, s->config);
  auto load_entity = [&](const std::string& id) -> Status {
    if (s->entities.count(id)) return Status::Ok();
    auto e = tx.entities().Get(s->ws_id, id);
    if (!e.ok()) return e.status();
    s->entities.emplace(id, std::move(*e));
    return Status::Ok();
  };
  for (const auto& [id, h] : s->histories) CORTEX_RETURN_IF_ERROR(load_entity(id));
  for (Rule& r : s->stored) {
    if (r.origin != RuleOrigin::kLearned || r.pattern.empty()) continue;
    Rule*& slot = s->current[r.pattern];
    if (slot == nullptr || slot->id < r.id) slot = &r;
    if (auto split = SplitPattern(r.pattern)) {
      Status st = load_entity(split->second);
      if (!st.ok() && st.code() != Code::kNotFound) return st;
    }
  }
  return Status::Ok();
}

// Reads what triage did with the messages of the backtest window (s->got).
Status ReadTriaged(ReadTx& tx, PlanState* s) {
  std::unordered_set<std::string_view> recent;
  TimePoint from = s->now - std::chrono::days(s->config.backtest_days);
  for (const auto& [id, h] : s->histories) {
    for (const Observation& o : h.received) {
      if (o.msg->occurred_at >= from) recent.insert(o.msg->id);
    }
  }
  if (recent.empty()) return Status::Ok();
  auto classes = tx.episodes().NotifiedClasses(s->ws_id, from);
  if (!classes.ok()) return classes.status();
  for (auto& [ep, cls] : *classes) {
    if (recent.count(ep)) s->got.emplace(std::move(ep), cls);
  }
  return Status::Ok();
}

// What a pattern found by the pass changes: nothing proposed where the person's rule already
// does it (and a proposal made before withdrawn); a new proposal where there is none, or it
// was retired, or rejected on half the support; a proposal made before follows the pattern.
void PlanFinding(Finding& f, PlanState& s) {
  s.seen.insert(f.rule.pattern);
  auto it = s.current.find(f.rule.pattern);
  Rule* cur = it == s.current.end() ? nullptr : it->second;
  auto who = s.entities.find(EntityOfPattern(f.rule.pattern));
  const Rule* own = who == s.entities.end() ? nullptr : CoveredBy(f.rule, s.stored, who->second);
  if (own != nullptr && (cur == nullptr || cur->status != RuleStatus::kActive)) {
    // Not proposed: the person's rule already does it. A proposal made before is withdrawn.
    s.covered->push_back(f.rule.summary + " (your rule '" + own->name + "')");
    if (cur != nullptr && cur->status == RuleStatus::kProposed) {
      Rule r = *cur;
      r.status = RuleStatus::kRetired;
      r.active = false;
      std::string why = "Withdrew the proposed rule '" + r.name + "': your rule '" + own->name +
                        "' already does this. " + r.summary;
      s.changes->push_back({std::move(r), false, s.now, DecisionClass::kRuleRetired, why});
    }
    return;
  }
  bool propose = cur == nullptr || cur->status == RuleStatus::kRetired ||
                 (cur->status == RuleStatus::kRejected &&
                  f.rule.support >= 2 * std::max<int64_t>(cur->rejected_support, 1));
  if (propose) {
    Rule r = std::move(f.rule);
    r.id = NewId("rul_", s.clock);
    r.workspace_id = s.ws_id;
    r.created_at = s.now;
    s.BacktestOf(r);
    std::string what = "Proposed a learned rule: " + r.summary;
    if (s.config.auto_accept_strong &&
        ConfidenceLabel(r, s.config.thresholds) == "strong_pattern") {
      // [learning] auto_accept_strong: in force at once, as if the person had accepted it.
      r.status = RuleStatus::kActive;
      r.active = true;
      *s.rules_changed = true;
      what =
          "Proposed a learned rule and put it in force (a strong pattern, and "
          "[learning] auto_accept_strong is on): " +
          r.summary;
    }
    s.changes->push_back({std::move(r), true, std::nullopt, DecisionClass::kRuleProposed, what});
    return;
  }
  if (cur->status == RuleStatus::kProposed) {
    // A proposal follows the pattern as it now stands (its days may change).
    Rule r = *cur;
    Rule& n = f.rule;
    r.when = n.when;
    r.then = n.then;
    r.summary = n.summary;
    r.evidence = n.evidence;
    r.contradiction_evidence = n.contradiction_evidence;
    r.support = n.support;
    r.contradictions = n.contradictions;
    s.BacktestOf(r);
    if (!SameEvidence(r, *cur)) s.changes->push_back({std::move(r), false, std::nullopt, {}, ""});
  }
}

// Active learned rules are checked against the evidence as it now stands; proposals the
// evidence no longer supports (not found by this pass) are withdrawn.
void RecheckLearnedRules(PlanState& s) {
  for (auto& [pattern, cur] : s.current) {
    bool active = cur->status == RuleStatus::kActive;
    bool withdrawn = cur->status == RuleStatus::kProposed && !s.seen.count(pattern);
    if (!active && !withdrawn) continue;
    Rule r = *cur;
    if (!ReevaluateWith(r, s.histories, s.entities, s.now, s.config)) continue;
    s.BacktestOf(r);
    if (withdrawn || ConfidenceLabel(r, s.config.thresholds) == "just_guessing") {
      r.status = RuleStatus::kRetired;
      r.active = false;
      std::string why = active ? "Retired the learned rule '" + r.name +
                                     "': its evidence no longer holds (support " +
                                     std::to_string(r.support) + ", contradictions " +
                                     std::to_string(r.contradictions) + "). " + r.summary
                               : "Withdrew the proposed rule '" + r.name +
                                     "': its evidence no longer holds. " + r.summary;
      s.changes->push_back({std::move(r), false, s.now, DecisionClass::kRuleRetired, why});
      *s.rules_changed = *s.rules_changed || active;
      continue;
    }
    if (!SameEvidence(r, *cur)) s.changes->push_back({std::move(r), false, std::nullopt, {}, ""});
  }
}

// The read half of a pass: the changes it makes, and the fingerprint of the rules it read.
Status Plan(ReadTx& tx, const Clock& clock, const std::string& ws_id, const LearningConfig& config,
            TimePoint now, LearnMemory::Impl& memory, std::vector<Change>* changes,
            bool* rules_changed, std::string* fingerprint, std::vector<std::string>* covered) {
  PlanState s{clock, ws_id, config, now, changes, rules_changed, covered};
  CORTEX_RETURN_IF_ERROR(ReadRulesAndHistories(tx, memory, &s));
  *fingerprint = Fingerprint(s.stored);
  std::vector<Finding> findings = FindIn(s.histories, s.entities, now, config);
  CORTEX_RETURN_IF_ERROR(ReadTriaged(tx, &s));
  for (Finding& f : findings) PlanFinding(f, s);
  RecheckLearnedRules(s);
  return RecheckOwnRules(tx, ws_id, config, now, s.histories, s.stored, changes, rules_changed);
}

}  // namespace

Result<LearnReport> Learn(Store& store, const Clock& clock, const std::string& ws_id,
                          const LearningConfig& config, LearnMemory* memory) {
  return Learn(store, clock, ws_id, config, memory, nullptr);
}

namespace {
constexpr char kLearnCancelled[] = "the learning pass was cancelled; nothing was written";
}  // namespace

Result<LearnReport> Learn(Store& store, const Clock& clock, const std::string& ws_id,
                          const LearningConfig& config, LearnMemory* memory,
                          const LearnObserver& observe) {
  auto go_on = [&](LearnPhase phase) { return !observe || observe(phase); };
  LearnMemory scratch;
  LearnMemory::Impl& m = memory != nullptr ? memory->impl() : scratch.impl();
  // A person may accept or reject a rule (or another pass may write) between this pass's
  // read and its write: then the pass starts over, a few times at most.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    TimePoint now = clock.Now();
    std::vector<Change> changes;
    bool rules_changed = false;
    std::string fingerprint;
    std::vector<std::string> covered;
    if (!go_on(LearnPhase::kReading)) return Status::Cancelled(kLearnCancelled);
    CORTEX_RETURN_IF_ERROR(store.Read([&](ReadTx& tx) {
      changes.clear();
      rules_changed = false;
      covered.clear();
      return Plan(tx, clock, ws_id, config, now, m, &changes, &rules_changed, &fingerprint,
                  &covered);
    }));
    LearnReport report;
    bool raced = false;
    if (!go_on(LearnPhase::kWriting)) return Status::Cancelled(kLearnCancelled);
    Status st = store.Write([&](WriteTx& tx) -> Status {
      report = LearnReport{};
      raced = false;
      // Passes of several instances (PostgreSQL) write one after another, and the second
      // sees the first's rules: it starts over instead of proposing them twice.
      if (!changes.empty()) CORTEX_RETURN_IF_ERROR(tx.workspaces().Lock(ws_id));
      auto ws = tx.workspaces().Get(ws_id);
      if (!ws.ok()) return ws.status();
      report.agent_version = ws->agent_version;
      if (changes.empty()) return Status::Ok();
      auto stored = tx.rules().List(ws_id, /*active_only=*/false);
      if (!stored.ok()) return stored.status();
      if (Fingerprint(*stored) != fingerprint) {
        raced = true;
        return Status::Ok();
      }
      std::string trace_id = NewId("trc_", clock);
      // Decisions are made under the version before the pass; rules put in force by it
      // carry the version it makes.
      std::string av = ws->agent_version;
      if (rules_changed) av = NewIdAfter("av_", clock, ws->agent_version);
      for (Change& c : changes) {
        if (c.insert && c.rule.status == RuleStatus::kActive) c.rule.activated_version = av;
        if (c.insert) {
          CORTEX_RETURN_IF_ERROR(tx.rules().Insert(c.rule));
        } else {
          CORTEX_RETURN_IF_ERROR(tx.rules().Update(c.rule, c.retired_at));
        }
        if (c.decision) {
          CORTEX_RETURN_IF_ERROR(
              Decide(tx, clock, *ws, now, trace_id, config, *c.decision, c.rule, c.what));
        }
        if (c.insert) {
          ++report.proposed;
        } else if (c.decision == DecisionClass::kRuleRetired) {
          ++report.retired;
        } else {
          ++report.updated;
        }
      }
      if (rules_changed) {
        report.agent_version = av;
        CORTEX_RETURN_IF_ERROR(tx.workspaces().SetAgentVersion(ws_id, av));
      }
      return Status::Ok();
    });
    if (!st.ok()) return st;
    report.covered = std::move(covered);
    if (!raced) {
      (void)go_on(LearnPhase::kDone);
      return report;
    }
    if (attempt == kAttempts) {
      return Status::Unavailable("the workspace's rules kept changing during the pass");
    }
  }
}

namespace {

Result<Rule> Decide(Store& store, const Clock& clock, const std::string& ws_id,
                    const std::string& rule_id, bool accept) {
  Rule out;
  Status st = store.Write([&](WriteTx& tx) -> Status {
    auto rule = tx.rules().Get(ws_id, rule_id);
    if (!rule.ok()) return rule.status();
    Rule r = *rule;
    if (r.origin != RuleOrigin::kLearned) {
      return Status::InvalidArgument("rule " + rule_id + " (" + r.name +
                                     ") is a person's rule: change it in the rules file "
                                     "(cortex rules import)");
    }
    bool was_active = r.status == RuleStatus::kActive;
    if (accept && r.status != RuleStatus::kProposed && r.status != RuleStatus::kRejected) {
      return Status::Conflict("rule " + rule_id + " is " + std::string(Name(r.status)) +
                              ": only a proposed or rejected rule can be accepted");
    }
    if (!accept && r.status != RuleStatus::kProposed && r.status != RuleStatus::kActive) {
      return Status::Conflict("rule " + rule_id + " is " + std::string(Name(r.status)) +
                              ": only a proposed or active rule can be rejected");
    }
    auto ws = tx.workspaces().Get(ws_id);
    if (!ws.ok()) return ws.status();
    std::optional<TimePoint> retired_at;
    if (accept) {
      r.status = RuleStatus::kActive;
    } else {
      r.status = RuleStatus::kRejected;
      r.rejected_support = std::max<int64_t>(r.support, 1);
      retired_at = clock.Now();
    }
    if (accept || was_active) {
      std::string av = NewIdAfter("av_", clock, ws->agent_version);
      CORTEX_RETURN_IF_ERROR(tx.workspaces().SetAgentVersion(ws_id, av));
      if (accept) r.activated_version = av;
    }
    r.active = r.status == RuleStatus::kActive;
    CORTEX_RETURN_IF_ERROR(tx.rules().Update(r, retired_at));
    out = std::move(r);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

std::string Clock24(int minute) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02d:%02d", (minute / 60) % 100, minute % 60);
  return buf;
}

}  // namespace

Result<Rule> AcceptRule(Store& store, const Clock& clock, const std::string& ws_id,
                        const std::string& rule_id) {
  return Decide(store, clock, ws_id, rule_id, /*accept=*/true);
}

Result<Rule> RejectRule(Store& store, const Clock& clock, const std::string& ws_id,
                        const std::string& rule_id) {
  return Decide(store, clock, ws_id, rule_id, /*accept=*/false);
}

json RuleWhenJson(const Rule& r) {
  const RuleConditions& c = r.when;
  json when = json::object();
  auto list = [&](const char* key, const std::vector<std::string>& v) {
    if (!v.empty()) when[key] = v;
  };
  list("signals", SignalNames(c.signals));
  list("not_signals", SignalNames(c.not_signals));
  list("tags", c.tags);
  list("counterparty", c.counterparties);
  list("channel", c.channels);
  list("words", c.words);
  if (c.from_minute && c.until_minute) {
    when["hours"] = Clock24(*c.from_minute) + "-" + Clock24(*c.until_minute);
  }
  if (c.weekdays != 0) {
    json days = json::array();
    for (int d = 0; d < 7; ++d) {
      if (c.weekdays & (1u << d)) days.push_back(kDayNames[d]);
    }
    when["weekdays"] = days;
  }
  return when;
}

}  // namespace cortex
