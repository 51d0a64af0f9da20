#include "tools/catalog.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/limits.h"
#include "tools/registry.h"

namespace cortex {

using nlohmann::json;

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

Status NeedScope(const ToolContext& ctx, Scope scope, const std::string& what) {
  if (ctx.auth.Has(scope)) return Status::Ok();
  return Status::Unauthorized("this token lacks the '" + FormatScopes(scope) + "' scope that " +
                              what + " needs");
}

// Runs a handler, turning an exception into an internal error (as ToolRegistry::Call does).
template <typename F>
auto Guarded(const std::string& what, const ToolContext& ctx, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    spdlog::error("{} threw: {} trace_id={}", what, e.what(), ctx.trace_id);
    return Status::Internal("internal error (trace " + ctx.trace_id + ")");
  }
}

json CompletionJson(std::vector<std::string> values) {
  // A completer stops looking past kMaxCompletions values: the total is known only below.
  bool more = values.size() > limits::kMaxCompletions;
  if (more) {
    values.resize(limits::kMaxCompletions);
    return {{"values", std::move(values)}, {"hasMore", true}};
  }
  size_t total = values.size();
  return {{"values", std::move(values)}, {"total", total}, {"hasMore", false}};
}

}  // namespace

std::vector<std::string> StartingWith(const std::vector<std::string>& candidates,
                                      const std::string& value) {
  std::string prefix = Lower(value);
  std::vector<std::string> out;
  for (const std::string& c : candidates) {
    if (Lower(c.substr(0, prefix.size())) == prefix &&
        std::find(out.begin(), out.end(), c) == out.end()) {
      out.push_back(c);
      if (out.size() > limits::kMaxCompletions) break;  // enough to say there are more
    }
  }
  return out;
}

std::optional<Arguments> Catalog::Resource::Match(const std::string& uri) const {
  if (variables.empty()) {
    if (uri == def.uri) return Arguments{};
    return std::nullopt;
  }
  // literals[0] var[0] literals[1] var[1] ... literals[n]; a variable is one or more
  // characters up to the next literal, and never contains '/'.
  Arguments vars;
  size_t pos = 0;
  if (uri.compare(0, literals[0].size(), literals[0]) != 0) return std::nullopt;
  pos = literals[0].size();
  for (size_t i = 0; i < variables.size(); ++i) {
    const std::string& next = literals[i + 1];
    size_t end = next.empty() ? uri.size() : uri.find(next, pos);
    if (end == std::string::npos || end == pos) return std::nullopt;
    std::string value = uri.substr(pos, end - pos);
    if (value.find('/') != std::string::npos) return std::nullopt;
    vars[variables[i]] = std::move(value);
    pos = end + next.size();
  }
  if (pos != uri.size()) return std::nullopt;
  return vars;
}

Status Catalog::AddResource(ResourceDef def) {
  if (def.uri.empty() || def.name.empty() || !def.read) {
    return Status::InvalidArgument("a resource needs a uri, a name and a read handler");
  }
  Resource r;
  std::string literal;
  for (size_t i = 0; i < def.uri.size(); ++i) {
    char c = def.uri[i];
    if (c == '}') return Status::InvalidArgument("unbalanced '}' in " + def.uri);
    if (c != '{') {
      literal += c;
      continue;
    }
    size_t close = def.uri.find('}', i);
    if (close == std::string::npos || close == i + 1) {
      return Status::InvalidArgument("bad variable in " + def.uri);
    }
    if (!r.variables.empty() && literal.empty()) {
      return Status::InvalidArgument("two variables in a row in " + def.uri);
    }
    r.literals.push_back(std::move(literal));
    literal.clear();
    r.variables.push_back(def.uri.substr(i + 1, close - i - 1));
    i = close;
  }
  r.literals.push_back(std::move(literal));
  for (const Resource& other : resources_) {
    if (other.def.uri == def.uri) return Status::InvalidArgument("resource taken: " + def.uri);
  }
  json entry = {{"name", def.name}, {"mimeType", def.mime_type}};
  if (!def.title.empty()) entry["title"] = def.title;
  if (!def.description.empty()) entry["description"] = def.description;
  if (r.variables.empty()) {
    entry["uri"] = def.uri;
    resources_json_.push_back(std::move(entry));
  } else {
    entry["uriTemplate"] = def.uri;
    templates_json_.push_back(std::move(entry));
  }
  r.def = std::move(def);
  resources_.push_back(std::move(r));
  return Status::Ok();
}

Status Catalog::AddPrompt(PromptDef def) {
  if (def.name.empty() || !def.get) {
    return Status::InvalidArgument("a prompt needs a name and a get handler");
  }
  for (const PromptDef& other : prompts_) {
    if (other.name == def.name) return Status::InvalidArgument("prompt taken: " + def.name);
  }
  json entry = {{"name", def.name}};
  if (!def.title.empty()) entry["title"] = def.title;
  if (!def.description.empty()) entry["description"] = def.description;
  json args = json::array();
  for (const PromptArgument& a : def.arguments) {
    json arg = {{"name", a.name}, {"required", a.required}};
    if (!a.description.empty()) arg["description"] = a.description;
    args.push_back(std::move(arg));
  }
  entry["arguments"] = std::move(args);
  prompts_json_.push_back(std::move(entry));
  prompts_.push_back(std::move(def));
  return Status::Ok();
}

bool Catalog::Matches(const std::string& uri) const {
  return uri.size() <= limits::kMaxResourceUriChars &&
         std::any_of(resources_.begin(), resources_.end(),
                     [&](const Resource& r) { return r.Match(uri).has_value(); });
}

Result<json> Catalog::Read(const std::string& uri, ToolContext& ctx) const {
  if (uri.size() <= limits::kMaxResourceUriChars) {
    for (const Resource& r : resources_) {
      auto vars = r.Match(uri);
      if (!vars) continue;
      CORTEX_RETURN_IF_ERROR(NeedScope(ctx, r.def.scope, "reading " + r.def.name));
      return Guarded("resource " + r.def.name, ctx,
                     [&]() -> Result<json> { return r.def.read(ctx, uri, *vars); });
    }
  }
  return Status::NotFound("Resource not found");
}

Result<json> Catalog::GetPrompt(const std::string& name, const json& args, ToolContext& ctx) const {
  auto p = std::find_if(prompts_.begin(), prompts_.end(),
                        [&](const PromptDef& d) { return d.name == name; });
  if (p == prompts_.end()) return Status::NotFound("Unknown prompt: " + name);
  CORTEX_RETURN_IF_ERROR(NeedScope(ctx, p->scope, "prompt " + name));
  if (!args.is_null() && !args.is_object()) {
    return Status::InvalidArgument("arguments must be an object");
  }
  Arguments given;
  if (args.is_object()) {
    for (auto it = args.begin(); it != args.end(); ++it) {
      const std::string& k = it.key();
      const json& v = it.value();
      bool known = std::any_of(p->arguments.begin(), p->arguments.end(),
                               [&](const PromptArgument& a) { return a.name == k; });
      if (!known) return Status::InvalidArgument("unknown argument '" + k + "'");
      if (!v.is_string()) return Status::InvalidArgument("argument '" + k + "' must be a string");
      given[k] = v.get<std::string>();
    }
  }
  for (const PromptArgument& a : p->arguments) {
    if (a.required && (!given.count(a.name) || given[a.name].empty())) {
      return Status::InvalidArgument("argument '" + a.name + "' is required");
    }
  }
  return Guarded("prompt " + name, ctx, [&]() -> Result<json> { return p->get(ctx, given); });
}

Result<json> Catalog::Complete(const json& ref, const std::string& argument,
                               const std::string& value, const Arguments& context,
                               ToolContext& ctx) const {
  if (!ref.is_object() || !ref.contains("type") || !ref["type"].is_string()) {
    return Status::InvalidArgument("ref must be an object with a type");
  }
  const std::string type = ref["type"];
  const Completer* completer = nullptr;
  std::string what;
  Scope scope = kScopeRead;
  if (type == "ref/prompt") {
    std::string name = ref.value("name", "");
    auto p = std::find_if(prompts_.begin(), prompts_.end(),
                          [&](const PromptDef& d) { return d.name == name; });
    if (p == prompts_.end()) return Status::InvalidArgument("Unknown prompt: " + name);
    bool known = std::any_of(p->arguments.begin(), p->arguments.end(),
                             [&](const PromptArgument& a) { return a.name == argument; });
    if (!known) {
      return Status::InvalidArgument("prompt " + name + " has no argument '" + argument + "'");
    }
    completer = &p->complete, what = "prompt " + name, scope = p->scope;
  } else if (type == "ref/resource") {
    std::string uri = ref.value("uri", "");
    auto r = std::find_if(resources_.begin(), resources_.end(),
                          [&](const Resource& x) { return x.def.uri == uri; });
    if (r == resources_.end() || r->variables.empty()) {
      return Status::InvalidArgument("Unknown resource template: " + uri);
    }
    if (std::find(r->variables.begin(), r->variables.end(), argument) == r->variables.end()) {
      return Status::InvalidArgument("template " + uri + " has no variable '" + argument + "'");
    }
    completer = &r->def.complete, what = "template " + uri, scope = r->def.scope;
  } else {
    return Status::InvalidArgument("unknown ref type '" + type + "'");
  }
  CORTEX_RETURN_IF_ERROR(NeedScope(ctx, scope, "completing " + what));
  if (!*completer) return CompletionJson({});
  auto values = Guarded("completion for " + what, ctx,
                        [&]() { return (*completer)(ctx, argument, value, context); });
  if (!values.ok()) return values.status();
  return CompletionJson(std::move(*values));
}

}  // namespace cortex
