#include "store/sqlite/sqlite_connection.h"

#include <string>
#include <utility>
#include <variant>

#include "keel/error_codes.h"
#include "util/overloaded.h"

namespace keel::sqlite {
namespace {

// Resets a statement when the caller is done with it, so a cached statement never holds a read lock.
struct ResetOnExit {
  sqlite3_stmt* stmt;
  ~ResetOnExit() {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
  }
};

size_t value_size(const SqlValue& value) {
  return std::visit(
      Overloaded{[](const std::string& s) { return s.size(); }, [](const Blob& b) { return b.bytes.size(); },
                 [](const auto&) { return size_t{0}; }},
      value.storage());
}

}  // namespace

Error map_error(int rc, sqlite3* db, std::string_view context) {
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string message = std::string(context) + ": " + detail;
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Error(codes::kStoreBusy, message + " (the database is locked by another connection)", true);
    case SQLITE_FULL:
      return Error(codes::kStoreFull, message + " (the disk or the configured size limit is full)");
    case SQLITE_IOERR:
      return Error(codes::kStoreIo, message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Error(codes::kStoreCorrupt, message + " (the file is damaged or is not a SQLite database)");
    case SQLITE_CONSTRAINT:
      return Error(codes::kStoreConstraint, message);
    case SQLITE_READONLY:
      return Error(codes::kStoreReadOnly, message);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return Error(codes::kStoreOpen, message);
    case SQLITE_TOOBIG:
      return Error(codes::kStorePayloadTooLarge, message);
    default:
      return Error(codes::kStoreSql, message);
  }
}

Result<std::unique_ptr<Connection>> Connection::open(const std::string& path, Access access,
                                                     int busy_timeout_ms, size_t max_value_bytes) {
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  flags |= access == Access::kReadWrite ? (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) : SQLITE_OPEN_READONLY;
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  auto connection = std::make_unique<Connection>(Key{}, raw, max_value_bytes);
  if (rc != SQLITE_OK) return fail(map_error(rc, raw, "opening " + path));
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  sqlite3_extended_result_codes(raw, 1);
  return connection;
}

Connection::~Connection() = default;

Result<void> Connection::exec(std::string_view sql) {
  std::string text(sql);
  int rc = sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return fail(map_error(rc, db_.get(), text));
  return {};
}

Result<void> Connection::control(std::string_view sql) {
  sqlite3_stmt* stmt = KEEL_TRY(prepare(sql));
  ResetOnExit reset{stmt};
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return fail(map_error(rc, db_.get(), sql));
  return {};
}

Result<sqlite3_stmt*> Connection::prepare(std::string_view sql) {
  if (auto it = statements_.find(sql); it != statements_.end()) return it->second.get();
  std::string key(sql);
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v3(db_.get(), key.data(), static_cast<int>(key.size()), SQLITE_PREPARE_PERSISTENT,
                              &raw, nullptr);
  if (rc != SQLITE_OK) return fail(map_error(rc, db_.get(), "preparing SQL"));
  StmtPtr owned(raw);
  return statements_.emplace(std::move(key), std::move(owned)).first->second.get();
}

Result<sqlite3_stmt*> Connection::bind(std::string_view sql, std::span<const SqlValue> params,
                                       bool read_only) {
  sqlite3_stmt* stmt = KEEL_TRY(prepare(sql));
  if (read_only && sqlite3_stmt_readonly(stmt) == 0) {
    return fail(codes::kStoreWriteInReadTransaction, "a read transaction cannot run: " + std::string(sql));
  }
  if (static_cast<int>(params.size()) != sqlite3_bind_parameter_count(stmt)) {
    return fail(codes::kInternal, "SQL expects " + std::to_string(sqlite3_bind_parameter_count(stmt)) +
                                      " parameters, got " + std::to_string(params.size()) + ": " +
                                      std::string(sql));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (value_size(params[i]) > max_value_bytes_) {
      sqlite3_clear_bindings(stmt);
      return fail(codes::kStorePayloadTooLarge, "a value of " + std::to_string(value_size(params[i])) +
                                                    " bytes exceeds the store's limit of " +
                                                    std::to_string(max_value_bytes_) + " bytes");
    }
    int index = static_cast<int>(i) + 1;
    int rc = std::visit(
        Overloaded{[&](std::monostate) { return sqlite3_bind_null(stmt, index); },
                   [&](int64_t v) { return sqlite3_bind_int64(stmt, index, v); },
                   [&](double v) { return sqlite3_bind_double(stmt, index, v); },
                   [&](const std::string& v) {
                     return sqlite3_bind_text64(stmt, index, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8);
                   },
                   [&](const Blob& v) {
                     return sqlite3_bind_blob64(stmt, index, v.bytes.data(), v.bytes.size(), SQLITE_STATIC);
                   }},
        params[i].storage());
    if (rc != SQLITE_OK) {
      sqlite3_clear_bindings(stmt);
      return fail(map_error(rc, db_.get(), "binding parameter " + std::to_string(index)));
    }
  }
  return stmt;
}

Result<int64_t> Connection::execute(std::string_view sql, std::span<const SqlValue> params, bool read_only) {
  sqlite3_stmt* stmt = KEEL_TRY(bind(sql, params, read_only));
  ResetOnExit reset{stmt};
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
  }
  if (rc != SQLITE_DONE) return fail(map_error(rc, db_.get(), std::string(sql)));
  return static_cast<int64_t>(sqlite3_changes64(db_.get()));
}

Result<std::vector<SqlRow>> Connection::query(std::string_view sql, std::span<const SqlValue> params,
                                              bool read_only) {
  sqlite3_stmt* stmt = KEEL_TRY(bind(sql, params, read_only));
  ResetOnExit reset{stmt};
  std::vector<SqlRow> rows;
  const int columns = sqlite3_column_count(stmt);
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    std::vector<SqlValue> values;
    values.reserve(static_cast<size_t>(columns));
    for (int c = 0; c < columns; ++c) {
      switch (sqlite3_column_type(stmt, c)) {
        case SQLITE_INTEGER:
          values.emplace_back(static_cast<int64_t>(sqlite3_column_int64(stmt, c)));
          break;
        case SQLITE_FLOAT:
          values.emplace_back(sqlite3_column_double(stmt, c));
          break;
        case SQLITE_TEXT: {
          const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
          values.emplace_back(std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt, c))));
          break;
        }
        case SQLITE_BLOB: {
          const auto* data = static_cast<const char*>(sqlite3_column_blob(stmt, c));
          size_t size = static_cast<size_t>(sqlite3_column_bytes(stmt, c));
          values.emplace_back(Blob{data == nullptr ? std::string() : std::string(data, size)});
          break;
        }
        default:
          values.emplace_back();
      }
    }
    rows.emplace_back(std::move(values));
  }
  if (rc != SQLITE_DONE) return fail(map_error(rc, db_.get(), std::string(sql)));
  return rows;
}

Result<SqlValue> Connection::scalar(std::string_view sql) {
  auto rows = KEEL_TRY(query(sql, {}, false));
  if (rows.empty() || rows.front().size() == 0) return SqlValue();
  return rows.front()[0];
}

}  // namespace keel::sqlite
