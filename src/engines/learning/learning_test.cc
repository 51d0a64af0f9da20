#include "engines/learning/learning.h"

#include <gtest/gtest.h>

#include <set>

#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/triage/rules.h"
#include "engines/world/ingest.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/rules.h"
#include "store/workspaces.h"
#include "testing/planted_world.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

using nlohmann::json;
using testing::MakePlantedWorld;
using testing::PlantedWorld;
using testing::PlantedWorldOptions;
using testing::Score;

const unsigned kTue = 1u << 1;

std::map<std::string, Entity> ById(const std::vector<Entity>& entities) {
  std::map<std::string, Entity> out;
  for (const Entity& e : entities) out[e.id] = e;
  return out;
}

std::string EntityOf(const Rule& r) { return r.pattern.substr(r.pattern.find(':') + 1); }
std::string KindOf(const Rule& r) { return r.pattern.substr(0, r.pattern.find(':')); }

std::string HoursOf(const Rule& r) { return RuleWhenJson(r).value("hours", ""); }

// What was planted for counterparty `entity` (world ids) that `r` finds: its kind, days and
// hours; nullptr if none.
const testing::Planted* Match(const PlantedWorld& w, const std::string& entity, const Rule& r) {
  auto it = w.truth.find(entity);
  if (it == w.truth.end()) return nullptr;
  for (const testing::Planted& p : it->second) {
    if (p.kind == KindOf(r) && p.weekdays == r.when.weekdays && p.hours == HoursOf(r)) return &p;
  }
  return nullptr;
}

// "fast+days", "fast+hours", "hold"...
std::string Shape(const std::string& kind, unsigned weekdays, const std::string& hours) {
  return kind + (weekdays ? "+days" : "") + (hours.empty() ? "" : "+hours");
}

std::vector<Finding> Find(const PlantedWorld& w, TimePoint now) {
  return FindPatterns(w.messages, ById(w.entities), {}, now, {}, w.blocks);
}

Score ScoreFindings(const PlantedWorld& w, const std::vector<Finding>& findings) {
  Score s;
  s.planted = static_cast<int>(w.PlantedCount());
  for (const Finding& f : findings) {
    ++s.found;
    if (Match(w, EntityOf(f.rule), f.rule) != nullptr) ++s.correct;
  }
  return s;
}

// Per planted shape: planted, found (correctly), and findings that match nothing planted,
// by the shape they have.
struct ByShape {
  std::map<std::string, int> planted, correct, wrong;
  void Add(const PlantedWorld& w, const std::vector<Finding>& findings) {
    std::set<std::pair<std::string, std::string>> hit;  // (entity, shape)
    for (const Finding& f : findings) {
      std::string shape = Shape(KindOf(f.rule), f.rule.when.weekdays, HoursOf(f.rule));
      if (Match(w, EntityOf(f.rule), f.rule) != nullptr) {
        ++correct[shape];
      } else {
        auto it = w.truth.find(EntityOf(f.rule));
        std::string was = "unplanted";
        if (it != w.truth.end()) {
          was.clear();
          for (const auto& p : it->second) {
            was += (was.empty() ? "" : ",") + Shape(p.kind, p.weekdays, p.hours);
          }
        }
        ++wrong[was + " found as " + shape];
      }
    }
    for (const auto& [entity, planted_list] : w.truth) {
      for (const auto& p : planted_list) ++planted[Shape(p.kind, p.weekdays, p.hours)];
    }
  }
  void Print(const char* what) const {
    std::cout << what << " by shape (planted/correct):";
    for (const auto& [shape, n] : planted) {
      auto c = correct.find(shape);
      std::cout << " " << shape << " " << n << "/" << (c == correct.end() ? 0 : c->second);
    }
    std::cout << "; wrong:";
    for (const auto& [why, n] : wrong) std::cout << " [" << why << "] " << n;
    std::cout << "\n";
  }
};

// A small hand-made history: message_received/message_sent lines for one counterparty.
struct Script {
  std::vector<MessageFact> messages;
  int n = 0;
  void Exchange(const std::string& at, std::optional<std::chrono::minutes> reply,
                const std::string& who = "entity_a") {
    TimePoint t = *ParseTime(at);
    std::string thread = "t" + std::to_string(n);
    messages.push_back({"ep_r" + std::to_string(n), false, t, who, thread});
    if (reply) messages.push_back({"ep_s" + std::to_string(n), true, t + *reply, who, thread});
    ++n;
  }
};

const TimePoint kNow = *ParseTime("2026-06-30T12:00:00Z");  // a Tuesday

// A learned rule's `when` and `then` (rule.list's JSON, which is YAML's flow style) read
// back through the rules file parser give the same conditions: a person can export it,
// edit it and import it as their own.
void ExpectRoundTrip(Rule r) {
  r.when.counterparties = {"alice@x.example"};  // the tests' entity ids are not real ones
  std::string yaml = "rules:\n  - name: mine\n    summary: " + r.summary.substr(0, 20) +
                     "\n    when: " + RuleWhenJson(r).dump() +
                     "\n    then: {triage: " + std::string(Name(*r.then.triage_class)) + "}\n";
  auto file = ParseRuleFile(yaml);
  ASSERT_TRUE(file.ok()) << file.status().ToString() << "\n" << yaml;
  ASSERT_EQ(file->rules.size(), 1u);
  EXPECT_EQ(RuleWhenJson(file->rules[0]), RuleWhenJson(r)) << yaml;
  EXPECT_EQ(file->rules[0].then.triage_class, r.then.triage_class);
}

std::map<std::string, Entity> Alice() {
  Entity a;
  a.id = "entity_a";
  a.name = "Alice Moss";
  return {{a.id, a}};
}

TEST(FindPatterns, PlantedWorldsArePrecisionAndRecallAbove90Percent) {
  // The figures in docs/learning.md come from these seeds.
  Score total;
  ByShape shapes;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    PlantedWorldOptions o;
    o.seed = seed;
    o.now = kNow;
    PlantedWorld w = MakePlantedWorld(o);
    auto findings = Find(w, kNow);
    Score s = ScoreFindings(w, findings);
    shapes.Add(w, findings);
    total.found += s.found;
    total.correct += s.correct;
    total.planted += s.planted;
  }
  std::cout << "planted worlds: found " << total.found << ", correct " << total.correct
            << ", planted " << total.planted << ": precision " << total.Precision() << ", recall "
            << total.Recall() << "\n";
  shapes.Print("planted worlds");
  EXPECT_GE(total.Precision(), 0.95);
  EXPECT_GE(total.Recall(), 0.9);
}

// With three weeks of two messages a week, a weekday pattern has too few messages to
// show: recall drops (the misses are weekday patterns), precision does not.
TEST(FindPatterns, ShortHistoriesMissWeekdayPatternsButInventNothing) {
  Score total;
  ByShape shapes;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    PlantedWorldOptions o;
    o.seed = seed;
    o.now = kNow;
    o.weeks = 3;
    o.messages_per_week = 2;
    PlantedWorld w = MakePlantedWorld(o);
    auto findings = Find(w, kNow);
    Score s = ScoreFindings(w, findings);
    shapes.Add(w, findings);
    total.found += s.found;
    total.correct += s.correct;
    total.planted += s.planted;
  }
  std::cout << "short histories: found " << total.found << ", correct " << total.correct
            << ", planted " << total.planted << ": precision " << total.Precision() << ", recall "
            << total.Recall() << "\n";
  shapes.Print("short histories");
  EXPECT_GE(total.Precision(), 0.9);
  EXPECT_GE(total.Recall(), 0.8);
}

TEST(FindPatterns, EachPlantedKindIsFoundWithItsDays) {
  PlantedWorldOptions o;
  o.seed = 7;
  o.now = kNow;
  PlantedWorld w = MakePlantedWorld(o);
  auto findings = Find(w, kNow);
  std::map<std::pair<std::string, std::string>, const Rule*> found;  // (entity, kind)
  std::set<std::string> any;
  for (const Finding& f : findings) {
    found[{EntityOf(f.rule), KindOf(f.rule)}] = &f.rule;
    any.insert(EntityOf(f.rule));
  }
  for (const auto& [entity, planted_list] : w.truth) {
    for (const testing::Planted& planted : planted_list) {
      ASSERT_TRUE(found.count({entity, planted.kind}))
          << entity << " (" << planted.kind << ") not found";
      const Rule& r = *found[{entity, planted.kind}];
      EXPECT_EQ(r.when.weekdays, planted.weekdays) << r.summary;
      EXPECT_EQ(HoursOf(r), planted.hours) << r.summary;
      EXPECT_EQ(r.origin, RuleOrigin::kLearned);
      EXPECT_EQ(r.status, RuleStatus::kProposed);
      EXPECT_EQ(r.when.counterparties, std::vector<std::string>{entity});
      bool focus = planted.kind == "focus" || planted.kind == "hold";
      EXPECT_EQ(SignalNames(r.when.signals),
                focus ? std::vector<std::string>{"active_focus_block"} : std::vector<std::string>{})
          << r.summary;
      TriageClass want = planted.kind == "fast" || planted.kind == "focus"
                             ? TriageClass::kInterruptNow
                         : planted.kind == "slow" ? TriageClass::kDailyDigest
                         : planted.kind == "hold" ? TriageClass::kSurfaceAtTransition
                                                  : TriageClass::kHandleSilently;
      EXPECT_EQ(*r.then.triage_class, want);
      EXPECT_GE(r.support, 3);
      EXPECT_EQ(r.evidence.size() > 0, true);
    }
  }
  // Noise (two messages, one fast, one late) yields nothing. (A counterparty answered after
  // a random delay may, by chance, look slow: docs/learning.md.)
  for (const Entity& e : w.entities) {
    if (e.name.rfind("Noise", 0) == 0) {
      EXPECT_FALSE(any.count(e.id)) << e.name;
    }
  }
}

TEST(FindPatterns, TuesdaysOnlyGivesAWeekdayRuleWithASentence) {
  Script s;
  // Four Tuesdays answered within the hour; Thursdays answered two days later.
  for (const char* day : {"2026-06-02", "2026-06-09", "2026-06-16", "2026-06-23"}) {
    s.Exchange(std::string(day) + "T10:00:00Z", std::chrono::minutes(20));
  }
  for (const char* day : {"2026-06-04", "2026-06-11", "2026-06-18"}) {
    s.Exchange(std::string(day) + "T10:00:00Z", std::chrono::minutes(50 * 60));
  }
  auto findings = FindPatterns(s.messages, Alice(), {}, kNow, {});
  ASSERT_EQ(findings.size(), 1u);
  const Rule& r = findings[0].rule;
  EXPECT_EQ(r.when.weekdays, kTue);
  EXPECT_EQ(*r.then.triage_class, TriageClass::kInterruptNow);
  EXPECT_EQ(r.name, "learned-fast-alice-moss-tue");
  EXPECT_EQ(r.summary,
            "Reply to Alice Moss quickly on Tuesdays: you answered all 4 of 4 within 3 hours (0 "
            "of 3 on other days).");
  EXPECT_EQ(r.evidence, (std::vector<std::string>{"ep_r3", "ep_r2", "ep_r1", "ep_r0"}));
  EXPECT_TRUE(r.contradiction_evidence.empty());
  EXPECT_EQ(ConfidenceLabel(r, {}), "pretty_sure");
  EXPECT_EQ(RuleWhenJson(r), json::parse(R"({"counterparty":["entity_a"],"weekdays":["tue"]})"));
}

// Fast before noon, late after it, on the same days: no weekday rule, a morning rule.
TEST(FindPatterns, MorningsOnlyGivesAnHoursRuleWithASentence) {
  Script s;
  for (const char* day : {"2026-06-01", "2026-06-02", "2026-06-03", "2026-06-04", "2026-06-05"}) {
    s.Exchange(std::string(day) + "T10:00:00Z", std::chrono::minutes(10));
    s.Exchange(std::string(day) + "T15:00:00Z", std::chrono::minutes(50 * 60));
  }
  auto findings = FindPatterns(s.messages, Alice(), {}, kNow, {});
  ASSERT_EQ(findings.size(), 1u);
  const Rule& r = findings[0].rule;
  EXPECT_EQ(r.pattern, "fast:entity_a");
  EXPECT_EQ(r.name, "learned-fast-alice-moss-mornings");
  EXPECT_EQ(r.summary,
            "Interrupt for Alice Moss in the mornings: you answered all 5 of 5 before noon within "
            "3 hours (0 of 5 in the afternoon).");
  EXPECT_EQ(RuleWhenJson(r), json::parse(R"({"counterparty":["entity_a"],"hours":"00:00-12:00"})"));
  EXPECT_EQ(r.evidence.size(), 5u);
  EXPECT_TRUE(r.contradiction_evidence.empty()) << "the afternoons are not its messages";
  EXPECT_EQ(ConfidenceLabel(r, {}), "pretty_sure");
  ExpectRoundTrip(r);
  // Local time: at UTC-06:00 the same messages are at 04:00 and 09:00, all before noon: no
  // half of the day stands out, and there is no rule.
  WorkspaceSettings west;
  west.utc_offset_minutes = -6 * 60;
  EXPECT_TRUE(FindPatterns(s.messages, Alice(), west, kNow, {}).empty());
  // Two mornings and two afternoons are noise.
  Script few;
  for (const char* day : {"2026-06-01", "2026-06-02"}) {
    few.Exchange(std::string(day) + "T10:00:00Z", std::chrono::minutes(10));
    few.Exchange(std::string(day) + "T15:00:00Z", std::chrono::minutes(50 * 60));
  }
  EXPECT_TRUE(FindPatterns(few.messages, Alice(), {}, kNow, {}).empty());
}

// During focus blocks (two hours, mornings or afternoons) answered before the block ends,
// outside them a day later: a focus rule; answered only after the block ends but within
// minutes otherwise: a hold rule, beside the all-days fast rule.
TEST(FindPatterns, FocusBlocksGiveFocusAndHoldRules) {
  std::vector<Span> blocks;
  Script s;
  Script hold;
  Script waited;
  using std::chrono::hours;
  using std::chrono::minutes;
  for (const char* day : {"2026-06-01", "2026-06-02", "2026-06-03", "2026-06-08", "2026-06-09"}) {
    TimePoint d = *ParseTime(std::string(day) + "T00:00:00Z");
    bool morning = blocks.size() < 3;  // the last two blocks are afternoons
    TimePoint start = d + hours(morning ? 10 : 14);
    blocks.emplace_back(start, start + hours(2));
    TimePoint outside = d + hours(morning ? 16 : 9);
    s.Exchange(FormatTime(start + minutes(30)), minutes(10));
    s.Exchange(FormatTime(outside), minutes(50 * 60));
    hold.Exchange(FormatTime(start + minutes(30)), minutes(100));  // 10 minutes after the end
    hold.Exchange(FormatTime(outside), minutes(10));
    waited.Exchange(FormatTime(start + minutes(30)), minutes(80));  // in the block, not at once
    waited.Exchange(FormatTime(outside), minutes(50 * 60));
  }
  // Answered in the block, but 80 minutes on: the person did not let it interrupt them, and
  // did not wait for the end either. No rule.
  EXPECT_TRUE(FindPatterns(waited.messages, Alice(), {}, kNow, {}, blocks).empty());
  auto findings = FindPatterns(s.messages, Alice(), {}, kNow, {}, blocks);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule.pattern, "focus:entity_a");
  EXPECT_EQ(findings[0].rule.summary,
            "Interrupt for Alice Moss even during focus blocks: you answered all 5 of 5 of their "
            "messages that came during a focus block within 30 minutes, before it ended.");
  EXPECT_EQ(RuleWhenJson(findings[0].rule),
            json::parse(R"({"counterparty":["entity_a"],"signals":["active_focus_block"]})"));
  EXPECT_EQ(*findings[0].rule.then.triage_class, TriageClass::kInterruptNow);
  // Without the blocks, nothing says the block matters (a morning rule would need the
  // mornings answered fast, and they are).
  for (const Finding& f : FindPatterns(s.messages, Alice(), {}, kNow, {})) {
    EXPECT_NE(f.rule.pattern, "focus:entity_a");
  }

  findings = FindPatterns(hold.messages, Alice(), {}, kNow, {}, blocks);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].rule.pattern, "fast:entity_a");
  EXPECT_EQ(findings[1].rule.pattern, "hold:entity_a");
  EXPECT_EQ(findings[1].rule.summary,
            "Hold Alice Moss's messages until your focus block ends: you answered all 5 of 5 that "
            "came during a focus block only after it ended, within 3 hours (outside focus "
            "blocks, 5 of 5 within 3 hours).");
  EXPECT_EQ(*findings[1].rule.then.triage_class, TriageClass::kSurfaceAtTransition);
  EXPECT_EQ(SignalNames(findings[1].rule.when.signals),
            std::vector<std::string>{"active_focus_block"});
  ExpectRoundTrip(findings[1].rule);
}

TEST(FindPatterns, NoiseYieldsNoRule) {
  Script s;
  s.Exchange("2026-06-02T10:00:00Z", std::chrono::minutes(10));
  s.Exchange("2026-06-09T10:00:00Z", std::chrono::minutes(3000));
  EXPECT_TRUE(FindPatterns(s.messages, Alice(), {}, kNow, {}).empty());
}

TEST(FindPatterns, PendingMessagesAreNoEvidence) {
  Script s;
  // Three fast answers, then two messages from the last hours not answered yet.
  for (const char* at : {"2026-06-22T10:00:00Z", "2026-06-23T10:00:00Z", "2026-06-24T10:00:00Z"})
    s.Exchange(at, std::chrono::minutes(10));
  s.Exchange("2026-06-30T09:00:00Z", std::nullopt);
  s.Exchange("2026-06-30T10:00:00Z", std::nullopt);
  auto findings = FindPatterns(s.messages, Alice(), {}, kNow, {});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule.contradictions, 0);
  EXPECT_EQ(findings[0].rule.summary,
            "Interrupt for Alice Moss: you answered all 3 of 3 of their messages within 3 hours.");
}

TEST(FindPatterns, OldBehaviourCountsLess) {
  // A year ago: ten fast answers. Lately: four answered two days later. Counted flat this
  // would be 10 of 14 fast (and no digest rule); with a 90-day half-life the old answers
  // weigh ~0.06 each, and the recent slowness decides.
  Script s;
  for (int i = 0; i < 10; ++i) {
    s.Exchange(FormatTime(*ParseTime("2025-06-02T10:00:00Z") + std::chrono::days(i)),
               std::chrono::minutes(10));
  }
  for (const char* day : {"2026-06-01", "2026-06-08", "2026-06-15", "2026-06-22"}) {
    s.Exchange(std::string(day) + "T10:00:00Z", std::chrono::minutes(50 * 60));
  }
  LearningConfig c;
  c.lookback_days = 400;
  auto findings = FindPatterns(s.messages, Alice(), {}, kNow, c);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule.pattern, "slow:entity_a");
  EXPECT_EQ(findings[0].rule.contradictions, 1);  // ten fast answers, a year old, weigh ~0.6
  EXPECT_EQ(findings[0].rule.support, 3);         // four late ones, one to four weeks old
}

// --- Passes over a store ---

class LearnTest : public ::testing::Test {
 protected:
  void SetUp() override { ws_ = *EnsureWorkspace(*store_, clock_, "alpha"); }

  void Ingest(const std::string& jsonl) {
    auto r = IngestJsonl(*store_, clock_, ws_.id, jsonl);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // One exchange with `who`: their message at `at`, answered `reply` minutes later.
  void Exchange(const std::string& who, TimePoint at, std::optional<int> reply) {
    std::string thread = "t" + std::to_string(n_++);
    json in = {{"type", "episode"},   {"kind", "message_received"}, {"occurred_at", FormatTime(at)},
               {"counterparty", who}, {"subject", "Hello"},         {"summary", "Hello"},
               {"thread", thread}};
    std::string lines = in.dump() + "\n";
    if (reply) {
      json out = in;
      out["kind"] = "message_sent";
      out["occurred_at"] = FormatTime(at + std::chrono::minutes(*reply));
      lines += out.dump() + "\n";
    }
    Ingest(lines);
  }

  // A focus block from `start`, `hours` long (a calendar_block episode).
  void Block(const std::string& external_id, TimePoint start, int hours) {
    json b = {{"type", "episode"},
              {"kind", "calendar_block"},
              {"occurred_at", FormatTime(start)},
              {"ends_at", FormatTime(start + std::chrono::hours(hours))},
              {"subject", "Deep work"},
              {"summary", "Focus block"},
              {"external_id", external_id}};
    Ingest(b.dump() + "\n");
  }

  LearnReport Learn() {
    auto r = cortex::Learn(*store_, clock_, ws_.id, {});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : LearnReport{};
  }

  std::vector<Rule> Rules() {
    std::vector<Rule> out;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      out = *tx.rules().List(ws_.id, false);
                      return Status::Ok();
                    })
                    .ok());
    return out;
  }

  std::vector<Decision> Decisions(DecisionClass cls) {
    std::vector<Decision> out;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      DecisionFilter f;
                      f.decision_class = cls;
                      out = *tx.decisions().List(ws_.id, f, 100);
                      return Status::Ok();
                    })
                    .ok());
    return out;
  }

  std::string AgentVersion() {
    std::string av;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      av = tx.workspaces().Get(ws_.id)->agent_version;
                      return Status::Ok();
                    })
                    .ok());
    return av;
  }

  // Four weeks of Tuesdays answered fast and Thursdays answered late, for `who`.
  void TuesdayPerson(const std::string& who, TimePoint first_tuesday, int weeks = 4) {
    for (int w = 0; w < weeks; ++w) {
      TimePoint tue = first_tuesday + std::chrono::days(7 * w) + std::chrono::hours(10);
      Exchange(who, tue, 15);
      Exchange(who, tue + std::chrono::days(2), 50 * 60);
    }
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-30T12:00:00Z")};
  Workspace ws_;
  int n_ = 0;
};

TEST_F(LearnTest, ProposesOnceWithADecisionAndEvidence) {
  TuesdayPerson("jordan@x.example", *ParseTime("2026-06-02T00:00:00Z"));
  std::string av = AgentVersion();
  LearnReport r = Learn();
  EXPECT_EQ(r.proposed, 1);
  EXPECT_EQ(r.retired, 0);
  EXPECT_EQ(AgentVersion(), av) << "a proposal does not change what triage does";
  auto rules = Rules();
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].status, RuleStatus::kProposed);
  EXPECT_FALSE(rules[0].active);
  EXPECT_EQ(rules[0].origin, RuleOrigin::kLearned);
  EXPECT_EQ(rules[0].when.weekdays, kTue);
  EXPECT_EQ(rules[0].evidence.size(), 4u);
  // The Thursdays are not contradictions of a Tuesday rule.
  EXPECT_EQ(rules[0].contradictions, 0);
  EXPECT_EQ(rules[0].backtest["messages"], 4);
  EXPECT_EQ(rules[0].backtest["would_change"], 4) << rules[0].backtest.dump();
  EXPECT_EQ(rules[0].backtest["changed_from"]["daily_digest"], 4);
  auto proposed = Decisions(DecisionClass::kRuleProposed);
  ASSERT_EQ(proposed.size(), 1u);
  EXPECT_EQ(proposed[0].rule_id, rules[0].id);
  EXPECT_EQ(proposed[0].source_episode_ids, rules[0].evidence);
  EXPECT_EQ(proposed[0].confidence, "pretty_sure");
  EXPECT_NE(proposed[0].payload_summary.find("Reply to "), std::string::npos);

  // A second pass over the same history changes nothing.
  LearnReport again = Learn();
  EXPECT_EQ(again.proposed, 0);
  EXPECT_EQ(again.updated, 0);
  EXPECT_EQ(Rules().size(), 1u);
}

TEST_F(LearnTest, AnObserverSeesThePhasesAndCanStopThePassBeforeItWrites) {
  TuesdayPerson("jordan@x.example", *ParseTime("2026-06-02T00:00:00Z"));
  std::vector<LearnPhase> seen;
  // Stopped as it is about to write: nothing is.
  auto stopped = cortex::Learn(*store_, clock_, ws_.id, {}, nullptr, [&](LearnPhase p) {
    seen.push_back(p);
    return p != LearnPhase::kWriting;
  });
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.status().code(), Code::kCancelled) << stopped.status().ToString();
  EXPECT_EQ(seen, (std::vector<LearnPhase>{LearnPhase::kReading, LearnPhase::kWriting}));
  EXPECT_TRUE(Rules().empty());
  EXPECT_TRUE(Decisions(DecisionClass::kRuleProposed).empty());
  // Followed to the end: the same as a pass without an observer.
  seen.clear();
  auto done = cortex::Learn(*store_, clock_, ws_.id, {}, nullptr, [&](LearnPhase p) {
    seen.push_back(p);
    return true;
  });
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->proposed, 1);
  EXPECT_EQ(seen, (std::vector<LearnPhase>{LearnPhase::kReading, LearnPhase::kWriting,
                                           LearnPhase::kDone}));
}

TEST_F(LearnTest, AcceptedRuleDecidesTheNextMessageAndMovesAgentVersion) {
  TuesdayPerson("jordan@x.example", *ParseTime("2026-06-02T00:00:00Z"));
  Learn();
  std::string rule_id = Rules()[0].id;
  std::string av = AgentVersion();
  auto accepted = AcceptRule(*store_, clock_, ws_.id, rule_id);
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  EXPECT_EQ(accepted->status, RuleStatus::kActive);
  EXPECT_NE(AgentVersion(), av);
  EXPECT_EQ(accepted->activated_version, AgentVersion());
  // The next Tuesday message from Jordan interrupts, by the learned rule.
  Exchange("jordan@x.example", *ParseTime("2026-06-30T11:00:00Z"), std::nullopt);
  auto triage = Decisions(DecisionClass::kTriage);
  ASSERT_FALSE(triage.empty());
  EXPECT_EQ(triage[0].rule_id, rule_id);
  EXPECT_EQ(triage[0].triage_class, TriageClass::kInterruptNow);
  EXPECT_EQ(triage[0].agent_version, AgentVersion());
  // Accepting twice is a conflict; so is rejecting a rule that is not a learned one.
  auto twice = AcceptRule(*store_, clock_, ws_.id, rule_id);
  EXPECT_EQ(twice.status().code(), Code::kConflict);
  auto none = AcceptRule(*store_, clock_, ws_.id, "rul_00000000000000000000000000");
  EXPECT_EQ(none.status().code(), Code::kNotFound);
}

TEST_F(LearnTest, StrongPatternsGoInForceByThemselvesOnlyWhenConfigured) {
  // Ten quick answers in the last two weeks: support 10, a strong pattern.
  for (int d = 0; d < 10; ++d) {
    Exchange("kim@x.example", *ParseTime("2026-06-16T10:00:00Z") + std::chrono::days(d), 5);
  }
  LearningConfig on;
  on.auto_accept_strong = true;
  std::string av = AgentVersion();
  auto r = cortex::Learn(*store_, clock_, ws_.id, on);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->proposed, 1);
  EXPECT_NE(r->agent_version, av);
  auto rules = Rules();
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(ConfidenceLabel(rules[0], {}), "strong_pattern");
  EXPECT_EQ(rules[0].status, RuleStatus::kActive);
  EXPECT_TRUE(rules[0].active);
  EXPECT_EQ(rules[0].activated_version, AgentVersion());
  auto proposed = Decisions(DecisionClass::kRuleProposed);
  ASSERT_EQ(proposed.size(), 1u);
  EXPECT_NE(proposed[0].payload_summary.find("auto_accept_strong"), std::string::npos);
  EXPECT_EQ(proposed[0].agent_version, av);
}

TEST_F(LearnTest, StrongPatternsWaitForThePersonByDefault) {
  for (int d = 0; d < 10; ++d) {
    Exchange("kim@x.example", *ParseTime("2026-06-16T10:00:00Z") + std::chrono::days(d), 5);
  }
  std::string av = AgentVersion();
  LearnReport r = Learn();
  EXPECT_EQ(r.proposed, 1);
  EXPECT_EQ(r.agent_version, av);
  EXPECT_EQ(Rules()[0].status, RuleStatus::kProposed);
}

TEST_F(LearnTest, PersonsRulesCannotBeAcceptedOrRejectedHere) {
  auto imported = ImportRules(*store_, clock_, ws_.id, R"(rules:
  - name: mine
    summary: Mine.
    when: { tags: vip }
    then: { triage: interrupt_now })");
  ASSERT_TRUE(imported.ok());
  std::string id = Rules()[0].id;
  auto r = RejectRule(*store_, clock_, ws_.id, id);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("a person's rule"), std::string::npos);
  EXPECT_EQ(Rules()[0].status, RuleStatus::kActive);
}

TEST_F(LearnTest, RejectedIsNotProposedAgainUntilItsEvidenceDoubles) {
  TuesdayPerson("jordan@x.example", *ParseTime("2026-06-02T00:00:00Z"));
  Learn();
  std::string first = Rules()[0].id;
  int64_t support = Rules()[0].support;
  ASSERT_GE(support, 3);
  auto rejected = RejectRule(*store_, clock_, ws_.id, first);
  ASSERT_TRUE(rejected.ok());
  EXPECT_EQ(rejected->status, RuleStatus::kRejected);
  EXPECT_EQ(rejected->rejected_support, support);
  // Two more Tuesdays: support 5 < twice that, still not proposed.
  clock_.Set(*ParseTime("2026-07-14T12:00:00Z"));
  TuesdayPerson("jordan@x.example", *ParseTime("2026-06-30T00:00:00Z"), 2);
  EXPECT_EQ(Learn().proposed, 0);
  // Six more: support (decayed) 9: proposed again, as a new rule.
  clock_.Set(*ParseTime("2026-08-25T12:00:00Z"));
  TuesdayPerson("jordan@x.example", *ParseTime("2026-07-14T00:00:00Z"), 6);
  LearnReport r = Learn();
  EXPECT_EQ(r.proposed, 1);
  auto rules = Rules();
  ASSERT_EQ(rules.size(), 2u);
  int proposed = 0, rejected_n = 0;
  for (const Rule& x : rules) {
    proposed += x.status == RuleStatus::kProposed;
    rejected_n += x.status == RuleStatus::kRejected;
  }
  EXPECT_EQ(proposed, 1);
  EXPECT_EQ(rejected_n, 1);
}

TEST_F(LearnTest, ActiveRuleIsRetiredWhenThePersonStopsAnsweringFast) {
  for (int d = 0; d < 4; ++d) {
    Exchange("sam@x.example", *ParseTime("2026-06-22T10:00:00Z") + std::chrono::days(d), 10);
  }
  Learn();
  ASSERT_EQ(Rules().size(), 1u);
  ASSERT_TRUE(AcceptRule(*store_, clock_, ws_.id, Rules()[0].id).ok());
  std::string av = AgentVersion();
  // Then a month of answers two days late.
  clock_.Set(*ParseTime("2026-07-31T12:00:00Z"));
  for (int d = 0; d < 6; ++d) {
    Exchange("sam@x.example", *ParseTime("2026-07-06T10:00:00Z") + std::chrono::days(3 * d),
             50 * 60);
  }
  LearnReport r = Learn();
  EXPECT_EQ(r.retired, 1);
  EXPECT_NE(r.agent_version, av);
  EXPECT_EQ(AgentVersion(), r.agent_version);
  bool seen = false;
  for (const Rule& x : Rules()) {
    if (x.pattern.rfind("fast:", 0) != 0) continue;
    seen = true;
    EXPECT_EQ(x.status, RuleStatus::kRetired);
    EXPECT_FALSE(x.active);
    EXPECT_EQ(x.contradiction_evidence.size(), 6u);
    EXPECT_EQ(ConfidenceLabel(x, {}), "just_guessing");
  }
  EXPECT_TRUE(seen);
  auto retired = Decisions(DecisionClass::kRuleRetired);
  ASSERT_EQ(retired.size(), 1u);
  EXPECT_NE(retired[0].payload_summary.find("no longer holds"), std::string::npos);
  EXPECT_EQ(retired[0].agent_version, av) << "decided under the version before it";
}

TEST_F(LearnTest, NewslettersAreSilentAndWorkspacesApart) {
  for (int w = 0; w < 5; ++w) {
    Exchange("news@letter.example", *ParseTime("2026-06-01T07:00:00Z") + std::chrono::days(7 * w),
             std::nullopt);
  }
  Workspace other = *EnsureWorkspace(*store_, clock_, "beta");
  auto r = cortex::Learn(*store_, clock_, other.id, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->proposed, 0) << "beta has no history";
  EXPECT_EQ(Learn().proposed, 1);
  auto rules = Rules();
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(*rules[0].then.triage_class, TriageClass::kHandleSilently);
  EXPECT_NE(rules[0].summary.find("you never wrote to them"), std::string::npos);
  // beta cannot accept alpha's rule.
  auto cross = AcceptRule(*store_, clock_, other.id, rules[0].id);
  EXPECT_EQ(cross.status().code(), Code::kNotFound);
}

TEST_F(LearnTest, PlantedWorldThroughTheStore) {
  PlantedWorldOptions o;
  o.seed = 3;
  o.weeks = 6;
  o.now = clock_.Now();
  PlantedWorld w = MakePlantedWorld(o);
  Ingest(w.Jsonl());
  LearnReport r = Learn();
  // Map stored entity ids back to the world's.
  std::map<std::string, std::string> world_id;
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    for (const Entity& e : w.entities) {
                      auto stored = tx.entities().FindByIdentifier(ws_.id, e.identifiers[0]);
                      if (!stored.ok()) return stored.status();
                      world_id[stored->id] = e.id;
                    }
                    return Status::Ok();
                  })
                  .ok());
  Score s;
  s.planted = static_cast<int>(w.PlantedCount());
  for (const Rule& x : Rules()) {
    ++s.found;
    if (Match(w, world_id[EntityOf(x)], x) != nullptr) ++s.correct;
  }
  EXPECT_EQ(r.proposed, s.found);
  EXPECT_GE(s.Precision(), 0.9);
  EXPECT_GE(s.Recall(), 0.85);
}

// A person's own triage rules are checked against what the person did with the messages
// they decided: one the person keeps answering against is retired with a decision saying
// why; one they keep to gains support; a couple of exceptions are counted, not fatal.
// Through the store: the focus blocks are read (and a retracted one no longer counts), the
// hold rule is proposed beside the fast rule, and once both are accepted triage does what
// the hold rule says during a block (a learned rule with a signal is tried first) and what
// the fast rule says outside one.
TEST_F(LearnTest, HoldRuleHoldsDuringFocusBlocksAndFollowsTheCalendar) {
  using std::chrono::hours;
  using std::chrono::minutes;
  std::vector<std::string> block_ids;
  for (int i = 0; i < 5; ++i) {
    TimePoint d = *ParseTime("2026-06-15T00:00:00Z") + std::chrono::days(i);
    TimePoint start = d + hours(i < 3 ? 10 : 14);
    Block("blk" + std::to_string(i), start, 2);
    block_ids.push_back("blk" + std::to_string(i));
    Exchange("sam@x.example", start + minutes(30), 100);  // 10 minutes after the block
    Exchange("sam@x.example", d + hours(i < 3 ? 16 : 9), 10);
  }
  LearnReport r = Learn();
  EXPECT_EQ(r.proposed, 2);
  std::map<std::string, Rule> by_kind;
  for (const Rule& x : Rules()) by_kind[KindOf(x)] = x;
  ASSERT_TRUE(by_kind.count("hold") && by_kind.count("fast"));
  const Rule& hold = by_kind["hold"];
  EXPECT_EQ(*hold.then.triage_class, TriageClass::kSurfaceAtTransition);
  EXPECT_EQ(hold.evidence.size(), 5u);
  EXPECT_EQ(hold.backtest["messages"], 5) << hold.backtest.dump();
  // The default policy held them already (surface_at_transition): nothing would change.
  EXPECT_EQ(hold.backtest["would_change"], 0) << hold.backtest.dump();
  ASSERT_TRUE(AcceptRule(*store_, clock_, ws_.id, hold.id).ok());
  ASSERT_TRUE(AcceptRule(*store_, clock_, ws_.id, by_kind["fast"].id).ok());

  // Today, a block 09:00-11:30: Sam's message at 10:00 is held until 11:30; at 11:45 it
  // interrupts.
  Block("today", *ParseTime("2026-06-30T09:00:00Z"), 2);
  Exchange("sam@x.example", *ParseTime("2026-06-30T10:00:00Z"), std::nullopt);
  auto triage = Decisions(DecisionClass::kTriage);
  ASSERT_FALSE(triage.empty());
  EXPECT_EQ(triage[0].rule_id, hold.id);
  EXPECT_EQ(triage[0].triage_class, TriageClass::kSurfaceAtTransition);
  Exchange("sam@x.example", *ParseTime("2026-06-30T11:45:00Z"), std::nullopt);
  triage = Decisions(DecisionClass::kTriage);
  EXPECT_EQ(triage[0].rule_id, by_kind["fast"].id);
  EXPECT_EQ(triage[0].triage_class, TriageClass::kInterruptNow);

  // The calendar changes: four of the five old blocks are cancelled (retracted). Sam's
  // messages then came outside any block: the hold rule has one message left for it,
  // support 1, and is retired; the fast rule stands.
  ASSERT_TRUE(store_
                  ->Write([&](WriteTx& tx) -> Status {
                    for (int i = 0; i < 4; ++i) {
                      auto ep = tx.episodes().FindByExternalId(ws_.id, block_ids[i]);
                      if (!ep.ok()) return ep.status();
                      CORTEX_RETURN_IF_ERROR(
                          tx.episodes().Retract(ws_.id, ep->id, clock_.Now(), "cancelled"));
                    }
                    return Status::Ok();
                  })
                  .ok());
  r = Learn();
  EXPECT_EQ(r.retired, 1);
  for (const Rule& x : Rules()) {
    if (x.id == hold.id) {
      EXPECT_EQ(x.status, RuleStatus::kRetired) << x.summary;
    } else if (x.id == by_kind["fast"].id) {
      EXPECT_EQ(x.status, RuleStatus::kActive) << x.summary;
    }
  }
}

// A person's surface_at_transition rule is checked too: held messages the person answered
// before the block ended go against it.
TEST_F(LearnTest, PersonsHoldRuleIsRetiredWhenThePersonAnswersDuringBlocks) {
  auto imported = ImportRules(*store_, clock_, ws_.id, R"(
rules:
  - name: lee-at-break
    summary: Hold Lee until the block ends.
    when: { counterparty: lee@x.example, signals: active_focus_block }
    then: { triage: surface_at_transition }
)");
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  for (int i = 0; i < 4; ++i) {
    TimePoint start = *ParseTime("2026-06-22T10:00:00Z") + std::chrono::days(i);
    Block("b" + std::to_string(i), start, 2);
    Exchange("lee@x.example", start + std::chrono::minutes(20), 5);  // answered in the block
  }
  // Outside a block the rule does not apply: no evidence either way.
  Exchange("lee@x.example", *ParseTime("2026-06-26T16:00:00Z"), 5);
  LearnReport r = Learn();
  EXPECT_EQ(r.retired, 1);
  auto retired = Decisions(DecisionClass::kRuleRetired);
  ASSERT_EQ(retired.size(), 1u);
  EXPECT_NE(retired[0].payload_summary.find("you answered 4 of the 4 messages it held during a "
                                            "focus block before the block ended"),
            std::string::npos)
      << retired[0].payload_summary;
}

TEST_F(LearnTest, PersonsRulesAreCheckedAgainstWhatThePersonDoes) {
  auto imported = ImportRules(*store_, clock_, ws_.id, R"(
rules:
  - name: marcus-digest
    summary: Marcus can wait for the digest.
    when: { counterparty: marcus@x.example }
    then: { triage: daily_digest }
  - name: news-silent
    summary: The newsletter is recorded silently.
    when: { counterparty: news@x.example }
    then: { triage: handle_silently }
  - name: dana-interrupts
    summary: Dana interrupts.
    when: { counterparty: dana@x.example }
    then: { triage: interrupt_now }
)");
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  TimePoint start = clock_.Now() - std::chrono::days(10);
  for (int i = 0; i < 4; ++i) {
    TimePoint at = start + std::chrono::days(2 * i) + std::chrono::hours(1);
    Exchange("marcus@x.example", at, 10);                            // answered at once: against
    Exchange("news@x.example", at, std::nullopt);                    // never answered: with it
    Exchange("dana@x.example", at, i < 2 ? std::optional(5) : 600);  // 2 with, 2 against
  }
  std::string av = AgentVersion();
  LearnReport r = Learn();
  EXPECT_EQ(r.retired, 1);
  EXPECT_NE(AgentVersion(), av) << "retiring a rule in force changes what triage does";
  std::map<std::string, Rule> by_name;
  for (const Rule& x : Rules()) by_name[x.name] = x;
  const Rule& marcus = by_name["marcus-digest"];
  EXPECT_EQ(marcus.status, RuleStatus::kRetired);
  EXPECT_FALSE(marcus.active);
  EXPECT_EQ(marcus.contradictions, 4);
  EXPECT_EQ(marcus.contradiction_evidence.size(), 4u);
  const Rule& news = by_name["news-silent"];
  EXPECT_EQ(news.status, RuleStatus::kActive);
  EXPECT_EQ(news.support, 4);
  EXPECT_EQ(news.contradictions, 0);
  EXPECT_EQ(ConfidenceLabel(news, {}), "pretty_sure") << "relabelled from just_guessing";
  const Rule& dana = by_name["dana-interrupts"];
  EXPECT_EQ(dana.status, RuleStatus::kActive) << "two exceptions are not enough to retire it";
  EXPECT_EQ(dana.support, 2);
  EXPECT_EQ(dana.contradictions, 2);

  auto retired = Decisions(DecisionClass::kRuleRetired);
  ASSERT_EQ(retired.size(), 1u);
  EXPECT_EQ(retired[0].rule_id, marcus.id);
  EXPECT_EQ(retired[0].payload_summary,
            "Retired your rule 'marcus-digest': you answered 4 of the 4 messages it put in the "
            "digest within 3 hours (support 0, contradictions 4, below 75 %). Import it again "
            "to put it back.");
  // The next message from Marcus is decided by the default policy, not the retired rule.
  Exchange("marcus@x.example", clock_.Now() - std::chrono::minutes(5), std::nullopt);
  auto triaged = Decisions(DecisionClass::kTriage);
  ASSERT_FALSE(triaged.empty());
  EXPECT_FALSE(triaged[0].rule_id.has_value());
  EXPECT_EQ(Learn().retired, 0) << "a second pass changes nothing";
  LearnReport again = Learn();
  EXPECT_EQ(again.proposed + again.updated + again.retired, 0);
}

// A pattern a person's own rule already covers (same class, on every message it would
// match) is not proposed, and a proposal made before the person wrote the rule is withdrawn;
// a rule that covers only part of it (a signal more, another class) does not count.
TEST_F(LearnTest, ProposalsAPersonsRuleCoversAreNotMade) {
  TuesdayPerson("jordan@x.example", *ParseTime("2026-06-02T00:00:00Z"));
  LearnReport first = Learn();
  ASSERT_EQ(first.proposed, 1);
  EXPECT_TRUE(first.covered.empty());
  auto import = [&](const std::string& yaml) {
    auto r = ImportRules(*store_, clock_, ws_.id, yaml);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  };
  import(R"(
rules:
  - name: jordan-urgent
    summary: Jordan's urgent mail interrupts.
    when: { counterparty: jordan@x.example, signals: urgent_language }
    then: { triage: interrupt_now }
  - name: jordan-digest
    summary: Jordan waits for the digest.
    when: { counterparty: jordan@x.example, weekdays: thu }
    then: { triage: daily_digest }
)");
  LearnReport partial = Learn();
  EXPECT_EQ(partial.retired, 0);
  EXPECT_TRUE(partial.covered.empty());
  import(R"(
rules:
  - name: jordan-early-week
    summary: Jordan interrupts early in the week.
    when: { counterparty: jordan@x.example, weekdays: [mon, tue, wed] }
    then: { triage: interrupt_now }
)");
  LearnReport withdrawn = Learn();
  EXPECT_EQ(withdrawn.retired, 1);
  EXPECT_EQ(withdrawn.proposed, 0);
  ASSERT_EQ(withdrawn.covered.size(), 1u);
  EXPECT_EQ(withdrawn.covered[0],
            "Reply to jordan@x.example quickly on Tuesdays: you answered all 4 of 4 within 3 hours "
            "(0 of 4 on other days). (your rule 'jordan-early-week')");
  auto retired = Decisions(DecisionClass::kRuleRetired);
  ASSERT_EQ(retired.size(), 1u);
  EXPECT_EQ(retired[0].payload_summary.rfind("Withdrew the proposed rule "
                                             "'learned-fast-jordan-x-example-tue': your rule "
                                             "'jordan-early-week' already does this.",
                                             0),
            0u)
      << retired[0].payload_summary;
  LearnReport again = Learn();
  EXPECT_EQ(again.proposed + again.updated + again.retired, 0);
  EXPECT_EQ(again.covered.size(), 1u);
  for (const Rule& r : Rules()) {
    EXPECT_NE(r.status, RuleStatus::kProposed) << r.name;
  }
}

// A pass that remembers the last reads only the batches since, and finds exactly what a
// full pass finds: after each incremental pass, a full pass over the same store at the
// same moment changes nothing. The batches answer old messages, leave new ones pending
// until they come due, let a week go by (decay, backtest window), and a proposal is
// accepted in between.
TEST_F(LearnTest, IncrementalPassesFindWhatAFullPassFinds) {
  PlantedWorldOptions o;
  o.seed = 7;
  o.weeks = 6;
  o.now = clock_.Now();
  PlantedWorld w = MakePlantedWorld(o);
  Ingest(w.Jsonl());
  LearnMemory memory;
  auto first = cortex::Learn(*store_, clock_, ws_.id, {}, &memory);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(memory.last_incremental()) << "the first pass reads everything";
  EXPECT_GT(first->proposed, 0);

  std::vector<std::string> who;
  for (const Entity& e : w.entities) who.push_back(e.identifiers[0]);
  const int steps[] = {1, 5, 20, 2, 30, 24 * 7, 3, 26, 24 * 3, 1};
  int changed = 0, round = 0;
  std::vector<std::pair<std::string, std::string>> waiting;  // (who, thread)
  for (int hours : steps) {
    ++round;
    clock_.Advance(std::chrono::hours(hours));
    TimePoint now = clock_.Now();
    // Twelve counterparties write; a quarter are answered within 20 minutes, and two
    // messages left waiting by earlier rounds are answered now (late, after some passes
    // judged them pending or slow).
    std::string lines;
    auto line = [&](const char* kind, const std::string& x, TimePoint at,
                    const std::string& thread) {
      json j = {{"type", "episode"}, {"kind", kind},       {"occurred_at", FormatTime(at)},
                {"counterparty", x}, {"subject", "Hello"}, {"summary", "Hello"},
                {"thread", thread}};
      lines += j.dump() + "\n";
    };
    for (int k = 0; k < 2 && !waiting.empty(); ++k) {
      line("message_sent", waiting.front().first, now, waiting.front().second);
      waiting.erase(waiting.begin());
    }
    for (int i = 0; i < 12; ++i) {
      const std::string& x = who[static_cast<size_t>(round * 5 + i) % who.size()];
      std::string thread = "inc-" + std::to_string(round) + "-" + std::to_string(i);
      TimePoint at = now - std::chrono::minutes(90);
      line("message_received", x, at, thread);
      if (i % 4 == 0) {
        line("message_sent", x, at + std::chrono::minutes(20), thread);
      } else {
        waiting.emplace_back(x, thread);
      }
    }
    Ingest(lines);
    if (round == 6) {
      // The calendar changes: every other focus block is cancelled (retracted). No episode
      // comes with it; the next incremental pass sees it all the same.
      ASSERT_TRUE(store_
                      ->Write([&](WriteTx& tx) -> Status {
                        for (size_t b = 0; b < w.blocks.size(); b += 2) {
                          auto ep = tx.episodes().FindByExternalId(
                              ws_.id, "block_" + FormatTime(w.blocks[b].first));
                          if (!ep.ok()) return ep.status();
                          CORTEX_RETURN_IF_ERROR(
                              tx.episodes().Retract(ws_.id, ep->id, now, "cancelled"));
                        }
                        return Status::Ok();
                      })
                      .ok());
    }
    if (round == 4) {
      for (const Rule& r : Rules()) {
        if (r.status == RuleStatus::kProposed) {
          ASSERT_TRUE(AcceptRule(*store_, clock_, ws_.id, r.id).ok());
          break;
        }
      }
    }
    auto inc = cortex::Learn(*store_, clock_, ws_.id, {}, &memory);
    ASSERT_TRUE(inc.ok()) << inc.status().ToString();
    EXPECT_TRUE(memory.last_incremental()) << "round " << round;
    changed += inc->proposed + inc->updated + inc->retired;
    std::vector<Rule> after_inc = Rules();
    LearnReport full = Learn();
    EXPECT_EQ(full.proposed + full.updated + full.retired, 0)
        << "round " << round << ": a full pass found what the incremental one missed ("
        << full.proposed << " proposed, " << full.updated << " updated, " << full.retired
        << " retired)";
    std::vector<Rule> after_full = Rules();
    ASSERT_EQ(after_inc.size(), after_full.size());
    for (size_t i = 0; i < after_inc.size(); ++i) {
      EXPECT_EQ(after_inc[i].id, after_full[i].id);
      EXPECT_EQ(after_inc[i].summary, after_full[i].summary);
      EXPECT_EQ(after_inc[i].evidence, after_full[i].evidence);
      EXPECT_EQ(after_inc[i].backtest, after_full[i].backtest);
    }
  }
  EXPECT_GT(changed, 0) << "the batches changed what the incremental passes found";
}

// Another time zone moves messages to other weekdays: the memory is read again; and so it
// is every 30 days, to drop what left the lookback.
TEST_F(LearnTest, NewSettingsAndAMonthMakeTheNextPassReadEverything) {
  TuesdayPerson("jordan@x.example", *ParseTime("2026-06-02T00:00:00Z"));
  LearnMemory memory;
  ASSERT_TRUE(cortex::Learn(*store_, clock_, ws_.id, {}, &memory).ok());
  Exchange("jordan@x.example", clock_.Now() - std::chrono::hours(2), 10);
  ASSERT_TRUE(cortex::Learn(*store_, clock_, ws_.id, {}, &memory).ok());
  EXPECT_TRUE(memory.last_incremental());
  ASSERT_TRUE(store_
                  ->Write([&](WriteTx& tx) {
                    auto s = tx.workspaces().Settings(ws_.id);
                    if (!s.ok()) return s.status();
                    WorkspaceSettings n = *s;
                    n.utc_offset_minutes = 13 * 60;
                    return tx.workspaces().SetSettings(ws_.id, n);
                  })
                  .ok());
  ASSERT_TRUE(cortex::Learn(*store_, clock_, ws_.id, {}, &memory).ok());
  EXPECT_FALSE(memory.last_incremental());
  // A month on, messages that left the lookback are dropped: the whole lookback is read.
  clock_.Advance(std::chrono::days(29));
  ASSERT_TRUE(cortex::Learn(*store_, clock_, ws_.id, {}, &memory).ok());
  EXPECT_TRUE(memory.last_incremental());
  clock_.Advance(std::chrono::days(2));
  ASSERT_TRUE(cortex::Learn(*store_, clock_, ws_.id, {}, &memory).ok());
  EXPECT_FALSE(memory.last_incremental());
}

}  // namespace
}  // namespace cortex
