// Writes in steps (Store::WriteInSteps) and the workspace gate that keeps requests out of a
// workspace while one lands: on SQLite each step commits on its own and a failure undoes
// them; on PostgreSQL all steps are one transaction. Both: all or nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "store/entities.h"
#include "store/workspace_gate.h"
#include "store/workspaces.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

using testing::CountWorkspaces;
using testing::MakeWorkspace;

Entity MakeEntity(const std::string& ws, const std::string& id, const std::string& name) {
  return Entity{id, ws, "person", name, {id + "@x.example"}, {}, std::chrono::system_clock::now()};
}

class StepsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(store_
                    ->Write([](WriteTx& tx) -> Status {
                      CORTEX_RETURN_IF_ERROR(tx.workspaces().Insert(MakeWorkspace(1)));
                      return tx.entities().Insert(MakeEntity("ws_1", "entity_old", "Old"));
                    })
                    .ok());
  }

  bool HasEntity(const std::string& id) {
    bool found = false;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) {
                      found = tx.entities().Get("ws_1", id).ok();
                      return Status::Ok();
                    })
                    .ok());
    return found;
  }

  std::string NameOf(const std::string& id) {
    std::string name;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTx& tx) -> Status {
                      auto e = tx.entities().Get("ws_1", id);
                      if (!e.ok()) return e.status();
                      name = e->name;
                      return Status::Ok();
                    })
                    .ok());
    return name;
  }

  testing::TempStore store_;
  std::future<Status> other_;
};

// Other workspaces' writes complete while the steps land (SQLite: between them; PostgreSQL:
// beside them); every step's work is there at the end.
TEST_F(StepsTest, OtherWritesGoOnWhileTheStepsLand) {
  constexpr int kSteps = 20;
  std::atomic<bool> stop{false};
  std::atomic<int> others{0};
  std::thread other([&] {
    for (int i = 100; !stop; ++i) {
      ASSERT_TRUE(
          store_->Write([&](WriteTx& tx) { return tx.workspaces().Insert(MakeWorkspace(i)); })
              .ok());
      ++others;
    }
  });
  int seen_at_first_step = -1, seen_at_last_step = -1;
  Status st = store_->WriteInSteps("ws_1", [&](WriteTx& tx, int step) -> Result<bool> {
    if (step == 0) seen_at_first_step = others;
    CORTEX_RETURN_IF_ERROR(
        tx.entities().Insert(MakeEntity("ws_1", "entity_s" + std::to_string(step), "S")));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a step's work
    if (step < kSteps - 1) return false;
    seen_at_last_step = others;
    return true;
  });
  stop = true;
  other.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int i = 0; i < kSteps; ++i) EXPECT_TRUE(HasEntity("entity_s" + std::to_string(i))) << i;
  EXPECT_GT(seen_at_last_step, seen_at_first_step)
      << "no other write completed while the steps landed";
}

// A failing step leaves nothing of the earlier ones: rows they added are gone, rows they
// changed are as they were, and another workspace's write in between stays.
TEST_F(StepsTest, AFailedStepUndoesEveryStep) {
  Status st = store_->WriteInSteps("ws_1", [&](WriteTx& tx, int step) -> Result<bool> {
    switch (step) {
      case 0:
        CORTEX_RETURN_IF_ERROR(tx.entities().Insert(MakeEntity("ws_1", "entity_a", "A")));
        CORTEX_RETURN_IF_ERROR(tx.entities().SetName("ws_1", "entity_old", "Renamed"));
        CORTEX_RETURN_IF_ERROR(tx.entities().AddTag("ws_1", "entity_old", "vip"));
        return false;
      case 1: {
        CORTEX_RETURN_IF_ERROR(tx.entities().Insert(MakeEntity("ws_1", "entity_b", "B")));
        // Another workspace writes while this one is between steps.
        auto other = std::async(std::launch::async, [&] {
          return store_->Write([](WriteTx& t) { return t.workspaces().Insert(MakeWorkspace(2)); });
        });
        other_ = std::move(other);
        return false;
      }
      default:
        CORTEX_RETURN_IF_ERROR(tx.entities().Insert(MakeEntity("ws_1", "entity_c", "C")));
        return Status::InvalidArgument("line 1201: refused");
    }
  });
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  ASSERT_TRUE(other_.valid());
  EXPECT_TRUE(other_.get().ok());
  EXPECT_FALSE(HasEntity("entity_a"));
  EXPECT_FALSE(HasEntity("entity_b"));
  EXPECT_FALSE(HasEntity("entity_c"));
  EXPECT_EQ(NameOf("entity_old"), "Old");
  ASSERT_TRUE(store_
                  ->Read([&](ReadTx& tx) {
                    EXPECT_TRUE(tx.entities().Get("ws_1", "entity_old")->tags.empty());
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(CountWorkspaces(*store_), 2u);
  // The undo turns SQLite's foreign keys off around itself only: they hold again.
  Status orphan = store_->Write(
      [](WriteTx& tx) { return tx.entities().Insert(MakeEntity("ws_none", "entity_z", "Z")); });
  EXPECT_FALSE(orphan.ok());
  if (store_->SuspendsWrites()) {
    EXPECT_NE(orphan.message().find("FOREIGN KEY"), std::string::npos) << orphan.message();
  }

  // Undone for good: a restart finds nothing to undo and nothing came back.
  store_.Reopen();
  EXPECT_FALSE(HasEntity("entity_a"));
  EXPECT_EQ(NameOf("entity_old"), "Old");
}

TEST_F(StepsTest, TheWorkspacesRequestsWaitForTheStepsOthersDoNot) {
  if (!store_->SuspendsWrites()) GTEST_SKIP() << "PostgreSQL writes a batch in one transaction";
  std::promise<void> in_step;
  std::promise<void> finish;
  std::shared_future<void> finish_f = finish.get_future().share();
  auto steps = std::async(std::launch::async, [&] {
    return store_->WriteInSteps("ws_1", [&](WriteTx&, int step) -> Result<bool> {
      if (step == 0) {
        in_step.set_value();
        return false;
      }
      finish_f.wait();
      return true;
    });
  });
  in_step.get_future().wait();
  // Another workspace: in at once.
  { auto pass = store_->EnterWorkspace("ws_2"); }
  EXPECT_TRUE(store_->TryEnterWorkspace("ws_2").has_value());
  // This one: background work is turned away, a request waits for the last step.
  EXPECT_FALSE(store_->TryEnterWorkspace("ws_1").has_value());
  std::atomic<bool> entered{false};
  std::thread request([&] {
    auto pass = store_->EnterWorkspace("ws_1");
    entered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(entered) << "a request entered the workspace between two steps";
  finish.set_value();
  Status steps_st = steps.get();
  EXPECT_TRUE(steps_st.ok()) << steps_st.ToString();
  request.join();
  EXPECT_TRUE(entered);
  EXPECT_TRUE(store_->TryEnterWorkspace("ws_1").has_value());
}

TEST(WorkspaceGateTest, AHoldWaitsForThePassesOutAndHoldsNewOnesBack) {
  WorkspaceGate gate;
  auto first = std::make_unique<WorkspaceGate::Pass>(gate.Enter("w"));
  std::atomic<bool> held{false};
  std::thread holder([&] {
    auto hold = gate.Hold("w");
    held = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    held = false;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(held) << "the hold began while a pass was out";
  EXPECT_FALSE(gate.TryEnter("w").has_value()) << "a waiting hold lets no new pass in";
  EXPECT_TRUE(gate.TryEnter("other").has_value());
  uint64_t turns = gate.Turns();
  first.reset();
  {
    auto pass = gate.Enter("w");  // waits for the hold to end
    EXPECT_FALSE(held);
  }
  holder.join();
  EXPECT_GT(gate.Turns(), turns);
  EXPECT_TRUE(gate.TryEnter("w").has_value());
}

}  // namespace
}  // namespace cortex
