// Numbered schema migrations. Each runs once, in order, inside one transaction; the
// highest applied number is recorded in schema_migrations. Never edit a shipped
// migration: add the next number.
#pragma once

#include <vector>

namespace cortex {

struct Migration {
  int number;
  const char* name;
  const char* sql;
};

const std::vector<Migration>& SqliteMigrations();

}  // namespace cortex
