// action.communicate's idempotency keys: a retry gets the first result and sends nothing
// more; other arguments under the same key are refused; a key is one token's.
#include "engines/actions/idempotency.h"

#include <gtest/gtest.h>

#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/world/ingest.h"
#include "store/actions.h"
#include "store/decisions.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

class IdempotencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = *EnsureWorkspace(*store_, clock_, "alpha");
    ASSERT_TRUE(
        IngestJsonl(*store_, clock_, ws_.id,
                    R"({"type":"entity","name":"Marcus Webb","identifiers":["marcus@h.example"]})")
            .ok());
  }

  Result<ActionResult> Send(const std::string& key, const std::string& message = "Friday?",
                            const std::string& token = "tok_agent") {
    CommunicateRequest req;
    req.to = "marcus@h.example";
    req.message = message;
    req.token_id = token;
    req.idempotency_key = key;
    return ActionEngine(*store_, clock_, config_).Communicate(ws_.id, req);
  }

  size_t Proposals() {
    size_t n = 0;
    DecisionFilter f;
    f.decision_class = DecisionClass::kActionProposed;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      n = tx.decisions().List(ws_.id, f, 100)->size();
                      return Status::Ok();
                    })
                    .ok());
    return n;
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T16:00:00Z")};
  ActionConfig config_;
  Workspace ws_;
};

TEST_F(IdempotencyTest, ARetryGetsTheFirstResultAndSendsNothingMore) {
  auto first = Send("k-1");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  clock_.Advance(std::chrono::minutes(5));
  auto retry = Send("k-1");
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_EQ(retry->outcome, first->outcome);
  EXPECT_EQ(retry->decision_id, first->decision_id);
  EXPECT_EQ(retry->action_id, first->action_id);
  EXPECT_EQ(retry->draft, first->draft);
  EXPECT_EQ(retry->message, first->message);
  EXPECT_EQ(Proposals(), 1u);

  // Without a key, or with another, each call is a new message.
  ASSERT_TRUE(Send("").ok());
  ASSERT_TRUE(Send("k-2").ok());
  EXPECT_EQ(Proposals(), 3u);
}

TEST_F(IdempotencyTest, OtherArgumentsUnderAUsedKeyAreRefused) {
  ASSERT_TRUE(Send("k-1").ok());
  auto other = Send("k-1", "Monday instead?");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), Code::kInvalidArgument);
  EXPECT_NE(other.status().message().find("idempotency_key"), std::string::npos);
  EXPECT_EQ(Proposals(), 1u);
}

TEST_F(IdempotencyTest, AKeyIsOneTokensAndIsForgottenAfterADay) {
  auto mine = Send("k-1");
  auto theirs = Send("k-1", "Friday?", "tok_other");
  ASSERT_TRUE(mine.ok() && theirs.ok());
  EXPECT_NE(mine->decision_id, theirs->decision_id);

  clock_.Advance(kIdempotencyKeyLifetime + std::chrono::minutes(1));
  ASSERT_TRUE(store_
                  ->Write([&](WriteTx& tx) {
                    return tx.actions().DeleteIdempotentBefore(clock_.Now() -
                                                               kIdempotencyKeyLifetime);
                  })
                  .ok());
  auto later = Send("k-1", "Monday instead?");
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ(Proposals(), 3u);
}

}  // namespace
}  // namespace cortex
