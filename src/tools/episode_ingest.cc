// episode.ingest: POST /v1/episodes as an MCP tool, for a long batch with progress and
// cancellation (docs/mcp.md, "Progress and cancellation").
#include "core/limits.h"
#include "engines/world/ingest.h"
#include "tools/cortex_tools.h"

namespace cortex {

using nlohmann::json;

ToolDef EpisodeIngestTool(const EngineConfig&) {
  json count = {{"type", "integer"}, {"minimum", 0}};
  return ToolDef{
      .name = "episode.ingest",
      .title = "Ingest episodes",
      .description =
          "Adds a batch of episodes (and entity lines) to the workspace's world model, exactly "
          "as POST /v1/episodes does with a JSONL body: `lines` holds one object per JSONL "
          "line (docs/ingest.md). All or nothing: a bad line N (counted from 1) is an "
          "invalid_arguments error naming it, and nothing is written; an episode whose "
          "external_id is already stored counts as a duplicate. Reports progress (lines done "
          "of the total) if the call has a progressToken; a cancelled call writes nothing.",
      .input_schema = {{"type", "object"},
                       {"required", {"lines"}},
                       {"additionalProperties", false},
                       {"properties",
                        {{"lines",
                          {{"type", "array"},
                           {"minItems", 1},
                           {"maxItems", limits::kMaxIngestLines},
                           {"items", {{"type", "object"}}},
                           {"description",
                            "The batch: each item is one JSONL line of POST /v1/episodes, "
                            "{\"type\": \"episode\", ...} or {\"type\": \"entity\", ...}."}}}}}},
      .output_schema = {{"type", "object"},
                        {"required",
                         {"status", "lines", "episodes_added", "entities_added", "entities_updated",
                          "duplicates", "triaged", "world_version"}},
                        {"properties",
                         {{"status", {{"const", "success"}}},
                          {"lines", count},
                          {"episodes_added", count},
                          {"entities_added", count},
                          {"entities_updated", count},
                          {"duplicates", count},
                          {"triaged", count},
                          {"world_version", {{"type", "string"}}}}}},
      .annotations = {{"readOnlyHint", false},
                      {"destructiveHint", false},
                      {"idempotentHint", false},
                      {"openWorldHint", false}},
      .scope = kScopeAct,
      .long_running = true,
      .handler = [](ToolContext& ctx, const json& args) -> ToolReply {
        // Read as POST /v1/episodes reads its lines, already parsed: "line N" is item N.
        IngestControl control;
        control.progress = [&ctx](size_t done, size_t total) {
          ReportProgress(ctx, static_cast<double>(done), static_cast<double>(total),
                         std::to_string(done) + " of " + std::to_string(total) + " lines");
        };
        control.cancelled = [&ctx] { return Cancelled(ctx); };
        auto report =
            IngestObjects(ctx.store, ctx.clock, ctx.auth.workspace_id, args.at("lines"), control);
        if (!report.ok()) return ToolReply::FromStatus(report.status());
        return ToolReply::Ok(IngestReportJson(*report, "success"));
      },
      // To a client that takes tasks, the call answers at once with a task that runs in
      // the background (tasks/get, tasks/cancel; docs/mcp.md, "Tasks").
      .task_support = TaskSupport::kOptional,
  };
}

}  // namespace cortex
