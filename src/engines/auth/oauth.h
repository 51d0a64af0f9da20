// The built-in OAuth 2.1 authorization server (docs/authorization.md): dynamic client
// registration (RFC 7591), the authorization-code grant with PKCE S256 only, refresh tokens
// that rotate, revocation (RFC 7009). No HTTP here: web/oauth_api.cc reads requests and
// writes answers. Errors are the RFCs' own codes (`invalid_grant`, ...), never a hint of
// which secret was wrong.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "engines/auth/signin.h"
#include "store/store.h"

namespace cortex {

inline constexpr std::chrono::minutes kOAuthCodeLifetime{5};
inline constexpr std::chrono::hours kOAuthAccessLifetime{1};
inline constexpr std::chrono::hours kOAuthRefreshLifetime{24 * 30};
// A registered client (or a metadata document read) that no code or token names this long
// after is forgotten.
inline constexpr std::chrono::hours kOAuthUnusedClient{24};
inline constexpr size_t kOAuthMaxRedirectUris = 10;
inline constexpr size_t kOAuthMaxUriBytes = 2000;
inline constexpr size_t kOAuthMaxNameBytes = 200;
// A client ID metadata document is fetched again after this long.
inline constexpr std::chrono::hours kClientMetadataCache{1};

// Fetches a client ID metadata document (an https:// client_id) and returns its body
// (connectors/https_fetch.h, with its size and time limits); an error says why not.
using ClientMetadataFetch = std::function<Result<std::string>(const std::string& url)>;

// Form or query parameters, each named once.
using OAuthParams = std::map<std::string, std::string>;

// An answer of the token, registration or revocation endpoint: its HTTP status and JSON body
// ({"error", "error_description"} when it refuses).
struct OAuthReply {
  int status = 200;
  nlohmann::json body;
};

// "read act approve" (OAuth's space-separated list) -> scope bits; InvalidArgument names an
// unknown one. `admin` is never granted through OAuth.
Result<unsigned> ParseOAuthScopes(const std::string& list);
std::string FormatOAuthScopes(unsigned scopes);  // "read act"

// Whether `uri` may be registered as a redirect URI: https, http on a loopback host (any
// port, RFC 8252 §7.3), or a private-use scheme with a dot (com.example.app:/cb); never a
// fragment.
bool RedirectUriAllowed(const std::string& uri);
// Whether `given` matches `registered` exactly, but for the port of a loopback http URI.
bool RedirectUriMatches(const std::string& registered, const std::string& given);

// POST /oauth/register: registers a public client (token_endpoint_auth_method "none").
OAuthReply RegisterClient(Store& store, const Clock& clock, const nlohmann::json& metadata);

// A checked authorization request (GET /inbox/authorize).
struct AuthorizeRequest {
  std::string client_id;
  std::string client_name;
  std::string redirect_uri;
  std::string state;  // echoed back as given
  std::string code_challenge;
  unsigned scopes = 0;  // what the client asked for
  std::string resource;
};

// The outcome of checking an authorization request.
struct AuthorizeCheck {
  std::optional<AuthorizeRequest> request;  // set when it may go to consent
  std::string error;                        // RFC 6749 §4.1.2.1 code, else
  std::string description;
  // Where the error may be sent: empty when the client or its redirect URI cannot be
  // trusted (unknown client, a URI it did not register): then the person sees the error and
  // nothing is redirected.
  std::string redirect_uri;
  std::string state;
};

// Checks an authorization request for resource `resource` (this server's /mcp URL). A
// client_id that is an https:// URL names a client ID metadata document, read through
// `fetch` (none: such clients are refused) and remembered for kClientMetadataCache.
AuthorizeCheck CheckAuthorize(Store& store, const Clock& clock, const OAuthParams& params,
                              const std::string& resource,
                              const ClientMetadataFetch& fetch = nullptr);

// The person allowed the request with scopes `granted` (a subset of what was asked):
// stores a code and returns the URL to send the browser to (code, state, iss).
Result<std::string> IssueCode(Store& store, const Clock& clock, const AuthorizeRequest& request,
                              const InboxAuth& person, unsigned granted, const std::string& issuer);

// The redirect that tells the client `error` (access_denied, ...).
std::string ErrorRedirect(const std::string& redirect_uri, const std::string& error,
                          const std::string& description, const std::string& state,
                          const std::string& issuer);

// POST /oauth/token: grant_type authorization_code or refresh_token.
OAuthReply ExchangeToken(Store& store, const Clock& clock, const OAuthParams& params,
                         const std::string& resource);

// POST /oauth/revoke (RFC 7009): an access or refresh token; its grant ends. 200 whatever
// the token was (§2.2).
OAuthReply RevokeOAuthToken(Store& store, const Clock& clock, const OAuthParams& params);

// Percent-encodes `s` for a query component (RFC 3986 unreserved kept).
std::string UrlEncode(std::string_view s);
// Parses application/x-www-form-urlencoded text (a body or a query); InvalidArgument for a
// bad escape or a parameter named twice (RFC 6749 §3.1).
Result<OAuthParams> ParseForm(std::string_view text);

}  // namespace cortex
