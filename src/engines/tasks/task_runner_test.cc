// The task runner: a task goes working -> completed / input_required -> working ->
// completed, stops when cancelled (here or on another instance), is bounded per instance,
// is failed when its instance stops or stops answering, and is its workspace's only.
#include "engines/tasks/task_runner.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/crypto.h"
#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/tasks/approval_tasks.h"
#include "store/mcp_calls.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class TaskRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = *EnsureWorkspace(*store_, clock_, "alpha");
    other_ = *EnsureWorkspace(*store_, clock_, "beta");
  }

  McpTask NewTask(const std::string& tool, json args = json::object()) {
    McpTask t;
    t.id = "task_" + RandomHex(16);
    t.workspace_id = ws_.id;
    t.token_id = "tok_agent";
    t.tool = tool;
    t.arguments = std::move(args);
    t.expires_at = clock_.Now() + kTaskLifetime;
    return t;
  }

  McpTask Row(const std::string& id, const std::string& ws = "") {
    auto t = ReadTask(*store_, clock_, ws.empty() ? ws_.id : ws, id);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : McpTask{};
  }

  // Waits (up to 10 s) until task `id` is in `status`.
  bool WaitFor(const std::string& id, TaskStatus status) {
    for (int i = 0; i < 1000; ++i) {
      if (Row(id).status == status) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  // A job: "echo" completes with its arguments and answers; "ask" asks for "a" and "b"
  // until both are answered; "block" notes "blocked" and waits until cancelled; "boom"
  // fails.
  static TaskOutcome Job(const McpTask& t, const std::shared_ptr<std::atomic<bool>>& cancelled,
                         const std::function<void(std::string)>& progress) {
    TaskOutcome o;
    if (t.tool == "block") {
      progress("blocked");
      while (!cancelled->load()) std::this_thread::sleep_for(2ms);
      o.result = {{"content", json::array({{{"type", "text"}, {"text", "finished"}}})}};
      return o;
    }
    if (t.tool == "ask" && !(t.input_responses.contains("a") && t.input_responses.contains("b"))) {
      o.kind = TaskOutcome::Kind::kInputRequired;
      o.input_requests = {{"a", {{"method", "elicitation/create"}}},
                          {"b", {{"method", "elicitation/create"}}}};
      o.request_state = "round-1";
      return o;
    }
    if (t.tool == "boom") {
      o.kind = TaskOutcome::Kind::kFailed;
      o.error = {{"code", -32603}, {"message", "Internal error: boom"}};
      o.message = "boom";
      return o;
    }
    o.result = {{"content", json::array({{{"type", "text"},
                                          {"text", t.arguments.dump() + t.input_responses.dump() +
                                                       t.request_state}}})}};
    return o;
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T16:00:00Z")};
  Workspace ws_, other_;
};

TEST_F(TaskRunnerTest, ATaskIsStoredWorkingThenCompletedWithItsResult) {
  TaskRunner runner(*store_, clock_, Job);
  auto started = runner.Start(NewTask("echo", {{"x", 1}}));
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(started->status, TaskStatus::kWorking);
  ASSERT_TRUE(WaitFor(started->id, TaskStatus::kCompleted));
  McpTask t = Row(started->id);
  EXPECT_EQ(t.result["content"][0]["text"], R"({"x":1}{})");
  EXPECT_TRUE(t.error.is_null());
  EXPECT_EQ(t.instance_id, "");  // no longer any instance's
  for (int i = 0; i < 100 && runner.active() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(runner.active(), 0u);
}

TEST_F(TaskRunnerTest, AProtocolErrorFailsTheTaskWithTheError) {
  TaskRunner runner(*store_, clock_, Job);
  auto started = runner.Start(NewTask("boom"));
  ASSERT_TRUE(started.ok());
  ASSERT_TRUE(WaitFor(started->id, TaskStatus::kFailed));
  McpTask t = Row(started->id);
  EXPECT_EQ(t.error["code"], -32603);
  EXPECT_TRUE(t.result.is_null());
}

TEST_F(TaskRunnerTest, InputRequiredWaitsForEveryAnswerThenResumes) {
  TaskRunner runner(*store_, clock_, Job);
  auto started = runner.Start(NewTask("ask", {{"n", 7}}));
  ASSERT_TRUE(started.ok());
  ASSERT_TRUE(WaitFor(started->id, TaskStatus::kInputRequired));
  EXPECT_EQ(Row(started->id).input_requests.size(), 2u);

  // One answer (and a key it never asked for): still waiting, for the other only.
  auto partial = AnswerTask(*store_, clock_, ws_.id, started->id,
                            {{"a", {{"action", "accept"}}}, {"zzz", 1}}, runner.instance_id());
  ASSERT_TRUE(partial.ok());
  EXPECT_FALSE(partial->has_value());
  McpTask t = Row(started->id);
  EXPECT_EQ(t.status, TaskStatus::kInputRequired);
  EXPECT_FALSE(t.input_requests.contains("a"));
  EXPECT_TRUE(t.input_requests.contains("b"));
  EXPECT_FALSE(t.input_responses.contains("zzz"));

  // Another workspace cannot answer it.
  auto foreign = AnswerTask(*store_, clock_, other_.id, started->id, {{"b", {}}}, "inst_x");
  EXPECT_EQ(foreign.status().code(), Code::kNotFound);

  auto last = AnswerTask(*store_, clock_, ws_.id, started->id, {{"b", {{"action", "decline"}}}},
                         runner.instance_id());
  ASSERT_TRUE(last.ok());
  ASSERT_TRUE(last->has_value());
  EXPECT_EQ((*last)->status, TaskStatus::kWorking);
  runner.Enqueue(**last);
  ASSERT_TRUE(WaitFor(started->id, TaskStatus::kCompleted));
  // Run again with its arguments, read back from the row; once ended, the row lets them go.
  EXPECT_EQ(Row(started->id).result["content"][0]["text"],
            R"({"n":7}{"a":{"action":"accept"},"b":{"action":"decline"}}round-1)");
  auto ended = store_->Read([&](ReadTx& tx) -> Status {
    auto t = tx.calls().GetTask(ws_.id, started->id, /*with_arguments=*/true);
    if (!t.ok()) return t.status();
    EXPECT_EQ(t->arguments, json::object());
    return Status::Ok();
  });
  EXPECT_TRUE(ended.ok());
}

TEST_F(TaskRunnerTest, ACancelTakenHereStopsTheJobAndStaysCancelled) {
  TaskRunner runner(*store_, clock_, Job);
  auto started = runner.Start(NewTask("block"));
  ASSERT_TRUE(started.ok());
  ASSERT_TRUE(CancelTask(*store_, clock_, ws_.id, started->id).ok());
  runner.CancelLocal(started->id);
  for (int i = 0; i < 500 && runner.active() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(runner.active(), 0u);
  McpTask t = Row(started->id);
  EXPECT_EQ(t.status, TaskStatus::kCancelled);  // the job's late result is not stored over it
  EXPECT_TRUE(t.result.is_null());
  EXPECT_EQ(t.instance_id, "");
}

TEST_F(TaskRunnerTest, ACancelTakenByAnotherInstanceIsSeenByThePoll) {
  TaskRunner runner(*store_, clock_, Job, TaskRunnerOptions{.poll = 20ms});
  auto started = runner.Start(NewTask("block"));
  ASSERT_TRUE(started.ok());
  // Another instance takes the tasks/cancel: only the row changes.
  ASSERT_TRUE(CancelTask(*store_, clock_, ws_.id, started->id).ok());
  for (int i = 0; i < 500 && runner.active() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(runner.active(), 0u);
  EXPECT_EQ(Row(started->id).status, TaskStatus::kCancelled);
}

// A client polling tasks/get sees how far a long task has come: the job's latest note is
// the row's statusMessage, the first written at once (the runner's next look is an hour
// away here); once the task has moved on, a note no longer lands.
TEST_F(TaskRunnerTest, AWorkingTasksLatestProgressIsItsStatusMessage) {
  TaskRunner runner(*store_, clock_, Job, TaskRunnerOptions{.poll = 1h});
  auto started = runner.Start(NewTask("block"));
  ASSERT_TRUE(started.ok());
  McpTask t;
  for (int i = 0; i < 1000 && t.status_message.empty(); ++i) {
    std::this_thread::sleep_for(5ms);
    t = Row(started->id);
  }
  EXPECT_EQ(t.status, TaskStatus::kWorking);
  EXPECT_EQ(t.status_message, "blocked");
  ASSERT_TRUE(CancelTask(*store_, clock_, ws_.id, started->id).ok());
  runner.CancelLocal(started->id);
  for (int i = 0; i < 500 && runner.active() > 0; ++i) std::this_thread::sleep_for(10ms);
  t = Row(started->id);
  EXPECT_EQ(t.status, TaskStatus::kCancelled);
  EXPECT_NE(t.status_message, "blocked");
}

TEST_F(TaskRunnerTest, TheInstanceRunsAtMostMaxTasks) {
  TaskRunner runner(*store_, clock_, Job, TaskRunnerOptions{.threads = 1, .max_tasks = 2});
  auto a = runner.Start(NewTask("block"));
  auto b = runner.Start(NewTask("block"));  // queued behind a
  ASSERT_TRUE(a.ok() && b.ok());
  McpTask third = NewTask("echo");
  auto refused = runner.Start(third);
  EXPECT_EQ(refused.status().code(), Code::kUnavailable);
  EXPECT_EQ(ReadTask(*store_, clock_, ws_.id, third.id).status().code(), Code::kNotFound);
  runner.CancelLocal(a->id);
  runner.CancelLocal(b->id);
}

TEST_F(TaskRunnerTest, AStoppingRunnerFailsWhatItRanOrHadQueued) {
  auto runner = std::make_unique<TaskRunner>(*store_, clock_, Job, TaskRunnerOptions{.threads = 1});
  auto running = runner->Start(NewTask("block"));
  auto queued = runner->Start(NewTask("block"));
  ASSERT_TRUE(running.ok() && queued.ok());
  runner.reset();
  for (const std::string& id : {running->id, queued->id}) {
    McpTask t = Row(id);
    EXPECT_EQ(t.status, TaskStatus::kFailed) << id;
    EXPECT_EQ(t.error["code"], -32603);
    EXPECT_NE(t.status_message.find("server stopped"), std::string::npos) << t.status_message;
  }
}

TEST_F(TaskRunnerTest, TheTasksOfADeadInstanceAreFailedByAnother) {
  // A: never heartbeats again (as if killed); B: heartbeats and reaps at every look.
  TaskRunner a(*store_, clock_, Job, TaskRunnerOptions{.poll = 20ms, .heartbeat = 1h});
  auto started = a.Start(NewTask("block"));
  ASSERT_TRUE(started.ok());
  TaskRunner b(*store_, clock_, Job, TaskRunnerOptions{.heartbeat = 0ms});
  clock_.Advance(29s);
  b.PollOnce();
  EXPECT_EQ(Row(started->id).status, TaskStatus::kWorking);  // 29 s of silence: not dead yet
  clock_.Advance(2s);
  b.PollOnce();
  McpTask t = Row(started->id);
  EXPECT_EQ(t.status, TaskStatus::kFailed);
  EXPECT_EQ(t.error["code"], -32603);
  EXPECT_NE(t.status_message.find("stopped answering"), std::string::npos);
  // A (alive after all) sees its task is no longer working and stops its job.
  for (int i = 0; i < 500 && a.active() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(a.active(), 0u);
  EXPECT_EQ(Row(started->id).status, TaskStatus::kFailed);
}

TEST_F(TaskRunnerTest, AWorkingTaskOfAnInstanceWithNoHeartbeatAtAllIsFailed) {
  // E.g. resumed by a tasks/update on an instance that stopped right after.
  McpTask orphan = NewTask("echo");
  orphan.status = TaskStatus::kWorking;
  orphan.instance_id = "inst_gone";
  orphan.created_at = orphan.updated_at = clock_.Now();
  ASSERT_TRUE(store_->Write([&](WriteTx& tx) { return tx.calls().InsertTask(orphan); }).ok());
  TaskRunner b(*store_, clock_, Job, TaskRunnerOptions{.heartbeat = 0ms});
  b.PollOnce();
  // Just moved: as a task an idle instance has just started, before its first beat.
  EXPECT_EQ(Row(orphan.id).status, TaskStatus::kWorking);
  clock_.Advance(31s);
  b.PollOnce();  // b is idle: it reads, finds the orphan, and only then writes
  EXPECT_EQ(Row(orphan.id).status, TaskStatus::kFailed);
}

// The store keeps to kTaskMoves: an ended task is not moved again, and nothing changes.
TEST_F(TaskRunnerTest, TheStoreRefusesAMoveTheTableDoesNotList) {
  McpTask done = NewTask("echo");
  done.status = TaskStatus::kCompleted;
  done.created_at = done.updated_at = clock_.Now();
  ASSERT_TRUE(store_->Write([&](WriteTx& tx) { return tx.calls().InsertTask(done); }).ok());
  McpTask again = done;
  again.status = TaskStatus::kWorking;
  Status st =
      store_->Write([&](WriteTx& tx) { return tx.calls().UpdateTask(again, done).status(); });
  EXPECT_EQ(st.code(), Code::kInternal) << st.ToString();
  EXPECT_NE(st.message().find("cannot move from completed to working"), std::string::npos);
  EXPECT_EQ(Row(done.id).status, TaskStatus::kCompleted);
}

}  // namespace
}  // namespace cortex
