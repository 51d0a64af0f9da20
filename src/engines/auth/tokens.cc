#include "engines/auth/tokens.h"

#include "core/crypto.h"
#include "core/ids.h"
#include "store/tokens.h"
#include "store/workspaces.h"

namespace cortex {
namespace {

constexpr char kTokenPrefix[] = "ctk_";
constexpr size_t kTokenRandomBytes = 24;  // 192 bits

}  // namespace

unsigned ScopeNamed(std::string_view name) {
  if (name == "read") return kScopeRead;
  if (name == "act") return kScopeAct;
  if (name == "approve") return kScopeApprove;
  if (name == "admin") return kScopeAdmin;
  return 0;
}

Result<unsigned> ParseScopes(const std::string& csv) {
  unsigned scopes = 0;
  size_t start = 0;
  while (start <= csv.size()) {
    size_t end = csv.find(',', start);
    if (end == std::string::npos) end = csv.size();
    std::string s = csv.substr(start, end - start);
    unsigned scope = ScopeNamed(s);
    if (scope == 0) {
      return Status::InvalidArgument("unknown scope '" + s +
                                     "' (scopes: read, act, approve, admin)");
    }
    scopes |= scope;
    start = end + 1;
  }
  return scopes;
}

std::string FormatScopes(unsigned scopes, char separator) {
  std::string out;
  for (auto [scope, name] :
       {std::pair{kScopeRead, "read"}, std::pair{kScopeAct, "act"},
        std::pair{kScopeApprove, "approve"}, std::pair{kScopeAdmin, "admin"}}) {
    if (!(scopes & scope)) continue;
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

Status ValidateWorkspaceName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64 && name[0] != '-' && name[0] != '_';
  for (char c : name) {
    ok &= (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  }
  if (ok) return Status::Ok();
  return Status::InvalidArgument("workspace name '" + name +
                                 "' must be 1-64 characters of a-z, 0-9, '-' and '_'");
}

Result<Workspace> FindWorkspace(Store& store, const std::string& name) {
  std::optional<Workspace> found;
  Status st = store.Read([&](ReadTx& tx) {
    auto w = tx.workspaces().FindByName(name);
    if (!w.ok()) return w.status();
    found = std::move(*w);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return *found;
}

Result<Workspace> EnsureWorkspace(Store& store, const Clock& clock, const std::string& name) {
  CORTEX_RETURN_IF_ERROR(ValidateWorkspaceName(name));
  std::optional<Workspace> out;
  auto find_or_create = [&](WriteTx& tx) {
    auto existing = tx.workspaces().FindByName(name);
    if (existing.ok()) {
      out = std::move(*existing);
      return Status::Ok();
    }
    if (existing.status().code() != Code::kNotFound) return existing.status();
    Workspace w{NewId("ws_", clock), name, NewId("wv_", clock), NewId("av_", clock), clock.Now()};
    CORTEX_RETURN_IF_ERROR(tx.workspaces().Insert(w));
    out = std::move(w);
    return Status::Ok();
  };
  Status st = store.Write(find_or_create);
  // Another process (a second instance on PostgreSQL) created it between our look-up and
  // our insert: now the look-up finds it.
  if (st.code() == Code::kConflict) st = store.Write(find_or_create);
  if (!st.ok()) return st;
  return *out;
}

Result<NewToken> CreateToken(Store& store, const Clock& clock, const std::string& ws_name,
                             unsigned scopes, const std::string& label) {
  if (scopes == 0) return Status::InvalidArgument("a token needs at least one scope");
  auto ws = EnsureWorkspace(store, clock, ws_name);
  if (!ws.ok()) return ws.status();
  NewToken t;
  t.secret = kTokenPrefix + RandomHex(kTokenRandomBytes);
  t.record.id = NewId("tok_", clock);
  t.record.workspace_id = ws->id;
  t.record.hash = Sha256Hex(t.secret);
  t.record.label = label;
  t.record.scopes = scopes;
  t.record.created_at = clock.Now();
  CORTEX_RETURN_IF_ERROR(store.Write([&](WriteTx& tx) { return tx.tokens().Insert(t.record); }));
  return t;
}

Result<AuthContext> Authenticate(Store& store, const std::string& secret, const Clock& clock,
                                 const std::string& resource) {
  // ctk_ (cortex token create) or cat_ (an OAuth access token, engines/auth/oauth.h): same length.
  bool prefix = secret.rfind(kTokenPrefix, 0) == 0 || secret.rfind("cat_", 0) == 0;
  if (!prefix || secret.size() != sizeof(kTokenPrefix) - 1 + 2 * kTokenRandomBytes) {
    return Status::Unauthorized("malformed token");
  }
  AuthContext ctx;
  Status st = store.Read([&](ReadTx& tx) {
    auto tok = tx.tokens().FindByHash(Sha256Hex(secret));
    if (!tok.ok()) {
      return tok.status().code() == Code::kNotFound ? Status::Unauthorized("unknown token")
                                                    : tok.status();
    }
    if (tok->revoked_at) return Status::Unauthorized("token revoked");
    if (tok->expires_at && clock.Now() >= *tok->expires_at) {
      return Status::Unauthorized("token expired");
    }
    if (!resource.empty() && !tok->resource.empty() && tok->resource != resource) {
      return Status::Unauthorized("token for another resource");
    }
    auto ws = tx.workspaces().Get(tok->workspace_id);
    if (!ws.ok()) return ws.status();
    ctx = AuthContext{ws->id, ws->name, tok->id, tok->scopes};
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return ctx;
}

Status RevokeToken(Store& store, const Clock& clock, const std::string& ws_name,
                   const std::string& token_id) {
  auto ws = FindWorkspace(store, ws_name);
  if (!ws.ok()) return ws.status();
  return store.Write(
      [&](WriteTx& tx) { return tx.tokens().Revoke(ws->id, token_id, clock.Now()); });
}

}  // namespace cortex
