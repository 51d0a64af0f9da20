// The storage interface the engines use. One implementation per database (SQLite today;
// PostgreSQL can follow without touching engines or tools). Every method that touches
// workspace data takes the workspace id: there is no unscoped read.
//
// Work is expressed as transactions: Read() runs a function against a consistent snapshot
// that never waits behind writers; Write() runs a function inside one write transaction,
// committed durably before Write() returns. Because a write is a self-contained function,
// an implementation is free to batch several concurrent writes into one commit (group
// commit) without changing any caller.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/model.h"

namespace cortex {

// Reads inside a transaction. Not thread-safe: used only by the function it is passed to.
class ReadTx {
 public:
  virtual ~ReadTx() = default;
  virtual Result<Workspace> FindWorkspaceByName(const std::string& name) = 0;
  virtual Result<Workspace> GetWorkspace(const std::string& id) = 0;
  virtual Result<std::vector<Workspace>> ListWorkspaces() = 0;

  // Looks a token up by the SHA-256 of its secret, revoked or not.
  virtual Result<TokenRecord> FindTokenByHash(const std::string& hash) = 0;
  virtual Result<std::vector<TokenRecord>> ListTokens(const std::string& ws) = 0;

  virtual Result<Entity> GetEntity(const std::string& ws, const std::string& entity_id) = 0;
  // REQUIRES: `identifier` is normalised (see NormalizeIdentifier).
  virtual Result<Entity> FindEntityByIdentifier(const std::string& ws,
                                                const std::string& identifier) = 0;
  virtual Result<bool> EpisodeExternalIdExists(const std::string& ws,
                                               const std::string& external_id) = 0;
  virtual Result<WorldCounts> CountWorld(const std::string& ws) = 0;
};

// Reads and writes inside one write transaction.
class WriteTx : public ReadTx {
 public:
  virtual Status InsertWorkspace(const Workspace& w) = 0;
  virtual Status SetWorldVersion(const std::string& ws, const std::string& wv) = 0;
  virtual Status SetAgentVersion(const std::string& ws, const std::string& av) = 0;

  virtual Status InsertToken(const TokenRecord& t) = 0;
  // NotFound unless the token exists in `ws` and is not yet revoked.
  virtual Status RevokeToken(const std::string& ws, const std::string& token_id,
                             TimePoint at) = 0;

  // Inserts the entity with its identifiers and tags. Conflict if an identifier is taken.
  virtual Status InsertEntity(const Entity& e) = 0;
  virtual Status AddEntityIdentifier(const std::string& ws, const std::string& entity_id,
                                     const std::string& identifier) = 0;
  virtual Status AddEntityTag(const std::string& ws, const std::string& entity_id,
                              const std::string& tag) = 0;
  virtual Status SetEntityName(const std::string& ws, const std::string& entity_id,
                               const std::string& name) = 0;

  virtual Status InsertEpisode(const Episode& e) = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // Runs `fn` on a consistent snapshot. Thread-safe; readers run concurrently.
  virtual Status Read(const std::function<Status(ReadTx&)>& fn) = 0;

  // Runs `fn` in one write transaction: committed (durably) iff `fn` returns OK, rolled
  // back entirely otherwise. Thread-safe.
  virtual Status Write(const std::function<Status(WriteTx&)>& fn) = 0;

  // The highest migration applied.
  virtual Result<int> SchemaVersion() = 0;
};

// Opens (creating if needed) the SQLite store in directory `dir` and applies any pending
// migrations.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& dir);

}  // namespace cortex
