// JSON Schema validation (valijson over nlohmann::json). One compiled schema validates
// many documents; errors name the offending field.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace valijson {
class Schema;
}

namespace cortex {

class JsonSchema {
 public:
  // Compiles `schema`; InvalidArgument if it is not a schema valijson understands.
  static Result<JsonSchema> Compile(const nlohmann::json& schema);

  // OK, or InvalidArgument whose message names the first failing field and, where the
  // schema says it, what is expected there, e.g. "field 'identifier': required field is
  // missing", "field 'tone': must be one of \"warm\", \"brief\"", "field 'decision_id':
  // must be dec_ followed by 26 Crockford base-32 characters". Thread-safe.
  Status Validate(const nlohmann::json& doc) const;

 private:
  std::shared_ptr<const valijson::Schema> schema_;
  std::shared_ptr<const nlohmann::json> source_;  // the schema as given, for the messages
};

}  // namespace cortex
