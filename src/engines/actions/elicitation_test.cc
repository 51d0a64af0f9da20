// Approval inside the person's MCP client: the question a draft becomes, and the answer,
// which counts once, for the token asked, for the same call, before it expires.
#include "engines/actions/elicitation.h"

#include <gtest/gtest.h>

#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/world/ingest.h"
#include "store/actions.h"
#include "store/ledger.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

using nlohmann::json;

class ElicitationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = *EnsureWorkspace(*store_, clock_, "alpha");
    ASSERT_TRUE(
        IngestJsonl(*store_, clock_, ws_.id,
                    R"({"type":"entity","name":"Marcus Webb","identifiers":["marcus@h.example"]})")
            .ok());
    CommunicateRequest req;
    req.to = "marcus@h.example";
    req.message = "Can we move the review to Friday?";
    auto r = ActionEngine(*store_, clock_, config_).Communicate(ws_.id, req);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->outcome, ActionOutcome::kPendingApproval);
    pending_ = *r;
    auto asked = AskInClient(*store_, clock_, ws_.id, "tok_person", args_, pending_);
    ASSERT_TRUE(asked.ok()) << asked.status().ToString();
    asked_ = *asked;
  }

  Result<ActionResult> Answer(const json& answer, const std::string& token = "tok_person",
                              const json& args = json()) {
    return AnswerInClient(*store_, clock_, config_, ws_.id, token, args.is_null() ? args_ : args,
                          asked_.request_state, {{"approval", answer}});
  }

  ActionStatus Status() {
    ActionStatus s{};
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      s = tx.actions().Get(ws_.id, pending_.action_id)->status;
                      return cortex::Status::Ok();
                    })
                    .ok());
    return s;
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T16:00:00Z")};
  ActionConfig config_;
  Workspace ws_;
  json args_ = {{"to", "marcus@h.example"}, {"message", "Can we move the review to Friday?"}};
  ActionResult pending_;
  InputRequired asked_;
};

TEST_F(ElicitationTest, TheDraftBecomesAFormToApproveEditOrReject) {
  const json& q = asked_.input_requests["approval"];
  EXPECT_EQ(q["method"], "elicitation/create");
  EXPECT_EQ(q["params"]["mode"], "form");
  std::string message = q["params"]["message"];
  EXPECT_NE(message.find("Marcus Webb (marcus@h.example)"), std::string::npos) << message;
  EXPECT_NE(message.find(pending_.draft), std::string::npos) << message;
  const json& schema = q["params"]["requestedSchema"];
  EXPECT_EQ(schema["required"], json::array({"decision"}));
  EXPECT_EQ(schema["properties"]["message"]["default"], pending_.draft);
  EXPECT_EQ(asked_.request_state.rfind("eli_", 0), 0u);
}

TEST_F(ElicitationTest, AnApprovalWithEditsIsThePersonsAndCountsOnce) {
  auto r = Answer({{"action", "accept"},
                   {"content", {{"decision", "approve"}, {"message", "Friday works? Thanks!"}}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, ActionOutcome::kSuccess);
  EXPECT_EQ(Status(), ActionStatus::kExecuted);
  std::vector<LedgerEntry> ledger;
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    ledger = *tx.ledger().ListForAction(ws_.id, pending_.action_id);
                    return cortex::Status::Ok();
                  })
                  .ok());
  ASSERT_GE(ledger.size(), 2u);
  EXPECT_EQ(ledger[1].event, LedgerEvent::kApproved);
  EXPECT_EQ(ledger[1].detail["by"], json({{"channel", "elicitation"}, {"token_id", "tok_person"}}));
  EXPECT_EQ(ledger[1].detail["edited"], true);

  auto again = Answer({{"action", "accept"}, {"content", {{"decision", "reject"}}}});
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already answered"), std::string::npos);
}

TEST_F(ElicitationTest, AForeignTamperedOrLateStateChangesNothing) {
  json approve = {{"action", "accept"}, {"content", {{"decision", "approve"}}}};
  auto other_token = Answer(approve, "tok_agent");
  EXPECT_EQ(other_token.status().code(), Code::kInvalidArgument);
  auto other_call = Answer(approve, "tok_person", {{"to", "marcus@h.example"}, {"message", "x"}});
  EXPECT_EQ(other_call.status().code(), Code::kInvalidArgument);
  std::string state = asked_.request_state;
  asked_.request_state = state.substr(0, state.size() - 1) + (state.back() == '0' ? "1" : "0");
  EXPECT_EQ(Answer(approve).status().code(), Code::kInvalidArgument);
  asked_.request_state = "not-a-state";
  EXPECT_EQ(Answer(approve).status().code(), Code::kInvalidArgument);
  asked_.request_state = state;
  EXPECT_EQ(Answer({{"action", "accept"}, {"content", {{"decision", "maybe"}}}}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(Status(), ActionStatus::kPending);  // none of those burned the state

  clock_.Advance(kElicitationLifetime);
  auto late = Answer(approve);
  ASSERT_FALSE(late.ok());
  EXPECT_NE(late.status().message().find("expired"), std::string::npos);
  EXPECT_EQ(Status(), ActionStatus::kPending);
}

TEST_F(ElicitationTest, ARejectionEndsItAndADeclineLeavesItForTheInbox) {
  auto declined = Answer({{"action", "decline"}});
  ASSERT_TRUE(declined.ok()) << declined.status().ToString();
  EXPECT_EQ(declined->outcome, ActionOutcome::kPendingApproval);
  EXPECT_NE(declined->message.find("inbox"), std::string::npos);
  EXPECT_EQ(Status(), ActionStatus::kPending);

  auto asked = AskInClient(*store_, clock_, ws_.id, "tok_person", args_, pending_);
  ASSERT_TRUE(asked.ok());
  asked_ = *asked;
  auto rejected =
      Answer({{"action", "accept"}, {"content", {{"decision", "reject"}, {"reason", "Not now"}}}});
  ASSERT_TRUE(rejected.ok()) << rejected.status().ToString();
  EXPECT_EQ(Status(), ActionStatus::kRejected);
}

// 2025-11-25 sessions: the answer comes as the client's response to our request (its id
// the elicitation's), and the held stream reads the outcome.
TEST_F(ElicitationTest, AResponseToOurRequestIsAppliedOnceAndItsResultKeptForTheStream) {
  std::string id = asked_.request_state.substr(0, asked_.request_state.find('.'));
  auto waiting = ElicitationOutcome(*store_, clock_, ws_.id, id);
  ASSERT_TRUE(waiting.ok());
  EXPECT_FALSE(*waiting);

  json approve = {{"action", "accept"}, {"content", {{"decision", "approve"}}}};
  EXPECT_EQ(
      AnswerElicitationRequest(*store_, clock_, config_, ws_.id, "tok_agent", id, approve).code(),
      Code::kInvalidArgument);  // sent to another token's stream
  EXPECT_EQ(Status(), ActionStatus::kPending);
  ASSERT_TRUE(
      AnswerElicitationRequest(*store_, clock_, config_, ws_.id, "tok_person", id, approve).ok());
  EXPECT_EQ(Status(), ActionStatus::kExecuted);
  auto done = ElicitationOutcome(*store_, clock_, ws_.id, id);
  ASSERT_TRUE(done.ok() && *done);
  EXPECT_EQ((*done)->outcome, ActionOutcome::kSuccess);
  EXPECT_EQ((*done)->decision_id, pending_.decision_id);
  EXPECT_EQ(
      AnswerElicitationRequest(*store_, clock_, config_, ws_.id, "tok_person", id, approve).code(),
      Code::kInvalidArgument);  // once
}

TEST_F(ElicitationTest, AnUnansweredFormEndsTheHeldStreamWithTheDraftPending) {
  std::string id = asked_.request_state.substr(0, asked_.request_state.find('.'));
  clock_.Advance(kElicitationLifetime);
  auto late = ElicitationOutcome(*store_, clock_, ws_.id, id);
  ASSERT_TRUE(late.ok() && *late);
  EXPECT_EQ((*late)->outcome, ActionOutcome::kPendingApproval);
  EXPECT_NE((*late)->message.find("inbox"), std::string::npos);
}

}  // namespace
}  // namespace cortex
