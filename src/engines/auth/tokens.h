// Workspaces and bearer tokens. A token belongs to one workspace, carries scopes, and is
// stored only as the SHA-256 of its secret; the secret is shown once, at creation.
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "store/store.h"

namespace cortex {

// The scope named `name` ("read", "act", "approve", "admin"), or 0 for none.
unsigned ScopeNamed(std::string_view name);
// "read,act" -> kScopeRead|kScopeAct. InvalidArgument names an unknown scope.
Result<unsigned> ParseScopes(const std::string& csv);
// kScopeRead|kScopeAct -> "read,act" ("read act" with `separator` ' ', OAuth's form).
std::string FormatScopes(unsigned scopes, char separator = ',');

// Workspace names: 1-64 of [a-z0-9_-], starting with a letter or digit.
Status ValidateWorkspaceName(const std::string& name);

// Returns the workspace named `name`, creating it (with fresh versions) if missing.
Result<Workspace> EnsureWorkspace(Store& store, const Clock& clock, const std::string& name);
Result<Workspace> FindWorkspace(Store& store, const std::string& name);

struct NewToken {
  TokenRecord record;
  std::string secret;  // "ctk_" + 48 hex characters; never stored
};

// Creates a token for workspace `ws_name` (created if missing).
Result<NewToken> CreateToken(Store& store, const Clock& clock, const std::string& ws_name,
                             unsigned scopes, const std::string& label);

// Unauthorized for a missing, malformed, unknown, revoked or (an OAuth access token, cat_...)
// expired token, or an OAuth token issued for another resource than `resource` (its
// audience; "" checks none: stdio). A `ctk_` token is good whatever the server's name.
Result<AuthContext> Authenticate(Store& store, const std::string& secret,
                                 const Clock& clock = ProcessClock(),
                                 const std::string& resource = "");

Status RevokeToken(Store& store, const Clock& clock, const std::string& ws_name,
                   const std::string& token_id);

}  // namespace cortex
