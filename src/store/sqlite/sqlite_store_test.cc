// Tests of the SQLite Store backend: transactions, snapshots, group commit, poisoning, migrations.
// Bad input lives in sqlite_bad_input_test.cc, process crashes in sqlite_crash_test.cc.
#include "keel/sqlite_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "keel/error_codes.h"
#include "keel/store.h"
#include "testing/settings_rows.h"
#include "testing/temp_dir.h"
#include "util/fail_points.h"

namespace keel {
namespace {

constexpr const char* kInsert = testing::kInsertSetting;
using testing::get;
using testing::put;

std::unique_ptr<Store> open_or_die(const SqliteStoreOptions& options) {
  auto store = open_sqlite_store(options);
  EXPECT_TRUE(store) << store.error().to_string();
  if (!store) return nullptr;
  return std::move(*store);
}

std::unique_ptr<Transaction> begin_or_die(Store& store, TxMode mode) {
  auto tx = store.begin(mode);
  EXPECT_TRUE(tx) << tx.error().to_string();
  if (!tx) return nullptr;
  return std::move(*tx);
}

int64_t count_settings(Transaction& tx) {
  auto row = tx.query_one("SELECT count(*) FROM settings");
  EXPECT_TRUE(row && *row);
  return row && *row ? (*row)->integer(0) : -1;
}

int64_t count_settings(Store& store) {
  auto tx = store.begin(TxMode::kRead);
  EXPECT_TRUE(tx) << tx.error().to_string();
  return tx ? count_settings(**tx) : -1;
}

// Reads an integer pragma with a raw sqlite3 connection (bypassing keel).
int64_t raw_pragma(const std::string& path, const std::string& pragma) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  int64_t value = -1;
  std::string sql = "PRAGMA " + pragma;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    value = sqlite3_column_int64(stmt, 0);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

class SqliteStoreTest : public ::testing::Test {
 protected:
  SqliteStoreOptions options() const { return SqliteStoreOptions{.path = dir_.file("keel.db")}; }
  testing::TempDir dir_;
};

// ---------------------------------------------------------------------------------------------------
// Transactions

TEST(SqliteStoreBasicsTest, CommittedWriteIsVisibleAfterReopen) {
  testing::TempDir dir;
  SqliteStoreOptions options{.path = dir.file("keel.db")};
  {
    auto store = open_sqlite_store(options);
    ASSERT_TRUE(store) << store.error().to_string();
    auto tx = (*store)->begin(TxMode::kWrite);
    ASSERT_TRUE(tx) << tx.error().to_string();
    ASSERT_TRUE(
        (*tx)->execute("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)", {"a", "1", 5}));
    ASSERT_TRUE((*tx)->commit());
  }
  auto store = open_sqlite_store(options);
  ASSERT_TRUE(store) << store.error().to_string();
  auto tx = (*store)->begin(TxMode::kRead);
  ASSERT_TRUE(tx);
  auto row = (*tx)->query_one("SELECT value FROM settings WHERE key = ?", {"a"});
  ASSERT_TRUE(row && *row);
  EXPECT_EQ((*row)->text(0), "1");
}

TEST_F(SqliteStoreTest, CommitIsVisibleToLaterReadsAndAfterReopen) {
  {
    auto store = open_or_die(options());
    ASSERT_TRUE(store);
    ASSERT_TRUE(put(*store, "k", "v1"));
    EXPECT_EQ(get(*store, "k"), "v1");
    // A later write transaction sees it too.
    auto tx = begin_or_die(*store, TxMode::kWrite);
    ASSERT_TRUE(tx);
    auto changed = tx->execute("UPDATE settings SET value = ? WHERE key = ?", {"v2", "k"});
    ASSERT_TRUE(changed) << changed.error().to_string();
    EXPECT_EQ(*changed, 1);
    ASSERT_TRUE(tx->commit());
    EXPECT_EQ(get(*store, "k"), "v2");
    EXPECT_EQ(store->stats().commits, 2u);
  }
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  EXPECT_EQ(get(*store, "k"), "v2");
}

TEST_F(SqliteStoreTest, WriteTransactionSeesItsOwnUncommittedWrites) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  auto tx = begin_or_die(*store, TxMode::kWrite);
  ASSERT_TRUE(tx);
  ASSERT_TRUE(tx->execute(kInsert, {"k", "v", 1}));
  auto row = tx->query_one("SELECT value FROM settings WHERE key = ?", {"k"});
  ASSERT_TRUE(row && *row);
  EXPECT_EQ((*row)->text(0), "v");
  EXPECT_EQ(tx->mode(), TxMode::kWrite);
  ASSERT_TRUE(tx->commit());
}

TEST_F(SqliteStoreTest, RollbackDiscardsWrites) {
  {
    auto store = open_or_die(options());
    ASSERT_TRUE(store);
    ASSERT_TRUE(put(*store, "kept", "1"));
    auto tx = begin_or_die(*store, TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(tx->execute(kInsert, {"discarded", "2", 1}));
    ASSERT_TRUE(tx->execute("UPDATE settings SET value = ? WHERE key = ?", {"changed", "kept"}));
    tx->rollback();
    tx->rollback();  // idempotent
    EXPECT_EQ(get(*store, "discarded"), std::nullopt);
    EXPECT_EQ(get(*store, "kept"), "1");
    EXPECT_EQ(store->stats().rollbacks, 1u);
    EXPECT_EQ(store->stats().commits, 1u);
    // The writer is free again: the same thread can write.
    ASSERT_TRUE(put(*store, "after", "3"));
  }
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  EXPECT_EQ(get(*store, "discarded"), std::nullopt);
  EXPECT_EQ(get(*store, "kept"), "1");
  EXPECT_EQ(get(*store, "after"), "3");
}

TEST_F(SqliteStoreTest, DestroyingAnOpenTransactionRollsItBack) {
  {
    auto store = open_or_die(options());
    ASSERT_TRUE(store);
    {
      auto tx = begin_or_die(*store, TxMode::kWrite);
      ASSERT_TRUE(tx);
      ASSERT_TRUE(tx->execute(kInsert, {"dropped", "1", 1}));
    }
    EXPECT_EQ(get(*store, "dropped"), std::nullopt);
    EXPECT_EQ(store->stats().rollbacks, 1u);
    // Neither the writer nor this thread's "open transaction" mark leaked.
    ASSERT_TRUE(put(*store, "next", "2"));
    {
      auto read = begin_or_die(*store, TxMode::kRead);
      ASSERT_TRUE(read);
    }
    ASSERT_TRUE(put(*store, "next2", "3"));
  }
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  EXPECT_EQ(get(*store, "dropped"), std::nullopt);
  EXPECT_EQ(get(*store, "next"), "2");
}

TEST_F(SqliteStoreTest, CallsOnACommittedWriteTransactionFailWithTransactionClosed) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  auto tx = begin_or_die(*store, TxMode::kWrite);
  ASSERT_TRUE(tx);
  ASSERT_TRUE(tx->execute(kInsert, {"a", "1", 1}));
  ASSERT_TRUE(tx->commit());

  auto again = tx->commit();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), codes::kStoreTransactionClosed);
  auto exec = tx->execute(kInsert, {"b", "2", 1});
  ASSERT_FALSE(exec);
  EXPECT_EQ(exec.error().code(), codes::kStoreTransactionClosed);
  auto query = tx->query("SELECT 1");
  ASSERT_FALSE(query);
  EXPECT_EQ(query.error().code(), codes::kStoreTransactionClosed);
  auto point = tx->fail_point("x");
  ASSERT_FALSE(point);
  EXPECT_EQ(point.error().code(), codes::kStoreTransactionClosed);
  tx->rollback();  // a no-op on a closed transaction
  EXPECT_EQ(store->stats().rollbacks, 0u);
  EXPECT_EQ(get(*store, "b"), std::nullopt);
  EXPECT_EQ(get(*store, "a"), "1");
}

TEST_F(SqliteStoreTest, CallsOnARolledBackTransactionFailWithTransactionClosed) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  for (TxMode mode : {TxMode::kWrite, TxMode::kRead}) {
    auto tx = begin_or_die(*store, mode);
    ASSERT_TRUE(tx);
    tx->rollback();
    auto commit = tx->commit();
    ASSERT_FALSE(commit);
    EXPECT_EQ(commit.error().code(), codes::kStoreTransactionClosed);
    auto exec = tx->execute(kInsert, {"a", "1", 1});
    ASSERT_FALSE(exec);
    EXPECT_EQ(exec.error().code(), codes::kStoreTransactionClosed);
    auto query = tx->query("SELECT 1");
    ASSERT_FALSE(query);
    EXPECT_EQ(query.error().code(), codes::kStoreTransactionClosed);
  }
  EXPECT_EQ(get(*store, "a"), std::nullopt);
}

TEST_F(SqliteStoreTest, CallsOnACommittedReadTransactionFailWithTransactionClosed) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  auto tx = begin_or_die(*store, TxMode::kRead);
  ASSERT_TRUE(tx);
  EXPECT_EQ(tx->mode(), TxMode::kRead);
  ASSERT_TRUE(tx->query("SELECT count(*) FROM settings"));
  ASSERT_TRUE(tx->commit());
  auto again = tx->commit();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), codes::kStoreTransactionClosed);
  auto query = tx->query("SELECT count(*) FROM settings");
  ASSERT_FALSE(query);
  EXPECT_EQ(query.error().code(), codes::kStoreTransactionClosed);
}

TEST_F(SqliteStoreTest, WriteInsideWriteIsRejectedAsNestedAndOuterStillWorks) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  auto outer = begin_or_die(*store, TxMode::kWrite);
  ASSERT_TRUE(outer);
  ASSERT_TRUE(outer->execute(kInsert, {"outer", "1", 1}));
  auto inner = store->begin(TxMode::kWrite);  // would deadlock on the writer if not rejected
  ASSERT_FALSE(inner);
  EXPECT_EQ(inner.error().code(), codes::kStoreNestedTransaction);
  ASSERT_TRUE(outer->execute(kInsert, {"outer2", "2", 1}));
  ASSERT_TRUE(outer->commit());
  EXPECT_EQ(get(*store, "outer"), "1");
  EXPECT_EQ(get(*store, "outer2"), "2");
}

TEST_F(SqliteStoreTest, ReadInsideWriteIsRejectedAsNestedAndOuterStillWorks) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  auto outer = begin_or_die(*store, TxMode::kWrite);
  ASSERT_TRUE(outer);
  ASSERT_TRUE(outer->execute(kInsert, {"outer", "1", 1}));
  auto inner = store->begin(TxMode::kRead);  // would silently miss the outer's writes if allowed
  ASSERT_FALSE(inner);
  EXPECT_EQ(inner.error().code(), codes::kStoreNestedTransaction);
  ASSERT_TRUE(outer->commit());
  EXPECT_EQ(get(*store, "outer"), "1");
}

TEST_F(SqliteStoreTest, WriteInsideReadIsRejectedAsNestedAndOuterStillWorks) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  ASSERT_TRUE(put(*store, "k", "v"));
  auto outer = begin_or_die(*store, TxMode::kRead);
  ASSERT_TRUE(outer);
  auto inner = store->begin(TxMode::kWrite);
  ASSERT_FALSE(inner);
  EXPECT_EQ(inner.error().code(), codes::kStoreNestedTransaction);
  auto read_inner = store->begin(TxMode::kRead);
  ASSERT_FALSE(read_inner);
  EXPECT_EQ(read_inner.error().code(), codes::kStoreNestedTransaction);
  auto row = outer->query_one("SELECT value FROM settings WHERE key = ?", {"k"});
  ASSERT_TRUE(row && *row);
  EXPECT_EQ((*row)->text(0), "v");
  ASSERT_TRUE(outer->commit());
  // Once the outer is closed the thread may begin again.
  ASSERT_TRUE(put(*store, "k2", "v2"));
}

TEST_F(SqliteStoreTest, NestingIsPerThreadSoOtherThreadsMayBeginWhileOneHoldsARead) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  auto read = begin_or_die(*store, TxMode::kRead);
  ASSERT_TRUE(read);
  auto other = std::async(std::launch::async, [&] {
    auto r = put(*store, "other", "1");
    return r ? std::string() : r.error().to_string();
  });
  ASSERT_EQ(other.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(other.get(), "");
  ASSERT_TRUE(read->commit());
}

TEST_F(SqliteStoreTest, ReadTransactionRefusesWrites) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  auto tx = begin_or_die(*store, TxMode::kRead);
  ASSERT_TRUE(tx);
  for (const char* sql :
       {"INSERT INTO settings (key, value, updated_at) VALUES ('x', 'y', 1)",
        "UPDATE settings SET value = 'z'", "DELETE FROM settings", "CREATE TABLE evil (x INTEGER)"}) {
    auto exec = tx->execute(sql);
    ASSERT_FALSE(exec) << sql;
    EXPECT_EQ(exec.error().code(), codes::kStoreWriteInReadTransaction) << sql;
  }
  auto via_query =
      tx->query("INSERT INTO settings (key, value, updated_at) VALUES ('x', 'y', 1) RETURNING key");
  ASSERT_FALSE(via_query);
  EXPECT_EQ(via_query.error().code(), codes::kStoreWriteInReadTransaction);
  // The read transaction is still usable.
  EXPECT_EQ(count_settings(*tx), 0);
  ASSERT_TRUE(tx->commit());
  EXPECT_EQ(get(*store, "x"), std::nullopt);
}

TEST_F(SqliteStoreTest, StatementErrorsAreCodedAndLeaveTheTransactionUsable) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  ASSERT_TRUE(put(*store, "dup", "1"));
  auto tx = begin_or_die(*store, TxMode::kWrite);
  ASSERT_TRUE(tx);
  ASSERT_TRUE(tx->execute(kInsert, {"a", "1", 1}));
  auto duplicate = tx->execute(kInsert, {"dup", "2", 1});
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().code(), codes::kStoreConstraint);
  auto bad_sql = tx->execute("INSERT INTO no_such_table VALUES (1)");
  ASSERT_FALSE(bad_sql);
  EXPECT_EQ(bad_sql.error().code(), codes::kStoreSql);
  ASSERT_TRUE(tx->execute(kInsert, {"b", "2", 1}));
  ASSERT_TRUE(tx->commit());
  EXPECT_FALSE(store->poisoned());
  EXPECT_EQ(get(*store, "a"), "1");
  EXPECT_EQ(get(*store, "b"), "2");
  EXPECT_EQ(get(*store, "dup"), "1");
}

TEST_F(SqliteStoreTest, ValuesRoundTripThroughEveryType) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  const std::string binary("\0\x01\xff zero", 8);
  auto tx = begin_or_die(*store, TxMode::kWrite);
  ASSERT_TRUE(tx);
  auto rows = tx->query("SELECT ?, ?, ?, ?, ?", {SqlValue(), int64_t{-(int64_t{1} << 62)}, 2.5,
                                                 std::string("text \xc3\xa9"), Blob{binary}});
  ASSERT_TRUE(rows) << rows.error().to_string();
  ASSERT_EQ(rows->size(), 1u);
  const SqlRow& row = rows->front();
  EXPECT_TRUE(row.is_null(0));
  EXPECT_EQ(row.integer(1), -(int64_t{1} << 62));
  EXPECT_EQ(row[2], SqlValue(2.5));
  EXPECT_EQ(row.text(3), "text \xc3\xa9");
  EXPECT_EQ(row[4], SqlValue(Blob{binary}));
  tx->rollback();
}

// A read transaction opened before a commit keeps its snapshot, even when its first statement runs only
// after the commit (the snapshot is taken by begin(), not lazily by the first read).
TEST_F(SqliteStoreTest, ReaderOpenedBeforeACommitDoesNotSeeIt) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  ASSERT_TRUE(put(*store, "before", "1"));
  auto reader = begin_or_die(*store, TxMode::kRead);
  ASSERT_TRUE(reader);

  auto writer = std::async(std::launch::async, [&] {
    auto r = put(*store, "after", "2");
    return r ? std::string() : r.error().to_string();
  });
  ASSERT_EQ(writer.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "the writer could not commit while a read transaction was open";
  EXPECT_EQ(writer.get(), "");

  auto rows = reader->query("SELECT key FROM settings ORDER BY key");
  ASSERT_TRUE(rows) << rows.error().to_string();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().text(0), "before");
  ASSERT_TRUE(reader->commit());
  EXPECT_EQ(get(*store, "after"), "2");
}

TEST_F(SqliteStoreTest, ReaderKeepsAConsistentSnapshotWhileAWriterCommitsAndNeverBlocksIt) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  ASSERT_TRUE(put(*store, "k0", "0"));
  auto reader = begin_or_die(*store, TxMode::kRead);
  ASSERT_TRUE(reader);
  ASSERT_EQ(count_settings(*reader), 1);

  // While the read transaction stays open, another thread commits many transactions. Each commit must
  // return (the reader never blocks the writer) — bounded by a generous timeout so a bug fails the test
  // instead of hanging it.
  constexpr int kWrites = 20;
  auto writer = std::async(std::launch::async, [&] {
    for (int i = 1; i <= kWrites; ++i) {
      auto r = put(*store, "k" + std::to_string(i), std::to_string(i));
      if (!r) return r.error().to_string();
    }
    return std::string();
  });
  ASSERT_EQ(writer.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the writer could not commit while a read transaction was open";
  EXPECT_EQ(writer.get(), "");

  // The reader still sees exactly its snapshot.
  EXPECT_EQ(count_settings(*reader), 1);
  auto rows = reader->query("SELECT key FROM settings");
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().text(0), "k0");
  ASSERT_TRUE(reader->commit());

  // A new reader sees everything.
  EXPECT_EQ(count_settings(*store), kWrites + 1);
}

TEST_F(SqliteStoreTest, ReadersRunConcurrentlyWithAnOpenWriteTransaction) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  ASSERT_TRUE(put(*store, "k", "committed"));
  auto writer = begin_or_die(*store, TxMode::kWrite);
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->execute("UPDATE settings SET value = ? WHERE key = ?", {"uncommitted", "k"}));
  // Another thread reads while the write transaction is open: it is not blocked and sees committed data.
  auto reader = std::async(std::launch::async, [&] { return get(*store, "k"); });
  ASSERT_EQ(reader.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(reader.get(), "committed");
  ASSERT_TRUE(writer->commit());
  EXPECT_EQ(get(*store, "k"), "uncommitted");
}

TEST_F(SqliteStoreTest, ManyConcurrentReadersEachSeeACompleteSnapshot) {
  // Writers keep two rows in step (a, b updated in one transaction); readers must never see them differ.
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  {
    auto tx = begin_or_die(*store, TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(tx->execute(kInsert, {"a", "0", 0}));
    ASSERT_TRUE(tx->execute(kInsert, {"b", "0", 0}));
    ASSERT_TRUE(tx->commit());
  }
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::atomic<int> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        auto tx = store->begin(TxMode::kRead);
        if (!tx) continue;
        auto a = (*tx)->query_one("SELECT updated_at FROM settings WHERE key = 'a'");
        std::this_thread::yield();
        auto b = (*tx)->query_one("SELECT updated_at FROM settings WHERE key = 'b'");
        if (a && b && *a && *b && (**a).integer(0) != (**b).integer(0)) torn.fetch_add(1);
        reads.fetch_add(1);
      }
    });
  }
  for (int i = 1; i <= 50; ++i) {
    auto tx = begin_or_die(*store, TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(tx->execute("UPDATE settings SET updated_at = ? WHERE key = 'a'", {i}));
    ASSERT_TRUE(tx->execute("UPDATE settings SET updated_at = ? WHERE key = 'b'", {i}));
    ASSERT_TRUE(tx->commit());
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GT(reads.load(), 0);
}

// ---------------------------------------------------------------------------------------------------
// Group commit

TEST_F(SqliteStoreTest, ConcurrentWritersAreGroupedIntoFewerSyncsAndEveryCommitIsDurable) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 40;
  {
    auto store = open_or_die(options());  // synchronous=FULL (the default)
    ASSERT_TRUE(store);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          auto tx = store->begin(TxMode::kWrite);
          if (!tx) {
            failures.fetch_add(1);
            continue;
          }
          const std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
          bool ok = (*tx)->execute(kInsert, {key, key, i}).has_value();
          ok = ok && (*tx)->execute(kInsert, {key + "-twin", key, i}).has_value();
          ok = ok && (*tx)->commit().has_value();
          if (!ok) failures.fetch_add(1);
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    const StoreStats stats = store->stats();
    EXPECT_EQ(stats.commits, uint64_t{kThreads * kPerThread});
    EXPECT_GT(stats.syncs, 0u);
    EXPECT_LT(stats.syncs, stats.commits) << "no two concurrent commits shared a sync";
    EXPECT_EQ(stats.rollbacks, 0u);
    EXPECT_FALSE(store->poisoned());
    EXPECT_EQ(count_settings(*store), 2 * kThreads * kPerThread);
  }
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  EXPECT_EQ(count_settings(*store), 2 * kThreads * kPerThread);
}

TEST_F(SqliteStoreTest, EachCommitIsDurableWhenItReturns) {
  // Every commit() that returned, observed from a second store instance opened on the same file (a fresh
  // connection only sees what is in the database files, not the writer's private state).
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const std::string key = "d" + std::to_string(t) + "-" + std::to_string(i);
        if (!put(*store, key, key)) {
          failures.fetch_add(1);
          continue;
        }
        sqlite3* db = nullptr;
        sqlite3_open_v2(options().path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
        sqlite3_stmt* stmt = nullptr;
        sqlite3_prepare_v2(db, "SELECT count(*) FROM settings WHERE key = ?", -1, &stmt, nullptr);
        sqlite3_bind_text(stmt, 1, key.c_str(), -1, SQLITE_TRANSIENT);
        const bool seen = sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_int(stmt, 0) == 1;
        sqlite3_finalize(stmt);
        sqlite3_close(db);
        if (!seen) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(SqliteStoreTest, RollbacksInterleavedWithGroupCommitsDiscardOnlyTheirOwnWrites) {
  constexpr int kThreads = 6;
  constexpr int kPerThread = 30;
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto tx = store->begin(TxMode::kWrite);
        if (!tx) {
          failures.fetch_add(1);
          continue;
        }
        const bool keep = (i + t) % 3 != 0;
        const std::string key = (keep ? "keep-" : "drop-") + std::to_string(t) + "-" + std::to_string(i);
        if (!(*tx)->execute(kInsert, {key, "x", i})) failures.fetch_add(1);
        if (keep) {
          if (!(*tx)->commit()) failures.fetch_add(1);
        } else {
          (*tx)->rollback();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto tx = begin_or_die(*store, TxMode::kRead);
  ASSERT_TRUE(tx);
  auto dropped = tx->query_one("SELECT count(*) FROM settings WHERE key LIKE 'drop-%'");
  auto kept = tx->query_one("SELECT count(*) FROM settings WHERE key LIKE 'keep-%'");
  ASSERT_TRUE(dropped && *dropped && kept && *kept);
  EXPECT_EQ((*dropped)->integer(0), 0);
  EXPECT_EQ((*kept)->integer(0), static_cast<int64_t>(store->stats().commits));
  EXPECT_EQ(store->stats().commits + store->stats().rollbacks, uint64_t{kThreads * kPerThread});
}

// ---------------------------------------------------------------------------------------------------
// Fail points and poisoning

#ifdef KEEL_FAILPOINTS_ENABLED

TEST_F(SqliteStoreTest, FailedSyncPoisonsTheStoreUntilReopened) {
  FailPoints fail_points;
  SqliteStoreOptions opts = options();
  opts.fail_points = &fail_points;
  {
    auto store = open_or_die(opts);
    ASSERT_TRUE(store);
    ASSERT_TRUE(put(*store, "earlier", "1"));
    fail_points.arm("store.sync.before", FailPoints::Action::kError);

    auto tx = begin_or_die(*store, TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(tx->execute(kInsert, {"failed", "2", 1}));
    auto committed = tx->commit();
    ASSERT_FALSE(committed);
    EXPECT_EQ(committed.error().code(), codes::kFailPoint);
    EXPECT_TRUE(store->poisoned());
    EXPECT_EQ(store->stats().commits, 1u);

    // Every later write is refused, even though the fail point no longer triggers...
    auto write = store->begin(TxMode::kWrite);
    ASSERT_FALSE(write);
    EXPECT_EQ(write.error().code(), codes::kStorePoisoned);
    EXPECT_FALSE(write.error().retryable());
    auto write2 = store->begin(TxMode::kWrite);
    ASSERT_FALSE(write2);
    EXPECT_EQ(write2.error().code(), codes::kStorePoisoned);
    // ...while reads still work and see only what was durable.
    EXPECT_EQ(get(*store, "earlier"), "1");
    EXPECT_EQ(get(*store, "failed"), std::nullopt);
  }
  // Reopening recovers.
  auto store = open_or_die(opts);
  ASSERT_TRUE(store);
  EXPECT_FALSE(store->poisoned());
  EXPECT_EQ(get(*store, "earlier"), "1");
  EXPECT_EQ(get(*store, "failed"), std::nullopt);
  ASSERT_TRUE(put(*store, "after_reopen", "3"));
  EXPECT_EQ(get(*store, "after_reopen"), "3");
}

TEST_F(SqliteStoreTest, FailedSyncFailsEveryTransactionWaitingOnIt) {
  FailPoints fail_points;
  SqliteStoreOptions opts = options();
  opts.fail_points = &fail_points;
  {
    auto store = open_or_die(opts);
    ASSERT_TRUE(store);
    ASSERT_TRUE(put(*store, "earlier", "1"));
    fail_points.arm("store.sync.before", FailPoints::Action::kError);

    // T1 holds the writer while T2 queues for it; when T1 commits and leads the sync, T2 joins the same
    // epoch (or, if it was late, finds the store poisoned). Either way neither may report success.
    auto t1 = begin_or_die(*store, TxMode::kWrite);
    ASSERT_TRUE(t1);
    ASSERT_TRUE(t1->execute(kInsert, {"t1", "x", 1}));
    auto t2 = std::async(std::launch::async, [&]() -> Result<void> {
      auto tx = KEEL_TRY(store->begin(TxMode::kWrite));
      KEEL_TRY(tx->execute(kInsert, {"t2", "x", 1}));
      return tx->commit();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // lets T2 queue (not required)
    auto c1 = t1->commit();
    ASSERT_EQ(t2.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    auto c2 = t2.get();
    ASSERT_FALSE(c1);
    EXPECT_EQ(c1.error().code(), codes::kFailPoint);
    ASSERT_FALSE(c2);
    EXPECT_TRUE(c2.error().code() == codes::kFailPoint || c2.error().code() == codes::kStorePoisoned)
        << c2.error().to_string();
    EXPECT_TRUE(store->poisoned());
  }
  auto store = open_or_die(opts);
  ASSERT_TRUE(store);
  EXPECT_EQ(get(*store, "earlier"), "1");
  EXPECT_EQ(get(*store, "t1"), std::nullopt);
  EXPECT_EQ(get(*store, "t2"), std::nullopt);
}

TEST_F(SqliteStoreTest, FailureAfterSyncStillPoisons) {
  FailPoints fail_points;
  SqliteStoreOptions opts = options();
  opts.fail_points = &fail_points;
  auto store = open_or_die(opts);
  ASSERT_TRUE(store);
  fail_points.arm("store.sync.after", FailPoints::Action::kError);
  auto committed = put(*store, "k", "v");
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.error().code(), codes::kFailPoint);
  EXPECT_TRUE(store->poisoned());
  auto write = store->begin(TxMode::kWrite);
  ASSERT_FALSE(write);
  EXPECT_EQ(write.error().code(), codes::kStorePoisoned);
}

TEST_F(SqliteStoreTest, FailedCommitBeforeReleaseRollsBackWithoutPoisoning) {
  FailPoints fail_points;
  SqliteStoreOptions opts = options();
  opts.fail_points = &fail_points;
  {
    auto store = open_or_die(opts);
    ASSERT_TRUE(store);
    ASSERT_TRUE(put(*store, "earlier", "1"));
    fail_points.arm("store.commit", FailPoints::Action::kError);
    auto tx = begin_or_die(*store, TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(tx->execute(kInsert, {"failed", "2", 1}));
    auto committed = tx->commit();
    ASSERT_FALSE(committed);
    EXPECT_EQ(committed.error().code(), codes::kFailPoint);
    EXPECT_FALSE(store->poisoned());
    EXPECT_EQ(store->stats().rollbacks, 1u);
    // The transaction is closed and rolled back.
    auto again = tx->execute(kInsert, {"again", "3", 1});
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code(), codes::kStoreTransactionClosed);
    EXPECT_EQ(get(*store, "failed"), std::nullopt);
    // The store still writes.
    ASSERT_TRUE(put(*store, "later", "4"));
  }
  auto store = open_or_die(opts);
  ASSERT_TRUE(store);
  EXPECT_EQ(get(*store, "earlier"), "1");
  EXPECT_EQ(get(*store, "failed"), std::nullopt);
  EXPECT_EQ(get(*store, "later"), "4");
}

TEST_F(SqliteStoreTest, FailedBeginLeavesNoTransactionBehind) {
  FailPoints fail_points;
  SqliteStoreOptions opts = options();
  opts.fail_points = &fail_points;
  auto store = open_or_die(opts);
  ASSERT_TRUE(store);
  fail_points.arm("store.begin", FailPoints::Action::kError);
  auto tx = store->begin(TxMode::kWrite);
  ASSERT_FALSE(tx);
  EXPECT_EQ(tx.error().code(), codes::kFailPoint);
  EXPECT_FALSE(store->poisoned());
  // Not marked as holding a transaction, and the writer is not held: the next begin works.
  ASSERT_TRUE(put(*store, "k", "v"));
  EXPECT_EQ(get(*store, "k"), "v");
}

TEST_F(SqliteStoreTest, TransactionFailPointsReachTheStoresFailPoints) {
  FailPoints fail_points;
  SqliteStoreOptions opts = options();
  opts.fail_points = &fail_points;
  auto store = open_or_die(opts);
  ASSERT_TRUE(store);
  fail_points.arm("repo.step", FailPoints::Action::kError);
  auto tx = begin_or_die(*store, TxMode::kWrite);
  ASSERT_TRUE(tx);
  auto hit = tx->fail_point("repo.step");
  ASSERT_FALSE(hit);
  EXPECT_EQ(hit.error().code(), codes::kFailPoint);
  EXPECT_TRUE(tx->fail_point("repo.step"));  // armed once
  tx->rollback();
  EXPECT_EQ(fail_points.hits("repo.step"), 2u);
  EXPECT_EQ(fail_points.hits("store.begin"), 1u);
}

TEST_F(SqliteStoreTest, TransactionFailPointSucceedsWithoutFailPoints) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  auto tx = begin_or_die(*store, TxMode::kWrite);
  ASSERT_TRUE(tx);
  EXPECT_TRUE(tx->fail_point("anything"));
  ASSERT_TRUE(tx->commit());
}

#endif  // KEEL_FAILPOINTS_ENABLED

// ---------------------------------------------------------------------------------------------------
// Migrations

TEST_F(SqliteStoreTest, FreshDatabaseIsMigratedToTheCurrentSchema) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  EXPECT_GE(current_schema_version(), 1);
  EXPECT_EQ(store->schema_version(), current_schema_version());
  EXPECT_EQ(store->backend(), "sqlite");
  EXPECT_FALSE(store->poisoned());
  EXPECT_EQ(raw_pragma(options().path, "user_version"), current_schema_version());
  EXPECT_EQ(raw_pragma(options().path, "application_id"), 0x6B65656C);
  // Every table of the schema exists.
  auto tx = begin_or_die(*store, TxMode::kRead);
  ASSERT_TRUE(tx);
  for (const char* table :
       {"threads", "nodes", "runs", "run_queue", "steers", "prepared_tool_calls", "approvals", "interactions",
        "receipts", "environment_snapshots", "site_rules", "credentials", "settings"}) {
    auto row = tx->query_one("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", {table});
    ASSERT_TRUE(row && *row);
    EXPECT_EQ((*row)->integer(0), 1) << table;
  }
}

TEST_F(SqliteStoreTest, DatabaseIsInWalModeWithTheConfiguredSynchronousLevel) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(options().path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(SqliteStoreTest, ReopeningDoesNotMigrateAgain) {
  {
    auto store = open_or_die(options());
    ASSERT_TRUE(store);
    ASSERT_TRUE(put(*store, "k", "v"));
  }
  // PRAGMA schema_version is SQLite's schema cookie: every DDL statement bumps it.
  const int64_t cookie = raw_pragma(options().path, "schema_version");
  ASSERT_GT(cookie, 0);
  for (int i = 0; i < 3; ++i) {
    auto store = open_or_die(options());
    ASSERT_TRUE(store);
    EXPECT_EQ(store->schema_version(), current_schema_version());
    EXPECT_EQ(get(*store, "k"), "v");
  }
  EXPECT_EQ(raw_pragma(options().path, "schema_version"), cookie);
  EXPECT_EQ(raw_pragma(options().path, "user_version"), current_schema_version());
}

TEST_F(SqliteStoreTest, StatsCountEverySyncAndHowLongItTook) {
  auto store = open_or_die(options());
  ASSERT_TRUE(store);
  const StoreStats before = store->stats();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(put(*store, "k" + std::to_string(i), "v"));
  const StoreStats after = store->stats();
  EXPECT_EQ(after.syncs - before.syncs, 5u) << "one writer: one sync per commit";
  uint64_t counted = 0;
  for (size_t i = 0; i < StoreStats::kSyncBuckets; ++i)
    counted += after.sync_histogram[i] - before.sync_histogram[i];
  EXPECT_EQ(counted, 5u) << "every sync lands in one bucket";
  EXPECT_GE(after.sync_micros, before.sync_micros);
  EXPECT_GT(sync_percentile(after.sync_histogram, 0.5), 0);
}

TEST_F(SqliteStoreTest, ConcurrentOpensOfAFreshDatabaseMigrateItOnce) {
  // Two keel processes (here: threads with their own stores) starting on a new file at the same time: one
  // migrates, the other must notice and not apply the migration a second time.
  constexpr int kFiles = 15;
  constexpr int kOpeners = 4;
  for (int f = 0; f < kFiles; ++f) {
    SqliteStoreOptions opts{.path = dir_.file("fresh-" + std::to_string(f) + ".db")};
    std::atomic<int> ready{0};
    std::vector<std::string> errors(kOpeners);
    std::vector<std::thread> threads;
    for (int t = 0; t < kOpeners; ++t) {
      threads.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < kOpeners) std::this_thread::yield();
        auto store = open_sqlite_store(opts);
        if (!store) {
          errors[t] = store.error().to_string();
        } else if ((*store)->schema_version() != current_schema_version()) {
          errors[t] = "schema version " + std::to_string((*store)->schema_version());
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int t = 0; t < kOpeners; ++t) EXPECT_EQ(errors[t], "") << "file " << f << ", opener " << t;
    if (HasFailure()) return;
  }
}

TEST_F(SqliteStoreTest, TwoStoresOnOneFileShareCommittedData) {
  auto first = open_or_die(options());
  ASSERT_TRUE(first);
  auto second = open_or_die(options());
  ASSERT_TRUE(second);
  ASSERT_TRUE(put(*first, "from_first", "1"));
  EXPECT_EQ(get(*second, "from_first"), "1");
  ASSERT_TRUE(put(*second, "from_second", "2"));
  EXPECT_EQ(get(*first, "from_second"), "2");
}

TEST_F(SqliteStoreTest, EmptyPathIsInvalid) {
  auto store = open_sqlite_store(SqliteStoreOptions{});
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code(), codes::kInvalidArgument);
}

}  // namespace
}  // namespace keel
