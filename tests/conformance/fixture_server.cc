// A test-only MCP server for the conformance suite's tool scenarios: the suite's fixture
// tools registered on the project's own MCP stack (registry, protocol layer, HTTP
// transport). Runs without auth on loopback, like `cortex serve --insecure-no-auth`.
#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "app.h"
#include "core/crypto.h"
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

json UserMessage(json content) { return {{"role", "user"}, {"content", std::move(content)}}; }
json Text(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }

// --- input-required results (2026-07-28): state signed with a key of this process ---

const std::string& StateKey() {
  static const std::string key = cortex::RandomHex(32);
  return key;
}
// `payload` (JSON) with its HMAC: the client carries it between rounds, and cannot alter it.
std::string SignState(const json& payload) {
  std::string text = payload.dump();
  return text + "." + cortex::HmacSha256Hex(StateKey(), text);
}
// The payload of a state SignState made, or nullopt if it was altered.
std::optional<json> VerifyState(const std::string& state) {
  size_t dot = state.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  std::string text = state.substr(0, dot);
  if (!cortex::ConstantTimeEquals(state.substr(dot + 1), cortex::HmacSha256Hex(StateKey(), text))) {
    return std::nullopt;
  }
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

json Elicit(std::string message, const char* field, const char* type) {
  return {{"method", "elicitation/create"},
          {"params",
           {{"message", std::move(message)},
            {"requestedSchema",
             {{"type", "object"},
              {"properties", {{field, {{"type", type}}}}},
              {"required", {field}}}}}}};
}
json Sample(std::string text) {
  return {
      {"method", "sampling/createMessage"},
      {"params",
       {{"messages", json::array({{{"role", "user"},
                                   {"content", {{"type", "text"}, {"text", std::move(text)}}}}})},
        {"maxTokens", 100}}}};
}
json ListRoots() { return {{"method", "roots/list"}, {"params", json::object()}}; }
ToolReply TextReply(std::string text) {
  return ToolReply::Raw(
      {{"content", json::array({{{"type", "text"}, {"text", std::move(text)}}})}});
}
bool Answered(const ToolContext& ctx, const char* key) {
  return ctx.input_responses.is_object() && ctx.input_responses.contains(key);
}
// What an elicitation answer holds in `field`, or "".
std::string Field(const ToolContext& ctx, const char* key, const char* field) {
  const json& r = ctx.input_responses[key];
  if (!r.is_object() || !r.contains("content") || !r["content"].is_object()) return "";
  const json& v = r["content"].value(field, json());
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// --- tasks (io.modelcontextprotocol/tasks): tools the suite's tasks scenarios call ---

ToolDef TaskTool(std::string name, std::string description, json input_schema,
                 cortex::TaskSupport support, cortex::ToolHandler handler) {
  ToolDef def =
      Tool(std::move(name), std::move(description), std::move(input_schema), std::move(handler));
  def.task_support = support;
  return def;
}
// Sleeps `ms` in short steps; false if the call was cancelled meanwhile.
bool SleepUnlessCancelled(const ToolContext& ctx, std::chrono::milliseconds ms) {
  auto until = std::chrono::steady_clock::now() + ms;
  while (std::chrono::steady_clock::now() < until) {
    if (cortex::Cancelled(ctx)) return false;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(20), until - std::chrono::steady_clock::now()));
  }
  return !cortex::Cancelled(ctx);
}
bool Accepted(const ToolContext& ctx, const char* key) {
  const json& r = ctx.input_responses[key];
  return r.is_object() && r.value("action", "") == "accept";
}

Status RegisterTasks(cortex::ToolRegistry& r) {
  using cortex::TaskSupport;
  CORTEX_RETURN_IF_ERROR(r.Add(Tool("greet", "Greets by name (never a task)",
                                    {{"type", "object"},
                                     {"properties", {{"name", {{"type", "string"}}}}},
                                     {"required", {"name"}}},
                                    [](ToolContext&, const json& args) {
                                      return TextReply("Hello, " +
                                                       args.at("name").get<std::string>() + "!");
                                    })));
  CORTEX_RETURN_IF_ERROR(r.Add(
      TaskTool("slow_compute", "Works for `seconds` seconds (stops when cancelled), then answers",
               {{"type", "object"},
                {"properties",
                 {{"seconds", {{"type", "number"}, {"minimum", 0}, {"maximum", 3600}}},
                  {"label", {{"type", "string"}}}}}},
               TaskSupport::kOptional, [](ToolContext& ctx, const json& args) {
                 double seconds = args.value("seconds", 0.0);
                 std::string label = args.value("label", std::string("compute"));
                 if (!SleepUnlessCancelled(
                         ctx, std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)))) {
                   return ToolReply::Raw({{"content", json::array({Text("Cancelled: " + label)})},
                                          {"isError", true}});
                 }
                 return TextReply("Computed " + label + " in " +
                                  args.value("seconds", json(0)).dump() + " s");
               })));
  CORTEX_RETURN_IF_ERROR(r.Add(
      TaskTool("failing_job", "Works for a second, then reports a tool error (only as a task)",
               NoArgs(), TaskSupport::kRequired, [](ToolContext& ctx, const json&) {
                 SleepUnlessCancelled(ctx, std::chrono::milliseconds(1000));
                 return ToolReply::Raw(
                     {{"content", json::array({Text("The job failed: the input was rejected")})},
                      {"isError", true}});
               })));
  CORTEX_RETURN_IF_ERROR(
      r.Add(TaskTool("protocol_error_job", "Fails inside the server (a protocol-level error)",
                     NoArgs(), TaskSupport::kOptional, [](ToolContext&, const json&) -> ToolReply {
                       throw std::runtime_error("protocol_error_job always fails");
                     })));
  CORTEX_RETURN_IF_ERROR(r.Add(
      TaskTool("confirm_delete", "Asks to confirm, then deletes (pretends to) the file",
               {{"type", "object"},
                {"properties", {{"filename", {{"type", "string"}}}}},
                {"required", {"filename"}}},
               TaskSupport::kOptional, [](ToolContext& ctx, const json& args) {
                 std::string file = args.at("filename");
                 if (!Answered(ctx, "confirm")) {
                   return ToolReply::InputRequired(
                       {{"confirm", Elicit("Delete " + file + "?", "confirm", "boolean")}}, "");
                 }
                 bool yes = Accepted(ctx, "confirm") && Field(ctx, "confirm", "confirm") == "true";
                 return TextReply(yes ? "Deleted " + file : "Kept " + file);
               })));
  CORTEX_RETURN_IF_ERROR(r.Add(TaskTool(
      "multi_input", "Asks two questions at once, then answers with both", NoArgs(),
      TaskSupport::kOptional, [](ToolContext& ctx, const json&) {
        if (!Answered(ctx, "name") || !Answered(ctx, "confirm")) {
          return ToolReply::InputRequired({{"name", Elicit("Your name?", "name", "string")},
                                           {"confirm", Elicit("Go ahead?", "confirm", "boolean")}},
                                          "");
        }
        return TextReply("Name " + Field(ctx, "name", "name") + ", go ahead " +
                         Field(ctx, "confirm", "confirm"));
      })));
  ToolDef with_task =
      TaskTool("test_tool_with_task", "Asks the user's name, then greets them from a task",
               NoArgs(), TaskSupport::kRequired, [](ToolContext& ctx, const json&) {
                 return TextReply("Hello, " + Field(ctx, "user_name", "name") + "!");
               });
  with_task.before_task = [](ToolContext& ctx, const json&) {
    if (!Answered(ctx, "user_name")) {
      return ToolReply::InputRequired(
          {{"user_name", Elicit("What is your name?", "name", "string")}}, "");
    }
    return ToolReply::Ok(json::object());
  };
  return r.Add(std::move(with_task));
}

Status RegisterInputRequired(cortex::ToolRegistry& r) {
  CORTEX_RETURN_IF_ERROR(
      r.Add(Tool("test_input_required_result_elicitation", "Asks the user's name, then greets them",
                 NoArgs(), [](ToolContext& ctx, const json&) {
                   if (!Answered(ctx, "user_name")) {
                     return ToolReply::InputRequired(
                         {{"user_name", Elicit("What is your name?", "name", "string")}}, "");
                   }
                   return TextReply("Hello, " + Field(ctx, "user_name", "name") + "!");
                 })));
  CORTEX_RETURN_IF_ERROR(
      r.Add(Tool("test_input_required_result_sampling", "Asks the client's model a question",
                 NoArgs(), [](ToolContext& ctx, const json&) {
                   if (!Answered(ctx, "capital_question")) {
                     return ToolReply::InputRequired(
                         {{"capital_question", Sample("What is the capital of France?")}}, "");
                   }
                   const json& answer = ctx.input_responses["capital_question"];
                   std::string text = answer.is_object() && answer.contains("content") &&
                                              answer["content"].is_object()
                                          ? answer["content"].value("text", "")
                                          : "";
                   return TextReply("Sampling response: " + text);
                 })));
  CORTEX_RETURN_IF_ERROR(r.Add(
      Tool("test_input_required_result_list_roots", "Asks the client for its roots", NoArgs(),
           [](ToolContext& ctx, const json&) {
             if (!Answered(ctx, "client_roots")) {
               return ToolReply::InputRequired({{"client_roots", ListRoots()}}, "");
             }
             return TextReply("Roots received: " + ctx.input_responses["client_roots"].dump());
           })));
  // Tools whose rounds carry signed state: round 1 asks, the next checks the state first.
  CORTEX_RETURN_IF_ERROR(r.Add(Tool(
      "test_input_required_result_request_state", "Round-trips a signed requestState", NoArgs(),
      [](ToolContext& ctx, const json&) {
        if (ctx.request_state.empty()) {
          return ToolReply::InputRequired({{"confirm", Elicit("Please confirm", "ok", "boolean")}},
                                          SignState({{"round", 1}}));
        }
        auto state = VerifyState(ctx.request_state);
        if (!state) return ToolReply::InvalidParams("requestState failed its integrity check");
        if (!Answered(ctx, "confirm")) {
          return ToolReply::InvalidParams("inputResponses lacks 'confirm'");
        }
        return TextReply("state-ok: confirmed");
      })));
  CORTEX_RETURN_IF_ERROR(r.Add(Tool(
      "test_input_required_result_tampered_state", "Refuses a requestState that was altered",
      NoArgs(), [](ToolContext& ctx, const json&) {
        if (ctx.request_state.empty()) {
          return ToolReply::InputRequired({{"confirm", Elicit("Please confirm", "ok", "boolean")}},
                                          SignState({{"round", 1}}));
        }
        if (!VerifyState(ctx.request_state)) {
          return ToolReply::InvalidParams("requestState failed its integrity check");
        }
        return TextReply("state-ok");
      })));
  CORTEX_RETURN_IF_ERROR(r.Add(
      Tool("test_input_required_result_multi_round", "Asks twice, carrying the first answer",
           NoArgs(), [](ToolContext& ctx, const json&) {
             if (ctx.request_state.empty()) {
               return ToolReply::InputRequired(
                   {{"step1", Elicit("Step 1: What is your name?", "name", "string")}},
                   SignState({{"round", 1}}));
             }
             auto state = VerifyState(ctx.request_state);
             if (!state || !state->is_object()) {
               return ToolReply::InvalidParams("requestState failed its integrity check");
             }
             if (state->value("round", 0) == 1 && Answered(ctx, "step1")) {
               return ToolReply::InputRequired(
                   {{"step2", Elicit("Step 2: What is your favorite color?", "color", "string")}},
                   SignState({{"round", 2}, {"name", Field(ctx, "step1", "name")}}));
             }
             if (state->value("round", 0) == 2 && Answered(ctx, "step2")) {
               return TextReply("Hello " + state->value("name", std::string()) + ", you like " +
                                Field(ctx, "step2", "color"));
             }
             return ToolReply::InvalidParams("inputResponses do not answer this round");
           })));
  CORTEX_RETURN_IF_ERROR(r.Add(
      Tool("test_input_required_result_multiple_inputs", "Asks for three inputs at once", NoArgs(),
           [](ToolContext& ctx, const json&) {
             if (ctx.request_state.empty()) {
               return ToolReply::InputRequired(
                   {{"user_name", Elicit("What is your name?", "name", "string")},
                    {"greeting", Sample("Generate a greeting")},
                    {"client_roots", ListRoots()}},
                   SignState({{"round", 1}}));
             }
             if (!VerifyState(ctx.request_state)) {
               return ToolReply::InvalidParams("requestState failed its integrity check");
             }
             for (const char* key : {"user_name", "greeting", "client_roots"}) {
               if (!Answered(ctx, key)) {
                 return ToolReply::InvalidParams(std::string("inputResponses lacks '") + key + "'");
               }
             }
             return TextReply("All inputs received for " + Field(ctx, "user_name", "name"));
           })));
  CORTEX_RETURN_IF_ERROR(r.Add(
      Tool("test_input_required_result_capabilities",
           "Asks only by the means the client declared (sampling, elicitation)", NoArgs(),
           [](ToolContext& ctx, const json&) {
             json caps = ctx.meta.is_object()
                             ? ctx.meta.value("io.modelcontextprotocol/clientCapabilities", json())
                             : json();
             json requests = json::object();
             if (caps.is_object() && caps.contains("sampling")) {
               requests["greeting"] = Sample("Generate a greeting");
             }
             if (caps.is_object() && caps.contains("elicitation")) {
               requests["user_name"] = Elicit("What is your name?", "name", "string");
             }
             if (requests.empty() || ctx.input_responses.is_object()) {
               return TextReply("Nothing to ask this client");
             }
             return ToolReply::InputRequired(std::move(requests), "");
           })));
  // Tools of the 2025-11-25 scenarios that ask the client mid-call. Written as
  // input-required results, as above: on the 2025 wire the protocol layer sends each input
  // request to the client during the call and runs the tool again with the answers
  // (protocol/mcp_ask.cc).
  auto with_args = [](json properties, std::vector<std::string> required) {
    return json{{"type", "object"}, {"properties", std::move(properties)}, {"required", required}};
  };
  CORTEX_RETURN_IF_ERROR(
      r.Add(Tool("test_sampling", "Asks the client's model the prompt it is given",
                 with_args({{"prompt", {{"type", "string"}}}}, {"prompt"}),
                 [](ToolContext& ctx, const json& args) {
                   if (!Answered(ctx, "sample")) {
                     return ToolReply::InputRequired({{"sample", Sample(args.at("prompt"))}}, "");
                   }
                   const json& answer = ctx.input_responses["sample"];
                   std::string text = answer.contains("content") && answer["content"].is_object()
                                          ? answer["content"].value("text", "")
                                          : "";
                   return TextReply("LLM response: " + text);
                 })));
  CORTEX_RETURN_IF_ERROR(r.Add(
      Tool("test_elicitation", "Asks the user for a username and an email",
           with_args({{"message", {{"type", "string"}}}}, {"message"}),
           [](ToolContext& ctx, const json& args) {
             if (!Answered(ctx, "info")) {
               json schema = {
                   {"type", "object"},
                   {"properties",
                    {{"username", {{"type", "string"}, {"description", "User's response"}}},
                     {"email", {{"type", "string"}, {"description", "User's email address"}}}}},
                   {"required", {"username", "email"}}};
               return ToolReply::InputRequired(
                   {{"info",
                     {{"method", "elicitation/create"},
                      {"params", {{"message", args.at("message")}, {"requestedSchema", schema}}}}}},
                   "");
             }
             const json& answer = ctx.input_responses["info"];
             return TextReply("User response: action=" + answer.value("action", std::string()) +
                              ", content=" + answer.value("content", json::object()).dump());
           })));
  auto elicit_form = [](const char* name, const char* description, json properties) {
    return Tool(name, description, NoArgs(), [properties](ToolContext& ctx, const json&) {
      if (!Answered(ctx, "form")) {
        return ToolReply::InputRequired(
            {{"form",
              {{"method", "elicitation/create"},
               {"params",
                {{"message", "Please review and update the form fields"},
                 {"requestedSchema", {{"type", "object"}, {"properties", properties}}}}}}}},
            "");
      }
      const json& answer = ctx.input_responses["form"];
      return TextReply("Elicitation completed: action=" + answer.value("action", std::string()) +
                       ", content=" + answer.value("content", json::object()).dump());
    });
  };
  CORTEX_RETURN_IF_ERROR(r.Add(elicit_form(
      "test_elicitation_sep1034_defaults", "Asks with a form whose fields have defaults",
      {{"name", {{"type", "string"}, {"default", "John Doe"}}},
       {"age", {{"type", "integer"}, {"default", 30}}},
       {"score", {{"type", "number"}, {"default", 95.5}}},
       {"status",
        {{"type", "string"}, {"enum", {"active", "inactive", "pending"}}, {"default", "active"}}},
       {"verified", {{"type", "boolean"}, {"default", true}}}})));
  auto titled = [](json pairs) {
    json out = json::array();
    for (const auto& p : pairs) out.push_back({{"const", p[0]}, {"title", p[1]}});
    return out;
  };
  CORTEX_RETURN_IF_ERROR(r.Add(elicit_form(
      "test_elicitation_sep1330_enums", "Asks with a form of every kind of enum",
      {{"untitledSingle", {{"type", "string"}, {"enum", {"option1", "option2", "option3"}}}},
       {"titledSingle",
        {{"type", "string"},
         {"oneOf", titled(json::array({{"value1", "First Option"},
                                       {"value2", "Second Option"},
                                       {"value3", "Third Option"}}))}}},
       {"legacyEnum",
        {{"type", "string"},
         {"enum", {"opt1", "opt2", "opt3"}},
         {"enumNames", {"Option One", "Option Two", "Option Three"}}}},
       {"untitledMulti",
        {{"type", "array"},
         {"items", {{"type", "string"}, {"enum", {"option1", "option2", "option3"}}}}}},
       {"titledMulti",
        {{"type", "array"},
         {"items",
          {{"anyOf", titled(json::array({{"value1", "First Choice"},
                                         {"value2", "Second Choice"},
                                         {"value3", "Third Choice"}}))}}}}}})));
  // Diagnostic tools of the server-stateless scenario.
  ToolDef needs_sampling =
      Tool("test_missing_capability", "Needs the client's sampling capability", NoArgs(),
           [](ToolContext&, const json&) { return TextReply("sampled"); });
  needs_sampling.required_client_capabilities = {"sampling"};
  CORTEX_RETURN_IF_ERROR(r.Add(std::move(needs_sampling)));
  CORTEX_RETURN_IF_ERROR(r.Add(Tool(
      "test_streaming_elicitation", "Asks the user (an input-required result, never a request)",
      NoArgs(), [](ToolContext& ctx, const json&) {
        if (!Answered(ctx, "user_name")) {
          return ToolReply::InputRequired(
              {{"user_name", Elicit("What is your name?", "name", "string")}}, "");
        }
        return TextReply("Hello, " + Field(ctx, "user_name", "name") + "!");
      })));
  return Status::Ok();
}

void AddPromptWithInput(cortex::Catalog& c, Status& st) {
  if (!st.ok()) return;
  st = c.AddPrompt({
      .name = "test_input_required_result_prompt",
      .description = "A prompt that asks the user for context first",
      .get = [](ToolContext& ctx, const cortex::Arguments&) -> cortex::Result<json> {
        if (!Answered(ctx, "user_context")) {
          return json{{"resultType", "input_required"},
                      {"inputRequests",
                       {{"user_context",
                         Elicit("What context should the prompt use?", "context", "string")}}}};
        }
        return json{{"messages",
                     json::array({UserMessage(
                         Text("Use this context: " + Field(ctx, "user_context", "context")))})}};
      },
  });
}

// A resource whose one content is `content` (uri and mimeType added).
cortex::ResourceDef Resource(std::string uri, std::string name, std::string description,
                             std::string mime_type, json content) {
  return cortex::ResourceDef{
      .uri = uri,
      .name = std::move(name),
      .description = std::move(description),
      .mime_type = mime_type,
      .read = [content, mime_type](ToolContext&, const std::string& uri,
                                   const cortex::Arguments&) -> cortex::Result<json> {
        json c = content;
        c["uri"] = uri;
        c["mimeType"] = mime_type;
        return json::array({c});
      },
  };
}

Status RegisterCatalog(cortex::Catalog& c) {
  CORTEX_RETURN_IF_ERROR(c.AddResource(
      Resource("test://static-text", "static-text", "A static text resource", "text/plain",
               {{"text", "This is the content of the static text resource."}})));
  CORTEX_RETURN_IF_ERROR(c.AddResource(Resource("test://static-binary", "static-binary",
                                                "A static binary resource (a PNG image)",
                                                "image/png", {{"blob", kPng}})));
  CORTEX_RETURN_IF_ERROR(c.AddResource(Resource("test://watched-resource", "watched-resource",
                                                "A resource to subscribe to", "text/plain",
                                                {{"text", "Watched resource content"}})));
  CORTEX_RETURN_IF_ERROR(c.AddResource({
      .uri = "test://template/{id}/data",
      .name = "template-data",
      .description = "Data for an id, from a resource template",
      .read = [](ToolContext&, const std::string& uri,
                 const cortex::Arguments& vars) -> cortex::Result<json> {
        json body = {{"id", vars.at("id")},
                     {"templateTest", true},
                     {"data", "Data for ID: " + vars.at("id")}};
        return json::array(
            {{{"uri", uri}, {"mimeType", "application/json"}, {"text", body.dump()}}});
      },
  }));
  auto fixed = [](json messages) {
    return [messages](ToolContext&, const cortex::Arguments&) -> cortex::Result<json> {
      return json{{"messages", messages}};
    };
  };
  CORTEX_RETURN_IF_ERROR(c.AddPrompt({
      .name = "test_simple_prompt",
      .description = "A simple prompt without arguments",
      .get = fixed(json::array({UserMessage(Text("This is a simple prompt for testing."))})),
  }));
  CORTEX_RETURN_IF_ERROR(c.AddPrompt({
      .name = "test_prompt_with_arguments",
      .description = "A prompt with two required arguments",
      .arguments = {{"arg1", "First test argument", true}, {"arg2", "Second test argument", true}},
      .get = [](ToolContext&, const cortex::Arguments& a) -> cortex::Result<json> {
        return json{{"messages",
                     json::array({UserMessage(Text("Prompt with arguments: arg1='" + a.at("arg1") +
                                                   "', arg2='" + a.at("arg2") + "'"))})}};
      },
      .complete = [](ToolContext&, const std::string&, const std::string& value,
                     const cortex::Arguments&) -> cortex::Result<std::vector<std::string>> {
        return cortex::StartingWith({"paris", "park", "party", "test", "testing", "tested"}, value);
      },
  }));
  CORTEX_RETURN_IF_ERROR(c.AddPrompt({
      .name = "test_prompt_with_embedded_resource",
      .description = "A prompt that embeds the resource it is given",
      .arguments = {{"resourceUri", "URI of the resource to embed", true}},
      .get = [](ToolContext&, const cortex::Arguments& a) -> cortex::Result<json> {
        return json{
            {"messages",
             json::array({UserMessage({{"type", "resource"},
                                       {"resource",
                                        {{"uri", a.at("resourceUri")},
                                         {"mimeType", "text/plain"},
                                         {"text", "Embedded resource content for testing."}}}}),
                          UserMessage(Text("Please process the embedded resource above."))})}};
      },
  }));
  CORTEX_RETURN_IF_ERROR(c.AddPrompt({
      .name = "test_prompt_with_image",
      .description = "A prompt with an image",
      .get = fixed(
          json::array({UserMessage({{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}}),
                       UserMessage(Text("Please analyze the image above."))})),
  }));
  return Status::Ok();
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
          ReportProgress(ctx, progress, 100);
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
  CORTEX_RETURN_IF_ERROR(r.Add(Tool(
      "test_tool_with_logging", "Sends three info log messages, 50 ms apart, then returns",
      NoArgs(), [](ToolContext& ctx, const json&) {
        for (const char* text :
             {"Tool execution started", "Tool processing data", "Tool execution completed"}) {
          cortex::LogToClient(ctx, "info", text);
          if (std::string_view(text) != "Tool execution completed") {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
        }
        return ToolReply::Raw(
            {{"content", json::array({{{"type", "text"}, {"text", "Logging test completed"}}})}});
      })));
  CORTEX_RETURN_IF_ERROR(r.Add(
      Tool("test_logging_tool", "Sends three info log messages (when the request asks for them)",
           NoArgs(), [](ToolContext& ctx, const json&) {
             for (const char* text :
                  {"Tool execution started", "Tool processing data", "Tool execution completed"}) {
               cortex::LogToClient(ctx, "info", text);
             }
             return TextReply("Logging test completed");
           })));
  CORTEX_RETURN_IF_ERROR(RegisterInputRequired(r));
  CORTEX_RETURN_IF_ERROR(RegisterTasks(r));
  Status st = RegisterCatalog(r.catalog());
  AddPromptWithInput(r.catalog(), st);
  return st;
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
