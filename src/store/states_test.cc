#include "store/states.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "store/actions.h"
#include "testing/doc_tables.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

template <State E>
void ExpectEverySpellingRoundTrips() {
  std::set<std::string_view> seen;
  for (E e : AllOf<E>()) {
    EXPECT_TRUE(seen.insert(Name(e)).second) << Name(e) << " is spelled twice";
    EXPECT_EQ(Parse<E>(Name(e)), e);
    EXPECT_EQ(ParseStored<E>(Name(e)), e);
  }
  EXPECT_EQ(Parse<E>("no-such-state"), std::nullopt);
  EXPECT_THROW(ParseStored<E>(""), std::runtime_error);
}

TEST(StatesTest, EverySpellingRoundTrips) {
  ExpectEverySpellingRoundTrips<ActionStatus>();
  ExpectEverySpellingRoundTrips<LedgerEvent>();
  ExpectEverySpellingRoundTrips<DecisionClass>();
  ExpectEverySpellingRoundTrips<DecisionStatus>();
  ExpectEverySpellingRoundTrips<TriageClass>();
  ExpectEverySpellingRoundTrips<RuleKind>();
  ExpectEverySpellingRoundTrips<RuleOrigin>();
  ExpectEverySpellingRoundTrips<OutboxStatus>();
  ExpectEverySpellingRoundTrips<SignalKind>();
  ExpectEverySpellingRoundTrips<TaskStatus>();
  ExpectEverySpellingRoundTrips<ActionOutcome>();
  // The spellings clients and stored rows have always used.
  EXPECT_EQ(Name(DecisionClass::kActionProposed), "action_proposed");
  EXPECT_EQ(Name(TriageClass::kSurfaceAtTransition), "surface_at_transition");
  EXPECT_EQ(Name(ActionStatus::kExecuted), "executed");
}

// A final task never moves again; a task that has not ended can always end.
TEST(StatesTest, ATaskMovesOnlyAsTheTableSays) {
  for (TaskStatus from : AllOf<TaskStatus>()) {
    for (TaskStatus to : AllOf<TaskStatus>()) {
      if (IsFinal(from)) {
        EXPECT_FALSE(IsLegalMove(from, to)) << Name(from) << " -> " << Name(to);
      } else if (IsFinal(to)) {
        EXPECT_TRUE(IsLegalMove(from, to)) << Name(from) << " -> " << Name(to);
      }
    }
  }
  EXPECT_FALSE(IsLegalMove(TaskStatus::kWorking, TaskStatus::kWorking));
}

// docs/rules.md's table of signals is the enum's, in its order: a new signal is documented.
TEST(StatesTest, TheRulesDocListsEverySignal) {
  std::vector<std::string> want;
  for (SignalKind k : AllOf<SignalKind>()) want.emplace_back(Name(k));
  EXPECT_EQ(DocTableNames("rules.md", "## Signals"), want);
}

TEST(StatesTest, AnActionMovesOnlyAsTheTableSays) {
  std::set<std::pair<ActionStatus, ActionStatus>> legal;
  for (const ActionMove& m : kActionMoves) legal.insert({m.from, m.to});
  EXPECT_EQ(legal.size(), kActionMoves.size());
  for (ActionStatus from : AllOf<ActionStatus>()) {
    for (ActionStatus to : AllOf<ActionStatus>()) {
      EXPECT_EQ(IsLegalMove(from, to), legal.count({from, to}) == 1)
          << Name(from) << " -> " << Name(to);
    }
  }
  // Pending is the only state a person acts on; the ends have no way out.
  for (ActionStatus end : {ActionStatus::kDelivered, ActionStatus::kFailed, ActionStatus::kRejected,
                           ActionStatus::kExpired, ActionStatus::kRefused}) {
    for (ActionStatus to : AllOf<ActionStatus>()) EXPECT_FALSE(IsLegalMove(end, to));
  }
  EXPECT_TRUE(IsLegalMove(ActionStatus::kPending, ActionStatus::kExecuted));
  EXPECT_FALSE(IsLegalMove(ActionStatus::kPending, ActionStatus::kDelivered));
}

TEST(StatesTest, AProposalFollowsItsActionAndOthersStayRecorded) {
  for (ActionStatus s : AllOf<ActionStatus>()) {
    DecisionStatus d = DecisionStatusOf(s);
    EXPECT_EQ(Name(d), Name(s));
    EXPECT_TRUE(DecisionClassMayHaveStatus(DecisionClass::kActionProposed, d));
    EXPECT_FALSE(DecisionClassMayHaveStatus(DecisionClass::kTriage, d));
  }
  EXPECT_TRUE(DecisionClassMayHaveStatus(DecisionClass::kRuleFired, DecisionStatus::kRecorded));
  EXPECT_EQ(LedgerEventOf(ActionStatus::kPending), LedgerEvent::kProposed);
  EXPECT_EQ(Name(LedgerEventOf(ActionStatus::kRejected)), "rejected");
}

// The store refuses a move the table lacks, before it touches a row: a bug in an engine is
// an error, not a silent write.
TEST(StatesTest, TheStoreRefusesAnIllegalMove) {
  testing::TempStore store;
  Status st = store->Write([](WriteTx& tx) {
    return tx.actions().Transition("ws_1", "act_1", ActionStatus::kDelivered,
                                   ActionStatus::kPending, std::nullopt, TimePoint{});
  });
  EXPECT_EQ(st.code(), Code::kInternal);
  EXPECT_NE(st.message().find("cannot move from delivered to pending"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace cortex
