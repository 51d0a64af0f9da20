// notification.list: what is due now, what surfaces at the next focus-block transition and
// when, and what waits for the next daily digest.
#include "core/limits.h"
#include "core/time.h"
#include "engines/triage/signals.h"
#include "store/notifications.h"
#include "store/workspaces.h"
#include "tools/cortex_tools.h"
#include "tools/read_tools.h"

namespace cortex {

using nlohmann::json;

namespace {

constexpr int kDefaultLimit = 50;
constexpr std::chrono::hours kDefaultDueWindow{24};

}  // namespace

ToolDef NotificationListTool(const EngineConfig&) {
  json section_list = {{"type", "array"}, {"items", {{"type", "object"}}}};
  return ToolDef{
      .name = "notification.list",
      .title = "List notifications",
      .description =
          "What needs attention: `due` lists notifications that surfaced in the window "
          "(since, as_of] (interrupts, focus-block transitions that passed, digests sent), "
          "newest first; `next_transition` says when the next held batch surfaces and what is "
          "in it; `digest` lists what waits for the next daily digest. as_of defaults to now, "
          "since to 24 hours before as_of.",
      .input_schema = {{"type", "object"},
                       {"additionalProperties", false},
                       {"properties",
                        {{"as_of", TimeSchema("The moment to look from (RFC 3339; default now).")},
                         {"since",
                          TimeSchema("Start of the due window (default as_of minus 24 hours).")},
                         {"limit",
                          {{"type", "integer"},
                           {"minimum", 1},
                           {"maximum", limits::kMaxNotificationsPerSection},
                           {"description", "Most items per section (default 50)."}}}}}},
      .output_schema =
          {{"type", "object"},
           {"required", {"as_of", "due", "next_transition", "digest"}},
           {"properties",
            {{"as_of", {{"type", "string"}}},
             {"due", section_list},
             {"next_transition",
              {{"type", {"object", "null"}},
               {"properties", {{"at", {{"type", "string"}}}, {"notifications", section_list}}}}},
             {"digest",
              {{"type", "object"},
               {"required", {"at", "notifications"}},
               {"properties", {{"at", {{"type", "string"}}}, {"notifications", section_list}}}}}}}},
      .annotations = {{"readOnlyHint", true}, {"idempotentHint", true}, {"openWorldHint", false}},
      .scope = kScopeRead,
      .handler = [](ToolContext& ctx, const json& args) -> ToolReply {
        TimePoint as_of = ctx.clock.Now();
        if (args.contains("as_of")) {
          auto t = ParseTime(args["as_of"].get<std::string>());
          if (!t.ok())
            return ToolReply::Error("invalid_arguments", "field 'as_of': " + t.status().message());
          as_of = *t;
        }
        TimePoint since = as_of - kDefaultDueWindow;
        if (args.contains("since")) {
          auto t = ParseTime(args["since"].get<std::string>());
          if (!t.ok())
            return ToolReply::Error("invalid_arguments", "field 'since': " + t.status().message());
          if (*t >= as_of) {
            return ToolReply::Error("invalid_arguments", "field 'since': must be before as_of");
          }
          since = *t;
        }
        int limit = args.value("limit", kDefaultLimit);
        const std::string& ws = ctx.auth.workspace_id;
        json body;
        Status st = ctx.store.Read([&](ReadTx& tx) -> Status {
          auto views = [&](const std::vector<Notification>& ns) -> Result<json> {
            json out = json::array();
            for (const Notification& n : ns) {
              auto v = NotificationView(tx, n);
              if (!v.ok()) return v.status();
              out.push_back(std::move(*v));
            }
            return out;
          };
          auto due =
              tx.notifications().List(ws, std::nullopt, since, as_of, limit, /*newest_first=*/true);
          if (!due.ok()) return due.status();
          auto due_json = views(*due);
          if (!due_json.ok()) return due_json.status();

          json next = nullptr;
          auto first = tx.notifications().List(ws, TriageClass::kSurfaceAtTransition, as_of,
                                               std::nullopt, 1, /*newest_first=*/false);
          if (!first.ok()) return first.status();
          if (!first->empty()) {
            TimePoint at = *(*first)[0].surface_at;
            auto batch = tx.notifications().List(ws, TriageClass::kSurfaceAtTransition,
                                                 at - std::chrono::milliseconds(1), at, limit,
                                                 /*newest_first=*/false);
            if (!batch.ok()) return batch.status();
            auto batch_json = views(*batch);
            if (!batch_json.ok()) return batch_json.status();
            next = {{"at", FormatTime(at)}, {"notifications", *batch_json}};
          }

          auto settings = tx.workspaces().Settings(ws);
          if (!settings.ok()) return settings.status();
          TimePoint digest_at = NextDigest(as_of, *settings);
          auto digest = tx.notifications().List(ws, TriageClass::kDailyDigest, as_of, digest_at,
                                                limit, /*newest_first=*/false);
          if (!digest.ok()) return digest.status();
          auto digest_json = views(*digest);
          if (!digest_json.ok()) return digest_json.status();

          body = {{"as_of", FormatTime(as_of)},
                  {"due", *due_json},
                  {"next_transition", next},
                  {"digest", {{"at", FormatTime(digest_at)}, {"notifications", *digest_json}}}};
          return Status::Ok();
        });
        return st.ok() ? ToolReply::Ok(std::move(body)) : ToolReply::FromStatus(st);
      },
  };
}

}  // namespace cortex
