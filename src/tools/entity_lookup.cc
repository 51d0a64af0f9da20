// entity.lookup: a counterparty by entity id, email address, @handle, phone number or name.
#include "core/json_text.h"
#include "core/limits.h"
#include "core/time.h"
#include "engines/world/identifiers.h"
#include "store/entities.h"
#include "tools/cortex_tools.h"

namespace cortex {

using nlohmann::json;

namespace {

// People offered when a name matches several (the `ambiguous` error's candidates).
constexpr size_t kMaxNameCandidates = 10;

json EntityBody(const Entity& e) {
  return {{"entity_id", e.id}, {"name", e.name},
          {"kind", e.kind},    {"identifiers", e.identifiers},
          {"tags", e.tags},    {"created_at", FormatTime(e.created_at)}};
}

}  // namespace

ToolDef EntityLookupTool(const EngineConfig&) {
  return ToolDef{
      .name = "entity.lookup",
      .title = "Look up a counterparty",
      .description =
          "Finds a person or organisation in the workspace's world model by entity id "
          "(entity_...), email address, @handle, +phone number or name, and returns its "
          "name, identifiers and tags (such as vip, internal, external). A name matches the "
          "whole name or the start of one of its words, ignoring case ('Sarah', 'chen', "
          "'Sarah Chen'); if it matches several people the error 'ambiguous' lists them "
          "(up to 10) with their identifiers, to look one up by.",
      .input_schema = {{"type", "object"},
                       {"required", {"identifier"}},
                       {"additionalProperties", false},
                       {"properties",
                        {{"identifier",
                          {{"type", "string"},
                           {"minLength", 1},
                           {"maxLength", limits::kMaxIdentifierChars},
                           {"description",
                            "An entity id, email address, @handle, +phone number, or a "
                            "name."}}}}}},
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
        json candidates = json::array();
        bool more = false;  // the name matches more than kMaxNameCandidates people
        Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
          if (IsIdentifierShaped(ref)) {
            auto e = ResolveEntity(tx, ctx.auth.workspace_id, ref);
            if (!e.ok()) return e.status();
            body = EntityBody(*e);
            return Status::Ok();
          }
          auto found = MatchName(tx, ctx.auth.workspace_id, ref, kMaxNameCandidates);
          if (!found.ok()) return found.status();
          if (found->one) {
            body = EntityBody(*found->one);
            return Status::Ok();
          }
          if (found->candidates.empty()) return Status::NotFound("no entity matches");
          more = found->more;
          for (const Entity& e : found->candidates) {
            candidates.push_back(
                {{"entity_id", e.id}, {"name", e.name}, {"identifiers", e.identifiers}});
          }
          return Status::Ok();
        });
        if (st.ok() && !candidates.empty()) {
          std::string message = "'" + Utf8Prefix(ref, limits::kMaxNameChars) + "' matches " +
                                (more ? "more than " : "") + std::to_string(candidates.size()) +
                                " people; look one up by entity id or identifier";
          return ToolReply::ErrorBody({{"status", "error"},
                                       {"error", "ambiguous"},
                                       {"message", std::move(message)},
                                       {"candidates", std::move(candidates)}});
        }
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
