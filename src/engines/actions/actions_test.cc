#include "engines/actions/actions.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <thread>

#include "core/crypto.h"
#include "core/time.h"
#include "engines/actions/ledger.h"
#include "engines/actions/trust.h"
#include "engines/auth/tokens.h"
#include "engines/delivery/delivery.h"
#include "engines/triage/rules.h"
#include "engines/world/ingest.h"
#include "store/actions.h"
#include "store/decisions.h"
#include "store/entities.h"
#include "store/ledger.h"
#include "store/outbox.h"
#include "store/trust.h"
#include "store/workspaces.h"
#include "testing/temp_store.h"
#include "tools/cortex_tools.h"

namespace cortex {
namespace {

const Actor kPerson{"cli", "", ""};

using nlohmann::json;

CommunicateRequest Req(std::string to, std::string message, std::string tone = "") {
  CommunicateRequest r;
  r.to = std::move(to);
  r.message = std::move(message);
  r.tone = std::move(tone);
  return r;
}

// A connector that fails its first `failures` deliveries, then records what it got.
class FlakyConnector : public Connector {
 public:
  explicit FlakyConnector(int failures) : failures_(failures) {}
  const char* name() const override { return "flaky"; }
  Status Deliver(const OutboxItem& item) override {
    if (failures_-- > 0) return Status::Unavailable("receiver down");
    delivered.push_back(item.id);
    return Status::Ok();
  }
  std::vector<std::string> delivered;

 private:
  int failures_;
};

class ActionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = *EnsureWorkspace(*store_, clock_, "alpha");
    ASSERT_TRUE(
        IngestJsonl(
            *store_, clock_, ws_.id,
            R"({"type":"entity","name":"Sarah Chen","identifiers":["sarah@n.example"],"tags":["vip","internal"]}
{"type":"entity","name":"Marcus Webb","identifiers":["marcus@h.example"],"tags":["external"]}
{"type":"episode","kind":"message_received","occurred_at":"2026-06-09T13:24:00Z","counterparty":"marcus@h.example","summary":"Marcus: 'Can you confirm by EOD Tuesday?'","external_id":"m1"})")
            .ok());
    config_.trust.approvals_to_raise = 2;
  }

  ActionResult Send(const std::string& to, const std::string& message = "Quick check") {
    auto r = engine().Communicate(ws_.id, Req(to, message));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ActionResult{};
  }

  ActionEngine engine() { return ActionEngine(*store_, clock_, config_); }

  void SetTrust(const std::string& scope, std::optional<int> level,
                std::optional<int> ceiling = std::nullopt) {
    ASSERT_TRUE(store_
                    ->Write([&](WriteTx& tx) {
                      auto s = ResolveTrustScope(tx, ws_.id, scope);
                      if (!s.ok()) return s.status();
                      return tx.trust().Set(
                          ws_.id, TrustSetting{"communicate", *s, level, ceiling, clock_.Now()});
                    })
                    .ok());
  }

  Decision GetDecision(const std::string& id) {
    Decision d;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      d = *tx.decisions().Get(ws_.id, id);
                      return Status::Ok();
                    })
                    .ok());
    return d;
  }

  Action GetAction(const std::string& id) {
    Action a;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      a = *tx.actions().Get(ws_.id, id);
                      return Status::Ok();
                    })
                    .ok());
    return a;
  }

  std::vector<LedgerEntry> Ledger(const std::string& action_id) {
    std::vector<LedgerEntry> out;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      out = *tx.ledger().ListForAction(ws_.id, action_id);
                      return Status::Ok();
                    })
                    .ok());
    return out;
  }

  std::vector<std::string> Events(const std::string& action_id) {
    std::vector<std::string> out;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      for (const LedgerEntry& e : *tx.ledger().ListForAction(ws_.id, action_id))
                        out.push_back(std::string(Name(e.event)));
                      return Status::Ok();
                    })
                    .ok());
    return out;
  }

  int Level(const std::string& who) {
    int level = -1;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      auto e = tx.entities().FindByIdentifier(ws_.id, who);
                      level = LookupTrust(tx, ws_.id, "communicate", *e, config_.trust)->level;
                      return Status::Ok();
                    })
                    .ok());
    return level;
  }

  std::vector<Decision> Transitions() {
    std::vector<Decision> out;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      DecisionFilter f;
                      f.decision_class = DecisionClass::kTrustTransition;
                      out = *tx.decisions().List(ws_.id, f, 100);
                      return Status::Ok();
                    })
                    .ok());
    return out;
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-09T14:00:00Z")};
  ActionConfig config_;
  Workspace ws_;
};

TEST_F(ActionsTest, DefaultLevelIsADraftAwaitingApproval) {
  ActionResult r = Send("sarah@n.example");
  EXPECT_EQ(r.outcome, ActionOutcome::kPendingApproval);
  EXPECT_EQ(r.decision_id.rfind("dec_", 0), 0u);
  EXPECT_EQ(r.action_id.rfind("act_", 0), 0u);
  Decision d = GetDecision(r.decision_id);
  EXPECT_EQ(Name(d.decision_class), "action_proposed");
  EXPECT_EQ(Name(d.status), "pending");
  ASSERT_TRUE(d.ledger_entry_id.has_value());
  Action a = GetAction(r.action_id);
  EXPECT_EQ(a.level, 1);
  EXPECT_EQ(FormatTime(*a.due_at), "2026-06-10T14:00:00Z");  // expires in 24 h
  EXPECT_EQ(Events(r.action_id), std::vector<std::string>{"proposed"});
}

TEST_F(ActionsTest, EachLevelDecidesWhatHappens) {
  SetTrust("sarah@n.example", 0);
  ActionResult off = Send("sarah@n.example");
  EXPECT_EQ(off.outcome, ActionOutcome::kError);
  EXPECT_EQ(off.error, "trust_insufficient");
  EXPECT_EQ(Name(GetDecision(off.decision_id).status), "refused");  // still inspectable
  EXPECT_EQ(Events(off.action_id), std::vector<std::string>{"refused"});

  SetTrust("sarah@n.example", 2);
  ActionResult supervised = Send("sarah@n.example");
  EXPECT_EQ(supervised.outcome, ActionOutcome::kPendingApproval);
  EXPECT_EQ(FormatTime(*GetAction(supervised.action_id).due_at), "2026-06-09T14:10:00Z");

  SetTrust("sarah@n.example", 3);
  ActionResult autonomous = Send("sarah@n.example");
  EXPECT_EQ(autonomous.outcome, ActionOutcome::kSuccess);
  EXPECT_EQ(Name(GetAction(autonomous.action_id).status), "executed");
  EXPECT_EQ(Events(autonomous.action_id), (std::vector<std::string>{"proposed", "executed"}));

  FlakyConnector connector(0);
  DeliveryConfig delivery;
  Dispatcher dispatcher(*store_, clock_, connector, delivery);
  EXPECT_EQ(*dispatcher.RunOnce(clock_.Now()), 1);
  EXPECT_EQ(connector.delivered, std::vector<std::string>{autonomous.action_id});
  EXPECT_EQ(Name(GetAction(autonomous.action_id).status), "delivered");
  EXPECT_EQ(Name(GetDecision(autonomous.decision_id).status), "delivered");
}

TEST_F(ActionsTest, ActionRulesCapBlockAndFire) {
  SetTrust("default", 3);
  ASSERT_TRUE(ImportRules(*store_, clock_, ws_.id, R"(
rules:
  - name: external-needs-approval
    summary: Never send to external counterparties without approval.
    action: communicate
    when: { tags: external }
    then: { max_level: 1 }
  - name: no-wire-transfers
    summary: Never send anything about wire transfers.
    action: communicate
    when: { words: [wire transfer] }
    then: { block: true }
)")
                  .ok());
  ActionResult capped = Send("marcus@h.example");
  EXPECT_EQ(capped.outcome, ActionOutcome::kPendingApproval);
  Decision d = GetDecision(capped.decision_id);
  EXPECT_EQ(*d.rule_summary, "Never send to external counterparties without approval.");
  EXPECT_EQ(d.Details()["rules_fired"].size(), 1u);
  Decision fired = GetDecision(d.Details()["rules_fired"][0]);
  EXPECT_EQ(Name(fired.decision_class), "rule_fired");
  EXPECT_EQ(fired.trace_id, d.trace_id);
  // The proposal links the notification it answers.
  ASSERT_TRUE(d.triage_decision_id.has_value());
  EXPECT_EQ(Name(GetDecision(*d.triage_decision_id).decision_class), "triage");

  ActionResult blocked = Send("sarah@n.example", "Please send the wire transfer today");
  EXPECT_EQ(blocked.outcome, ActionOutcome::kError);
  EXPECT_EQ(blocked.error, "trust_insufficient");
  EXPECT_NE(blocked.message.find("no-wire-transfers"), std::string::npos);
  EXPECT_EQ(Send("sarah@n.example", "Lunch?").outcome, ActionOutcome::kSuccess);
}

TEST_F(ActionsTest, UnknownAddressIsFirstContactAndUnknownEntityIsAnError) {
  ActionResult r = Send("Taylor@Brightfield.example");
  EXPECT_EQ(r.outcome, ActionOutcome::kPendingApproval);
  Decision d = GetDecision(r.decision_id);
  EXPECT_TRUE(d.Details()["first_contact"].get<bool>());
  bool signal = false;
  const nlohmann::json details = d.Details();
  for (const auto& s : details.at("signals")) signal |= s["kind"] == "first_contact";
  EXPECT_TRUE(signal);
  auto missing = engine().Communicate(ws_.id, Req("entity_01M8PS06M053VVFGPPNAWWM0AA", "hi"));
  EXPECT_EQ(missing.status().code(), Code::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("field 'to'"), std::string::npos);
  auto bad_tone = engine().Communicate(ws_.id, Req("sarah@n.example", "hi", "sarcastic"));
  EXPECT_EQ(bad_tone.status().code(), Code::kInvalidArgument);
}

TEST_F(ActionsTest, ApproveExecutesOnceAndTwiceIsAClearError) {
  ActionResult r = Send("sarah@n.example");
  auto ok = engine().Approve(ws_.id, r.decision_id, std::nullopt, kPerson);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->outcome, ActionOutcome::kSuccess);
  EXPECT_EQ(Events(r.action_id), (std::vector<std::string>{"proposed", "approved", "executed"}));
  auto again = engine().Approve(ws_.id, r.decision_id, std::nullopt, kPerson);
  EXPECT_EQ(again.status().code(), Code::kConflict);
  EXPECT_NE(again.status().message().find("is executed, not pending"), std::string::npos);
  auto reject = engine().Reject(ws_.id, r.decision_id, std::nullopt, kPerson);
  EXPECT_EQ(reject.status().code(), Code::kConflict);
  auto unknown = engine().Approve(ws_.id, "dec_01M8PS06M053VVFGPPNAWWM0AA", std::nullopt, kPerson);
  EXPECT_EQ(unknown.status().code(), Code::kNotFound);
}

TEST_F(ActionsTest, EditsAreRecordedAndSent) {
  ActionResult r = Send("sarah@n.example", "draft text");
  ASSERT_TRUE(engine().Approve(ws_.id, r.decision_id, std::string("edited text"), kPerson).ok());
  EXPECT_EQ(GetAction(r.action_id).draft, "edited text");
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    auto entries = *tx.ledger().ListForAction(ws_.id, r.action_id);
                    EXPECT_EQ(Name(entries[1].event), "approved");
                    EXPECT_TRUE(entries[1].detail["edited"].get<bool>());
                    EXPECT_EQ(entries[1].detail["draft_before"], "draft text");
                    auto due = *tx.outbox().Due(clock_.Now(), OutboxKind::kMessage, 10);
                    EXPECT_EQ(due.at(0).body, "edited text");
                    return Status::Ok();
                  })
                  .ok());
}

TEST_F(ActionsTest, TrustRisesWithCleanApprovalsAndFallsWithARejection) {
  SetTrust("tag:external", std::nullopt, /*ceiling=*/2);
  EXPECT_EQ(Level("marcus@h.example"), 1);
  for (int i = 0; i < 2; ++i) {
    ActionResult r = Send("marcus@h.example");
    ASSERT_TRUE(engine().Approve(ws_.id, r.decision_id, std::nullopt, kPerson).ok());
  }
  EXPECT_EQ(Level("marcus@h.example"), 2);
  auto moves = Transitions();
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_NE(moves[0].payload_summary.find("from 1 (draft) to 2 (supervised)"), std::string::npos)
      << moves[0].payload_summary;
  EXPECT_EQ(moves[0].Details()["evidence_decision_ids"].size(), 2u);
  // The ceiling: two more clean approvals do not take an external counterparty past 2.
  for (int i = 0; i < 2; ++i) {
    ActionResult r = Send("marcus@h.example");
    ASSERT_TRUE(engine().Approve(ws_.id, r.decision_id, std::nullopt, kPerson).ok());
  }
  EXPECT_EQ(Level("marcus@h.example"), 2);
  EXPECT_EQ(Transitions().size(), 1u);
  // An edit resets the streak; a rejection lowers the level.
  ActionResult edited = Send("marcus@h.example");
  ASSERT_TRUE(engine().Approve(ws_.id, edited.decision_id, std::string("changed"), kPerson).ok());
  ActionResult rejected = Send("marcus@h.example");
  auto rej = engine().Reject(ws_.id, rejected.decision_id, std::string("wrong tone"), kPerson);
  ASSERT_TRUE(rej.ok());
  EXPECT_EQ(Level("marcus@h.example"), 1);
  EXPECT_EQ(Transitions().size(), 2u);
  EXPECT_EQ(Events(rejected.action_id), (std::vector<std::string>{"proposed", "rejected"}));
  // A rejection at level 1 moves nothing: only a person turns a counterparty off.
  ActionResult again = Send("marcus@h.example");
  ASSERT_TRUE(engine().Reject(ws_.id, again.decision_id, std::nullopt, kPerson).ok());
  EXPECT_EQ(Level("marcus@h.example"), 1);
  EXPECT_EQ(Transitions().size(), 2u);
  // Each move names who made it.
  EXPECT_EQ(Transitions()[0].Details()["by"], (json{{"channel", "cli"}}));
}

TEST_F(ActionsTest, EarnedTrustStopsAtARuleThatHoldsTheCounterparty) {
  ASSERT_TRUE(ImportRules(*store_, clock_, ws_.id, R"(
rules:
  - name: sarah-drafts
    summary: Everything to Sarah is a draft I approve.
    action: communicate
    when: { counterparty: sarah@n.example }
    then: { max_level: 1 }
  - name: wires-blocked
    summary: Never send anything about wires.
    action: communicate
    when: { words: [wire] }
    then: { block: true }
)")
                  .ok());
  for (int i = 0; i < 4; ++i) {
    ActionResult r = Send("sarah@n.example");
    ASSERT_TRUE(engine().Approve(ws_.id, r.decision_id, std::nullopt, kPerson).ok());
  }
  EXPECT_EQ(Level("sarah@n.example"), 1);  // no "raised to 2" the rule would contradict
  EXPECT_TRUE(Transitions().empty());
  // A rule about some messages only (words) does not hold the counterparty.
  for (int i = 0; i < 2; ++i) {
    ActionResult r = Send("marcus@h.example");
    ASSERT_TRUE(engine().Approve(ws_.id, r.decision_id, std::nullopt, kPerson).ok());
  }
  EXPECT_EQ(Level("marcus@h.example"), 2);
}

TEST_F(ActionsTest, APersonSetsTrustAndTheDecisionSaysWho) {
  Status st = store_->Write([&](WriteTx& tx) -> Status {
    auto scope = ResolveTrustScope(tx, ws_.id, "sarah@n.example");
    if (!scope.ok()) return scope.status();
    auto d = SetTrustByPerson(tx, clock_, ws_.id, "communicate", *scope, 0, std::nullopt,
                              config_.trust, Actor{"web", "", "ses_1"});
    if (!d.ok()) return d.status();
    EXPECT_EQ(
        d->payload_summary,
        "Lower communicate trust for Sarah Chen from 1 (draft) to 0 (off) set by a person (web).");
    EXPECT_EQ(d->Details()["by"], (json{{"channel", "web"}, {"session", "ses_1"}}));
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Level("sarah@n.example"), 0);
  ActionResult off = Send("sarah@n.example");
  EXPECT_EQ(off.error, "trust_insufficient");
  // Bad input changes nothing.
  Status bad = store_->Write([&](WriteTx& tx) {
    return SetTrustByPerson(tx, clock_, ws_.id, "communicate", "default", 7, std::nullopt,
                            config_.trust, Actor{"web", "", ""})
        .status();
  });
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_EQ(Transitions().size(), 1u);
}

TEST_F(ActionsTest, AnActionWithNoRuleIsExplainedByItsTrust) {
  ActionResult r = Send("sarah@n.example");
  EXPECT_EQ(r.draft, "Quick check");
  Decision d = GetDecision(r.decision_id);
  EXPECT_EQ(*d.rule_summary,
            "Held for your approval: trust for communicate with Sarah Chen is level 1 (draft, "
            "from built-in default).");
  EXPECT_EQ(d.confidence, "just_guessing");
  SetTrust("tag:external", std::nullopt, /*ceiling=*/2);
  SetTrust("marcus@h.example", 3);
  ActionResult capped = Send("marcus@h.example");
  EXPECT_EQ(
      *GetDecision(capped.decision_id).rule_summary,
      "Sent after the undo window unless you reject it: trust for communicate with Marcus Webb "
      "is level 2 (supervised, from entity), held there by the ceiling of their tags.");
}

TEST_F(ActionsTest, TrustTransitionsMoveTheAgentVersion) {
  std::string before = ws_.agent_version;
  for (int i = 0; i < 2; ++i) {
    ActionResult r = Send("sarah@n.example");
    ASSERT_TRUE(engine().Approve(ws_.id, r.decision_id, std::nullopt, kPerson).ok());
  }
  auto moves = Transitions();
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_NE(moves[0].agent_version, before);
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    EXPECT_EQ(tx.workspaces().Get(ws_.id)->agent_version, moves[0].agent_version);
                    return Status::Ok();
                  })
                  .ok());
}

TEST_F(ActionsTest, DraftsExpireAndSupervisedActionsExecuteWhenTheirTimeComes) {
  ActionResult draft = Send("sarah@n.example");
  SetTrust("marcus@h.example", 2);
  ActionResult supervised = Send("marcus@h.example");
  EXPECT_EQ(*engine().ProcessDue(clock_.Now()), 0);
  clock_.Advance(std::chrono::minutes(11));
  EXPECT_EQ(*engine().ProcessDue(clock_.Now()), 1);
  EXPECT_EQ(Name(GetAction(supervised.action_id).status), "executed");
  clock_.Advance(std::chrono::hours(24));
  store_.Reopen();  // due times live in the store: a restart loses nothing
  EXPECT_EQ(*engine().ProcessDue(clock_.Now()), 1);
  EXPECT_EQ(Name(GetAction(draft.action_id).status), "expired");
  EXPECT_EQ(Name(GetDecision(draft.decision_id).status), "expired");
  auto late = engine().Approve(ws_.id, draft.decision_id, std::nullopt, kPerson);
  EXPECT_NE(late.status().message().find("is expired"), std::string::npos);
}

TEST_F(ActionsTest, ConcurrentApprovalsAndTheUndoWindowExecuteOnce) {
  config_.trust.approvals_to_raise = 1000;  // keep every round at level 2
  SetTrust("sarah@n.example", 2);
  for (int round = 0; round < 5; ++round) {
    ActionResult r = Send("sarah@n.example", "round " + std::to_string(round));
    clock_.Advance(std::chrono::minutes(11));  // the undo window has passed too
    std::atomic<int> successes{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        ActionEngine e(*store_, clock_, config_);
        if (e.Approve(ws_.id, r.decision_id, std::nullopt, kPerson).ok()) ++successes;
      });
    }
    threads.emplace_back([&] {
      ActionEngine e(*store_, clock_, config_);
      auto n = e.ProcessDue(clock_.Now());
      if (n.ok()) successes += *n;
    });
    for (auto& t : threads) t.join();
    EXPECT_EQ(successes.load(), 1) << "round " << round;
    auto events = Events(r.action_id);
    EXPECT_EQ(std::count(events.begin(), events.end(), "executed"), 1);
  }
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    EXPECT_EQ(tx.outbox().Due(clock_.Now(), OutboxKind::kMessage, 100)->size(),
                              5u);  // one outbox row per action
                    return Status::Ok();
                  })
                  .ok());
}

TEST_F(ActionsTest, DeliveryRetriesWithBackoffThenFails) {
  SetTrust("sarah@n.example", 3);
  ActionResult r = Send("sarah@n.example");
  FlakyConnector connector(2);
  DeliveryConfig delivery;
  Dispatcher dispatcher(*store_, clock_, connector, delivery);
  EXPECT_EQ(*dispatcher.RunOnce(clock_.Now()), 0);
  EXPECT_EQ(*dispatcher.RunOnce(clock_.Now()), 0);  // not due again yet: backing off
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(*dispatcher.RunOnce(clock_.Now()), 0);  // second failure
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_EQ(*dispatcher.RunOnce(clock_.Now()), 1);
  EXPECT_EQ(Events(r.action_id), (std::vector<std::string>{"proposed", "executed", "delivered"}));

  ActionResult doomed = Send("sarah@n.example", "never arrives");
  FlakyConnector dead(1000);
  delivery.max_attempts = 3;
  Dispatcher d2(*store_, clock_, dead, delivery);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(d2.RunOnce(clock_.Now()).ok());
    clock_.Advance(std::chrono::minutes(10));
  }
  EXPECT_EQ(Name(GetAction(doomed.action_id).status), "failed");
  EXPECT_EQ(Events(doomed.action_id).back(), "failed");
  EXPECT_EQ(RetryBackoff(1), std::chrono::seconds(1));
  EXPECT_EQ(RetryBackoff(4), std::chrono::seconds(8));
  EXPECT_EQ(RetryBackoff(30), std::chrono::minutes(5));
}

TEST_F(ActionsTest, TheLedgerChainVerifiesAndCatchesTampering) {
  for (int i = 0; i < 3; ++i) {
    ActionResult r = Send("sarah@n.example", "message " + std::to_string(i));
    ASSERT_TRUE(engine().Approve(ws_.id, r.decision_id, std::nullopt, kPerson).ok());
  }
  auto check = VerifyLedger(*store_, ws_.id);
  ASSERT_TRUE(check.ok());
  EXPECT_TRUE(check->ok) << check->problem;
  EXPECT_EQ(check->entries, 9);

  auto tamper = [&](const char* sql) { store_.ExecRaw(sql); };
  tamper("UPDATE ledger SET detail = '{\"level\":3}' WHERE seq = 4");
  check = VerifyLedger(*store_, ws_.id);
  EXPECT_FALSE(check->ok);
  EXPECT_NE(check->problem.find("seq 4"), std::string::npos) << check->problem;
  EXPECT_NE(check->problem.find("edited"), std::string::npos);
}

TEST_F(ActionsTest, DeletionsAndTruncationAreCaughtToo) {
  for (int i = 0; i < 2; ++i) {
    ActionResult r = Send("sarah@n.example", "message " + std::to_string(i));
    ASSERT_TRUE(engine().Approve(ws_.id, r.decision_id, std::nullopt, kPerson).ok());
  }
  auto exec = [&](const char* sql) { store_.ExecRaw(sql); };
  exec("DELETE FROM ledger WHERE seq = 6");  // the last entry
  auto check = VerifyLedger(*store_, ws_.id);
  EXPECT_FALSE(check->ok);
  EXPECT_NE(check->problem.find("deleted from its end"), std::string::npos) << check->problem;
  exec("DELETE FROM ledger WHERE seq = 2");
  check = VerifyLedger(*store_, ws_.id);
  EXPECT_FALSE(check->ok);
  EXPECT_NE(check->problem.find("seq 3"), std::string::npos) << check->problem;
}

TEST_F(ActionsTest, WhyThisActionAndInspectReadTheLedger) {
  ASSERT_TRUE(ImportRules(*store_, clock_, ws_.id, R"(
rules:
  - name: marcus-tuesdays
    summary: Reply to Marcus quickly on Tuesdays — he expects same-day for project updates.
    when: { counterparty: marcus@h.example, weekdays: tue }
    then: { triage: interrupt_now }
    evidence: [m1]
)")
                  .ok());
  ASSERT_TRUE(
      IngestJsonl(
          *store_, clock_, ws_.id,
          R"({"type":"episode","kind":"message_received","occurred_at":"2026-06-09T13:50:00Z","counterparty":"marcus@h.example","summary":"Marcus: 'Timeline?'"})")
          .ok());
  ActionResult r = Send("marcus@h.example", "Yes, confirmed for Tuesday.");
  EngineConfig config;
  ToolRegistry registry;
  ASSERT_TRUE(RegisterCortexTools(registry, config).ok());
  registry.set_check_output(true);
  AuthContext auth{ws_.id, "alpha", "tok", kScopeRead | kScopeAct};
  ToolContext ctx{auth, *store_, clock_, "trc_t", nullptr, [](json) {}};
  json why = registry.Call("meta.why_this_action", {{"action_id", r.action_id}}, ctx).body();
  EXPECT_EQ(why["rule_summary"],
            "Reply to Marcus quickly on Tuesdays — he expects same-day for project updates.");
  EXPECT_EQ(why["confidence"], "just_guessing");  // one evidence episode
  ASSERT_GE(why["contributing_episodes"].size(), 2u);
  EXPECT_EQ(why["contributing_episodes"][0]["summary"], "Marcus: 'Timeline?'");
  EXPECT_EQ(why.size(), 6u);  // exactly the seed's fields
  json inspect = registry.Call("decision.inspect", {{"decision_id", r.decision_id}}, ctx).body();
  EXPECT_EQ(inspect["decision_class"], "action_proposed");
  EXPECT_EQ(inspect["ledger_entry_id"].get<std::string>().rfind("led_", 0), 0u);
  EXPECT_EQ(inspect["triage_decision_id"].get<std::string>().rfind("dec_", 0), 0u);
  EXPECT_EQ(inspect["reasoning"]["rule_summary"], why["rule_summary"]);
  // The tool surface: a read token cannot act, and an agent's read,act token cannot approve
  // or reject its own draft; a person's token (approve) can, and the ledger names it.
  AuthContext reader{ws_.id, "alpha", "tok", kScopeRead};
  ToolContext rctx{reader, *store_, clock_, "trc_t", nullptr, [](json) {}};
  EXPECT_EQ(registry.Call("action.approve", {{"decision_id", r.decision_id}}, rctx).body()["error"],
            "unauthorized");
  for (const char* tool : {"action.approve", "action.reject"}) {
    json refused = registry.Call(tool, {{"decision_id", r.decision_id}}, ctx).body();
    EXPECT_EQ(refused["error"], "unauthorized") << tool;
    EXPECT_NE(refused["message"].get<std::string>().find("'approve'"), std::string::npos)
        << refused["message"];
  }
  EXPECT_EQ(Name(GetAction(r.action_id).status), "pending");
  AuthContext person{ws_.id, "alpha", "tok_person", kScopeRead | kScopeApprove};
  ToolContext pctx{person, *store_, clock_, "trc_t", nullptr, [](json) {}};
  EXPECT_EQ(
      registry.Call("action.approve", {{"decision_id", r.decision_id}}, pctx).body()["status"],
      "success");
  auto entries = Ledger(r.action_id);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(Name(entries[1].event), "approved");
  EXPECT_EQ(entries[1].detail["by"], (json{{"channel", "mcp"}, {"token_id", "tok_person"}}));
  json twice = registry.Call("action.approve", {{"decision_id", r.decision_id}}, pctx).body();
  EXPECT_EQ(twice["error"], "not_pending");
  EXPECT_EQ(
      registry.Call("meta.why_this_action", {{"action_id", "act_01M8PS06M053VVFGPPNAWWM0AA"}}, ctx)
          .body()["error"],
      "not_found");
}

// Ledgers written by earlier builds must still verify: an entry's hash is SHA-256 of the
// previous hash, a newline and nlohmann's compact text of its fields, whatever writes it.
TEST(LedgerHashTest, HashesTheCanonicalTextEarlierBuildsHashed) {
  LedgerEntry e;
  e.id = "led_01M8R3P2ZTDDMF6JRP5QR6SHH4";
  e.workspace_id = "ws_01M8R3P136F93RYD6XFJ8J2T00";
  e.seq = 42;
  e.action_id = "act_01M8R3P2ZSB6SY5KPMK4G8TP3Z";
  e.decision_id = "dec_01M8R3P2ZTDDMF6JRP5QR6SHH5";
  e.event = LedgerEvent::kExecuted;
  e.occurred_at = FromUnixMillis(1778592240250);
  e.provenance = {{"rule_summary", "Sarah\u2019s \"urgent\" mail\n"},
                  {"contributing_episodes", {{{"id", "ep_1"}, {"summary", "caf\xc3\xa9 \x01"}}}},
                  {"confidence", "pretty_sure"}};
  e.detail = {{"text", "line one\nline \\two\t"}, {"attempt", 2}, {"ok", true}};
  e.prev_hash = std::string(64, 'a');
  nlohmann::json canonical = {{"id", e.id},
                              {"workspace_id", e.workspace_id},
                              {"seq", e.seq},
                              {"action_id", e.action_id},
                              {"decision_id", e.decision_id},
                              {"event", Name(e.event)},
                              {"occurred_at", ToUnixMillis(e.occurred_at)},
                              {"provenance", e.provenance},
                              {"detail", e.detail}};
  EXPECT_EQ(LedgerHash(e),
            Sha256Hex(e.prev_hash + "\n" +
                      canonical.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

}  // namespace
}  // namespace cortex
