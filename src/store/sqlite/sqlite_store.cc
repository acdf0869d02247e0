// The SQLite backend of Store: WAL mode, one writer connection with group commit, a pool of reader
// connections that never block it.
//
// Group commit. Write transactions run one at a time on the writer connection (a FIFO lock), each inside a
// SAVEPOINT of a shared outer transaction. commit() releases the savepoint — the transaction's effects
// join the current *epoch* — and then waits until that epoch is durable. The first waiter to find no sync
// in progress becomes the leader: it queues for the writer behind everyone already waiting (so their
// transactions join the epoch too), runs one COMMIT (one fsync under synchronous=FULL) for all of them,
// and wakes the others. commit() therefore returns only after its own transaction is durable, and one sync
// serves every transaction of the epoch. Transactions of one epoch can see each other's released effects
// before the sync; that is safe because they become durable together, or — if the sync fails — every one
// of them fails and the store is poisoned, so nothing reports success for data that was lost.
//
// Poisoning. A failed COMMIT, a failed savepoint rollback, or SQLite rolling the outer transaction back on
// its own (IOERR, FULL during commit) leaves durability unknown; from then on every write fails with
// store.poisoned until the store is reopened, which recovers from the WAL.
#include "keel/sqlite_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "keel/clock.h"
#include "keel/error_codes.h"
#include "keel/store.h"
#include "store/schema.h"
#include "store/sqlite/checkpointer.h"
#include "store/sqlite/fifo_mutex.h"
#include "store/sqlite/sqlite_connection.h"
#include "util/fail_points.h"
#include "util/thread_annotations.h"

namespace keel {
namespace {

using sqlite::Connection;

// "keel" in ASCII; PRAGMA application_id marks a SQLite file as keel's.
constexpr int64_t kKeelApplicationId = 0x6B65656C;

const char* synchronous_pragma(Synchronous mode) {
  switch (mode) {
    case Synchronous::kOff:
      return "PRAGMA synchronous=OFF";
    case Synchronous::kNormal:
      return "PRAGMA synchronous=NORMAL";
    case Synchronous::kFull:
      break;
  }
  return "PRAGMA synchronous=FULL";
}

class SqliteStore;

// A migration's program runs its statements on the writer connection, inside the migration's transaction.
class ConnectionSql final : public MigrationSql {
 public:
  explicit ConnectionSql(Connection& connection) : connection_(connection) {}
  Result<std::vector<SqlRow>> query(std::string_view sql, std::span<const SqlValue> params) override {
    return connection_.query(sql, params, false);
  }
  Result<int64_t> execute(std::string_view sql, std::span<const SqlValue> params) override {
    return connection_.execute(sql, params, false);
  }

 private:
  Connection& connection_;
};

class WriteTx final : public Transaction {
 public:
  explicit WriteTx(SqliteStore& store) : store_(store) {}
  ~WriteTx() override { rollback(); }
  TxMode mode() const override { return TxMode::kWrite; }
  Result<int64_t> execute(std::string_view sql, std::span<const SqlValue> params) override;
  Result<std::vector<SqlRow>> query(std::string_view sql, std::span<const SqlValue> params) override;
  Result<void> commit() override;
  void rollback() override;
  Result<void> fail_point(std::string_view name) override;
  using Transaction::execute;
  using Transaction::query;

 private:
  template <typename T>
  Result<T> checked(Result<T> result);
  Error rolled_back_error() const;
  SqliteStore& store_;
  bool open_ = true;
  // The error after which SQLite rolled the whole (outer) transaction back on its own, if one did.
  std::optional<Error> aborted_;
};

class ReadTx final : public Transaction {
 public:
  ReadTx(SqliteStore& store, std::unique_ptr<Connection> connection)
      : store_(store), connection_(std::move(connection)) {}
  ~ReadTx() override { rollback(); }
  TxMode mode() const override { return TxMode::kRead; }
  Result<int64_t> execute(std::string_view sql, std::span<const SqlValue> params) override;
  Result<std::vector<SqlRow>> query(std::string_view sql, std::span<const SqlValue> params) override;
  Result<void> commit() override;
  void rollback() override;
  Result<void> fail_point(std::string_view name) override;
  using Transaction::execute;
  using Transaction::query;

 private:
  void close(bool commit);
  SqliteStore& store_;
  std::unique_ptr<Connection> connection_;
};

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(SqliteStoreOptions options) : options_(std::move(options)) {}
  ~SqliteStore() override {
    checkpointer_.reset();
    // Nobody is left to tell of a failure; closing the connection discards the transaction anyway.
    if (writer_ != nullptr && outer_open_) (void)writer_->exec("ROLLBACK");
  }

  Result<void> open() {
    writer_ = KEEL_TRY(Connection::open(options_.path, Connection::Access::kReadWrite,
                                        options_.busy_timeout_ms, options_.max_value_bytes));
    // Touches the file header: a damaged or foreign non-SQLite file fails here with store.corrupt. One
    // statement, so the three values come from one snapshot even while another process migrates the file
    // (separate reads could see its application_id before and its user_version after, and call a keel
    // store foreign).
    auto header =
        KEEL_TRY(writer_->query("SELECT (SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'), "
                                "(SELECT application_id FROM pragma_application_id()), (SELECT user_version "
                                "FROM pragma_user_version())",
                                {}, false));
    if (header.size() != 1 || header.front().size() != 3) {
      return fail(codes::kInternal, "reading the header of " + options_.path + " returned no row");
    }
    const int64_t objects = header.front().integer(0);
    const int64_t application_id = header.front().integer(1);
    const int64_t version = header.front().integer(2);
    const bool fresh = objects == 0 && application_id == 0 && version == 0;
    if (!fresh && application_id != kKeelApplicationId) {
      return fail(codes::kStoreForeign, options_.path +
                                            " is a SQLite database but not a keel store (application_id " +
                                            std::to_string(application_id) + "); refusing to touch it");
    }
    if (version > current_schema_version()) {
      return fail(codes::kStoreSchemaTooNew,
                  options_.path + " has schema version " + std::to_string(version) +
                      ", written by a newer keel; this build understands versions up to " +
                      std::to_string(current_schema_version()) + ". Upgrade keel to open it.");
    }
    if (!fresh) KEEL_TRY(quick_check());
    auto mode = KEEL_TRY(switch_to_wal()).as_text();
    if (mode != "wal") return fail(codes::kStoreOpen, "could not switch " + options_.path + " to WAL mode");
    KEEL_TRY(writer_->exec(synchronous_pragma(options_.synchronous)));
    if (options_.max_page_count > 0) {
      KEEL_TRY(writer_->exec("PRAGMA max_page_count=" + std::to_string(options_.max_page_count)));
    }
    KEEL_TRY(migrate(version));
    schema_version_ = current_schema_version();
    // Checkpoints run on their own thread and connection (checkpointer.h), never inside a writer's COMMIT.
    // The pragma clears SQLite's own WAL hook, so ours is installed after it.
    KEEL_TRY(writer_->exec("PRAGMA wal_autocheckpoint=0"));
    checkpointer_ = std::make_unique<sqlite::Checkpointer>(KEEL_TRY(Connection::open(
        options_.path, Connection::Access::kReadWrite, options_.busy_timeout_ms, options_.max_value_bytes)));
    sqlite3_wal_hook(writer_->handle(), &SqliteStore::after_wal_commit, this);
    return {};
  }

  Result<std::unique_ptr<Transaction>> begin(TxMode mode) override {
    KEEL_TRY(enter_thread());
    auto tx = mode == TxMode::kWrite ? begin_write() : begin_read();
    if (!tx) leave_thread();
    return tx;
  }

  StoreStats stats() const override {
    StoreStats stats{commits_.load(), syncs_.load(), rollbacks_.load(), sync_micros_.load()};
    for (size_t i = 0; i < StoreStats::kSyncBuckets; ++i) stats.sync_histogram[i] = sync_histogram_[i].load();
    return stats;
  }
  int schema_version() const override { return schema_version_; }
  std::string_view backend() const override { return "sqlite"; }
  bool poisoned() const override { return poisoned_.load(); }

 private:
  friend class WriteTx;
  friend class ReadTx;

  // Switching the journal mode needs an exclusive lock, and SQLite answers SQLITE_BUSY at once, without its
  // busy handler, while another connection holds or is taking that lock (two processes opening a new file
  // together). Retry here for as long as the busy timeout allows.
  Result<SqlValue> switch_to_wal() {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(options_.busy_timeout_ms, 0));
    for (auto pause = std::chrono::microseconds(200);;
         pause = std::min(pause * 2, std::chrono::microseconds(20'000))) {
      auto mode = writer_->scalar("PRAGMA journal_mode=WAL");
      if (mode || mode.error().code() != codes::kStoreBusy || std::chrono::steady_clock::now() >= deadline) {
        return mode;
      }
      std::this_thread::sleep_for(pause);
    }
  }

  // PRAGMA quick_check: every page, b-tree and record format, without cross-checking indexes against
  // tables (integrity_check's costly part). Bounded by options_.quick_check_ms through SQLite's progress
  // handler; a check that runs out of time is abandoned, and the node digests remain the guard.
  Result<void> quick_check() {
    if (options_.quick_check_ms <= 0) return {};
    const SystemClock system_clock;
    const Clock& clock = options_.clock != nullptr ? *options_.clock : system_clock;
    struct Budget {
      const Clock* clock;
      std::chrono::steady_clock::time_point deadline;
      bool expired = false;
    } budget{&clock, clock.steady_now() + std::chrono::milliseconds(options_.quick_check_ms)};
    sqlite3_progress_handler(
        writer_->handle(), 100,
        [](void* context) -> int {
          auto* b = static_cast<Budget*>(context);
          b->expired = b->expired || b->clock->steady_now() >= b->deadline;
          return b->expired ? 1 : 0;
        },
        &budget);
    // At most 20 findings: enough to say what is wrong, bounded however damaged the file is.
    auto rows = writer_->query("PRAGMA quick_check(20)", {}, false);
    sqlite3_progress_handler(writer_->handle(), 0, nullptr, nullptr);
    if (budget.expired) return {};
    const std::string recovery =
        ". keel changed nothing in it. Stop keel, keep a copy of the file (with its -wal and -shm files), "
        "then "
        "restore a backup, or salvage what is intact with `sqlite3 " +
        options_.path +
        " .recover | sqlite3 recovered.db` and point store.path at the result (docs/store.md, \"Damage\"); "
        "store.quick_check_ms = 0 skips this check";
    if (!rows) {
      return fail(codes::kStoreCorrupt, options_.path + " failed its integrity check (PRAGMA quick_check): " +
                                            rows.error().message() + recovery);
    }
    if (rows->size() == 1 && rows->front().size() == 1 && rows->front().text(0) == "ok") return {};
    std::string findings;
    for (const SqlRow& row : *rows) {
      if (row.size() == 0) continue;
      if (!findings.empty()) findings += "; ";
      findings += row.text(0);
    }
    return fail(codes::kStoreCorrupt,
                options_.path + " is damaged (PRAGMA quick_check: " + findings + ")" + recovery);
  }

  Result<void> migrate(int64_t from_version) {
    for (const Migration& migration : schema_migrations()) {
      if (migration.version <= from_version) continue;
      auto applied = [&]() -> Result<void> {
        KEEL_TRY(writer_->exec("BEGIN IMMEDIATE"));
        // Re-read under the write lock: another process opening the same file may have applied this
        // migration since open() read the version; applying it twice would fail ("table already exists").
        const int64_t now = KEEL_TRY(writer_->scalar("PRAGMA user_version")).as_int();
        if (now >= migration.version) return writer_->exec("ROLLBACK");
        for (std::string_view statement : migration.statements) KEEL_TRY(writer_->exec(statement));
        if (migration.program != nullptr) {
          ConnectionSql sql(*writer_);
          KEEL_TRY(migration.program(sql));
        }
        KEEL_TRY(writer_->exec("PRAGMA application_id=" + std::to_string(kKeelApplicationId)));
        KEEL_TRY(writer_->exec("PRAGMA user_version=" + std::to_string(migration.version)));
        return writer_->exec("COMMIT");
      }();
      if (!applied) {
        // The migration's error is the one reported; the store is not opened either way.
        if (!writer_->in_autocommit()) (void)writer_->exec("ROLLBACK");
        if (applied.error().code() == codes::kStoreBusy) return fail(applied.error());
        return fail(codes::kStoreMigration, "migrating " + options_.path + " to schema version " +
                                                std::to_string(migration.version) +
                                                " failed: " + applied.error().to_string());
      }
    }
    return {};
  }

  Result<void> enter_thread() {
    MutexLock guard(threads_mu_);
    if (!threads_with_tx_.insert(std::this_thread::get_id()).second) {
      return fail(codes::kStoreNestedTransaction,
                  "this thread already holds an open transaction on this store; nested transactions are not "
                  "supported");
    }
    return {};
  }
  void leave_thread() {
    MutexLock guard(threads_mu_);
    threads_with_tx_.erase(std::this_thread::get_id());
  }

  Result<void> hit(std::string_view name) {
    if (options_.fail_points == nullptr) return {};
    return options_.fail_points->hit(name);
  }

  Error poisoned_error() EXCLUDES(state_mu_) {
    MutexLock guard(state_mu_);
    std::string cause = poison_ ? poison_->to_string() : "unknown";
    return Error(codes::kStorePoisoned,
                 "the store refuses writes after a failed commit (" + cause + "); reopen it to recover");
  }

  void poison(const Error& cause) EXCLUDES(state_mu_) {
    MutexLock guard(state_mu_);
    if (!poison_) poison_ = cause;
    poisoned_ = true;
    state_cv_.notify_all();
  }

  Result<std::unique_ptr<Transaction>> begin_write() {
    if (poisoned_) return fail(poisoned_error());
    KEEL_TRY(hit("store.begin"));
    writer_mu_.lock();
    auto opened = [&]() -> Result<void> {
      if (poisoned_) return fail(poisoned_error());
      if (!outer_open_) {
        KEEL_TRY(writer_->control("BEGIN IMMEDIATE"));
        outer_open_ = true;
      }
      return writer_->control("SAVEPOINT keel_tx");
    }();
    if (!opened) {
      close_outer_if_empty();
      writer_mu_.unlock();
      return fail(opened.error());
    }
    return std::unique_ptr<Transaction>(std::make_unique<WriteTx>(*this));
  }

  Result<std::unique_ptr<Transaction>> begin_read() {
    std::unique_ptr<Connection> connection;
    {
      MutexLock guard(readers_mu_);
      if (!idle_readers_.empty()) {
        connection = std::move(idle_readers_.back());
        idle_readers_.pop_back();
      }
    }
    if (connection == nullptr) {
      connection = KEEL_TRY(Connection::open(options_.path, Connection::Access::kReadOnly,
                                             options_.busy_timeout_ms, options_.max_value_bytes));
    }
    KEEL_TRY(connection->control("BEGIN"));
    // BEGIN is deferred: SQLite would take the snapshot at the first read, so a commit between begin() and
    // the first query would be visible. Read now, so the snapshot is the one current at begin().
    KEEL_TRY(connection->scalar("PRAGMA schema_version"));
    return std::unique_ptr<Transaction>(std::make_unique<ReadTx>(*this, std::move(connection)));
  }

  void return_reader(std::unique_ptr<Connection> connection) {
    MutexLock guard(readers_mu_);
    idle_readers_.push_back(std::move(connection));
  }

  // Requires writer_mu_. Ends an outer transaction that no released savepoint depends on, so the file's
  // write lock is not held while nothing waits to be synced.
  void close_outer_if_empty() {
    if (outer_open_ && released_in_epoch_ == 0) {
      // Nothing was released into it, so nothing is lost; a connection that cannot even roll back fails
      // the next BEGIN, which reports it.
      if (!writer_->in_autocommit()) (void)writer_->control("ROLLBACK");
      outer_open_ = false;
    }
  }

  // Requires writer_mu_. Called after a statement failed: if SQLite rolled the outer transaction back on
  // its own, transactions released into this epoch are lost, so the store must not report them durable.
  void check_outer_alive() {
    if (outer_open_ && writer_->in_autocommit()) {
      outer_open_ = false;
      if (released_in_epoch_ > 0) {
        poison(Error(codes::kStoreIo, "SQLite rolled back the open group commit after an error"));
      }
      released_in_epoch_ = 0;
    }
  }

  // Blocks until `epoch` is durable (leading the sync if nobody else is), or fails if it never will be.
  Result<void> wait_durable(uint64_t epoch) EXCLUDES(state_mu_) {
    MutexLock state(state_mu_);
    while (true) {
      if (durable_epoch_ >= epoch) return {};
      // A sync in progress may be the one that makes `epoch` durable: wait for its outcome before giving up
      // on a poisoned store. (The store can be poisoned by another transaction after the leader's COMMIT
      // succeeded but before it published durable_epoch_; failing then would report a durable commit as
      // lost.)
      if (sync_in_progress_) {
        state.wait(state_cv_);
        continue;
      }
      if (poison_) {
        return fail(Error(poison_->code(), "the commit was not made durable: " + poison_->message(),
                          poison_->retryable()));
      }
      sync_in_progress_ = true;
      state.unlock();
      Result<uint64_t> synced = sync_open_epoch();
      state.lock();
      sync_in_progress_ = false;
      if (synced) {
        durable_epoch_ = std::max(durable_epoch_, *synced);
      } else if (!poison_) {
        poison_ = synced.error();
        poisoned_ = true;
      }
      state_cv_.notify_all();
    }
  }

  // Commits the outer transaction: one sync for every savepoint released into it. Returns the epoch made
  // durable.
  Result<uint64_t> sync_open_epoch() EXCLUDES(state_mu_) {
    std::lock_guard<sqlite::FifoMutex> writer(writer_mu_);
    if (!outer_open_) return open_epoch_ - 1;
    const auto started = std::chrono::steady_clock::now();
    auto committed = [&]() -> Result<void> {
      KEEL_TRY(hit("store.sync.before"));
      return writer_->control("COMMIT");
    }();
    const auto micros = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started)
            .count());
    sync_micros_.fetch_add(micros);
    sync_histogram_[std::min<uint64_t>(micros / StoreStats::kSyncBucketMicros, StoreStats::kSyncBuckets - 1)]
        .fetch_add(1);
    if (!committed) {
      // The failed COMMIT is what the callers are told; the ROLLBACK only gives up the file's write lock.
      if (!writer_->in_autocommit()) (void)writer_->control("ROLLBACK");
      outer_open_ = false;
      released_in_epoch_ = 0;
      return fail(committed.error());
    }
    const uint64_t epoch = open_epoch_++;
    outer_open_ = false;
    released_in_epoch_ = 0;
    syncs_.fetch_add(1);
    KEEL_TRY(hit("store.sync.after"));
    return epoch;
  }

  SqliteStoreOptions options_;
  int schema_version_ = 0;

  // The writer. Everything in this group is guarded by writer_mu_, and not annotated: begin_write() takes it
  // and the WriteTx it returns releases it, so it is held across a transaction's life, not a scope, which
  // the analysis cannot follow.
  // SQLite's WAL hook on the writer (so under writer_mu_): runs after each commit with the WAL's frame
  // count, which falls back when SQLite restarts the WAL after a complete checkpoint. A checkpoint is
  // requested each time the WAL has grown by the threshold since the last request, not after every commit
  // of a long WAL.
  static int after_wal_commit(void* self, sqlite3*, const char*, int frames) {
    auto* store = static_cast<SqliteStore*>(self);
    if (frames < store->wal_frames_at_request_) store->wal_frames_at_request_ = 0;
    if (frames - store->wal_frames_at_request_ >= sqlite::Checkpointer::kFramesBeforeCheckpoint &&
        store->checkpointer_) {
      store->wal_frames_at_request_ = frames;
      store->checkpointer_->request();
    }
    return SQLITE_OK;
  }

  sqlite::FifoMutex writer_mu_;
  std::unique_ptr<Connection> writer_;
  std::unique_ptr<sqlite::Checkpointer> checkpointer_;  // after writer_: destroyed before it closes
  int wal_frames_at_request_ = 0;                       // guarded by writer_mu_ (see after_wal_commit)
  bool outer_open_ = false;
  uint64_t open_epoch_ = 1;
  uint64_t released_in_epoch_ = 0;

  // Group-commit state.
  Mutex state_mu_;
  std::condition_variable state_cv_;
  uint64_t durable_epoch_ GUARDED_BY(state_mu_) = 0;
  bool sync_in_progress_ GUARDED_BY(state_mu_) = false;
  std::optional<Error> poison_ GUARDED_BY(state_mu_);
  std::atomic<bool> poisoned_{false};

  Mutex readers_mu_;
  std::vector<std::unique_ptr<Connection>> idle_readers_ GUARDED_BY(readers_mu_);

  Mutex threads_mu_;
  std::unordered_set<std::thread::id> threads_with_tx_ GUARDED_BY(threads_mu_);

  std::atomic<uint64_t> commits_{0};
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> sync_micros_{0};
  std::array<std::atomic<uint64_t>, StoreStats::kSyncBuckets> sync_histogram_{};
  std::atomic<uint64_t> rollbacks_{0};
};

Error closed_error() {
  return Error(codes::kStoreTransactionClosed, "the transaction was already committed or rolled back");
}

template <typename T>
Result<T> WriteTx::checked(Result<T> result) {
  if (!result) {
    const bool was_open = store_.outer_open_;
    store_.check_outer_alive();
    if (was_open && !store_.outer_open_ && !aborted_) aborted_ = result.error();
  }
  return result;
}

Error WriteTx::rolled_back_error() const {
  if (aborted_) {
    return Error(aborted_->code(),
                 "SQLite rolled this transaction back after an earlier error (" + aborted_->message() +
                     "); roll it back and start a new one",
                 aborted_->retryable());
  }
  return Error(codes::kStoreIo, "the group commit was rolled back under this transaction");
}

// Once SQLite has rolled the outer transaction back on its own (IOERR, FULL, ...), the writer connection
// is in autocommit mode: a further statement would commit by itself, outside this transaction and beyond
// the reach of its rollback. Refuse it.
Result<int64_t> WriteTx::execute(std::string_view sql, std::span<const SqlValue> params) {
  if (!open_) return fail(closed_error());
  if (!store_.outer_open_) return fail(rolled_back_error());
  return checked(store_.writer_->execute(sql, params, false));
}

Result<std::vector<SqlRow>> WriteTx::query(std::string_view sql, std::span<const SqlValue> params) {
  if (!open_) return fail(closed_error());
  if (!store_.outer_open_) return fail(rolled_back_error());
  return checked(store_.writer_->query(sql, params, false));
}

Result<void> WriteTx::fail_point(std::string_view name) {
  if (!open_) return fail(closed_error());
  return store_.hit(name);
}

Result<void> WriteTx::commit() {
  if (!open_) return fail(closed_error());
  auto released = [&]() -> Result<void> {
    KEEL_TRY(store_.hit("store.commit"));
    if (!store_.outer_open_) return fail(rolled_back_error());
    return checked(store_.writer_->control("RELEASE keel_tx"));
  }();
  if (!released) {
    rollback();
    return fail(released.error());
  }
  ++store_.released_in_epoch_;
  const uint64_t epoch = store_.open_epoch_;
  open_ = false;
  store_.writer_mu_.unlock();
  store_.leave_thread();
  KEEL_TRY(store_.wait_durable(epoch));
  store_.commits_.fetch_add(1);
  return {};
}

void WriteTx::rollback() {
  if (!open_) return;
  open_ = false;
  if (store_.outer_open_ && !store_.writer_->in_autocommit()) {
    auto undone = store_.writer_->control("ROLLBACK TO keel_tx");
    if (undone) undone = store_.writer_->control("RELEASE keel_tx");
    if (!undone) store_.poison(undone.error());
  }
  store_.check_outer_alive();
  store_.close_outer_if_empty();
  store_.rollbacks_.fetch_add(1);
  store_.writer_mu_.unlock();
  store_.leave_thread();
}

Result<int64_t> ReadTx::execute(std::string_view sql, std::span<const SqlValue> params) {
  if (connection_ == nullptr) return fail(closed_error());
  return connection_->execute(sql, params, true);
}

Result<std::vector<SqlRow>> ReadTx::query(std::string_view sql, std::span<const SqlValue> params) {
  if (connection_ == nullptr) return fail(closed_error());
  return connection_->query(sql, params, true);
}

Result<void> ReadTx::fail_point(std::string_view name) {
  if (connection_ == nullptr) return fail(closed_error());
  return store_.hit(name);
}

Result<void> ReadTx::commit() {
  if (connection_ == nullptr) return fail(closed_error());
  close(true);
  return {};
}

void ReadTx::rollback() {
  if (connection_ != nullptr) close(false);
}

void ReadTx::close(bool commit) {
  // Ending a read transaction only releases its snapshot; a failure leaves a connection we cannot trust.
  auto ended = connection_->control(commit ? "COMMIT" : "ROLLBACK");
  if (ended || connection_->in_autocommit()) store_.return_reader(std::move(connection_));
  connection_.reset();
  store_.leave_thread();
}

}  // namespace

Result<std::unique_ptr<Store>> open_sqlite_store(const SqliteStoreOptions& options) {
  if (options.path.empty()) return fail(codes::kInvalidArgument, "the store path is empty");
  auto store = std::make_unique<SqliteStore>(options);
  if (auto opened = store->open(); !opened) return fail(opened.error());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace keel
