// store/sqlite/sqlite_connection.h — one SQLite connection with a prepared-statement cache and coded
// errors. Not thread-safe: the SqliteStore hands a connection to one transaction (one thread) at a time.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "keel/error.h"
#include "keel/store.h"

namespace keel::sqlite {

// Maps a SQLite result code to keel's store error codes.
Error map_error(int rc, sqlite3* db, std::string_view context);

class Connection {
 public:
  enum class Access { kReadWrite, kReadOnly };

  // Opens `path` (creating it when kReadWrite). busy_timeout_ms bounds waits for other processes' locks.
  static Result<std::unique_ptr<Connection>> open(const std::string& path, Access access, int busy_timeout_ms,
                                                  size_t max_value_bytes);
  // Use open(). Public only so that make_unique can reach it; only members can make a Key.
  class Key {
    friend class Connection;
    Key() = default;
  };
  Connection(Key, sqlite3* db, size_t max_value_bytes) : db_(db), max_value_bytes_(max_value_bytes) {}
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs SQL text with no parameters and no rows wanted (pragmas, DDL). Not cached: for one-off statements.
  Result<void> exec(std::string_view sql);
  // Runs one statement with no parameters and no rows wanted from the statement cache: transaction control
  // (BEGIN, SAVEPOINT, RELEASE, COMMIT, ROLLBACK), which runs several times per transaction and would
  // otherwise be parsed every time.
  Result<void> control(std::string_view sql);
  // Runs one cached prepared statement. When `read_only` is set, a statement that would write is refused
  // with store.write_in_read_transaction before it runs.
  Result<int64_t> execute(std::string_view sql, std::span<const SqlValue> params, bool read_only);
  Result<std::vector<SqlRow>> query(std::string_view sql, std::span<const SqlValue> params, bool read_only);
  // Runs a single-value query, such as a pragma read.
  Result<SqlValue> scalar(std::string_view sql);

  // True when no transaction is open (SQLite rolled one back on its own after IOERR/FULL/BUSY...).
  bool in_autocommit() const { return sqlite3_get_autocommit(db_.get()) != 0; }
  sqlite3* handle() const { return db_.get(); }

 private:
  struct DbCloser {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  struct StmtFinalizer {
    void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
  };
  using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

  Result<sqlite3_stmt*> prepare(std::string_view sql);
  Result<sqlite3_stmt*> bind(std::string_view sql, std::span<const SqlValue> params, bool read_only);

  std::unique_ptr<sqlite3, DbCloser> db_;
  // Transparent hashing: a lookup by string_view allocates nothing.
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const { return std::hash<std::string_view>{}(sql); }
  };
  std::unordered_map<std::string, StmtPtr, SqlHash, std::equal_to<>>
      statements_;  // declared after db_: finalized before it closes
  size_t max_value_bytes_;
};

}  // namespace keel::sqlite
