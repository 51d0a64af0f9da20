#include "engines/triage/rules.h"

#include <gtest/gtest.h>

#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/world/ingest.h"
#include "store/rules.h"
#include "store/workspaces.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

Rule Parse1(const std::string& yaml) {
  auto f = ParseRuleFile(yaml);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->rules.size(), 1u);
  return f->rules.at(0);
}

TEST(RuleFileTest, ParsesConditionsAndEffects) {
  Rule r = Parse1(R"(
rules:
  - name: vip-at-break
    summary: Surface emails from VIP counterparties at the next focus-block break.
    when:
      tags: VIP
      signals: [vip_counterparty, active_focus_block]
      channel: email
      words: ["by EOD", urgent]
      hours: "18:00-08:00"
      weekdays: [mon, Tuesday]
      counterparty: Sarah@Northwind.example
    then: { triage: surface_at_transition }
    priority: 5
)");
  EXPECT_EQ(Name(r.kind), "triage");
  EXPECT_EQ(Name(*r.then.triage_class), "surface_at_transition");
  EXPECT_EQ(r.when.tags, std::vector<std::string>{"vip"});
  EXPECT_EQ(r.when.words, (std::vector<std::string>{"by eod", "urgent"}));
  EXPECT_EQ(*r.when.from_minute, 18 * 60);
  EXPECT_EQ(*r.when.until_minute, 8 * 60);
  EXPECT_EQ(r.when.weekdays, 0b11u);
  EXPECT_EQ(r.when.counterparties, std::vector<std::string>{"sarah@northwind.example"});
  EXPECT_EQ(r.priority, 5);
  EXPECT_EQ(Name(r.origin), "user");
}

TEST(RuleFileTest, ActionRules) {
  Rule r = Parse1(R"(
rules:
  - name: external
    summary: Never send to external domains without approval.
    action: communicate
    when: { tags: external }
    then: { max_level: 1, urgent: true }
)");
  EXPECT_EQ(Name(r.kind), "action");
  EXPECT_EQ(r.action_class, "communicate");
  EXPECT_EQ(*r.then.max_level, 1);
  EXPECT_TRUE(r.then.urgent);
}

TEST(RuleFileTest, ErrorsGiveTheLineAndReason) {
  struct Case {
    const char* yaml;
    const char* message;
  };
  const Case cases[] = {
      {"rules:\n  - name: a\n    summary: s\n    when: {signals: vip}\n    then: {triage: "
       "interrupt_now}\n",
       "line 4: unknown signal 'vip'"},
      {"rules:\n  - name: a\n    summary: s\n    when: {}\n    then: {triage: now}\n",
       "line 5: 'now' is not a triage class"},
      {"rules:\n  - name: a\n    when: {}\n    then: {triage: interrupt_now}\n",
       "line 2: rule 'a' is missing 'summary'"},
      {"rules:\n  - name: a\n    summary: s\n    when: {hours: '9-5'}\n    then: {triage: "
       "interrupt_now}\n",
       "line 4: 'hours' must look like 09:00-17:00"},
      {"rules:\n  - name: a\n    summary: s\n    when: {weekdays: [funday]}\n    then: {triage: "
       "interrupt_now}\n",
       "line 4: 'funday' is not a weekday"},
      {"rules:\n  - name: a\n    summary: s\n    when: {}\n    then: {triage: interrupt_now, "
       "max_level: 2}\n",
       "line 5: 'then' needs either"},
      {"rules:\n  - name: a\n    summary: s\n    colour: red\n    when: {}\n    then: {triage: "
       "interrupt_now}\n",
       "line 4: unknown key 'colour'"},
      {"rules:\n  - name: a\n    summary: s\n    when: {}\n    then: {triage: interrupt_now}\n  - "
       "name: a\n    summary: t\n    when: {}\n    then: {triage: daily_digest}\n",
       "line 6: duplicate rule name 'a'"},
      {"rules: [\n", "line 2:"},
      {"settings: {digest_time: '25:00'}\nrules: []\n", "line 1: 'digest_time' must be between"},
      {"rules:\n  - ? [a]\n    : b\n", "line"},
      {"rules:\n  - name: a\n    summary: \xff\n", "line 1: the file is not UTF-8 text"},
  };
  for (const Case& c : cases) {
    auto f = ParseRuleFile(c.yaml);
    ASSERT_FALSE(f.ok()) << c.yaml;
    EXPECT_EQ(f.status().message().rfind(c.message, 0), 0u)
        << "got: " << f.status().message() << "\nwant: " << c.message;
  }
}

TEST(RuleMatchTest, ConditionsAllMustHold) {
  Rule r = Parse1(R"(
rules:
  - name: a
    summary: s
    when:
      tags: vip
      signals: active_focus_block
      not_signals: urgent_language
      words: deadline
      weekdays: tue
      hours: "09:00-11:00"
    then: { triage: surface_at_transition }
)");
  Entity sarah{"entity_x", "ws", "person", "Sarah", {"sarah@n.example"}, {"vip"}, {}};
  Episode ep;
  ep.channel = "email";
  ep.subject = "The deadline, again";
  Situation s{&ep, &sarah, {{SignalKind::kActiveFocusBlock, ""}}, 9 * 60 + 30, 1};
  EXPECT_TRUE(RuleMatches(r, s));
  s.signals.push_back({SignalKind::kUrgentLanguage, ""});
  EXPECT_FALSE(RuleMatches(r, s));
  s.signals.pop_back();
  s.local_weekday = 2;
  EXPECT_FALSE(RuleMatches(r, s));
  s.local_weekday = 1;
  s.local_minute_of_day = 11 * 60;
  EXPECT_FALSE(RuleMatches(r, s));
  s.local_minute_of_day = 10 * 60;
  ep.subject = "deadlines";  // not the whole word
  EXPECT_FALSE(RuleMatches(r, s));
  ep.subject = "deadline";
  sarah.tags = {"internal"};
  EXPECT_FALSE(RuleMatches(r, s));
}

TEST(RuleOrderTest, PriorityThenSpecificityThenFileOrder) {
  auto f = ParseRuleFile(R"(
rules:
  - name: broad
    summary: s
    when: { tags: vip }
    then: { triage: interrupt_now }
  - name: specific
    summary: s
    when: { tags: vip, signals: [active_focus_block] }
    then: { triage: surface_at_transition }
  - name: urgent
    summary: s
    when: { signals: urgent_language }
    then: { triage: interrupt_now }
    priority: 10
  - name: broad-too
    summary: s
    when: { tags: internal }
    then: { triage: daily_digest }
)");
  ASSERT_TRUE(f.ok());
  std::vector<Rule> rules = f->rules;
  SortForEvaluation(rules);
  std::vector<std::string> names;
  for (const Rule& r : rules) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"urgent", "specific", "broad", "broad-too"}));
}

// Of two learned rules at the same priority and specificity, the one with a signal (a
// focus-block hold rule) is tried before one with weekdays, whatever their order; a
// person's rule still comes before both.
TEST(RuleOrderTest, LearnedRuleWithASignalBeforeOneWithout) {
  auto learned = [](const std::string& name, int position) {
    Rule r;
    r.name = name;
    r.origin = RuleOrigin::kLearned;
    r.position = position;
    r.when.counterparties = {"sam@x.example"};
    return r;
  };
  Rule tuesdays = learned("learned-fast-sam-tue", 0);
  tuesdays.when.weekdays = 1u << 1;
  Rule hold = learned("learned-hold-sam", 1);
  hold.when.signals = {SignalKind::kActiveFocusBlock};
  Rule mine = learned("mine", 2);
  mine.origin = RuleOrigin::kUser;
  mine.when.weekdays = 1u << 1;
  std::vector<Rule> rules = {tuesdays, hold, mine};
  SortForEvaluation(rules);
  std::vector<std::string> names;
  for (const Rule& r : rules) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"mine", "learned-hold-sam", "learned-fast-sam-tue"}));
  // A Tuesday message during a block: the hold rule decides.
  Situation s;
  s.local_weekday = 1;
  s.signals = {{SignalKind::kActiveFocusBlock, "Calendar block 'Deep work' active until 11:00."}};
  Entity sam;
  sam.id = "entity_sam";
  sam.identifiers = {"sam@x.example"};
  s.counterparty = &sam;
  rules.erase(rules.begin());
  ASSERT_TRUE(RuleMatches(rules[0], s));
  EXPECT_EQ(rules[0].name, "learned-hold-sam");
}

TEST(ConfidenceTest, Thresholds) {
  ConfidenceThresholds t;
  Rule r;
  r.support = 0;
  EXPECT_EQ(ConfidenceLabel(r, t), "just_guessing");
  r.support = 3;
  EXPECT_EQ(ConfidenceLabel(r, t), "pretty_sure");
  r.contradictions = 2;  // held 3 of 5 times: 0.6 < 0.75
  EXPECT_EQ(ConfidenceLabel(r, t), "just_guessing");
  r.support = 8;
  r.contradictions = 0;
  EXPECT_EQ(ConfidenceLabel(r, t), "strong_pattern");
  r.contradictions = 1;  // 8/9 = 0.89 < 0.9
  EXPECT_EQ(ConfidenceLabel(r, t), "pretty_sure");
  r.support = 7;
  r.contradictions = 0;
  EXPECT_EQ(ConfidenceLabel(r, t), "pretty_sure");
}

class ImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = *EnsureWorkspace(*store_, clock_, "alpha");
    ASSERT_TRUE(
        IngestJsonl(
            *store_, clock_, ws_.id,
            R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-01T10:00:00Z","counterparty":"a@b.example","summary":"x","external_id":"ev-1"})")
            .ok());
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
  std::vector<Rule> Active() {
    std::vector<Rule> out;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      out = *tx.rules().List(ws_.id, true);
                      return Status::Ok();
                    })
                    .ok());
    return out;
  }
  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T09:00:00Z")};
  Workspace ws_;
};

constexpr char kTwoRules[] = R"(
rules:
  - name: one
    summary: First.
    when: { tags: vip }
    then: { triage: interrupt_now }
    evidence: [ev-1]
  - name: two
    summary: Second.
    when: { tags: newsletter }
    then: { triage: handle_silently }
)";

TEST_F(ImportTest, ImportIsDeclarativeAndMovesAgentVersionOnlyOnChange) {
  std::string av0 = AgentVersion();
  auto first = ImportRules(*store_, clock_, ws_.id, kTwoRules);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->added, 2u);
  EXPECT_NE(first->agent_version, av0);
  auto rules = Active();
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].support, 1);
  EXPECT_EQ(rules[0].evidence.at(0).rfind("ep_", 0), 0u);  // external id resolved

  auto again = ImportRules(*store_, clock_, ws_.id, kTwoRules);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->unchanged, 2u);
  EXPECT_EQ(again->agent_version, first->agent_version);
  EXPECT_EQ(Active()[0].id, rules[0].id);

  auto changed = ImportRules(*store_, clock_, ws_.id, R"(
rules:
  - name: one
    summary: First, but different.
    when: { tags: vip }
    then: { triage: interrupt_now }
)");
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(changed->added, 1u);
  EXPECT_EQ(changed->retired, 2u);
  EXPECT_NE(changed->agent_version, first->agent_version);
  ASSERT_EQ(Active().size(), 1u);
  EXPECT_NE(Active()[0].id, rules[0].id);
}

TEST_F(ImportTest, ABadFileChangesNothing) {
  ASSERT_TRUE(ImportRules(*store_, clock_, ws_.id, kTwoRules).ok());
  std::string av = AgentVersion();
  auto bad = ImportRules(*store_, clock_, ws_.id, R"(
rules:
  - name: one
    summary: First.
    when: { tags: vip }
    then: { triage: interrupt_now }
    evidence: [no-such-episode]
)");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no-such-episode"), std::string::npos);
  EXPECT_EQ(AgentVersion(), av);
  EXPECT_EQ(Active().size(), 2u);
}

}  // namespace
}  // namespace cortex
