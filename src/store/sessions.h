// The sessions area: MCP sessions of the 2025-11-25 era (Mcp-Session-Id), kept in the store
// so that any instance can serve them. Sessions take no workspace lock: opening or ending
// one never waits behind a long write to the workspace.
// Every method takes the id the client holds; the table keeps only its SHA-256 (hex), as
// tokens' hashes are kept (migration 12), so a copy of the database opens no session.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

class SessionsReader {
 public:
  explicit SessionsReader(TxState& s) : s_(s) {}
  // Session `id` of any workspace (the caller compares its workspace), with `id` as given.
  Result<std::optional<McpSession>> Get(const std::string& id);
  // Sessions used at or after `since`.
  Result<int64_t> Count(TimePoint since);
  // Sessions used at or after `since`: in all, of workspace `ws`, and opened with token
  // `token_id` (0 for an empty one).
  struct Counts {
    int64_t total = 0, workspace = 0, token = 0;
  };
  Result<Counts> CountFor(TimePoint since, const std::string& ws, const std::string& token_id);
  // The resource URIs session `id` subscribed to, oldest first.
  Result<std::vector<std::string>> Subscriptions(const std::string& id);

 protected:
  TxState& s_;
};

class SessionsWriter : public SessionsReader {
 public:
  using SessionsReader::SessionsReader;
  // `token_id`: the token that opened it (counted by CountFor).
  Status Insert(const McpSession& s, const std::string& token_id = "");
  Status Touch(const std::string& id, TimePoint at);
  // Sets session `id`'s log level (logging/setLevel). False if `ws` has no session `id`.
  Result<bool> SetLogLevel(const std::string& ws, const std::string& id, const std::string& level);
  // Subscribes session `id` of `ws` to `uri` (again: no change). False if `ws` has no
  // session `id`.
  Result<bool> Subscribe(const std::string& ws, const std::string& id, const std::string& uri,
                         TimePoint at);
  Status Unsubscribe(const std::string& id, const std::string& uri);
  // False if `ws` has no session `id`.
  Result<bool> Delete(const std::string& ws, const std::string& id);
  // Forgets sessions last used before `before`.
  Status DeleteIdle(TimePoint before);
};

inline SessionsReader ReadTx::sessions() const { return SessionsReader(s_); }
inline SessionsWriter WriteTx::sessions() const { return SessionsWriter(s_); }

}  // namespace cortex
