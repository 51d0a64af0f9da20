#include "engines/actions/action_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cortex {
namespace {

// The facts DecideAction reads: trust settings, the counterparty, the rules and the
// situation, all built here; no store.
class ActionPolicyTest : public ::testing::Test {
 protected:
  ActionPolicyTest() {
    who_ = Entity{"entity_sarah", "ws_1", "person", "Sarah", {"sarah@n.example"}, {}, {}};
    outgoing_.kind = "message_sent";
    outgoing_.body = "Here is the deck.";
  }

  void Set(const std::string& scope, std::optional<int> level,
           std::optional<int> ceiling = std::nullopt) {
    trust_.push_back(TrustSetting{"communicate", scope, level, ceiling, {}});
  }

  void Rules(const std::string& yaml) {
    auto file = ParseRuleFile("rules:\n" + yaml);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    rules_ = file->rules;
    SortForEvaluation(rules_);
  }

  ActionVerdict Decide() {
    Situation s;
    s.episode = &outgoing_;
    s.counterparty = &who_;
    s.signals = signals_;
    return DecideAction("communicate", trust_, config_, rules_, s);
  }

  Entity who_;
  Episode outgoing_;
  std::vector<Signal> signals_;
  std::vector<TrustSetting> trust_;
  std::vector<Rule> rules_;
  TrustConfig config_;
};

TEST_F(ActionPolicyTest, EachLevelGivesItsFirstStatus) {
  const ActionStatus expected[] = {ActionStatus::kRefused, ActionStatus::kPending,
                                   ActionStatus::kPending, ActionStatus::kExecuted};
  for (int level = 0; level <= 3; ++level) {
    trust_.clear();
    Set("entity:" + who_.id, level);
    ActionVerdict v = Decide();
    EXPECT_EQ(v.level, level);
    EXPECT_EQ(v.trust.source, "entity");
    EXPECT_EQ(v.status(), expected[level]) << level;
    EXPECT_TRUE(v.fired.empty());
  }
}

TEST_F(ActionPolicyTest, TheCounterpartyBeatsItsTagsWhichBeatTheDefault) {
  ActionVerdict v = Decide();
  EXPECT_EQ(v.level, 1);  // nothing set: the built-in default
  EXPECT_EQ(v.trust.source, "built-in default");
  config_.default_level = 2;
  EXPECT_EQ(Decide().level, 2);

  Set("default", 3);
  EXPECT_EQ(Decide().level, 3);
  EXPECT_EQ(Decide().trust.source, "default");

  who_.tags = {"client", "external"};
  Set("tag:client", 2);
  Set("tag:external", 1);  // of several tags, the lowest level
  EXPECT_EQ(Decide().level, 1);
  EXPECT_EQ(Decide().trust.source, "tag:external");

  Set("entity:" + who_.id, 3);
  EXPECT_EQ(Decide().level, 3);
  // Another counterparty's setting and another class's settings count for nothing.
  trust_ = {TrustSetting{"communicate", "entity:entity_other", 0, std::nullopt, {}},
            TrustSetting{"schedule", "default", 0, std::nullopt, {}}};
  EXPECT_EQ(Decide().level, 2);
}

TEST_F(ActionPolicyTest, ATagCeilingCapsEveryLevelAboveIt) {
  who_.tags = {"external"};
  Set("tag:external", std::nullopt, /*ceiling=*/2);
  Set("entity:" + who_.id, 3);
  ActionVerdict v = Decide();
  EXPECT_EQ(v.trust.level, 2);
  EXPECT_EQ(*v.trust.ceiling, 2);
  EXPECT_EQ(v.level, 2);
  Set("tag:external", std::nullopt, /*ceiling=*/0);  // the lowest ceiling holds
  EXPECT_EQ(Decide().level, 0);
  EXPECT_EQ(Decide().status(), ActionStatus::kRefused);
}

TEST_F(ActionPolicyTest, ARuleCapsTheLevelButNeverRaisesIt) {
  Rules(R"(
  - name: external-needs-approval
    summary: Never send to external counterparties without approval.
    action: communicate
    when: { tags: external }
    then: { max_level: 1 }
)");
  Set("default", 3);
  EXPECT_EQ(Decide().level, 3);  // the rule does not match Sarah
  who_.tags = {"external"};
  ActionVerdict v = Decide();
  EXPECT_EQ(v.trust.level, 3);
  EXPECT_EQ(v.level, 1);
  ASSERT_EQ(v.fired.size(), 1u);
  EXPECT_EQ(v.fired[0]->name, "external-needs-approval");
  EXPECT_EQ(v.blocked_by, nullptr);

  trust_.clear();
  Set("default", 0);  // a cap of 1 does not lift a level of 0
  EXPECT_EQ(Decide().level, 0);
}

TEST_F(ActionPolicyTest, SeveralRulesTheLowestCapBlockAndUrgent) {
  Rules(R"(
  - name: cap-two
    summary: Supervise everything.
    action: communicate
    when: {}
    then: { max_level: 2, urgent: true }
  - name: cap-one-on-wires
    summary: Wires need approval.
    action: communicate
    when: { words: [wire] }
    then: { max_level: 1 }
  - name: no-passwords
    summary: Never send passwords.
    action: communicate
    when: { words: [password] }
    then: { block: true }
)");
  Set("default", 3);
  ActionVerdict v = Decide();
  EXPECT_EQ(v.level, 2);
  EXPECT_TRUE(v.urgent);
  EXPECT_EQ(v.fired.size(), 1u);

  outgoing_.body = "The wire goes out today.";
  v = Decide();
  EXPECT_EQ(v.level, 1);
  EXPECT_EQ(v.fired.size(), 2u);

  outgoing_.body = "The wire password is below.";
  v = Decide();
  EXPECT_EQ(v.level, 0);
  EXPECT_EQ(v.status(), ActionStatus::kRefused);
  ASSERT_NE(v.blocked_by, nullptr);
  EXPECT_EQ(v.blocked_by->name, "no-passwords");
  EXPECT_EQ(v.fired.size(), 3u);
}

TEST_F(ActionPolicyTest, TriageRulesAndRulesOfOtherSignalsDoNotFire) {
  Rules(R"(
  - name: vip-now
    summary: VIPs interrupt.
    when: { signals: [vip_counterparty] }
    then: { triage: interrupt_now }
  - name: first-contact-draft
    summary: A first message to someone new is a draft.
    action: communicate
    when: { signals: [first_contact] }
    then: { max_level: 1 }
)");
  Set("default", 3);
  signals_ = {{SignalKind::kVipCounterparty, "Sender is in VIP watchlist."}};
  ActionVerdict v = Decide();
  EXPECT_EQ(v.level, 3);
  EXPECT_TRUE(v.fired.empty());
  Signal first{SignalKind::kFirstContact, "No earlier episode with this counterparty."};
  signals_.push_back(first);
  EXPECT_EQ(Decide().level, 1);
}

}  // namespace
}  // namespace cortex
