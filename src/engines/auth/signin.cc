#include "engines/auth/signin.h"

#include "core/crypto.h"
#include "core/ids.h"
#include "store/inbox.h"
#include "store/workspaces.h"

namespace cortex {

namespace {
constexpr size_t kSecretBytes = 32;  // 256 bits, hex in the link and the cookie
}  // namespace

Result<std::string> NormalizeBaseUrl(const std::string& base_url) {
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  bool scheme = base.rfind("http://", 0) == 0 || base.rfind("https://", 0) == 0;
  size_t host = base.find("://") + 3;
  if (!scheme || base.size() <= host || base.find('/', host) != std::string::npos ||
      base.find_first_of("?#@ \"\\") != std::string::npos) {
    return Status::InvalidArgument("--base-url must be http(s)://host[:port], got '" + base_url +
                                   "'");
  }
  return base;
}

Result<SignInLink> CreateSignInLink(Store& store, const Clock& clock, const std::string& ws_name,
                                    const std::string& base_url) {
  auto normalized = NormalizeBaseUrl(base_url);
  if (!normalized.ok()) return normalized.status();
  const std::string& base = *normalized;
  std::string secret = RandomHex(kSecretBytes);
  InboxLink link;
  link.id = NewId("lnk_", clock);
  link.secret_hash = Sha256Hex(secret);
  link.created_at = clock.Now();
  link.expires_at = link.created_at + kInboxLinkLifetime;
  link.secure = base.rfind("https://", 0) == 0;
  Status st = store.Write([&](WriteTx& tx) -> Status {
    auto ws = tx.workspaces().FindByName(ws_name);
    if (!ws.ok()) return ws.status();
    link.workspace_id = ws->id;
    return tx.inbox().InsertLink(link);
  });
  if (!st.ok()) return st;
  return SignInLink{base + "/inbox/signin?t=" + secret, link.expires_at};
}

Result<InboxSignIn> RedeemSignInLink(Store& store, const Clock& clock,
                                     const std::string& link_secret) {
  InboxSignIn out;
  out.secret = RandomHex(kSecretBytes);
  Status st = store.Write([&](WriteTx& tx) -> Status {
    TimePoint now = clock.Now();
    auto link = tx.inbox().UseLink(Sha256Hex(link_secret), now);
    if (!link.ok()) {
      return Status::Unauthorized(link.status().code() == Code::kNotFound
                                      ? "this sign-in link is not valid"
                                      : link.status().message());
    }
    InboxSession s;
    s.id = NewId("ses_", clock);
    s.workspace_id = link->workspace_id;
    s.secret_hash = Sha256Hex(out.secret);
    s.link_id = link->id;
    s.created_at = now;
    s.expires_at = now + kInboxSessionLifetime;
    out.session_id = s.id;
    out.workspace_id = s.workspace_id;
    out.expires_at = s.expires_at;
    out.secure = link->secure;
    return tx.inbox().InsertSession(s);
  });
  if (!st.ok()) return st;
  return out;
}

Result<InboxAuth> AuthenticateInbox(ReadTx& tx, const Clock& clock, const std::string& secret) {
  if (secret.empty()) return Status::Unauthorized("not signed in");
  auto s = tx.inbox().FindSession(Sha256Hex(secret));
  if (!s.ok()) {
    return s.status().code() == Code::kNotFound ? Status::Unauthorized("not signed in")
                                                : s.status();
  }
  if (s->ended_at) return Status::Unauthorized("signed out");
  if (clock.Now() >= s->expires_at) return Status::Unauthorized("the session has expired");
  auto ws = tx.workspaces().Get(s->workspace_id);
  if (!ws.ok()) return ws.status();
  return InboxAuth{ws->id, ws->name, s->id};
}

Result<InboxAuth> AuthenticateInbox(Store& store, const Clock& clock, const std::string& secret) {
  Result<InboxAuth> auth = Status::Unauthorized("not signed in");
  Status read = store.Read([&](ReadTx& tx) -> Status {
    auth = AuthenticateInbox(tx, clock, secret);
    return auth.ok() || auth.status().code() == Code::kUnauthorized ? Status::Ok() : auth.status();
  });
  if (!read.ok()) return read;
  return auth;
}

std::string InboxCsrfToken(const std::string& secret) {
  return Sha256Hex("cortex inbox csrf\n" + secret).substr(0, 32);
}

Status SignOutInbox(Store& store, const Clock& clock, const InboxAuth& auth) {
  return store.Write([&](WriteTx& tx) {
    return tx.inbox().EndSession(auth.workspace_id, auth.session_id, clock.Now());
  });
}

}  // namespace cortex
