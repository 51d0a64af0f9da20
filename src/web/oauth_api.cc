#include "web/oauth_api.h"

#include "core/crypto.h"
#include "core/json_text.h"
#include "engines/auth/oauth.h"
#include "engines/auth/signin.h"
#include "web/inbox_api.h"

namespace cortex {

using nlohmann::json;

namespace {

constexpr std::string_view kServerMetadata = "/.well-known/oauth-authorization-server";
constexpr std::string_view kAuthorize = "/inbox/authorize";
// The authorization request's parameters the consent form carries back.
constexpr const char* kRequestFields[] = {
    "client_id",      "redirect_uri",          "state", "response_type",
    "code_challenge", "code_challenge_method", "scope", "resource"};

std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }
std::string_view QueryOf(std::string_view target) {
  size_t q = target.find('?');
  return q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
}

// Answers of the endpoints a client calls (metadata, registration, token, revocation):
// public, never cached when they carry a secret, readable by a browser-based client.
HttpResponse JsonAnswer(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = DumpJson(body);
  r.headers.emplace_back("Cache-Control", "no-store");
  r.headers.emplace_back("Pragma", "no-cache");
  r.headers.emplace_back("Access-Control-Allow-Origin", "*");
  return r;
}

HttpResponse Reply(const OAuthReply& reply, RequestLog& log) {
  if (reply.status >= 400) log.status = reply.body.value("error", "error");
  HttpResponse r = JsonAnswer(reply.status, reply.body);
  if (reply.status == 401) r.headers.emplace_back("WWW-Authenticate", "Basic realm=\"cortex\"");
  return r;
}

HttpResponse Refusal(int status, const std::string& error, const std::string& description,
                     RequestLog& log) {
  return Reply(OAuthReply{status, json{{"error", error}, {"error_description", description}}}, log);
}

// A page of the consent flow. `form_target` is the origin (or scheme) the consent form may
// end up at: the app's redirect URI, which its answer redirects to.
HttpResponse Page(int status, const std::string& title, const std::string& body,
                  const std::string& form_target = "") {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/html; charset=utf-8";
  r.body =
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>" +
      MarkupEscape(title) +
      " - Cortex</title><link rel=\"stylesheet\" href=\"/inbox/inbox.css\"></head>"
      "<body><main class=\"consent\">" +
      body + "</main></body></html>";
  r.headers.emplace_back("Cache-Control", "no-store");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  // same-origin, not no-referrer: with no-referrer the browser posts the form with
  // "Origin: null", which the Origin check refuses; nothing is sent to another origin.
  r.headers.emplace_back("Referrer-Policy", "same-origin");
  r.headers.emplace_back("X-Frame-Options", "DENY");
  // form-action also governs where the form's answer redirects: the app's redirect URI.
  r.headers.emplace_back("Content-Security-Policy",
                         "default-src 'self'; base-uri 'none'; frame-ancestors 'none'; "
                         "form-action 'self'" +
                             (form_target.empty() ? std::string() : " " + form_target));
  return r;
}

HttpResponse Redirect(int status, const std::string& location) {
  HttpResponse r;
  r.status = status;
  r.headers.emplace_back("Location", location);
  r.headers.emplace_back("Cache-Control", "no-store");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  return r;
}

// What CSP's form-action must allow for the form's answer to reach `uri`: its origin, or its
// scheme for a private-use one.
std::string FormTarget(const std::string& uri) {
  size_t colon = uri.find(':');
  if (uri.compare(colon, 3, "://") != 0) return uri.substr(0, colon + 1);
  size_t end = uri.find_first_of("/?", colon + 3);
  return uri.substr(0, end);
}

HttpResponse BadRequestPage(const std::string& why, RequestLog& log) {
  log.status = "invalid_request";
  return Page(400, "Request refused",
              "<h1>This app's request cannot be used</h1><p>" + MarkupEscape(why) +
                  ".</p><p>Nothing was shared with it. Try connecting the app again.</p>");
}

const char* ScopeText(unsigned scope) {
  switch (scope) {
    case kScopeRead:
      return "Read your notifications, decisions, rules and the people you deal with";
    case kScopeAct:
      return "Propose messages for you to approve, and send ones your trust settings allow";
    case kScopeApprove:
      return "Approve and reject drafts, and move trust, in your name. Grant this only to an "
             "assistant that is you: an agent with it can approve its own drafts";
  }
  return "";
}

}  // namespace

OAuthApi::OAuthApi(Store& store, const Clock& clock, ClientMetadataFetch fetch)
    : store_(store), clock_(clock), fetch_(std::move(fetch)) {}

bool OAuthApi::Handles(std::string_view path) const {
  path = PathOf(path);
  return path == kServerMetadata || path == kAuthorize || path == "/oauth/register" ||
         path == "/oauth/token" || path == "/oauth/revoke";
}

// The consent page may also remember a client read from its metadata document.
bool OAuthApi::MayWrite(const HttpRequest& req) const {
  return req.method == "POST" || PathOf(req.target) == kAuthorize;
}

std::string OAuthApi::RouteOf(std::string_view path) const { return std::string(PathOf(path)); }

bool OAuthApi::MayCallOut(const HttpRequest& req) const { return PathOf(req.target) == kAuthorize; }

bool OAuthApi::AnyOrigin(std::string_view path) const { return PathOf(path) != kAuthorize; }

HttpResponse OAuthApi::Handle(const HttpRequest& req, const std::string& base, RequestLog& log) {
  std::string_view path = PathOf(req.target);
  log.status = "ok";
  if (path == kAuthorize) {
    if (req.method == "GET") return Authorize(req, base, log);
    if (req.method == "POST") return Consent(req, base, log);
    log.status = "method_not_allowed";
    return Page(405, "Method not allowed", "<h1>Use GET</h1>");
  }
  if (req.method == "OPTIONS") {  // a browser-based client's preflight
    HttpResponse r;
    r.status = 204;
    r.headers.emplace_back("Access-Control-Allow-Origin", "*");
    r.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST");
    r.headers.emplace_back("Access-Control-Allow-Headers",
                           "Content-Type, Authorization, MCP-Protocol-Version");
    r.headers.emplace_back("Access-Control-Max-Age", "600");
    return r;
  }
  if (path == kServerMetadata) {
    if (req.method != "GET" && req.method != "HEAD") {
      return Refusal(405, "invalid_request", "use GET", log);
    }
    HttpResponse r =
        JsonAnswer(200, {{"issuer", base},
                         {"authorization_endpoint", base + std::string(kAuthorize)},
                         {"token_endpoint", base + "/oauth/token"},
                         {"registration_endpoint", base + "/oauth/register"},
                         {"revocation_endpoint", base + "/oauth/revoke"},
                         {"scopes_supported", {"read", "act", "approve"}},
                         {"response_types_supported", {"code"}},
                         {"response_modes_supported", {"query"}},
                         {"grant_types_supported", {"authorization_code", "refresh_token"}},
                         {"code_challenge_methods_supported", {"S256"}},
                         {"token_endpoint_auth_methods_supported", {"none"}},
                         {"revocation_endpoint_auth_methods_supported", {"none"}},
                         {"authorization_response_iss_parameter_supported", true},
                         {"client_id_metadata_document_supported", fetch_ != nullptr},
                         {"service_documentation", base + "/inbox/"}});
    r.headers[0] = {"Cache-Control", "max-age=300"};
    return r;
  }
  if (req.method != "POST") return Refusal(405, "invalid_request", "use POST", log);
  if (path == "/oauth/register") {
    json metadata = ParseJson(req.body);
    if (metadata.is_discarded()) {
      return Refusal(400, "invalid_client_metadata", "the body must be JSON", log);
    }
    return Reply(RegisterClient(store_, clock_, metadata), log);
  }
  const std::string* type = req.Header("content-type");
  if (type == nullptr || AsciiLower(*type).rfind("application/x-www-form-urlencoded", 0) != 0) {
    return Refusal(400, "invalid_request", "the body must be application/x-www-form-urlencoded",
                   log);
  }
  auto params = ParseForm(req.body);
  if (!params.ok()) return Refusal(400, "invalid_request", params.status().message(), log);
  // Public clients only: a client that authenticates with a secret was never issued one.
  if (req.Header("authorization") != nullptr || params->count("client_secret") != 0) {
    return Refusal(401, "invalid_client",
                   "clients of this server are public (token_endpoint_auth_method none): "
                   "send client_id, no secret",
                   log);
  }
  if (path == "/oauth/token")
    return Reply(ExchangeToken(store_, clock_, *params, base + "/mcp"), log);
  return Reply(RevokeOAuthToken(store_, clock_, *params), log);
}

HttpResponse OAuthApi::Authorize(const HttpRequest& req, const std::string& base, RequestLog& log) {
  auto params = ParseForm(QueryOf(req.target));
  if (!params.ok()) return BadRequestPage(params.status().message(), log);
  AuthorizeCheck check = CheckAuthorize(store_, clock_, *params, base + "/mcp", fetch_);
  if (!check.request) {
    if (check.redirect_uri.empty()) return BadRequestPage(check.description, log);
    log.status = check.error;
    return Redirect(
        302, ErrorRedirect(check.redirect_uri, check.error, check.description, check.state, base));
  }
  const AuthorizeRequest& ask = *check.request;
  std::string secret = InboxApi::SessionSecret(req);
  Result<InboxAuth> person = AuthenticateInbox(store_, clock_, secret);
  if (!person.ok() && person.status().code() != Code::kUnauthorized) {
    log.status = "unavailable";
    return Page(503, "Try again", "<h1>Cortex cannot answer now</h1><p>Reload in a moment.</p>");
  }
  if (!person.ok()) {
    // Arriving from the app's site, the browser withholds the SameSite=Strict session
    // cookie; a navigation this page starts is same-site, so it is sent then.
    if (params->count("cortex_retry") == 0) {
      HttpResponse r = Page(200, "Signing in", "<p>Checking your inbox session...</p>");
      r.body.insert(r.body.find("</head>"),
                    "<meta http-equiv=\"refresh\" content=\"0;url=" +
                        MarkupEscape(std::string(req.target) + "&cortex_retry=1") + "\">");
      return r;
    }
    log.status = "unauthorized";
    return Page(401, "Sign in",
                "<h1>Sign in to Cortex first</h1><p><strong>" + MarkupEscape(ask.client_name) +
                    "</strong> asks to connect to your Cortex. To decide, sign in to your "
                    "inbox in this browser: run</p><pre>cortex inbox link --workspace NAME "
                    "--base-url " +
                    MarkupEscape(base) +
                    "</pre><p>open the link it prints, then come back and reload this "
                    "page.</p>");
  }
  std::string hidden;
  for (const char* field : kRequestFields) {
    auto it = params->find(field);
    if (it == params->end()) continue;
    hidden += "<input type=\"hidden\" name=\"" + std::string(field) + "\" value=\"" +
              MarkupEscape(it->second) + "\">";
  }
  hidden += "<input type=\"hidden\" name=\"csrf\" value=\"" + InboxCsrfToken(secret) + "\">";
  std::string scopes;
  for (unsigned scope : {kScopeRead, kScopeAct, kScopeApprove}) {
    if ((ask.scopes & scope) == 0) continue;
    std::string name = FormatOAuthScopes(scope);
    // `approve` is a person's: never granted by default, only by ticking it.
    bool checked = scope != kScopeApprove;
    scopes += "<li><label><input type=\"checkbox\" name=\"grant_" + name + "\" value=\"on\"" +
              (checked ? " checked" : "") + "> <strong>" + name + "</strong>: " + ScopeText(scope) +
              "</label></li>";
  }
  std::string redirect_host = FormTarget(ask.redirect_uri);
  return Page(200, "Connect " + ask.client_name,
              "<h1>Connect <span id=\"client-name\">" + MarkupEscape(ask.client_name) +
                  "</span> to your Cortex?</h1><p>Workspace <strong>" +
                  MarkupEscape(person->workspace_name) +
                  "</strong>. After you decide, your browser goes back to <code>" +
                  MarkupEscape(redirect_host) +
                  "</code>.</p><form method=\"post\" action=\"/inbox/authorize\">" + hidden +
                  "<p>It asks to:</p><ul class=\"scopes\">" + scopes +
                  "</ul><p>You can disconnect it at any time in the inbox or with "
                  "<code>cortex token revoke</code>.</p><p><button type=\"submit\" "
                  "name=\"decision\" value=\"allow\" id=\"allow\">Allow</button> "
                  "<button type=\"submit\" name=\"decision\" value=\"deny\" "
                  "id=\"deny\">Deny</button></p></form>",
              redirect_host);
}

HttpResponse OAuthApi::Consent(const HttpRequest& req, const std::string& base, RequestLog& log) {
  const std::string* type = req.Header("content-type");
  if (type == nullptr || AsciiLower(*type).rfind("application/x-www-form-urlencoded", 0) != 0) {
    return BadRequestPage("the consent form must be posted as a form", log);
  }
  auto params = ParseForm(req.body);
  if (!params.ok()) return BadRequestPage(params.status().message(), log);
  std::string secret = InboxApi::SessionSecret(req);
  auto csrf = params->find("csrf");
  if (secret.empty() || csrf == params->end() ||
      !ConstantTimeEquals(csrf->second, InboxCsrfToken(secret))) {
    log.status = "csrf";
    return Page(403, "Refused",
                "<h1>This form cannot be used</h1><p>Its session check failed: go back to "
                "the app and connect again.</p>");
  }
  Result<InboxAuth> person = AuthenticateInbox(store_, clock_, secret);
  if (!person.ok() && person.status().code() != Code::kUnauthorized) {
    log.status = "unavailable";
    return Page(503, "Try again", "<h1>Cortex cannot answer now</h1><p>Go back and retry.</p>");
  }
  if (!person.ok()) {
    log.status = "unauthorized";
    return Page(401, "Signed out",
                "<h1>Your inbox session ended</h1><p>Sign in again with <code>cortex inbox "
                "link</code>, then connect the app again.</p>");
  }
  AuthorizeCheck check = CheckAuthorize(store_, clock_, *params, base + "/mcp", fetch_);
  if (!check.request) {
    if (check.redirect_uri.empty()) return BadRequestPage(check.description, log);
    log.status = check.error;
    return Redirect(
        303, ErrorRedirect(check.redirect_uri, check.error, check.description, check.state, base));
  }
  const AuthorizeRequest& ask = *check.request;
  auto decision = params->find("decision");
  unsigned granted = 0;
  for (unsigned scope : {kScopeRead, kScopeAct, kScopeApprove}) {
    auto box = params->find("grant_" + FormatOAuthScopes(scope));
    if (box != params->end() && box->second == "on") granted |= scope;
  }
  granted &= ask.scopes;  // never more than the app asked for
  if (decision == params->end() || decision->second != "allow" || granted == 0) {
    log.status = "access_denied";
    return Redirect(
        303, ErrorRedirect(ask.redirect_uri, "access_denied",
                           granted == 0 && decision != params->end() && decision->second == "allow"
                               ? "no scope was granted"
                               : "the person denied the request",
                           ask.state, base));
  }
  auto location = IssueCode(store_, clock_, ask, *person, granted, base);
  if (!location.ok()) {
    log.status = "unavailable";
    return Page(503, "Try again", "<h1>Cortex cannot answer now</h1><p>Go back and retry.</p>");
  }
  return Redirect(303, *location);
}

}  // namespace cortex
