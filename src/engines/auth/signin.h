// The web inbox's sign-in: `cortex inbox link` makes a one-time link (15 minutes, one use);
// following it opens a session, held in an HttpOnly cookie, that acts for the workspace's
// person (the `approve` scope, nothing else) until it expires or is signed out. Secrets are
// stored as SHA-256 hashes only. docs/inbox.md.
#pragma once

#include <chrono>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "store/store.h"

namespace cortex {

inline constexpr std::chrono::minutes kInboxLinkLifetime{15};
inline constexpr std::chrono::hours kInboxSessionLifetime{12};

struct SignInLink {
  std::string url;  // <base_url>/inbox/signin?t=<secret>
  TimePoint expires_at;
};

// `base_url` (http(s)://host[:port], a trailing slash allowed) without its trailing slash;
// InvalidArgument, naming --base-url, for anything else (a path, a query, user info).
Result<std::string> NormalizeBaseUrl(const std::string& base_url);

// A link for workspace `ws_name` (NotFound if it does not exist). `base_url` is where the
// person reaches `cortex serve` (http(s)://host[:port], no path); InvalidArgument otherwise.
Result<SignInLink> CreateSignInLink(Store& store, const Clock& clock, const std::string& ws_name,
                                    const std::string& base_url);

struct InboxSignIn {
  std::string secret;  // the cookie's value
  std::string session_id;
  std::string workspace_id;
  TimePoint expires_at;
  bool secure = false;  // the link was made for https://: the cookie must be Secure
};

// Uses the link with secret `link_secret` and opens a session. Unauthorized, saying why,
// for an unknown, used or expired link; nothing changes then.
Result<InboxSignIn> RedeemSignInLink(Store& store, const Clock& clock,
                                     const std::string& link_secret);

struct InboxAuth {
  std::string workspace_id;
  std::string workspace_name;
  std::string session_id;
};

// The live session with cookie value `secret`. Unauthorized if unknown, expired or signed out.
// Reads only.
Result<InboxAuth> AuthenticateInbox(ReadTx& tx, const Clock& clock, const std::string& secret);
// The same in a read of its own. Unauthorized as above; any other error means the store could
// not answer (try again), not that the person is signed out.
Result<InboxAuth> AuthenticateInbox(Store& store, const Clock& clock, const std::string& secret);

// The token a state-changing request of the session with cookie value `secret` must carry
// (X-CSRF-Token): derived from the secret, so only a page that can read the session's own
// answers knows it, and nothing more is stored.
std::string InboxCsrfToken(const std::string& secret);

Status SignOutInbox(Store& store, const Clock& clock, const InboxAuth& auth);

}  // namespace cortex
