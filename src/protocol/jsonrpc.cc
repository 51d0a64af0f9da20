#include "protocol/jsonrpc.h"

#include <string>
#include <variant>

#include "core/json_text.h"
#include "core/limits.h"

namespace cortex::rpc {

using nlohmann::json;

std::variant<Message, Error> Parse(std::string_view body) {
  std::string duplicate;
  json doc = ParseJsonUniqueKeys(body, &duplicate);
  if (doc.is_discarded() && !duplicate.empty()) {
    // Last-one-wins would let two readers of one message (a proxy, a log, this server) see
    // two different requests: a message is one value or none.
    return Error{kParseError,
                 "Parse error: duplicate key at " + Utf8Prefix(duplicate, 200) +
                     " (a key may appear only once in an object)",
                 {}};
  }
  if (doc.is_discarded()) {
    return Error{kParseError,
                 "Parse error: body is not valid JSON, or nests arrays and objects more than " +
                     std::to_string(limits::kMaxJsonDepth) + " deep",
                 {}};
  }
  if (doc.is_array()) {
    return Error{kInvalidRequest, "Invalid Request: batches are not supported", {}};
  }
  if (!doc.is_object()) return Error{kInvalidRequest, "Invalid Request: expected an object", {}};
  auto version = doc.find("jsonrpc");
  if (version == doc.end() || *version != "2.0") {
    return Error{kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"", {}};
  }
  Message m;
  auto id = doc.find("id");
  if (id != doc.end()) {
    if (!id->is_string() && !id->is_number_integer()) {
      return Error{kInvalidRequest, "Invalid Request: \"id\" must be a string or an integer", {}};
    }
    m.id = *id;
  } else {
    m.is_notification = true;
  }
  auto method = doc.find("method");
  if (method == doc.end()) {
    if (!m.is_notification && (doc.contains("result") || doc.contains("error"))) {
      m.is_response = true;
      if (auto r = doc.find("result"); r != doc.end()) m.result = *r;
      if (auto e = doc.find("error"); e != doc.end()) m.error = *e;
      return m;
    }
    return Error{kInvalidRequest, "Invalid Request: \"method\" is required", {}};
  }
  if (!method->is_string() || method->get_ref<const std::string&>().empty()) {
    return Error{kInvalidRequest, "Invalid Request: \"method\" must be a non-empty string", {}};
  }
  m.method = *method;
  auto params = doc.find("params");
  if (params != doc.end()) {
    if (!params->is_object()) {
      return Error{kInvalidRequest, "Invalid Request: \"params\" must be an object", {}};
    }
    m.params = std::move(*params);
  }
  return m;
}

json MakeResult(const json& id, json result) {
  // Built member by member: an initializer list copies each value it is given.
  json out = json::object();
  out["jsonrpc"] = "2.0";
  out["id"] = id;
  out["result"] = std::move(result);
  return out;
}

json MakeError(const json& id, const Error& error) {
  json err{{"code", error.code}, {"message", error.message}};
  if (!error.data.is_null()) err["data"] = error.data;
  json out{{"jsonrpc", "2.0"}, {"error", std::move(err)}};
  // A response to a message whose id could not be read carries "id": null (JSON-RPC 2.0 §5).
  out["id"] = id;
  return out;
}

}  // namespace cortex::rpc
