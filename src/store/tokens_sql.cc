#include "store/sql_tx.h"
#include "store/tokens.h"

namespace cortex {

#define TOKEN_COLUMNS \
  "id, workspace_id, hash, label, scopes, created_at, revoked_at, client_id, expires_at, resource"

namespace {
TokenRecord TokenRow(const Stmt& s) {
  return TokenRecord{
      s.Text(0), s.Text(1),    s.Text(2), s.Text(3),    static_cast<unsigned>(s.Int(4)),
      s.Time(5), s.OptTime(6), s.Text(7), s.OptTime(8), s.Text(9)};
}
}  // namespace

Result<TokenRecord> TokensReader::FindByHash(const std::string& hash) {
  return s_.Remembered(&StableRows::tokens, hash, [&]() -> Result<TokenRecord> {
    Stmt s = s_.conn.Prepare("SELECT " TOKEN_COLUMNS
                             " FROM tokens "
                             "WHERE hash = ?");
    s.Bind(1, hash);
    return OneRow(s, "unknown token", TokenRow);
  });
}

Result<std::vector<TokenRecord>> TokensReader::List(const std::string& ws) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare("SELECT " TOKEN_COLUMNS
                           " FROM tokens "
                           "WHERE workspace_id = ? ORDER BY id");
  s.Bind(1, ws);
  return AllRows(s, TokenRow);
}

Result<TokenRecord> TokensReader::Get(const std::string& ws, const std::string& token_id) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s =
      s_.conn.Prepare("SELECT " TOKEN_COLUMNS " FROM tokens WHERE workspace_id = ? AND id = ?");
  s.Bind(1, ws).Bind(2, token_id);
  return OneRow(s, "no token " + token_id + " in workspace", TokenRow);
}

Status TokensWriter::Rotate(const std::string& ws, const std::string& token_id,
                            const std::string& hash, TimePoint expires_at) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "UPDATE tokens SET hash = ?, expires_at = ? "
      "WHERE workspace_id = ? AND id = ? AND revoked_at IS NULL");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, hash).Bind(2, expires_at).Bind(3, ws).Bind(4, token_id).Run());
  return s_.conn.Changes() == 1 ? Status::Ok()
                                : Status::NotFound("no active token " + token_id + " in workspace");
}

Status TokensWriter::Insert(const TokenRecord& t) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(t.workspace_id));
  Stmt s = s_.conn.Prepare("INSERT INTO tokens (" TOKEN_COLUMNS
                           ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  return s.Bind(1, t.id)
      .Bind(2, t.workspace_id)
      .Bind(3, t.hash)
      .Bind(4, t.label)
      .Bind(5, static_cast<int64_t>(t.scopes))
      .Bind(6, t.created_at)
      .Bind(7, t.revoked_at)
      .Bind(8, t.client_id)
      .Bind(9, t.expires_at)
      .Bind(10, t.resource)
      .Run();
}

Status TokensWriter::Revoke(const std::string& ws, const std::string& token_id, TimePoint at) {
  CORTEX_RETURN_IF_ERROR(s_.conn.Enter(ws));
  Stmt s = s_.conn.Prepare(
      "UPDATE tokens SET revoked_at = ? "
      "WHERE workspace_id = ? AND id = ? AND revoked_at IS NULL");
  CORTEX_RETURN_IF_ERROR(s.Bind(1, at).Bind(2, ws).Bind(3, token_id).Run());
  return s_.conn.Changes() == 1 ? Status::Ok()
                                : Status::NotFound("no active token " + token_id + " in workspace");
}

}  // namespace cortex
