// store/schema.h — keel's versioned schema: the ordered list of migrations every backend applies.
//
// Migration N takes a database at version N-1 to version N. Statements use the SQL subset that SQLite
// and PostgreSQL share (TEXT, BIGINT, INTEGER, BLOB is mapped by the PostgreSQL backend). A backend
// records the version it reached in its own way (SQLite: PRAGMA user_version, with PRAGMA application_id
// marking the file as keel's) inside the same transaction as the migration, so a migration is applied
// wholly or not at all. A database whose version is above current_schema_version() was written by a
// newer keel and is refused (store.schema_too_new); keel never guesses at a newer layout.
//
// docs/store.md describes every table; keep the two in step.
#pragma once

#include <span>
#include <string_view>

namespace keel {

struct Migration {
  int version;
  std::string_view description;
  std::span<const std::string_view> statements;
};

std::span<const Migration> schema_migrations();

}  // namespace keel
