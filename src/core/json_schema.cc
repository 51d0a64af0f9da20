#include "core/json_schema.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
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

// The part of `schema` that applies at `context` (valijson's path), following "properties"
// and "items" only; null where the schema branches (anyOf, $ref, ...) or says nothing.
const nlohmann::json* SchemaAt(const nlohmann::json& schema,
                               const std::vector<std::string>& context) {
  const nlohmann::json* at = &schema;
  for (const std::string& part : context) {
    if (part == "<root>") continue;
    if (part.size() < 2 || part.front() != '[' || part.back() != ']') return nullptr;
    std::string name = part.substr(1, part.size() - 2);
    if (!at->is_object()) return nullptr;
    auto props = at->find("properties");
    if (props != at->end() && props->is_object() && props->contains(name)) {
      at = &(*props)[name];
      continue;
    }
    auto items = at->find("items");
    if (items != at->end() && items->is_object() && !name.empty() &&
        name.find_first_not_of("0123456789") == std::string::npos) {
      at = &*items;
      continue;
    }
    return nullptr;
  }
  return at;
}

// A pattern in words where it has a known form: an id Cortex issues is its prefix and a
// ULID (26 Crockford base-32 characters, the first 0-7). Otherwise the pattern itself.
std::string DescribePattern(const std::string& pattern) {
  static const std::string kUlid = "[0-7][0-9A-HJKMNP-TV-Z]{25}$";
  if (pattern.size() > kUlid.size() && pattern.front() == '^' &&
      pattern.compare(pattern.size() - kUlid.size(), kUlid.size(), kUlid) == 0) {
    std::string prefix = pattern.substr(1, pattern.size() - 1 - kUlid.size());
    bool literal = std::all_of(prefix.begin(), prefix.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '-';
    });
    if (literal) {
      return "must be " + (prefix.empty() ? std::string() : prefix + " followed by ") +
             "26 Crockford base-32 characters (0-9 and A-Z without I, L, O and U; the first "
             "0-7)";
    }
  }
  return "must match the pattern " + pattern;
}

// What the schema expects at a failing field, in place of valijson's description, for the
// errors whose description does not say: an enum's values, a pattern's form, a type.
std::optional<std::string> Expected(const nlohmann::json* at, const std::string& desc) {
  if (at == nullptr || !at->is_object()) return std::nullopt;
  if (desc.rfind("Failed to match against any enum values", 0) == 0) {
    auto values = at->find("enum");
    if (values == at->end() || !values->is_array()) return std::nullopt;
    std::string out = "must be one of ";
    for (size_t i = 0; i < values->size(); ++i) {
      if (i > 0) out += ", ";
      out += (*values)[i].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    return out;
  }
  if (desc.rfind("Failed to match regex specified by 'pattern'", 0) == 0) {
    auto pattern = at->find("pattern");
    if (pattern == at->end() || !pattern->is_string()) return std::nullopt;
    return DescribePattern(pattern->get<std::string>());
  }
  if (desc.rfind("Value type not permitted by 'type'", 0) == 0) {
    auto type = at->find("type");
    if (type == at->end()) return std::nullopt;
    auto article = [](const std::string& t) {
      return (t == "integer" || t == "array" || t == "object" ? "an " : "a ") + t;
    };
    if (type->is_string()) return "must be " + article(type->get<std::string>());
    if (type->is_array() && !type->empty()) {
      std::string out = "must be ";
      for (size_t i = 0; i < type->size(); ++i) {
        if (!(*type)[i].is_string()) return std::nullopt;
        if (i > 0) out += i + 1 == type->size() ? " or " : ", ";
        out += article((*type)[i].get<std::string>());
      }
      return out;
    }
  }
  return std::nullopt;
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
  out.source_ = std::make_shared<const nlohmann::json>(schema);
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
    if (auto expected = Expected(SchemaAt(*source_, error.context), desc)) desc = *expected;
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
