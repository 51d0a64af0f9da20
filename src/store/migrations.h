// Numbered schema migrations, the same numbers and tables on SQLite and PostgreSQL. Each
// runs once, in order, inside one transaction; the
// highest applied number is recorded in schema_migrations. Never edit a shipped
// migration: add the next number.
#pragma once

#include <string>
#include <vector>

namespace cortex {

struct Migration {
  int number;
  const char* name;
  const char* sql;
};

// The migrations, in SQLite's spelling.
const std::vector<Migration>& Migrations();
// Migration `m` as PostgreSQL runs it.
std::string PostgresMigrationSql(const Migration& m);

}  // namespace cortex
