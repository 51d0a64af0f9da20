#include "engines/auth/oauth.h"

#include <cctype>

#include "core/crypto.h"
#include "core/ids.h"
#include "core/json_text.h"
#include "engines/auth/tokens.h"
#include "store/oauth.h"
#include "store/tokens.h"
#include "store/workspaces.h"

namespace cortex {

using nlohmann::json;

namespace {

constexpr char kAccessPrefix[] = "cat_";   // an access token: like ctk_, 48 hex digits
constexpr char kRefreshPrefix[] = "crt_";  // a refresh token
constexpr size_t kSecretBytes = 24;

OAuthReply Refuse(int status, const std::string& error, const std::string& description) {
  return OAuthReply{status, json{{"error", error}, {"error_description", description}}};
}

// RFC 7636 §4.1: 43-128 characters of [A-Za-z0-9-._~].
bool IsPkceString(const std::string& s) {
  if (s.size() < 43 || s.size() > 128) return false;
  for (unsigned char c : s) {
    if (!std::isalnum(c) && c != '-' && c != '.' && c != '_' && c != '~') return false;
  }
  return true;
}

const std::string* Param(const OAuthParams& params, const std::string& name) {
  auto it = params.find(name);
  return it == params.end() || it->second.empty() ? nullptr : &it->second;
}

struct UriParts {
  std::string scheme;     // lowercased
  std::string authority;  // host[:port], as written
  std::string rest;       // path and query
};

std::optional<UriParts> SplitUri(const std::string& uri) {
  size_t colon = uri.find(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  UriParts p;
  p.scheme = AsciiLower(uri.substr(0, colon));
  for (char c : p.scheme) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return std::nullopt;
    }
  }
  std::string after = uri.substr(colon + 1);
  if (after.rfind("//", 0) == 0) {
    size_t end = after.find_first_of("/?", 2);
    p.authority = after.substr(2, end == std::string::npos ? std::string::npos : end - 2);
    p.rest = end == std::string::npos ? "" : after.substr(end);
  } else {
    p.rest = after;
  }
  return p;
}

// The host of an authority, without its port; "" if it holds user info.
std::string HostOf(const std::string& authority) {
  if (authority.find('@') != std::string::npos) return "";
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    return close == std::string::npos ? "" : AsciiLower(authority.substr(0, close + 1));
  }
  return AsciiLower(authority.substr(0, authority.find(':')));
}

bool IsLoopbackHttp(const UriParts& p) {
  std::string host = HostOf(p.authority);
  return p.scheme == "http" && (host == "127.0.0.1" || host == "[::1]" || host == "localhost");
}

std::string WithQuery(const std::string& uri, const std::string& query) {
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + query;
}

OAuthReply TokenAnswer(const std::string& access, const std::string& refresh, unsigned scopes) {
  return OAuthReply{200, json{{"access_token", access},
                              {"token_type", "Bearer"},
                              {"expires_in", std::chrono::seconds(kOAuthAccessLifetime).count()},
                              {"refresh_token", refresh},
                              {"scope", FormatOAuthScopes(scopes)}}};
}

}  // namespace

Result<unsigned> ParseOAuthScopes(const std::string& list) {
  unsigned scopes = 0;
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find(' ', start);
    if (end == std::string::npos) end = list.size();
    std::string s = list.substr(start, end - start);
    unsigned scope = ScopeNamed(s);
    if (!s.empty() && (scope == 0 || scope == kScopeAdmin)) {
      return Status::InvalidArgument("unknown scope '" + Utf8Prefix(s, 40) +
                                     "' (scopes: read, act, approve)");
    }
    scopes |= scope;
    start = end + 1;
  }
  return scopes;
}

std::string FormatOAuthScopes(unsigned scopes) { return FormatScopes(scopes & ~kScopeAdmin, ' '); }

bool RedirectUriAllowed(const std::string& uri) {
  if (uri.empty() || uri.size() > kOAuthMaxUriBytes) return false;
  for (unsigned char c : uri) {
    if (c <= 0x20 || c >= 0x7f || c == '#' || c == '"' || c == '<' || c == '>' || c == '\\') {
      return false;
    }
  }
  auto p = SplitUri(uri);
  if (!p) return false;
  if (p->scheme == "https") return !p->authority.empty() && !HostOf(p->authority).empty();
  if (p->scheme == "http") return IsLoopbackHttp(*p);
  // A private-use scheme (RFC 8252 §7.1) is a reversed domain name: it has a dot, which
  // javascript:, data: and file: do not.
  return p->scheme.find('.') != std::string::npos;
}

bool RedirectUriMatches(const std::string& registered, const std::string& given) {
  if (registered == given) return true;
  auto r = SplitUri(registered);
  auto g = SplitUri(given);
  if (!r || !g || !IsLoopbackHttp(*r) || !IsLoopbackHttp(*g)) return false;
  // A native app's loopback listener gets whatever port is free (RFC 8252 §7.3).
  return HostOf(r->authority) == HostOf(g->authority) && r->rest == g->rest;
}

OAuthReply RegisterClient(Store& store, const Clock& clock, const json& metadata) {
  if (!metadata.is_object()) {
    return Refuse(400, "invalid_client_metadata", "the body must be a JSON object");
  }
  auto uris = metadata.find("redirect_uris");
  if (uris == metadata.end() || !uris->is_array() || uris->empty() ||
      uris->size() > kOAuthMaxRedirectUris) {
    return Refuse(400, "invalid_redirect_uri",
                  "redirect_uris must be an array of 1 to " +
                      std::to_string(kOAuthMaxRedirectUris) + " URIs");
  }
  OAuthClient client;
  for (const json& u : *uris) {
    if (!u.is_string() || !RedirectUriAllowed(u.get<std::string>())) {
      return Refuse(400, "invalid_redirect_uri",
                    "each redirect URI must be https, http on a loopback address (127.0.0.1, "
                    "[::1], localhost) or a private-use scheme (com.example.app:/callback), "
                    "without a fragment, at most " +
                        std::to_string(kOAuthMaxUriBytes) + " bytes");
    }
    client.redirect_uris.push_back(u.get<std::string>());
  }
  auto grants = metadata.find("grant_types");
  if (grants != metadata.end()) {
    if (!grants->is_array()) {
      return Refuse(400, "invalid_client_metadata", "grant_types must be an array");
    }
    for (const json& g : *grants) {
      if (g != "authorization_code" && g != "refresh_token") {
        return Refuse(400, "invalid_client_metadata",
                      "grant_types: only authorization_code and refresh_token are supported");
      }
    }
  }
  auto responses = metadata.find("response_types");
  if (responses != metadata.end() && *responses != json::array({"code"})) {
    return Refuse(400, "invalid_client_metadata", "response_types: only [\"code\"] is supported");
  }
  auto name = metadata.find("client_name");
  if (name != metadata.end()) {
    if (!name->is_string() || name->get<std::string>().size() > kOAuthMaxNameBytes) {
      return Refuse(400, "invalid_client_metadata",
                    "client_name must be a string of at most " +
                        std::to_string(kOAuthMaxNameBytes) + " bytes");
    }
    client.name = name->get<std::string>();
  }
  if (client.name.empty()) client.name = "unnamed client";
  client.id = NewId("cli_", clock);
  client.created_at = clock.Now();
  Status st = store.Write([&](WriteTx& tx) { return tx.oauth().InsertClient(client); });
  if (!st.ok()) return Refuse(503, "temporarily_unavailable", "the store cannot answer; retry");
  // Every client is public: it proves itself with PKCE, not a secret (RFC 7591 §3.2.1 lets
  // the server answer with the method it chose).
  return OAuthReply{201, json{{"client_id", client.id},
                              {"client_id_issued_at", ToUnixMillis(client.created_at) / 1000},
                              {"client_name", client.name},
                              {"redirect_uris", client.redirect_uris},
                              {"grant_types", {"authorization_code", "refresh_token"}},
                              {"response_types", {"code"}},
                              {"token_endpoint_auth_method", "none"}}};
}

namespace {

// The client a client ID metadata document at `url` describes: from the store if read
// within kClientMetadataCache, else fetched, checked and remembered.
Result<OAuthClient> MetadataClient(Store& store, const Clock& clock,
                                   const ClientMetadataFetch& fetch, const std::string& url) {
  auto parts = SplitUri(url);
  bool has_path = parts && parts->rest.size() > 1 && parts->rest[0] == '/';
  if (!parts || parts->scheme != "https" || HostOf(parts->authority).empty() || !has_path ||
      url.size() > kOAuthMaxUriBytes || url.find_first_of("#\" <>") != std::string::npos) {
    return Status::InvalidArgument(
        "a client_id URL must be https:// with a path, no fragment and no user info");
  }
  std::optional<OAuthClient> cached;
  CORTEX_RETURN_IF_ERROR(store.Read([&](ReadTx& tx) -> Status {
    auto c = tx.oauth().FindClient(url);
    if (c.ok()) cached = std::move(*c);
    return c.ok() || c.status().code() == Code::kNotFound ? Status::Ok() : c.status();
  }));
  if (cached && clock.Now() - cached->created_at < kClientMetadataCache) return *cached;
  if (!fetch) return Status::InvalidArgument("this server does not read client metadata documents");
  auto body = fetch(url);
  if (!body.ok()) {
    return Status::InvalidArgument("the client's metadata document cannot be used: " +
                                   body.status().message());
  }
  json doc = ParseJson(*body);
  if (!doc.is_object() || doc.value("client_id", json()) != url) {
    return Status::InvalidArgument(
        "the client's metadata document must be a JSON object whose client_id is its own URL");
  }
  if (doc.contains("token_endpoint_auth_method") && doc["token_endpoint_auth_method"] != "none") {
    return Status::InvalidArgument(
        "the client's metadata document: token_endpoint_auth_method must be none");
  }
  OAuthClient client;
  client.id = url;
  const json& uris = doc.value("redirect_uris", json());
  if (!uris.is_array() || uris.empty() || uris.size() > kOAuthMaxRedirectUris) {
    return Status::InvalidArgument("the client's metadata document needs 1 to " +
                                   std::to_string(kOAuthMaxRedirectUris) + " redirect_uris");
  }
  for (const json& u : uris) {
    if (!u.is_string() || !RedirectUriAllowed(u.get<std::string>())) {
      return Status::InvalidArgument(
          "the client's metadata document names a redirect URI that is not https, loopback "
          "http or a private-use scheme");
    }
    client.redirect_uris.push_back(u.get<std::string>());
  }
  const json& name = doc.value("client_name", json());
  client.name =
      name.is_string() ? Utf8Prefix(name.get<std::string>(), kOAuthMaxNameBytes) : parts->authority;
  if (client.name.empty()) client.name = parts->authority;
  client.created_at = clock.Now();
  CORTEX_RETURN_IF_ERROR(store.Write([&](WriteTx& tx) { return tx.oauth().PutClient(client); }));
  return client;
}

}  // namespace

AuthorizeCheck CheckAuthorize(Store& store, const Clock& clock, const OAuthParams& params,
                              const std::string& resource, const ClientMetadataFetch& fetch) {
  AuthorizeCheck out;
  const std::string* client_id = Param(params, "client_id");
  if (client_id == nullptr) {
    out.error = "invalid_request";
    out.description = "client_id is missing";
    return out;
  }
  std::optional<OAuthClient> client;
  Status st;
  if (client_id->find("://") != std::string::npos) {
    auto c = MetadataClient(store, clock, fetch, *client_id);
    if (c.ok()) {
      client = std::move(*c);
    } else if (c.status().code() == Code::kInvalidArgument) {
      out.error = "invalid_request";
      out.description = c.status().message();
      return out;
    } else {
      st = c.status();
    }
  } else {
    st = store.Read([&](ReadTx& tx) -> Status {
      auto c = tx.oauth().FindClient(*client_id);
      if (c.ok()) client = std::move(*c);
      return c.ok() || c.status().code() == Code::kNotFound ? Status::Ok() : c.status();
    });
  }
  if (!st.ok()) {
    out.error = "temporarily_unavailable";
    out.description = "the store cannot answer; retry";
    return out;
  }
  if (!client) {
    out.error = "invalid_request";
    out.description = "unknown client_id: the app must register first";
    return out;
  }
  // The redirect URI: named (and registered), or the client's only one.
  const std::string* given = Param(params, "redirect_uri");
  std::string redirect;
  if (given == nullptr) {
    if (client->redirect_uris.size() == 1) redirect = client->redirect_uris[0];
  } else {
    for (const std::string& r : client->redirect_uris) {
      if (RedirectUriMatches(r, *given)) redirect = *given;
    }
  }
  if (redirect.empty()) {
    out.error = "invalid_request";
    out.description = "redirect_uri is not one the app registered";
    return out;
  }
  // From here on the client is told through its redirect URI.
  out.redirect_uri = redirect;
  if (const std::string* state = Param(params, "state")) out.state = *state;
  auto fail = [&](const char* error, const std::string& why) {
    out.error = error;
    out.description = why;
    return out;
  };
  const std::string* response_type = Param(params, "response_type");
  if (response_type == nullptr || *response_type != "code") {
    return fail("unsupported_response_type", "response_type must be code");
  }
  const std::string* challenge = Param(params, "code_challenge");
  if (challenge == nullptr) return fail("invalid_request", "code_challenge is required (PKCE)");
  const std::string* method = Param(params, "code_challenge_method");
  if (method == nullptr || *method != "S256") {
    return fail("invalid_request", "code_challenge_method must be S256");
  }
  if (challenge->size() != 43 || !IsPkceString(*challenge + std::string(43, 'a'))) {
    return fail("invalid_request", "code_challenge must be 43 base64url characters");
  }
  const std::string* res = Param(params, "resource");
  if (res != nullptr && *res != resource) {
    return fail("invalid_target", "resource must be " + resource);
  }
  unsigned scopes = kScopeRead | kScopeAct;  // an agent's, unless it asks for others
  if (const std::string* scope = Param(params, "scope")) {
    auto parsed = ParseOAuthScopes(*scope);
    if (!parsed.ok()) return fail("invalid_scope", parsed.status().message());
    if (*parsed == 0) return fail("invalid_scope", "scope names no scope");
    scopes = *parsed;
  }
  out.request =
      AuthorizeRequest{client->id, client->name, redirect, out.state, *challenge, scopes, resource};
  return out;
}

std::string ErrorRedirect(const std::string& redirect_uri, const std::string& error,
                          const std::string& description, const std::string& state,
                          const std::string& issuer) {
  std::string q = "error=" + UrlEncode(error) + "&error_description=" + UrlEncode(description);
  if (!state.empty()) q += "&state=" + UrlEncode(state);
  q += "&iss=" + UrlEncode(issuer);
  return WithQuery(redirect_uri, q);
}

Result<std::string> IssueCode(Store& store, const Clock& clock, const AuthorizeRequest& request,
                              const InboxAuth& person, unsigned granted,
                              const std::string& issuer) {
  std::string code = RandomHex(32);
  OAuthCode row;
  row.hash = Sha256Hex(code);
  row.client_id = request.client_id;
  row.workspace_id = person.workspace_id;
  row.redirect_uri = request.redirect_uri;
  row.code_challenge = request.code_challenge;
  row.scopes = granted;
  row.resource = request.resource;
  row.session_id = person.session_id;
  row.created_at = clock.Now();
  row.expires_at = row.created_at + kOAuthCodeLifetime;
  CORTEX_RETURN_IF_ERROR(store.Write([&](WriteTx& tx) { return tx.oauth().InsertCode(row); }));
  std::string q = "code=" + code;
  if (!request.state.empty()) q += "&state=" + UrlEncode(request.state);
  q += "&iss=" + UrlEncode(issuer);
  return WithQuery(request.redirect_uri, q);
}

namespace {

// A new access token and refresh token for `token` (inserted when `insert`, else rotated).
Status IssueTokens(WriteTx& tx, const Clock& clock, TokenRecord& token, bool insert,
                   std::string* access, std::string* refresh) {
  *access = kAccessPrefix + RandomHex(kSecretBytes);
  *refresh = kRefreshPrefix + RandomHex(32);
  TimePoint now = clock.Now();
  token.hash = Sha256Hex(*access);
  token.expires_at = now + kOAuthAccessLifetime;
  if (insert) {
    CORTEX_RETURN_IF_ERROR(tx.tokens().Insert(token));
  } else {
    CORTEX_RETURN_IF_ERROR(
        tx.tokens().Rotate(token.workspace_id, token.id, token.hash, *token.expires_at));
  }
  return tx.oauth().InsertRefresh(OAuthRefresh{Sha256Hex(*refresh), token.id, token.workspace_id,
                                               now, now + kOAuthRefreshLifetime, std::nullopt});
}

OAuthReply ExchangeCode(Store& store, const Clock& clock, const OAuthParams& params,
                        const std::string& resource) {
  const std::string* code = Param(params, "code");
  const std::string* client_id = Param(params, "client_id");
  const std::string* verifier = Param(params, "code_verifier");
  const std::string* redirect = Param(params, "redirect_uri");
  if (code == nullptr || client_id == nullptr || verifier == nullptr || redirect == nullptr) {
    return Refuse(400, "invalid_request",
                  "code, client_id, code_verifier and redirect_uri are required");
  }
  if (const std::string* res = Param(params, "resource"); res != nullptr && *res != resource) {
    return Refuse(400, "invalid_target", "resource must be " + resource);
  }
  std::optional<OAuthReply> refused;
  std::string access, refresh;
  unsigned scopes = 0;
  Status st = store.Write([&](WriteTx& tx) -> Status {
    refused.reset();
    auto row = tx.oauth().FindCode(Sha256Hex(*code));
    if (!row.ok()) {
      if (row.status().code() != Code::kNotFound) return row.status();
      refused = Refuse(400, "invalid_grant", "the code is unknown, used or expired");
      return Status::Ok();
    }
    if (row->used_at) {
      // A code seen twice was stolen or replayed: what it gave is revoked (OAuth 2.1 §4.1.3).
      if (!row->token_id.empty()) {
        Status revoked = tx.tokens().Revoke(row->workspace_id, row->token_id, clock.Now());
        if (!revoked.ok() && revoked.code() != Code::kNotFound) return revoked;
      }
      refused = Refuse(400, "invalid_grant", "the code is unknown, used or expired");
      return Status::Ok();
    }
    // Whatever happens now, the code is spent: a wrong verifier gets no second guess.
    std::string token_id = NewId("tok_", clock);
    // The token id is chosen now so that a replay finds what the code gave.
    Status spent = tx.oauth().SpendCode(row->hash, clock.Now(), token_id);
    if (!spent.ok()) {
      if (spent.code() != Code::kConflict) return spent;
      refused = Refuse(400, "invalid_grant", "the code is unknown, used or expired");
      return Status::Ok();
    }
    if (clock.Now() >= row->expires_at) {
      refused = Refuse(400, "invalid_grant", "the code is unknown, used or expired");
    } else if (row->client_id != *client_id) {
      refused = Refuse(400, "invalid_grant", "the code was issued to another client");
    } else if (row->redirect_uri != *redirect) {
      refused = Refuse(400, "invalid_grant", "redirect_uri differs from the authorization's");
    } else if (!IsPkceString(*verifier) ||
               !ConstantTimeEquals(Sha256Base64Url(*verifier), row->code_challenge)) {
      refused = Refuse(400, "invalid_grant", "code_verifier does not match the code_challenge");
    } else if (row->resource != resource) {
      refused = Refuse(400, "invalid_target", "the code is for another resource");
    }
    if (refused) return Status::Ok();
    auto client = tx.oauth().FindClient(row->client_id);
    if (!client.ok()) return client.status();
    TokenRecord token;
    token.id = token_id;
    token.workspace_id = row->workspace_id;
    token.label = client->name;
    token.scopes = row->scopes;
    token.created_at = clock.Now();
    token.client_id = row->client_id;
    token.resource = row->resource;
    CORTEX_RETURN_IF_ERROR(IssueTokens(tx, clock, token, true, &access, &refresh));
    scopes = token.scopes;
    return Status::Ok();
  });
  if (!st.ok()) return Refuse(503, "temporarily_unavailable", "the store cannot answer; retry");
  if (refused) return *refused;
  return TokenAnswer(access, refresh, scopes);
}

OAuthReply Refresh(Store& store, const Clock& clock, const OAuthParams& params,
                   const std::string& resource) {
  const std::string* refresh_token = Param(params, "refresh_token");
  const std::string* client_id = Param(params, "client_id");
  if (refresh_token == nullptr || client_id == nullptr) {
    return Refuse(400, "invalid_request", "refresh_token and client_id are required");
  }
  if (const std::string* res = Param(params, "resource"); res != nullptr && *res != resource) {
    return Refuse(400, "invalid_target", "resource must be " + resource);
  }
  std::optional<unsigned> asked;
  if (const std::string* scope = Param(params, "scope")) {
    auto parsed = ParseOAuthScopes(*scope);
    if (!parsed.ok()) return Refuse(400, "invalid_scope", parsed.status().message());
    asked = *parsed;
  }
  std::optional<OAuthReply> refused;
  std::string access, refresh;
  unsigned scopes = 0;
  auto invalid = [&] {
    refused =
        Refuse(400, "invalid_grant", "the refresh token is unknown, used, expired or revoked");
    return Status::Ok();
  };
  Status st = store.Write([&](WriteTx& tx) -> Status {
    refused.reset();
    auto row = tx.oauth().FindRefresh(Sha256Hex(*refresh_token));
    if (!row.ok()) return row.status().code() == Code::kNotFound ? invalid() : row.status();
    auto token = tx.tokens().Get(row->workspace_id, row->token_id);
    if (!token.ok()) return token.status().code() == Code::kNotFound ? invalid() : token.status();
    if (token->client_id != *client_id) {
      refused = Refuse(400, "invalid_grant", "the refresh token was issued to another client");
      return Status::Ok();
    }
    if (row->used_at) {
      // A rotated refresh token came back: one of its two holders is a thief, and we cannot
      // tell which. The grant ends (OAuth 2.1 §4.3.1).
      if (!token->revoked_at) {
        CORTEX_RETURN_IF_ERROR(tx.tokens().Revoke(token->workspace_id, token->id, clock.Now()));
      }
      return invalid();
    }
    if (token->revoked_at || clock.Now() >= row->expires_at) return invalid();
    if (asked && (*asked & ~token->scopes) != 0) {
      refused =
          Refuse(400, "invalid_scope",
                 "scope may not exceed what was granted: " + FormatOAuthScopes(token->scopes));
      return Status::Ok();
    }
    Status spent = tx.oauth().SpendRefresh(row->hash, clock.Now());
    if (spent.code() == Code::kConflict) return invalid();
    CORTEX_RETURN_IF_ERROR(spent);
    CORTEX_RETURN_IF_ERROR(IssueTokens(tx, clock, *token, false, &access, &refresh));
    scopes = token->scopes;
    return Status::Ok();
  });
  if (!st.ok()) return Refuse(503, "temporarily_unavailable", "the store cannot answer; retry");
  if (refused) return *refused;
  return TokenAnswer(access, refresh, scopes);
}

}  // namespace

OAuthReply ExchangeToken(Store& store, const Clock& clock, const OAuthParams& params,
                         const std::string& resource) {
  const std::string* grant = Param(params, "grant_type");
  if (grant == nullptr) return Refuse(400, "invalid_request", "grant_type is required");
  if (*grant == "authorization_code") return ExchangeCode(store, clock, params, resource);
  if (*grant == "refresh_token") return Refresh(store, clock, params, resource);
  return Refuse(400, "unsupported_grant_type",
                "grant_type must be authorization_code or refresh_token");
}

OAuthReply RevokeOAuthToken(Store& store, const Clock& clock, const OAuthParams& params) {
  const std::string* token = Param(params, "token");
  if (token == nullptr) return Refuse(400, "invalid_request", "token is required");
  Status st = store.Write([&](WriteTx& tx) -> Status {
    std::string ws, id;
    if (token->rfind(kRefreshPrefix, 0) == 0) {
      auto row = tx.oauth().FindRefresh(Sha256Hex(*token));
      if (!row.ok()) return row.status().code() == Code::kNotFound ? Status::Ok() : row.status();
      ws = row->workspace_id;
      id = row->token_id;
    } else if (token->rfind(kAccessPrefix, 0) == 0) {
      auto row = tx.tokens().FindByHash(Sha256Hex(*token));
      if (!row.ok()) return row.status().code() == Code::kNotFound ? Status::Ok() : row.status();
      ws = row->workspace_id;
      id = row->id;
    } else {
      return Status::Ok();  // not one of ours: nothing to do (§2.2)
    }
    Status revoked = tx.tokens().Revoke(ws, id, clock.Now());
    return revoked.code() == Code::kNotFound ? Status::Ok() : revoked;
  });
  if (!st.ok()) return Refuse(503, "temporarily_unavailable", "the store cannot answer; retry");
  return OAuthReply{200, json::object()};
}

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<OAuthParams> ParseForm(std::string_view text) {
  OAuthParams out;
  auto decode = [](std::string_view in, std::string* o) {
    for (size_t i = 0; i < in.size(); ++i) {
      char c = in[i];
      if (c == '+') {
        *o += ' ';
      } else if (c == '%') {
        if (i + 2 >= in.size() || !std::isxdigit(static_cast<unsigned char>(in[i + 1])) ||
            !std::isxdigit(static_cast<unsigned char>(in[i + 2]))) {
          return false;
        }
        *o += static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else {
        *o += c;
      }
    }
    return true;
  };
  while (!text.empty()) {
    size_t end = text.find('&');
    std::string_view pair = text.substr(0, end);
    if (!pair.empty()) {
      size_t eq = pair.find('=');
      std::string name, value;
      if (!decode(pair.substr(0, eq), &name) ||
          (eq != std::string_view::npos && !decode(pair.substr(eq + 1), &value))) {
        return Status::InvalidArgument("a parameter holds a malformed %-escape");
      }
      if (!out.emplace(name, value).second) {
        return Status::InvalidArgument("parameter '" + Utf8Prefix(name, 40) +
                                       "' appears more than once");
      }
    }
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

}  // namespace cortex
