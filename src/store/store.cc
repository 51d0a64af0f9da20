#include "store/store.h"

namespace cortex {

Status Store::WriteInSteps(const std::string& /*ws_id*/, const Step& step) {
  return Write([&](WriteTx& tx) {
    for (int i = 0;; ++i) {
      auto done = step(tx, i);
      if (!done.ok()) return done.status();
      if (*done) return Status::Ok();
    }
  });
}

bool IsPostgresUrl(const std::string& where) {
  return where.rfind("postgresql://", 0) == 0 || where.rfind("postgres://", 0) == 0;
}

Result<std::unique_ptr<Store>> OpenStore(const std::string& where) {
  return IsPostgresUrl(where) ? OpenPostgresStore(where) : OpenSqliteStore(where);
}

std::string RedactedLocation(const std::string& where) {
  if (!IsPostgresUrl(where)) return where;
  // postgresql://user:password@host/db: hide what lies between the user's ':' and '@'.
  size_t scheme = where.find("://") + 3;
  size_t at = where.find('@', scheme);
  if (at == std::string::npos) return where;
  size_t colon = where.find(':', scheme);
  if (colon == std::string::npos || colon > at) return where;
  return where.substr(0, colon + 1) + "***" + where.substr(at);
}

}  // namespace cortex
