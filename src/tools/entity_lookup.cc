// entity.lookup: a counterparty by entity id, email address, @handle or phone number.
#include "core/limits.h"
#include "core/time.h"
#include "engines/identifiers.h"
#include "tools/cortex_tools.h"

namespace cortex {

using nlohmann::json;

ToolDef EntityLookupTool() {
  return ToolDef{
      .name = "entity.lookup",
      .title = "Look up a counterparty",
      .description =
          "Finds a person or organisation in the workspace's world model by entity id "
          "(entity_...), email address, @handle or +phone number, and returns its name, "
          "identifiers and tags (such as vip, internal, external).",
      .input_schema = {{"type", "object"},
                       {"required", {"identifier"}},
                       {"additionalProperties", false},
                       {"properties",
                        {{"identifier",
                          {{"type", "string"},
                           {"minLength", 1},
                           {"maxLength", limits::kMaxIdentifierChars},
                           {"description",
                            "An entity id, email address, @handle or +phone number."}}}}}},
      .output_schema = {{"type", "object"},
                        {"required",
                         {"entity_id", "name", "kind", "identifiers", "tags", "created_at"}},
                        {"properties",
                         {{"entity_id", {{"type", "string"}}},
                          {"name", {{"type", "string"}}},
                          {"kind", {{"type", "string"}}},
                          {"identifiers", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                          {"tags", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                          {"created_at", {{"type", "string"}}}}}},
      .annotations = {{"readOnlyHint", true}, {"idempotentHint", true}, {"openWorldHint", false}},
      .scope = kScopeRead,
      .handler = [](ToolContext& ctx, const json& args) -> ToolReply {
        const std::string ref = args.at("identifier");
        json body;
        Status st = ctx.store.Read([&](ReadTx& tx) {
          auto e = ResolveEntity(tx, ctx.auth.workspace_id, ref);
          if (!e.ok()) return e.status();
          body = {{"entity_id", e->id}, {"name", e->name},
                  {"kind", e->kind},    {"identifiers", e->identifiers},
                  {"tags", e->tags},    {"created_at", FormatTime(e->created_at)}};
          return Status::Ok();
        });
        if (st.code() == Code::kNotFound) {
          // One answer for "never existed" and "another workspace's": nothing leaks.
          return ToolReply::Error("not_found", "no entity matches '" + ref + "'");
        }
        if (st.code() == Code::kInvalidArgument) {
          return ToolReply::Error("invalid_arguments", "field 'identifier': " + st.message());
        }
        return st.ok() ? ToolReply::Ok(std::move(body)) : ToolReply::FromStatus(st);
      },
  };
}

}  // namespace cortex
