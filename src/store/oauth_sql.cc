#include "core/json_text.h"
#include "store/oauth.h"
#include "store/sql_tx.h"

namespace cortex {

Result<OAuthClient> OAuthReader::FindClient(const std::string& client_id) {
  Stmt s =
      s_.conn.Prepare("SELECT id, name, redirect_uris, created_at FROM oauth_clients WHERE id = ?");
  s.Bind(1, client_id);
  return OneRow(s, "unknown client", [](const Stmt& r) {
    OAuthClient c{r.Text(0), r.Text(1), {}, r.Time(3)};
    c.redirect_uris = nlohmann::json::parse(r.Text(2)).get<std::vector<std::string>>();
    return c;
  });
}

Result<OAuthCode> OAuthReader::FindCode(const std::string& hash) {
  Stmt s = s_.conn.Prepare(
      "SELECT hash, client_id, workspace_id, redirect_uri, code_challenge, scopes, resource,"
      " session_id, created_at, expires_at, used_at, token_id FROM oauth_codes WHERE hash = ?");
  s.Bind(1, hash);
  return OneRow(s, "unknown code", [](const Stmt& r) {
    return OAuthCode{
        r.Text(0), r.Text(1), r.Text(2), r.Text(3), r.Text(4),     static_cast<unsigned>(r.Int(5)),
        r.Text(6), r.Text(7), r.Time(8), r.Time(9), r.OptTime(10), r.Text(11)};
  });
}

Result<OAuthRefresh> OAuthReader::FindRefresh(const std::string& hash) {
  Stmt s = s_.conn.Prepare(
      "SELECT hash, token_id, workspace_id, created_at, expires_at, used_at"
      " FROM oauth_refresh_tokens WHERE hash = ?");
  s.Bind(1, hash);
  return OneRow(s, "unknown refresh token", [](const Stmt& r) {
    return OAuthRefresh{r.Text(0), r.Text(1), r.Text(2), r.Time(3), r.Time(4), r.OptTime(5)};
  });
}

Status OAuthWriter::InsertClient(const OAuthClient& c) {
  Stmt s = s_.conn.Prepare(
      "INSERT INTO oauth_clients (id, name, redirect_uris, created_at) VALUES (?, ?, ?, ?)");
  const std::string uris = DumpJson(nlohmann::json(c.redirect_uris));
  return s.Bind(1, c.id).Bind(2, c.name).Bind(3, uris).Bind(4, c.created_at).Run();
}

Status OAuthWriter::PutClient(const OAuthClient& c) {
  Stmt s = s_.conn.Prepare(
      "INSERT INTO oauth_clients (id, name, redirect_uris, created_at) VALUES (?, ?, ?, ?)"
      " ON CONFLICT (id) DO UPDATE SET name = excluded.name,"
      " redirect_uris = excluded.redirect_uris, created_at = excluded.created_at");
  const std::string uris = DumpJson(nlohmann::json(c.redirect_uris));
  return s.Bind(1, c.id).Bind(2, c.name).Bind(3, uris).Bind(4, c.created_at).Run();
}

Status OAuthWriter::InsertCode(const OAuthCode& c) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(c.workspace_id));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO oauth_codes (hash, client_id, workspace_id, redirect_uri, code_challenge,"
      " scopes, resource, session_id, created_at, expires_at, used_at, token_id)"
      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  return s.Bind(1, c.hash)
      .Bind(2, c.client_id)
      .Bind(3, c.workspace_id)
      .Bind(4, c.redirect_uri)
      .Bind(5, c.code_challenge)
      .Bind(6, static_cast<int64_t>(c.scopes))
      .Bind(7, c.resource)
      .Bind(8, c.session_id)
      .Bind(9, c.created_at)
      .Bind(10, c.expires_at)
      .Bind(11, c.used_at)
      .Bind(12, c.token_id)
      .Run();
}

Status OAuthWriter::SpendCode(const std::string& hash, TimePoint at, const std::string& token_id) {
  Stmt s = s_.conn.Prepare(
      "UPDATE oauth_codes SET used_at = ?, token_id = ? WHERE hash = ? AND used_at IS NULL");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, at).Bind(2, token_id).Bind(3, hash).Run());
  return s_.conn.Changes() == 1 ? Status::Ok() : Status::Conflict("the code was already used");
}

Status OAuthWriter::InsertRefresh(const OAuthRefresh& r) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(r.workspace_id));
  Stmt s = s_.conn.Prepare(
      "INSERT INTO oauth_refresh_tokens (hash, token_id, workspace_id, created_at, expires_at,"
      " used_at) VALUES (?, ?, ?, ?, ?, ?)");
  return s.Bind(1, r.hash)
      .Bind(2, r.token_id)
      .Bind(3, r.workspace_id)
      .Bind(4, r.created_at)
      .Bind(5, r.expires_at)
      .Bind(6, r.used_at)
      .Run();
}

Status OAuthWriter::SpendRefresh(const std::string& hash, TimePoint at) {
  Stmt s = s_.conn.Prepare(
      "UPDATE oauth_refresh_tokens SET used_at = ? WHERE hash = ? AND used_at IS NULL");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, at).Bind(2, hash).Run());
  return s_.conn.Changes() == 1 ? Status::Ok()
                                : Status::Conflict("the refresh token was already used");
}

Status OAuthWriter::DeleteExpiredBefore(TimePoint t) {
  Stmt codes = s_.conn.Prepare("DELETE FROM oauth_codes WHERE expires_at < ?");
  CORTEX_RETURN_IF_ERROR(codes.Bind(1, t).Run());
  Stmt refresh = s_.conn.Prepare("DELETE FROM oauth_refresh_tokens WHERE expires_at < ?");
  return refresh.Bind(1, t).Run();
}

Status OAuthWriter::DeleteUnusedClientsBefore(TimePoint t) {
  Stmt clients = s_.conn.Prepare(
      "DELETE FROM oauth_clients WHERE created_at < ? "
      "AND NOT EXISTS (SELECT 1 FROM oauth_codes c WHERE c.client_id = oauth_clients.id) "
      "AND NOT EXISTS (SELECT 1 FROM tokens k WHERE k.client_id = oauth_clients.id)");
  return clients.Bind(1, t).Run();
}

}  // namespace cortex
