// What the action tools tell a client when the store fails under them.
#include "tools/action_tools.h"

#include <gtest/gtest.h>

#include "store/store.h"

namespace cortex {
namespace {

// A write that failed before its commit changed nothing: the client may simply retry.
TEST(ActionReplyTest, AFailedWriteSaysNothingWasSent) {
  ToolReply r = ActionReply(Status::Unavailable("postgresql: connection lost: gone"));
  ASSERT_TRUE(r.is_error());
  EXPECT_EQ(r.body()["error"], "action_engine_error");
  EXPECT_NE(r.body()["message"].get<std::string>().find("nothing was sent, retry"),
            std::string::npos)
      << r.body();
}

// A connection lost during the commit leaves it unknown whether the proposal (or approval)
// was recorded, and a recorded level-3 proposal is sent: the answer must not say nothing
// was, and must say how to find out.
TEST(ActionReplyTest, ACommitWhoseOutcomeIsUnknownSaysSoAndHowToFindOut) {
  Status in_doubt = Status::Unavailable("postgresql: " + std::string(kCommitOutcomeUnknown) +
                                        ": server closed the connection unexpectedly");
  ASSERT_TRUE(CommitOutcomeUnknown(in_doubt));
  EXPECT_FALSE(CommitOutcomeUnknown(Status::Unavailable("postgresql: connection lost")));
  EXPECT_FALSE(CommitOutcomeUnknown(Status::Internal(std::string(kCommitOutcomeUnknown))));
  ToolReply r = ActionReply(in_doubt);
  ASSERT_TRUE(r.is_error());
  EXPECT_EQ(r.body()["error"], "action_engine_error");
  std::string message = r.body()["message"];
  EXPECT_EQ(message.find("nothing was sent"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot tell whether this was recorded"), std::string::npos) << message;
  EXPECT_NE(message.find("idempotency_key"), std::string::npos) << message;
}

}  // namespace
}  // namespace cortex
