// The OAuth area: the authorization server's clients, its authorization codes and its
// refresh tokens (docs/authorization.md). Codes and refresh tokens are stored as the SHA-256
// of their secret only; the access tokens they lead to are rows of the tokens area.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/tx.h"

namespace cortex {

struct OAuthClient {
  std::string id;  // cli_... (registered), or its metadata document's https:// URL
  std::string name;
  std::vector<std::string> redirect_uris;
  TimePoint created_at;  // registered, or its metadata document read
};

struct OAuthCode {
  std::string hash;  // SHA-256 hex of the code
  std::string client_id;
  std::string workspace_id;
  std::string redirect_uri;
  std::string code_challenge;  // BASE64URL(SHA-256(verifier)), S256 only
  unsigned scopes = 0;         // what the person granted
  std::string resource;
  std::string session_id;  // the inbox session that consented
  TimePoint created_at;
  TimePoint expires_at;
  std::optional<TimePoint> used_at;
  std::string token_id;  // the token the code was exchanged for, once it was
};

struct OAuthRefresh {
  std::string hash;  // SHA-256 hex of the refresh token
  std::string token_id;
  std::string workspace_id;
  TimePoint created_at;
  TimePoint expires_at;
  std::optional<TimePoint> used_at;  // rotated: a second use means it was stolen
};

class OAuthReader {
 public:
  explicit OAuthReader(TxState& s) : s_(s) {}
  Result<OAuthClient> FindClient(const std::string& client_id);
  Result<OAuthCode> FindCode(const std::string& hash);
  Result<OAuthRefresh> FindRefresh(const std::string& hash);

 protected:
  TxState& s_;
};

class OAuthWriter : public OAuthReader {
 public:
  using OAuthReader::OAuthReader;
  Status InsertClient(const OAuthClient& c);
  // Inserts or replaces a client (one read from its metadata document).
  Status PutClient(const OAuthClient& c);
  Status InsertCode(const OAuthCode& c);
  // Spends a code: Conflict if it was spent already (of two racing uses, one wins).
  Status SpendCode(const std::string& hash, TimePoint at, const std::string& token_id);
  Status InsertRefresh(const OAuthRefresh& r);
  // Spends a refresh token: Conflict if it was spent already.
  Status SpendRefresh(const std::string& hash, TimePoint at);
  // Forgets codes and refresh tokens that expired before `t`, in every workspace.
  Status DeleteExpiredBefore(TimePoint t);
  // Forgets clients registered (or metadata documents read) before `t` that no code and no
  // token, live or revoked, has ever named: registrations nobody consented to.
  Status DeleteUnusedClientsBefore(TimePoint t);
};

inline OAuthReader ReadTx::oauth() const { return OAuthReader(s_); }
inline OAuthWriter WriteTx::oauth() const { return OAuthWriter(s_); }

}  // namespace cortex
