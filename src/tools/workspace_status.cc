// workspace.status: which workspace this token sees, its versions and the size of its world.
#include "core/time.h"
#include "store/workspaces.h"
#include "tools/cortex_tools.h"

namespace cortex {

using nlohmann::json;

ToolDef WorkspaceStatusTool(const EngineConfig&) {
  return ToolDef{
      .name = "workspace.status",
      .title = "Workspace status",
      .description =
          "Returns the workspace this token belongs to, its current world_version and "
          "agent_version, and how many entities and episodes its world model holds.",
      .input_schema = {{"type", "object"},
                       {"properties", json::object()},
                       {"additionalProperties", false}},
      .output_schema = {{"type", "object"},
                        {"required",
                         {"workspace", "workspace_id", "world_version", "agent_version", "entities",
                          "episodes", "scopes"}},
                        {"properties",
                         {{"workspace", {{"type", "string"}}},
                          {"workspace_id", {{"type", "string"}}},
                          {"world_version", {{"type", "string"}}},
                          {"agent_version", {{"type", "string"}}},
                          {"entities", {{"type", "integer"}}},
                          {"episodes", {{"type", "integer"}}},
                          {"scopes", {{"type", "array"}, {"items", {{"type", "string"}}}}}}}},
      .annotations = {{"readOnlyHint", true}, {"idempotentHint", true}, {"openWorldHint", false}},
      .scope = kScopeRead,
      .handler = [](ToolContext& ctx, const json&) -> ToolReply {
        json body;
        Status st = ctx.store.Read([&](ReadTx& tx) {
          auto ws = tx.workspaces().Get(ctx.auth.workspace_id);
          if (!ws.ok()) return ws.status();
          auto counts = tx.workspaces().Counts(ws->id);
          if (!counts.ok()) return counts.status();
          json scopes = json::array();
          for (Scope s : {kScopeRead, kScopeAct, kScopeApprove, kScopeAdmin}) {
            if (ctx.auth.Has(s)) scopes.push_back(FormatScopes(s));
          }
          body = {{"workspace", ws->name},
                  {"workspace_id", ws->id},
                  {"world_version", ws->world_version},
                  {"agent_version", ws->agent_version},
                  {"entities", counts->entities},
                  {"episodes", counts->episodes},
                  {"scopes", scopes}};
          return Status::Ok();
        });
        return st.ok() ? ToolReply::Ok(std::move(body)) : ToolReply::FromStatus(st);
      },
  };
}

}  // namespace cortex
