// What a server offers beside its tools: resources (fixed URIs and URI templates), prompts,
// and completions for their arguments. Each entry is declared once, with a handler that
// reads the caller's workspace through the ToolContext. The protocol layer maps the
// results and errors to each protocol era.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "engines/auth/tokens.h"

namespace cortex {

struct ToolContext;

// Template variables or prompt arguments, by name.
using Arguments = std::map<std::string, std::string>;

// Suggests values for argument `name` starting with (or, for names, containing) `value`;
// `context` holds arguments already chosen. At most limits::kMaxCompletions values.
using Completer = std::function<Result<std::vector<std::string>>(
    ToolContext&, const std::string& name, const std::string& value, const Arguments& context)>;

struct ResourceDef {
  // A fixed URI ("cortex://inbox") or a template whose `{name}` parts each match one path
  // segment ("cortex://decisions/{decision_id}"; RFC 6570 level 1).
  std::string uri;
  std::string name;
  std::string title = {};
  std::string description = {};
  std::string mime_type = "application/json";
  Scope scope = kScopeRead;
  // Returns the ReadResourceResult's `contents` array. NotFound: no such resource (an
  // unknown id, or another workspace's).
  std::function<Result<nlohmann::json>(ToolContext&, const std::string& uri, const Arguments&)>
      read = nullptr;
  Completer complete = nullptr;  // template variables; may be empty
};

struct PromptArgument {
  std::string name;
  std::string description = {};
  bool required = false;
};

struct PromptDef {
  std::string name;
  std::string title = {};
  std::string description = {};
  std::vector<PromptArgument> arguments = {};
  Scope scope = kScopeRead;
  // Returns the GetPromptResult ({description?, messages}). InvalidArgument: a bad argument;
  // NotFound: what an argument names does not exist.
  std::function<Result<nlohmann::json>(ToolContext&, const Arguments&)> get = nullptr;
  Completer complete = nullptr;  // may be empty
};

class Catalog {
 public:
  // InvalidArgument if the URI (or prompt name) is taken or a template is malformed.
  Status AddResource(ResourceDef def);
  Status AddPrompt(PromptDef def);

  bool has_resources() const { return !resources_.empty(); }
  bool has_prompts() const { return !prompts_.empty(); }
  // The resources/list, resources/templates/list and prompts/list entries, in
  // registration order.
  const nlohmann::json& ResourcesJson() const { return resources_json_; }
  const nlohmann::json& TemplatesJson() const { return templates_json_; }
  const nlohmann::json& PromptsJson() const { return prompts_json_; }

  // Whether a resource or template matches `uri`.
  bool Matches(const std::string& uri) const;
  // resources/read: NotFound for a URI no resource or template matches, or that its
  // handler does not find; PermissionDenied without the resource's scope.
  Result<nlohmann::json> Read(const std::string& uri, ToolContext& ctx) const;
  // prompts/get: NotFound for an unknown prompt; InvalidArgument for a missing required
  // argument, an unknown one, or a value that is not a string.
  Result<nlohmann::json> GetPrompt(const std::string& name, const nlohmann::json& args,
                                   ToolContext& ctx) const;
  // completion/complete for `ref` ({type: ref/prompt, name} or {type: ref/resource, uri}):
  // the CompleteResult's `completion`. InvalidArgument for an unknown reference or argument.
  Result<nlohmann::json> Complete(const nlohmann::json& ref, const std::string& argument,
                                  const std::string& value, const Arguments& context,
                                  ToolContext& ctx) const;

 private:
  struct Resource {
    ResourceDef def;
    std::vector<std::string> literals;   // a template's text around its variables
    std::vector<std::string> variables;  // its variable names (empty: a fixed URI)
    // The variables `uri` gives this template, or nullopt if it does not match.
    std::optional<Arguments> Match(const std::string& uri) const;
  };
  std::vector<Resource> resources_;
  std::vector<PromptDef> prompts_;
  nlohmann::json resources_json_ = nlohmann::json::array();
  nlohmann::json templates_json_ = nlohmann::json::array();
  nlohmann::json prompts_json_ = nlohmann::json::array();
};

// Filters `candidates` to those that start with `value` (case-insensitive), in order, at
// most limits::kMaxCompletions; for completers.
std::vector<std::string> StartingWith(const std::vector<std::string>& candidates,
                                      const std::string& value);

}  // namespace cortex
