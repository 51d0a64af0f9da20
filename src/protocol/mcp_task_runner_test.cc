// Tools that run as tasks, through McpServer (protocol/mcp_tasks.cc) and a TaskRunner: the
// call answers with the task, tasks/get shows its input requests and result, tasks/update
// resumes it, tasks/cancel stops it, a required-task tool refuses a client without the
// extension, and another workspace can neither read, answer nor cancel the task.
#include <gtest/gtest.h>

#include <thread>

#include "core/time.h"
#include "engines/auth/tokens.h"
#include "engines/tasks/task_runner.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_server.h"
#include "testing/temp_store.h"

namespace cortex {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

ToolDef TaskTool(std::string name, TaskSupport support, ToolHandler handler) {
  ToolDef def;
  def.name = std::move(name);
  def.description = "test";
  def.input_schema = {{"type", "object"}};
  def.scope = kScopeAct;
  def.task_support = support;
  def.handler = std::move(handler);
  return def;
}

ToolReply Text(const std::string& text) {
  return ToolReply::Raw({{"content", json::array({{{"type", "text"}, {"text", text}}})}});
}

class McpTaskRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // test.wait: runs until cancelled; test.ask: asks "ok", then answers with the answer.
    ASSERT_TRUE(registry_
                    .Add(TaskTool("test.wait", TaskSupport::kOptional,
                                  [this](ToolContext& ctx, const json&) {
                                    started_ = true;
                                    while (!Cancelled(ctx)) std::this_thread::sleep_for(1ms);
                                    stopped_ = true;
                                    return Text("stopped");
                                  }))
                    .ok());
    ASSERT_TRUE(registry_
                    .Add(TaskTool("test.ask", TaskSupport::kRequired,
                                  [](ToolContext& ctx, const json&) {
                                    if (!ctx.input_responses.is_object() ||
                                        !ctx.input_responses.contains("ok")) {
                                      return ToolReply::InputRequired(
                                          {{"ok", {{"method", "elicitation/create"}}}}, "s1");
                                    }
                                    return Text("answer " + ctx.input_responses["ok"].dump() +
                                                " state " + ctx.request_state);
                                  }))
                    .ok());
    auto a = EnsureWorkspace(*store_, clock_, "alpha");
    auto b = EnsureWorkspace(*store_, clock_, "beta");
    alpha_ = AuthContext{a->id, a->name, "tok_a", kScopeRead | kScopeAct};
    beta_ = AuthContext{b->id, b->name, "tok_b", kScopeRead | kScopeAct};
    server_ = std::make_unique<McpServer>(registry_, *store_, clock_, ServerInfo{});
    runner_ = std::make_unique<TaskRunner>(
        *store_, clock_,
        [this](const McpTask& t, const std::shared_ptr<std::atomic<bool>>& c,
               const std::function<void(std::string)>& progress) {
          return server_->RunTask(t, c, progress);
        });
    server_->SetTaskRunner(runner_.get());
  }
  void TearDown() override { runner_.reset(); }

  json Send(const std::string& method, json params, const AuthContext& auth, bool tasks = true) {
    json caps = tasks ? json{{"extensions", {{"io.modelcontextprotocol/tasks", json::object()}}}}
                      : json::object();
    params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                       {"io.modelcontextprotocol/clientCapabilities", caps}};
    std::string body =
        json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}}.dump();
    McpRequest req;
    req.body = body;
    req.transport = McpTransport::kStdio;
    req.auth = &auth;
    return server_->Handle(req).body;
  }
  json Call(const std::string& tool, const AuthContext& auth, bool tasks = true) {
    return Send("tools/call", {{"name", tool}, {"arguments", json::object()}}, auth, tasks);
  }
  json Get(const std::string& id, const AuthContext& auth) {
    return Send("tasks/get", {{"taskId", id}}, auth);
  }
  json WaitFor(const std::string& id, const std::string& status) {
    json r;
    for (int i = 0; i < 1000; ++i) {
      r = Get(id, alpha_);
      if (r["result"].value("status", "") == status) break;
      std::this_thread::sleep_for(5ms);
    }
    return r["result"];
  }

  testing::TempStore store_;
  FixedClock clock_{*ParseTime("2026-06-10T09:00:00Z")};
  ToolRegistry registry_;
  AuthContext alpha_, beta_;
  std::unique_ptr<McpServer> server_;
  std::unique_ptr<TaskRunner> runner_;
  std::atomic<bool> started_{false}, stopped_{false};
};

TEST_F(McpTaskRunnerTest, ToolsListShowsTaskSupport) {
  json list = Send("tools/list", json::object(), alpha_);
  EXPECT_EQ(list["result"]["tools"][0]["execution"]["taskSupport"], "optional");
  EXPECT_EQ(list["result"]["tools"][1]["execution"]["taskSupport"], "required");
}

TEST_F(McpTaskRunnerTest, ARequiredTaskToolRefusesAClientWithoutTheExtension) {
  json r = Call("test.ask", alpha_, /*tasks=*/false);
  EXPECT_EQ(r["error"]["code"], rpc::kMissingRequiredClientCapability);
  EXPECT_TRUE(r["error"]["data"]["requiredCapabilities"]["extensions"].contains(
      "io.modelcontextprotocol/tasks"));
}

TEST_F(McpTaskRunnerTest, InputRequestsAreAnsweredByTasksUpdateOnlyInTheTasksWorkspace) {
  json created = Call("test.ask", alpha_)["result"];
  ASSERT_EQ(created["resultType"], "task") << created;
  std::string id = created["taskId"];
  json waiting = WaitFor(id, "input_required");
  EXPECT_TRUE(waiting["inputRequests"].contains("ok")) << waiting;

  // Another workspace: not found, and its answer changes nothing.
  EXPECT_EQ(Get(id, beta_)["error"]["code"], rpc::kInvalidParams);
  json foreign =
      Send("tasks/update", {{"taskId", id}, {"inputResponses", {{"ok", "beta's"}}}}, beta_);
  EXPECT_EQ(foreign["error"]["code"], rpc::kInvalidParams);
  EXPECT_EQ(Send("tasks/cancel", {{"taskId", id}}, beta_)["error"]["code"], rpc::kInvalidParams);
  EXPECT_EQ(Get(id, alpha_)["result"]["status"], "input_required");

  json ack = Send("tasks/update", {{"taskId", id}, {"inputResponses", {{"ok", "yes"}}}}, alpha_);
  EXPECT_EQ(ack["result"]["resultType"], "complete") << ack;
  json done = WaitFor(id, "completed");
  EXPECT_EQ(done["result"]["content"][0]["text"], "answer \"yes\" state s1") << done;
}

TEST_F(McpTaskRunnerTest, TasksCancelStopsTheRunningTool) {
  json created = Call("test.wait", alpha_)["result"];
  ASSERT_EQ(created["resultType"], "task") << created;
  std::string id = created["taskId"];
  for (int i = 0; i < 1000 && !started_; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(started_);
  EXPECT_EQ(Send("tasks/cancel", {{"taskId", id}}, beta_)["error"]["code"], rpc::kInvalidParams);
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(stopped_);  // another workspace's cancel stopped nothing
  json ack = Send("tasks/cancel", {{"taskId", id}}, alpha_);
  EXPECT_EQ(ack["result"]["resultType"], "complete");
  for (int i = 0; i < 1000 && !stopped_; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(stopped_);
  json got = Get(id, alpha_)["result"];
  EXPECT_EQ(got["status"], "cancelled");
  EXPECT_FALSE(got.contains("result"));
}

TEST_F(McpTaskRunnerTest, ACallTheTokenMayNotMakeStartsNoTask) {
  AuthContext reader{alpha_.workspace_id, "alpha", "tok_r", kScopeRead};  // no act
  json refused = Call("test.wait", reader)["result"];
  EXPECT_TRUE(refused.value("isError", false)) << refused;
  EXPECT_FALSE(refused.contains("taskId"));
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(started_);
  EXPECT_EQ(runner_->active(), 0u);
}

}  // namespace
}  // namespace cortex
