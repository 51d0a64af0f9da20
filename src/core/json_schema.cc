#include "core/json_schema.h"

#include <nlohmann/json.hpp>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

namespace cortex {
namespace {

// valijson reports a path like {"<root>", "[to]"} or {"<root>", "[tags]", "[2]"}.
std::string FieldPath(const std::vector<std::string>& context) {
  std::string path;
  for (const std::string& part : context) {
    if (part == "<root>") continue;
    std::string name = part;
    if (name.size() >= 2 && name.front() == '[' && name.back() == ']') {
      name = name.substr(1, name.size() - 2);
    }
    if (!path.empty()) path += '.';
    path += name;
  }
  return path;
}

}  // namespace

Result<JsonSchema> JsonSchema::Compile(const nlohmann::json& schema) {
  auto compiled = std::make_shared<valijson::Schema>();
  try {
    valijson::SchemaParser parser;
    valijson::adapters::NlohmannJsonAdapter adapter(schema);
    parser.populateSchema(adapter, *compiled);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("invalid JSON Schema: ") + e.what());
  }
  JsonSchema out;
  out.schema_ = std::move(compiled);
  return out;
}

Status JsonSchema::Validate(const nlohmann::json& doc) const {
  // One validator per thread: it keeps the compiled std::regex of every `pattern` it met,
  // which would otherwise be compiled again on every call.
  thread_local valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::adapters::NlohmannJsonAdapter target(doc);
  // Valid documents (the common case) take the fast path that collects no error text.
  if (validator.validate(*schema_, target, nullptr)) return Status::Ok();
  valijson::ValidationResults results;
  validator.validate(*schema_, target, &results);
  // valijson reports the outermost failure last and the most specific first; the first
  // error is the one that names the field.
  valijson::ValidationResults::Error error;
  std::string message;
  if (results.popError(error)) {
    std::string field = FieldPath(error.context);
    std::string desc = error.description;
    // "Missing required property 'x'." is about field x, not the object that lacks it.
    const std::string kMissing = "Missing required property '";
    if (desc.rfind(kMissing, 0) == 0) {
      std::string name = desc.substr(kMissing.size());
      name = name.substr(0, name.find('\''));
      field = field.empty() ? name : field + "." + name;
      desc = "required field is missing";
    }
    // "... 'properties' or 'additionalProperties' constraints: 'x'." names an unknown field.
    const std::string kUnknown = "could not be validated using 'properties'";
    if (desc.find(kUnknown) != std::string::npos && desc.size() > 2) {
      size_t end = desc.rfind('\'');
      size_t start = end == std::string::npos ? end : desc.rfind('\'', end - 1);
      if (start != std::string::npos && start < end) {
        std::string name = desc.substr(start + 1, end - start - 1);
        field = field.empty() ? name : field + "." + name;
        desc = "unknown field (not in the schema)";
      }
    }
    message = field.empty() ? desc : "field '" + field + "': " + desc;
  } else {
    message = "arguments do not match the schema";
  }
  return Status::InvalidArgument(message);
}

}  // namespace cortex
