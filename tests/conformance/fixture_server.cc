// A test-only MCP server for the conformance suite's tool scenarios: the suite's fixture
// tools registered on the project's own MCP stack (registry, protocol layer, HTTP
// transport). Runs without auth on loopback, like `cortex serve --insecure-no-auth`.
#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "app.h"
#include "core/log.h"
#include "engines/config.h"

namespace {

using cortex::Status;
using cortex::ToolContext;
using cortex::ToolDef;
using cortex::ToolReply;
using nlohmann::json;

constexpr char kPng[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg"
    "==";
constexpr char kWav[] = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

json NoArgs() { return {{"type", "object"}, {"properties", json::object()}}; }

ToolDef Tool(std::string name, std::string description, json input_schema,
             cortex::ToolHandler handler) {
  ToolDef def;
  def.name = std::move(name);
  def.description = std::move(description);
  def.input_schema = std::move(input_schema);
  def.handler = std::move(handler);
  return def;
}

ToolDef Fixture(std::string name, std::string description, json content, bool is_error = false) {
  json result = {{"content", std::move(content)}};
  if (is_error) result["isError"] = true;
  return Tool(std::move(name), std::move(description), NoArgs(),
              [result](ToolContext&, const json&) { return ToolReply::Raw(result); });
}

Status RegisterFixtures(cortex::ToolRegistry& r, const cortex::EngineConfig&) {
  json png = {{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}};
  CORTEX_RETURN_IF_ERROR(r.Add(Fixture(
      "test_simple_text", "Returns simple text content",
      json::array({{{"type", "text"}, {"text", "This is a simple text response for testing."}}}))));
  CORTEX_RETURN_IF_ERROR(
      r.Add(Fixture("test_image_content", "Returns image content", json::array({png}))));
  CORTEX_RETURN_IF_ERROR(r.Add(
      Fixture("test_audio_content", "Returns audio content",
              json::array({{{"type", "audio"}, {"data", kWav}, {"mimeType", "audio/wav"}}}))));
  CORTEX_RETURN_IF_ERROR(
      r.Add(Fixture("test_embedded_resource", "Returns an embedded resource",
                    json::array({{{"type", "resource"},
                                  {"resource",
                                   {{"uri", "test://embedded-resource"},
                                    {"mimeType", "text/plain"},
                                    {"text", "This is an embedded resource content."}}}}}))));
  CORTEX_RETURN_IF_ERROR(
      r.Add(Fixture("test_multiple_content_types", "Returns text, image and resource content",
                    json::array({{{"type", "text"}, {"text", "Multiple content types test:"}},
                                 png,
                                 {{"type", "resource"},
                                  {"resource",
                                   {{"uri", "test://mixed-content-resource"},
                                    {"mimeType", "application/json"},
                                    {"text", "{\"test\":\"data\",\"value\":123}"}}}}}))));
  CORTEX_RETURN_IF_ERROR(r.Add(Fixture(
      "test_error_handling", "Always returns a tool error",
      json::array(
          {{{"type", "text"}, {"text", "This tool intentionally returns an error for testing"}}}),
      /*is_error=*/true)));
  CORTEX_RETURN_IF_ERROR(r.Add(Tool(
      "test_tool_with_progress", "Reports progress three times, then returns", NoArgs(),
      [](ToolContext& ctx, const json&) {
        json token = ctx.meta.is_object() ? ctx.meta.value("progressToken", json()) : json();
        for (int progress : {0, 50, 100}) {
          if (!token.is_null()) {
            ctx.notify(
                {{"jsonrpc", "2.0"},
                 {"method", "notifications/progress"},
                 {"params", {{"progressToken", token}, {"progress", progress}, {"total", 100}}}});
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return ToolReply::Raw(
            {{"content", json::array({{{"type", "text"}, {"text", token.dump()}}})}});
      })));
  CORTEX_RETURN_IF_ERROR(
      r.Add(Fixture("test_reconnection", "Returns text (the suite's SSE polling scenario)",
                    json::array({{{"type", "text"}, {"text", "Reconnection test completed"}}}))));
  CORTEX_RETURN_IF_ERROR(
      r.Add(Tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
                 json::parse(R"({"$schema":"https://json-schema.org/draft/2020-12/schema",
        "type":"object","$defs":{"address":{"type":"object","properties":{
        "street":{"type":"string"},"city":{"type":"string"}}}},"properties":{
        "name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},
        "additionalProperties":false})"),
                 [](ToolContext&, const json& args) {
                   return ToolReply::Raw(
                       {{"content", json::array({{{"type", "text"}, {"text", args.dump()}}})}});
                 })));
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"MCP conformance fixture server (test only)"};
  cortex::ServeOptions options;
  options.insecure_no_auth = true;
  options.anonymous_workspace = "conformance";
  app.add_option("--listen", options.listen, "HOST:PORT (loopback)")->capture_default_str();
  app.add_option("--data", options.data_dir, "Data directory (default: a fresh temp dir)");
  CLI11_PARSE(app, argc, argv);
  cortex::InitLogging("warn");
  if (options.data_dir.empty()) {
    options.data_dir =
        (std::filesystem::temp_directory_path() / ("cortex-fixture-" + std::to_string(::getpid())))
            .string();
  }
  int rc = cortex::RunServe(options, RegisterFixtures);
  std::error_code ec;
  std::filesystem::remove_all(options.data_dir, ec);
  return rc;
}
