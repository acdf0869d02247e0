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
#include <vector>

#include "keel/error.h"
#include "keel/store.h"

namespace keel {

// What a migration's program may run, inside the migration's transaction.
class MigrationSql {
 public:
  virtual ~MigrationSql() = default;
  virtual Result<std::vector<SqlRow>> query(std::string_view sql, std::span<const SqlValue> params) = 0;
  virtual Result<int64_t> execute(std::string_view sql, std::span<const SqlValue> params) = 0;
};

struct Migration {
  int version;
  std::string_view description;
  std::span<const std::string_view> statements;
  // Runs after the statements, in the same transaction, for what SQL alone cannot do (a digest computed
  // in C++ for every existing row). Null for most migrations.
  Result<void> (*program)(MigrationSql& sql);
};

std::span<const Migration> schema_migrations();

}  // namespace keel
