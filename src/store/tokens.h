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
  // By id.
  Result<std::vector<TokenRecord>> List(const std::string& ws);

 protected:
  TxState& s_;
};

class TokensWriter : public TokensReader {
 public:
  using TokensReader::TokensReader;
  Status Insert(const TokenRecord& t);
  // NotFound unless the token exists in `ws` and is not yet revoked.
  Status Revoke(const std::string& ws, const std::string& token_id, TimePoint at);
};

inline TokensReader ReadTx::tokens() const { return TokensReader(s_); }
inline TokensWriter WriteTx::tokens() const { return TokensWriter(s_); }

}  // namespace cortex
