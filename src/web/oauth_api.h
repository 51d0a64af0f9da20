// The authorization server over HTTP (docs/authorization.md): its metadata (RFC 8414), client
// registration, the token and revocation endpoints, and the consent page, which is the
// inbox's: GET /inbox/authorize shows a signed-in person what the app asks for, and the form
// it posts back gives the app a code. No I/O: http_router.cc hands these requests here.
#pragma once

#include <string>
#include <string_view>

#include "core/clock.h"
#include "engines/auth/oauth.h"
#include "store/store.h"
#include "transport/http_types.h"

namespace cortex {

class OAuthApi : public PathHandler {
 public:
  // `fetch` reads client ID metadata documents; without it such clients are refused.
  OAuthApi(Store& store, const Clock& clock, ClientMetadataFetch fetch = nullptr);

  // Whether this serves `path`: /.well-known/oauth-authorization-server, /oauth/...,
  // /inbox/authorize.
  bool Handles(std::string_view path) const override;
  // Each path is its own route.
  std::string RouteOf(std::string_view path) const override;
  // Whether handling `req` may write: a POST, or the consent page (which may remember a
  // client read from its metadata document, and so runs off the I/O threads).
  bool MayWrite(const HttpRequest& req) const override;
  // The consent page may fetch an app's client ID metadata document.
  bool MayCallOut(const HttpRequest& req) const override;
  // Everything but the consent page is called by clients, browser-based ones from their
  // own origins.
  bool AnyOrigin(std::string_view path) const override;

  // REQUIRES: Handles(path of req.target). `base` is the server's base URL as the client
  // sees it: the issuer; the resource is `base`/mcp.
  HttpResponse Handle(const HttpRequest& req, const std::string& base, RequestLog& log) override;

 private:
  HttpResponse Authorize(const HttpRequest& req, const std::string& base, RequestLog& log);
  HttpResponse Consent(const HttpRequest& req, const std::string& base, RequestLog& log);

  Store& store_;
  const Clock& clock_;
  ClientMetadataFetch fetch_;
};

}  // namespace cortex
