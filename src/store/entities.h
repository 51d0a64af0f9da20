// The entities area: counterparties, with their identifiers and tags.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

class EntitiesReader {
 public:
  explicit EntitiesReader(TxState& s) : s_(s) {}
  Result<Entity> Get(const std::string& ws, const std::string& entity_id);
  // REQUIRES: `identifier` is normalised (see NormalizeIdentifier).
  Result<Entity> FindByIdentifier(const std::string& ws, const std::string& identifier);
  // The first `limit` entities of `ws` by id (oldest first), with identifiers and tags.
  Result<std::vector<Entity>> List(const std::string& ws, int limit);
  // Entities of `ws` whose name is `query` or has a word starting with it ("sarah", "chen",
  // "sarah ch"), ASCII case-insensitive, whitespace runs counting as one space: whole-name
  // matches first, then by name; at most `limit`, with identifiers and tags. Reads every
  // name of the workspace (one index range scan of two columns).
  Result<std::vector<Entity>> FindByName(const std::string& ws, const std::string& query,
                                         int limit);

 protected:
  // Fills e->identifiers and e->tags.
  Status LoadDetails(Entity* e);
  TxState& s_;
};

class EntitiesWriter : public EntitiesReader {
 public:
  using EntitiesReader::EntitiesReader;
  // Inserts the entity with its identifiers and tags. Conflict if an identifier is taken.
  Status Insert(const Entity& e);
  Status AddIdentifier(const std::string& ws, const std::string& entity_id,
                       const std::string& identifier);
  Status AddTag(const std::string& ws, const std::string& entity_id, const std::string& tag);
  Status SetName(const std::string& ws, const std::string& entity_id, const std::string& name);
};

inline EntitiesReader ReadTx::entities() const { return EntitiesReader(s_); }
inline EntitiesWriter WriteTx::entities() const { return EntitiesWriter(s_); }

}  // namespace cortex
