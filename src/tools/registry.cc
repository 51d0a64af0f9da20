#include "tools/registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace cortex {

using nlohmann::json;

namespace {

const json& ErrorBodySchema() {
  static const json schema = {{"type", "object"},
                              {"required", {"status", "error", "message"}},
                              {"properties",
                               {{"status", {{"const", "error"}}},
                                {"error", {{"type", "string"}}},
                                {"message", {{"type", "string"}}}}}};
  return schema;
}

}  // namespace

Status ToolRegistry::Add(ToolDef def) {
  if (Has(def.name))
    return Status::InvalidArgument("tool '" + def.name + "' is already registered");
  auto input = JsonSchema::Compile(def.input_schema);
  if (!input.ok())
    return Status::InvalidArgument(def.name + " inputSchema: " + input.status().message());
  std::optional<JsonSchema> output;
  if (!def.output_schema.is_null()) {
    auto compiled = JsonSchema::Compile(def.output_schema);
    if (!compiled.ok()) {
      return Status::InvalidArgument(def.name + " outputSchema: " + compiled.status().message());
    }
    output = std::move(*compiled);
  }
  json entry{
      {"name", def.name}, {"description", def.description}, {"inputSchema", def.input_schema}};
  if (!def.title.empty()) entry["title"] = def.title;
  if (!def.output_schema.is_null()) {
    // A tool error is also a result with structuredContent (the error body), and some
    // clients check every result against outputSchema: the listed schema admits both.
    entry["outputSchema"] = {{"type", "object"}, {"anyOf", {def.output_schema, ErrorBodySchema()}}};
  }
  if (!def.annotations.is_null()) entry["annotations"] = def.annotations;
  if (def.task_support != TaskSupport::kForbidden) {
    any_task_support_ = true;
    entry["execution"] = {
        {"taskSupport", def.task_support == TaskSupport::kRequired ? "required" : "optional"}};
  }
  list_.push_back(std::move(entry));
  // Tools without annotations (allowed) are not read-only.
  auto hint =
      def.annotations.is_object() ? def.annotations.find("readOnlyHint") : def.annotations.end();
  bool read_only = hint != def.annotations.end() && hint->is_boolean() && hint->get<bool>();
  index_.emplace(def.name, tools_.size());
  tools_.push_back(Entry{std::move(def), std::move(*input), std::move(output), read_only});
  return Status::Ok();
}

const ToolRegistry::Entry* ToolRegistry::Find(std::string_view name) const {
  auto it = index_.find(name);
  return it != index_.end() ? &tools_[it->second] : nullptr;
}

int LogLevelIndex(std::string_view level) {
  for (size_t i = 0; i < std::size(kLogLevels); ++i) {
    if (level == kLogLevels[i]) return static_cast<int>(i);
  }
  return -1;
}

void LogToClient(ToolContext& ctx, std::string_view level, json data) {
  int index = LogLevelIndex(level);
  if (ctx.log_threshold < 0 || index < ctx.log_threshold || !ctx.notify) return;
  ctx.notify({{"jsonrpc", "2.0"},
              {"method", "notifications/message"},
              {"params", {{"level", std::string(level)}, {"logger", "cortex"}, {"data", data}}}});
}

void ReportProgress(ToolContext& ctx, double progress, std::optional<double> total,
                    std::string_view message) {
  if (ctx.progress_note) {
    auto number = [](double v) { return json(v).dump(); };  // "3.0" as JSON writes it
    if (!message.empty()) {
      ctx.progress_note(std::string(message));
    } else {
      ctx.progress_note(total ? number(progress) + " of " + number(*total) : number(progress));
    }
  }
  json token = ctx.meta.is_object() ? ctx.meta.value("progressToken", json()) : json();
  if (!(token.is_string() || token.is_number()) || !ctx.notify) return;
  json params = {{"progressToken", token}, {"progress", progress}};
  if (total) params["total"] = *total;
  if (!message.empty()) params["message"] = std::string(message);
  ctx.notify({{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", params}});
}

bool ToolRegistry::Has(const std::string& name) const { return Find(name) != nullptr; }

bool ToolRegistry::IsReadOnly(std::string_view name) const {
  const Entry* entry = Find(name);
  return entry != nullptr && entry->read_only;
}

bool ToolRegistry::CallsOut(std::string_view name) const {
  const Entry* entry = Find(name);
  return entry != nullptr && entry->def.calls_out;
}

const std::vector<std::string>& ToolRegistry::RequiredClientCapabilities(
    std::string_view name) const {
  static const std::vector<std::string> kNone;
  const Entry* entry = Find(name);
  return entry != nullptr ? entry->def.required_client_capabilities : kNone;
}

bool ToolRegistry::AnyCallsOut() const {
  return std::any_of(tools_.begin(), tools_.end(), [](const Entry& e) { return e.def.calls_out; });
}

TaskSupport ToolRegistry::TaskSupportOf(std::string_view name) const {
  const Entry* entry = Find(name);
  return entry != nullptr ? entry->def.task_support : TaskSupport::kForbidden;
}

bool ToolRegistry::LongRunning(std::string_view name) const {
  const Entry* entry = Find(name);
  return entry != nullptr && entry->def.long_running;
}

bool ToolRegistry::MayNameLongRunning(std::string_view body) const {
  for (const Entry& e : tools_) {
    if (!e.def.long_running) continue;
    std::string quoted = "\"" + e.def.name + "\"";
    if (body.find(quoted) != std::string_view::npos) return true;
  }
  return false;
}

ToolReply ToolRegistry::Call(const std::string& name, const json& args, ToolContext& ctx,
                             bool before_task) const {
  const Entry* entry = Find(name);
  if (entry == nullptr) return ToolReply::Error("invalid_arguments", "unknown tool " + name);
  if (!ctx.auth.Has(entry->def.scope)) {
    return ToolReply::Error("unauthorized", "this token lacks the '" +
                                                FormatScopes(entry->def.scope) + "' scope that " +
                                                name + " needs");
  }
  Status valid = entry->input.Validate(args);
  if (!valid.ok()) return ToolReply::Error("invalid_arguments", valid.message());
  try {
    if (before_task) {
      return entry->def.before_task ? entry->def.before_task(ctx, args)
                                    : ToolReply::Ok(json::object());
    }
    ToolReply reply = entry->def.handler(ctx, args);
    if (check_output_ && !reply.is_error() && entry->output) {
      Status out = entry->output->Validate(reply.body());
      if (!out.ok()) {
        spdlog::error("tool {} broke its outputSchema: {}", name, out.message());
        return ToolReply::Error("internal_error", name + " output: " + out.message());
      }
    }
    return reply;
  } catch (const std::exception& e) {
    spdlog::error("tool {} threw: {} trace_id={}", name, e.what(), ctx.trace_id);
    return ToolReply::Error("internal_error", "internal error (trace " + ctx.trace_id + ")");
  }
}

}  // namespace cortex
