// keel/store.h — the durable store: explicit transactions over a relational backend.
//
// A store transaction is keel's unit of truth: an ACK, an event reporting a persisted fact and
// turn.complete are sent only after their transaction committed. Repositories (src/store/) issue portable
// SQL through this interface; backends (SQLite now, PostgreSQL later) implement it. SQL uses `?`
// placeholders and the common subset of SQLite and PostgreSQL (no AUTOINCREMENT, no INSERT OR REPLACE,
// ON CONFLICT ... DO NOTHING is fine); backends translate placeholders as they need.
//
// Guarantees every backend gives:
//   - begin(kWrite) / commit() / rollback(): when commit() returns success the transaction is durable to
//     the configured level (default: survives power loss). Concurrent write transactions are serialized;
//     a backend may group several of them into one sync, but commit() still returns only after *its*
//     transaction is durable.
//   - begin(kRead) sees one consistent committed snapshot and never blocks writers.
//   - Nested use is rejected: a thread holding an open transaction on a store gets
//     store.nested_transaction from begin() (nesting would deadlock or silently read stale data).
//   - A transaction belongs to the thread that began it and must not be held across a coroutine
//     suspension. Destroying an open transaction rolls it back.
//   - After a failed commit or sync, the store is poisoned: it refuses every later write transaction with
//     store.poisoned until it is reopened (durability of later writes could not be promised).
//   - Errors are coded (keel/error_codes.h): store.busy (retryable), store.disk_full, store.io_error,
//     store.corrupt, store.constraint, store.sql_error, store.poisoned, failpoint.triggered, ...
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "keel/error.h"

namespace keel {

// Raw bytes, stored as a BLOB (SQLite) / BYTEA (PostgreSQL).
struct Blob {
  std::string bytes;
  friend bool operator==(const Blob&, const Blob&) = default;
};

// One SQL parameter or column value.
class SqlValue {
 public:
  using Storage = std::variant<std::monostate, int64_t, double, std::string, Blob>;

  SqlValue() = default;  // NULL
  SqlValue(std::nullopt_t) {}
  SqlValue(int v) : v_(int64_t{v}) {}
  SqlValue(int64_t v) : v_(v) {}
  SqlValue(uint64_t v) : v_(static_cast<int64_t>(v)) {}
  SqlValue(bool v) : v_(int64_t{v ? 1 : 0}) {}
  SqlValue(double v) : v_(v) {}
  SqlValue(std::string v) : v_(std::move(v)) {}
  SqlValue(std::string_view v) : v_(std::string(v)) {}
  SqlValue(const char* v) : v_(std::string(v)) {}
  SqlValue(Blob v) : v_(std::move(v)) {}
  template <typename T>
  SqlValue(const std::optional<T>& v) {
    if (v) *this = SqlValue(*v);
  }

  bool is_null() const { return std::holds_alternative<std::monostate>(v_); }
  const Storage& storage() const { return v_; }

  // Conversions follow SQLite's: NULL -> 0 / "", text -> integer by leading digits, etc.
  int64_t as_int() const;
  double as_double() const;
  std::string as_text() const;
  std::optional<std::string> as_optional_text() const;
  std::optional<int64_t> as_optional_int() const;

  friend bool operator==(const SqlValue&, const SqlValue&) = default;

 private:
  Storage v_;
};

// One result row: column values in SELECT order.
class SqlRow {
 public:
  explicit SqlRow(std::vector<SqlValue> values) : values_(std::move(values)) {}
  size_t size() const { return values_.size(); }
  // Precondition: i < size() (the caller wrote the SELECT; a wrong index is a bug).
  const SqlValue& operator[](size_t i) const { return values_.at(i); }
  int64_t integer(size_t i) const { return values_.at(i).as_int(); }
  std::string text(size_t i) const { return values_.at(i).as_text(); }
  std::optional<std::string> optional_text(size_t i) const { return values_.at(i).as_optional_text(); }
  std::optional<int64_t> optional_integer(size_t i) const { return values_.at(i).as_optional_int(); }
  bool is_null(size_t i) const { return values_.at(i).is_null(); }

 private:
  std::vector<SqlValue> values_;
};

enum class TxMode { kRead, kWrite };

class Transaction {
 public:
  virtual ~Transaction() = default;

  virtual TxMode mode() const = 0;

  // Runs one statement that returns no rows; returns the number of rows it changed.
  // In a read transaction, a statement that writes fails with store.write_in_read_transaction.
  virtual Result<int64_t> execute(std::string_view sql, std::span<const SqlValue> params) = 0;
  // Runs one statement and returns all of its rows.
  virtual Result<std::vector<SqlRow>> query(std::string_view sql, std::span<const SqlValue> params) = 0;

  // Makes the transaction's effects durable (write) or ends the snapshot (read). After commit() —
  // successful or not — the transaction is closed; further calls fail with store.transaction_closed.
  [[nodiscard]] virtual Result<void> commit() = 0;
  // Discards the transaction's effects. Idempotent; a no-op on a closed transaction.
  virtual void rollback() = 0;

  // Hits the fail point `name` of the store's FailPoints (success when none are configured). Lets
  // repositories put named boundaries inside a transaction ("receipts.insert").
  virtual Result<void> fail_point(std::string_view name) = 0;

  // Convenience overloads taking a braced list of parameters.
  Result<int64_t> execute(std::string_view sql, std::initializer_list<SqlValue> params = {}) {
    return execute(sql, std::span<const SqlValue>(params.begin(), params.size()));
  }
  Result<std::vector<SqlRow>> query(std::string_view sql, std::initializer_list<SqlValue> params = {}) {
    return query(sql, std::span<const SqlValue>(params.begin(), params.size()));
  }
  // The first row, or nullopt when there is none.
  Result<std::optional<SqlRow>> query_one(std::string_view sql, std::initializer_list<SqlValue> params = {});
};

struct StoreStats {
  uint64_t commits = 0;      // write transactions committed durably
  uint64_t syncs = 0;        // backend syncs (group commits) that made them durable
  uint64_t rollbacks = 0;    // write transactions rolled back
  uint64_t sync_micros = 0;  // time spent in those syncs (the backend's COMMIT), in µs
  // How long syncs took: sync_histogram[i] counts syncs of [i, i+1) * kSyncBucketMicros µs; the last
  // bucket also holds every longer one. Lets a benchmark compare latencies with syncs under its own load.
  static constexpr uint64_t kSyncBucketMicros = 25;
  static constexpr size_t kSyncBuckets = 400;  // up to 10 ms
  std::vector<uint64_t> sync_histogram = std::vector<uint64_t>(kSyncBuckets, 0);
};

// The duration below which a `fraction` (0..1) of the syncs counted in `histogram` fell, in µs (the upper
// edge of the bucket that reaches it); 0 when it counts none.
double sync_percentile(const std::vector<uint64_t>& histogram, double fraction);

class Store {
 public:
  virtual ~Store() = default;

  // Opens a transaction. Errors: store.nested_transaction, store.poisoned (write), store.busy, ...
  virtual Result<std::unique_ptr<Transaction>> begin(TxMode mode) = 0;

  virtual StoreStats stats() const = 0;
  // The schema version of the open database (see docs/store.md).
  virtual int schema_version() const = 0;
  // "sqlite" or "postgres".
  virtual std::string_view backend() const = 0;
  // True once a failed commit/sync made the store refuse writes.
  virtual bool poisoned() const = 0;
};

// The schema version this build of keel writes.
int current_schema_version();

}  // namespace keel
