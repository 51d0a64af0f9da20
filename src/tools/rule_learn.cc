// rule.learn: one learning pass for the caller's workspace, as `cortex learn` runs it, with
// progress through its phases and cancellation before it writes.
#include "engines/learning/learning.h"
#include "tools/cortex_tools.h"

namespace cortex {

using nlohmann::json;

ToolDef RuleLearnTool(const EngineConfig& config) {
  json count = {{"type", "integer"}, {"minimum", 0}};
  return ToolDef{
      .name = "rule.learn",
      .title = "Run a learning pass",
      .description =
          "Runs one learning pass over the workspace's history now (what `cortex learn` and "
          "the server's periodic pass do, docs/learning.md): new patterns become proposed "
          "rules (a person accepts them with rule.accept), stored ones are re-judged, and "
          "those no longer supported are retired. Reports progress through its phases "
          "(reading, writing, done) if the call has a progressToken; cancelled before it "
          "writes, it writes nothing.",
      .input_schema = {{"type", "object"},
                       {"additionalProperties", false},
                       {"properties", json::object()}},
      .output_schema = {{"type", "object"},
                        {"required",
                         {"status", "proposed", "updated", "retired", "agent_version", "covered"}},
                        {"properties",
                         {{"status", {{"const", "success"}}},
                          {"proposed", count},
                          {"updated", count},
                          {"retired", count},
                          {"agent_version", {{"type", "string"}}},
                          {"covered", {{"type", "array"}, {"items", {{"type", "string"}}}}}}}},
      .annotations = {{"readOnlyHint", false},
                      {"destructiveHint", false},
                      {"idempotentHint", true},
                      {"openWorldHint", false}},
      .scope = kScopeAct,
      .long_running = true,
      .handler = [&config](ToolContext& ctx, const json&) -> ToolReply {
        // Like any call: no ingest batch lands in the workspace while the pass reads it.
        WorkspaceGate::Pass pass = ctx.store.EnterWorkspace(ctx.auth.workspace_id);
        // Progress: the phases begun, of kLearnPhases (a pass that starts over does not
        // report its phases again: progress only grows).
        int told = 0;
        auto observe = [&ctx, &told](LearnPhase phase) {
          static constexpr const char* kNames[] = {"reading the history", "writing the rules",
                                                   "done"};
          if (phase != LearnPhase::kDone && Cancelled(ctx)) return false;
          int i = static_cast<int>(phase);
          if (i + 1 > told) {
            told = i + 1;
            ReportProgress(ctx, told, kLearnPhases, kNames[i]);
          }
          return true;
        };
        auto report =
            Learn(ctx.store, ctx.clock, ctx.auth.workspace_id, config.learning, nullptr, observe);
        if (!report.ok()) return ToolReply::FromStatus(report.status());
        return ToolReply::Ok({{"status", "success"},
                              {"proposed", report->proposed},
                              {"updated", report->updated},
                              {"retired", report->retired},
                              {"agent_version", report->agent_version},
                              {"covered", report->covered}});
      },
      // To a client that takes tasks, the call answers at once with a task that runs in
      // the background (tasks/get, tasks/cancel; docs/mcp.md, "Tasks").
      .task_support = TaskSupport::kOptional,
  };
}

}  // namespace cortex
