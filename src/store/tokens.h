// The tokens area: API tokens, stored as the SHA-256 of their secret.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

class TokensReader {
 public:
  explicit TokensReader(TxState& s) : s_(s) {}
  // Looks a token up by the SHA-256 of its secret, revoked or not.
  Result<TokenRecord> FindByHash(const std::string& hash);
  // A workspace's tokens, by id.
  Result<std::vector<TokenRecord>> List(const std::string& ws);
  // NotFound unless token `token_id` is in `ws` (revoked or not).
  Result<TokenRecord> Get(const std::string& ws, const std::string& token_id);

 protected:
  TxState& s_;
};

class TokensWriter : public TokensReader {
 public:
  using TokensReader::TokensReader;
  Status Insert(const TokenRecord& t);
  // NotFound unless the token exists in `ws` and is not yet revoked.
  Status Revoke(const std::string& ws, const std::string& token_id, TimePoint at);
  // Gives an OAuth-issued token a new secret (its hash) and expiry, on refresh: the old
  // secret stops working. NotFound unless it exists in `ws` and is not revoked.
  Status Rotate(const std::string& ws, const std::string& token_id, const std::string& hash,
                TimePoint expires_at);
};

inline TokensReader ReadTx::tokens() const { return TokensReader(s_); }
inline TokensWriter WriteTx::tokens() const { return TokensWriter(s_); }

}  // namespace cortex
