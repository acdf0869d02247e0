// The SQLite store given bad input: damaged, foreign and future files, a full disk, a lock held by another
// process, oversized values, unusable paths. Each must fail with a coded error and leave committed data
// intact.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "keel/clock.h"
#include "keel/error_codes.h"
#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "testing/settings_rows.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

namespace fs = std::filesystem;

constexpr const char* kInsert = testing::kInsertSetting;
using testing::get;
using testing::put;

std::string read_bytes(const std::string& path) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  if (error) return "<missing>";
  std::string bytes(static_cast<size_t>(size), '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Overwrites `bytes.size()` bytes of the file at `offset`, keeping the rest.
void overwrite_bytes(const std::string& path, size_t offset, const std::string& bytes) {
  std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
  out.seekp(static_cast<std::streamoff>(offset));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

int64_t count_settings(Store& store) {
  auto tx = store.begin(TxMode::kRead);
  EXPECT_TRUE(tx) << tx.error().to_string();
  if (!tx) return -1;
  auto row = (*tx)->query_one("SELECT count(*) FROM settings");
  EXPECT_TRUE(row && *row);
  return row && *row ? (*row)->integer(0) : -1;
}

// A raw sqlite3 connection, for building files keel did not write and for holding locks.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
              SQLITE_OK);
  }
  ~RawDb() { sqlite3_close_v2(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  int exec(const std::string& sql) {
    char* error = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (error ? error : "");
    sqlite3_free(error);
    return rc;
  }
  std::string text(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    std::string out = "<error>";
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(stmt, 0);
      out = t ? reinterpret_cast<const char*>(t) : "";
    }
    sqlite3_finalize(stmt);
    return out;
  }
  int64_t integer(const std::string& sql) { return std::stoll(text(sql)); }

 private:
  sqlite3* db_ = nullptr;
};

class SqliteBadInputTest : public ::testing::Test {
 protected:
  std::string path() const { return dir_.file("keel.db"); }
  SqliteStoreOptions options() const { return SqliteStoreOptions{.path = path(), .busy_timeout_ms = 100}; }

  // Creates a keel database at path() holding settings rows k0..k(n-1), closed cleanly (WAL checkpointed
  // into the main file).
  void make_store_with_rows(int n) {
    auto store = open_sqlite_store(options());
    ASSERT_TRUE(store) << store.error().to_string();
    for (int i = 0; i < n; ++i) ASSERT_TRUE(put(**store, "k" + std::to_string(i), "v" + std::to_string(i)));
  }

  testing::TempDir dir_;
};

// ---------------------------------------------------------------------------------------------------
// Damaged files

TEST_F(SqliteBadInputTest, RandomBytesAreReportedAsCorruptAndLeftUntouched) {
  const std::string garbage = random_bytes(64 * 1024, 12345);
  write_bytes(path(), garbage);
  auto store = open_sqlite_store(options());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code(), codes::kStoreCorrupt) << store.error().to_string();
  EXPECT_FALSE(store.error().retryable());
  EXPECT_EQ(read_bytes(path()), garbage);
  EXPECT_FALSE(fs::exists(path() + "-wal"));
}

TEST_F(SqliteBadInputTest, TextFileIsReportedAsCorruptAndLeftUntouched) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "this is a plain text file, line " + std::to_string(i) + "\n";
  write_bytes(path(), text);
  auto store = open_sqlite_store(options());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code(), codes::kStoreCorrupt) << store.error().to_string();
  EXPECT_EQ(read_bytes(path()), text);
}

TEST_F(SqliteBadInputTest, StoreWithGarbageHeaderPageIsReportedAsCorrupt) {
  make_store_with_rows(5);
  ASSERT_FALSE(fs::exists(path() + "-wal") && fs::file_size(path() + "-wal") > 0)
      << "the clean close should have checkpointed the WAL";
  overwrite_bytes(path(), 0, random_bytes(4096, 777));
  const std::string damaged = read_bytes(path());
  auto store = open_sqlite_store(options());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code(), codes::kStoreCorrupt) << store.error().to_string();
  EXPECT_EQ(read_bytes(path()), damaged) << "a failed open must not write to the damaged file";
}

TEST_F(SqliteBadInputTest, StoreWithDamagedHeaderFieldsIsReportedAsCorrupt) {
  // Keeps the "SQLite format 3" magic but garbles the rest of the 100-byte header (page size etc.).
  make_store_with_rows(5);
  overwrite_bytes(path(), 16, random_bytes(84, 4242));
  auto store = open_sqlite_store(options());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code(), codes::kStoreCorrupt) << store.error().to_string();
}

TEST_F(SqliteBadInputTest, DamagedTablePageFailsReadsWithStoreCorrupt) {
  make_store_with_rows(50);
  int64_t root = 0;
  int64_t page_size = 0;
  {
    RawDb raw(path());
    root = raw.integer("SELECT rootpage FROM sqlite_master WHERE name = 'settings'");
    page_size = raw.integer("PRAGMA page_size");
  }
  ASSERT_GT(root, 1);
  overwrite_bytes(path(), static_cast<size_t>((root - 1) * page_size),
                  random_bytes(static_cast<size_t>(page_size), 99));
  auto store = open_sqlite_store(options());
  if (!store) {
    EXPECT_EQ(store.error().code(), codes::kStoreCorrupt) << store.error().to_string();
    return;
  }
  auto tx = (*store)->begin(TxMode::kRead);
  ASSERT_TRUE(tx) << tx.error().to_string();
  auto rows = (*tx)->query("SELECT key, value FROM settings");
  ASSERT_FALSE(rows);
  EXPECT_EQ(rows.error().code(), codes::kStoreCorrupt) << rows.error().to_string();
}

// Damages the settings table's root page (random bytes), leaving the header and sqlite_master readable.
void damage_settings_page(const std::string& path) {
  int64_t root = 0;
  int64_t page_size = 0;
  {
    RawDb raw(path);
    root = raw.integer("SELECT rootpage FROM sqlite_master WHERE name = 'settings'");
    page_size = raw.integer("PRAGMA page_size");
  }
  ASSERT_GT(root, 1);
  overwrite_bytes(path, static_cast<size_t>((root - 1) * page_size),
                  random_bytes(static_cast<size_t>(page_size), 99));
}

// Steady time that jumps a second at every reading: any budget runs out at the first look.
class JumpingClock final : public Clock {
 public:
  int64_t now_unix_ms() const override { return 0; }
  std::chrono::steady_clock::time_point steady_now() const override {
    return std::chrono::steady_clock::time_point(std::chrono::seconds(++readings_));
  }

 private:
  mutable std::atomic<int64_t> readings_{0};
};

TEST_F(SqliteBadInputTest, QuickCheckRefusesADamagedStoreAtOpenAndSaysHowToRecover) {
  make_store_with_rows(50);
  damage_settings_page(path());
  const std::string damaged = read_bytes(path());
  auto store = open_sqlite_store(options());
  ASSERT_FALSE(store) << "a damaged store opened";
  EXPECT_EQ(store.error().code(), codes::kStoreCorrupt) << store.error().to_string();
  EXPECT_NE(store.error().message().find("quick_check"), std::string::npos) << store.error().message();
  EXPECT_NE(store.error().message().find(".recover"), std::string::npos) << store.error().message();
  EXPECT_EQ(read_bytes(path()), damaged) << "refusing must not change the file";
}

TEST_F(SqliteBadInputTest, QuickCheckCanBeTurnedOff) {
  make_store_with_rows(50);
  damage_settings_page(path());
  SqliteStoreOptions unchecked = options();
  unchecked.quick_check_ms = 0;
  auto store = open_sqlite_store(unchecked);
  ASSERT_TRUE(store) << store.error().to_string();
}

TEST_F(SqliteBadInputTest, QuickCheckThatRunsOutOfTimeIsAbandonedAndTheStoreOpens) {
  // Damage the check meets late (the last page), so that it is still running when its time is up.
  make_store_with_rows(3000);
  const auto size = static_cast<size_t>(fs::file_size(path()));
  int64_t page_size = 0;
  {
    RawDb raw(path());
    page_size = raw.integer("PRAGMA page_size");
  }
  overwrite_bytes(path(), size - static_cast<size_t>(page_size),
                  random_bytes(static_cast<size_t>(page_size), 5));
  auto checked = open_sqlite_store(options());
  ASSERT_FALSE(checked) << "with time enough, the check finds the damage";
  EXPECT_EQ(checked.error().code(), codes::kStoreCorrupt);
  JumpingClock clock;
  SqliteStoreOptions budgeted = options();
  budgeted.quick_check_ms = 500;
  budgeted.clock = &clock;
  auto store = open_sqlite_store(budgeted);
  ASSERT_TRUE(store) << store.error().to_string();
}

TEST_F(SqliteBadInputTest, QuickCheckPassesAnIntactStore) {
  make_store_with_rows(50);
  auto store = open_sqlite_store(options());
  ASSERT_TRUE(store) << store.error().to_string();
  EXPECT_EQ(count_settings(**store), 50);
}

TEST_F(SqliteBadInputTest, EmptyFileIsInitializedAsANewStore) {
  write_bytes(path(), "");
  auto store = open_sqlite_store(options());
  ASSERT_TRUE(store) << store.error().to_string();
  EXPECT_EQ((*store)->schema_version(), current_schema_version());
  ASSERT_TRUE(put(**store, "k", "v"));
}

// ---------------------------------------------------------------------------------------------------
// Files keel does not own

TEST_F(SqliteBadInputTest, ForeignSqliteDatabaseIsRefusedAndLeftUnchanged) {
  {
    RawDb raw(path());
    raw.exec("CREATE TABLE recipes (name TEXT PRIMARY KEY, steps TEXT)");
    raw.exec("INSERT INTO recipes VALUES ('bread', 'knead, wait, bake')");
  }
  const std::string before = read_bytes(path());
  const auto mtime = fs::last_write_time(path());
  auto store = open_sqlite_store(options());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code(), codes::kStoreForeign) << store.error().to_string();
  EXPECT_FALSE(store.error().retryable());
  EXPECT_EQ(read_bytes(path()), before);
  EXPECT_EQ(fs::last_write_time(path()), mtime);
  EXPECT_FALSE(fs::exists(path() + "-wal"));
  RawDb raw(path());
  EXPECT_EQ(raw.text("PRAGMA journal_mode"), "delete");  // not switched to WAL
  EXPECT_EQ(raw.text("SELECT steps FROM recipes WHERE name = 'bread'"), "knead, wait, bake");
  EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_master"), 2);  // no keel tables were added
}

TEST_F(SqliteBadInputTest, EmptySqliteDatabaseOfAnotherApplicationIsRefused) {
  {
    RawDb raw(path());
    raw.exec("PRAGMA application_id = 1234");
  }
  const std::string before = read_bytes(path());
  auto store = open_sqlite_store(options());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code(), codes::kStoreForeign) << store.error().to_string();
  EXPECT_EQ(read_bytes(path()), before);
}

TEST_F(SqliteBadInputTest, SchemaFromTheFutureIsRefusedAndLeftUnchanged) {
  make_store_with_rows(3);
  {
    RawDb raw(path());
    raw.exec("PRAGMA user_version = 999");
  }
  auto store = open_sqlite_store(options());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code(), codes::kStoreSchemaTooNew) << store.error().to_string();
  EXPECT_FALSE(store.error().retryable());
  RawDb raw(path());
  EXPECT_EQ(raw.integer("PRAGMA user_version"), 999);
  EXPECT_EQ(raw.integer("SELECT count(*) FROM settings"), 3);
  EXPECT_EQ(raw.text("SELECT value FROM settings WHERE key = 'k2'"), "v2");
}

// ---------------------------------------------------------------------------------------------------
// A full disk

TEST_F(SqliteBadInputTest, FullDiskFailsWritesWithDiskFullAndKeepsCommittedData) {
  make_store_with_rows(1);
  int64_t pages = 0;
  {
    RawDb raw(path());
    pages = raw.integer("PRAGMA page_count");
  }
  SqliteStoreOptions limited = options();
  limited.max_page_count = pages + 6;
  const std::string big(1500, 'x');
  int committed = 0;
  {
    auto store = open_sqlite_store(limited);
    ASSERT_TRUE(store) << store.error().to_string();
    std::optional<Error> failure;
    for (int i = 0; i < 1000 && !failure; ++i) {
      auto tx = (*store)->begin(TxMode::kWrite);
      ASSERT_TRUE(tx) << tx.error().to_string();
      auto inserted = (*tx)->execute(kInsert, {"big" + std::to_string(i), big + std::to_string(i), i});
      if (!inserted) {
        failure = inserted.error();
        // A later statement of the same transaction must not slip into the database on its own: SQLite
        // may have rolled the whole transaction back, and the transaction is rolled back below.
        (void)(*tx)->execute(kInsert, {"tiny-after-full", "t", i});
        (*tx)->rollback();
        break;
      }
      auto done = (*tx)->commit();
      if (!done) {
        failure = done.error();
        break;
      }
      ++committed;
    }
    ASSERT_TRUE(failure) << "the size limit was never reached";
    EXPECT_EQ(failure->code(), codes::kStoreFull) << failure->to_string();
    EXPECT_GT(committed, 0);

    // Reads still work and see every committed row.
    EXPECT_EQ(count_settings(**store), committed + 1);
    EXPECT_EQ(get(**store, "tiny-after-full"), std::nullopt);
    EXPECT_EQ(get(**store, "big0"), big + "0");
    // A write that needs no new page still works: the failed statement did not poison the store.
    EXPECT_FALSE((*store)->poisoned());
    auto tx = (*store)->begin(TxMode::kWrite);
    ASSERT_TRUE(tx) << tx.error().to_string();
    auto updated = (*tx)->execute("UPDATE settings SET updated_at = 42 WHERE key = 'k0'");
    ASSERT_TRUE(updated) << updated.error().to_string();
    ASSERT_TRUE((*tx)->commit());
  }
  auto store = open_sqlite_store(options());  // no limit
  ASSERT_TRUE(store) << store.error().to_string();
  EXPECT_EQ(count_settings(**store), committed + 1);
  EXPECT_EQ(get(**store, "tiny-after-full"), std::nullopt);
  for (int i = 0; i < committed; ++i)
    EXPECT_EQ(get(**store, "big" + std::to_string(i)), big + std::to_string(i));
  EXPECT_EQ(get(**store, "k0"), "v0");
  // Without the limit the store has room again.
  ASSERT_TRUE(put(**store, "after", big));
}

TEST_F(SqliteBadInputTest, FullDiskWithConcurrentWritersReportsExactlyTheDurableCommits) {
  // With several writers, one transaction's disk-full error can make SQLite roll back the open group
  // commit that other, already released transactions are waiting on. Those must fail (the store is
  // poisoned) rather than report success; and a commit whose group sync did succeed must not be reported
  // as failed because another transaction poisoned the store meanwhile. So after reopening, the rows
  // present are exactly the ones whose commit reported success. Repeated: the interleavings vary.
  for (int run = 0; run < 8; ++run) {
    const std::string db = dir_.file("concurrent-" + std::to_string(run) + ".db");
    SqliteStoreOptions unlimited{.path = db};
    {
      auto store = open_sqlite_store(unlimited);
      ASSERT_TRUE(store) << store.error().to_string();
      ASSERT_TRUE(put(**store, "k0", "v0"));
    }
    int64_t pages = 0;
    {
      RawDb raw(db);
      pages = raw.integer("PRAGMA page_count");
    }
    SqliteStoreOptions limited = unlimited;
    limited.max_page_count = pages + 10;
    const std::string big(1500, 'y');
    std::mutex mu;
    std::set<std::string> reported;
    std::vector<std::string> unexpected_errors;
    {
      auto store = open_sqlite_store(limited);
      ASSERT_TRUE(store) << store.error().to_string();
      std::vector<std::thread> threads;
      for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
          for (int i = 0; i < 100; ++i) {
            auto tx = (*store)->begin(TxMode::kWrite);
            if (!tx) return;  // poisoned
            const std::string key = "c" + std::to_string(t) + "-" + std::to_string(i);
            auto inserted = (*tx)->execute(kInsert, {key, big, i});
            auto committed = inserted ? (*tx)->commit() : Result<void>(std::unexpected(inserted.error()));
            std::lock_guard<std::mutex> guard(mu);
            if (committed) {
              reported.insert(key);
            } else if (const std::string& code = committed.error().code(); code != codes::kStoreFull &&
                                                                           code != codes::kStoreIo &&
                                                                           code != codes::kStorePoisoned) {
              unexpected_errors.push_back(committed.error().to_string());
            }
          }
        });
      }
      for (auto& t : threads) t.join();
    }
    EXPECT_TRUE(unexpected_errors.empty()) << (unexpected_errors.empty() ? "" : unexpected_errors.front());
    auto store = open_sqlite_store(unlimited);
    ASSERT_TRUE(store) << store.error().to_string();
    auto tx = (*store)->begin(TxMode::kRead);
    ASSERT_TRUE(tx);
    auto rows = (*tx)->query("SELECT key, value FROM settings WHERE key <> 'k0'");
    ASSERT_TRUE(rows) << rows.error().to_string();
    std::set<std::string> present;
    for (const SqlRow& row : *rows) {
      present.insert(row.text(0));
      EXPECT_EQ(row.text(1), big);
    }
    for (const std::string& key : reported)
      EXPECT_TRUE(present.contains(key)) << "run " << run << ": lost " << key;
    for (const std::string& key : present) {
      EXPECT_TRUE(reported.contains(key))
          << "run " << run << ": " << key << " is durable but its commit failed";
    }
    if (HasFailure()) return;
  }
}

// ---------------------------------------------------------------------------------------------------
// Locks held by another process

TEST_F(SqliteBadInputTest, WriteLockHeldElsewhereGivesRetryableBusyUntilReleased) {
  make_store_with_rows(1);
  auto store = open_sqlite_store(options());
  ASSERT_TRUE(store) << store.error().to_string();
  RawDb other(path());
  other.exec("BEGIN EXCLUSIVE");

  const auto start = std::chrono::steady_clock::now();
  auto tx = (*store)->begin(TxMode::kWrite);
  ASSERT_FALSE(tx);
  EXPECT_EQ(tx.error().code(), codes::kStoreBusy) << tx.error().to_string();
  EXPECT_TRUE(tx.error().retryable());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_FALSE((*store)->poisoned());
  // Reads are not blocked by the other writer (WAL).
  EXPECT_EQ(get(**store, "k0"), "v0");
  // Still busy on a retry while the lock is held; the failed begin left nothing behind.
  auto again = (*store)->begin(TxMode::kWrite);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), codes::kStoreBusy);

  other.exec("COMMIT");
  ASSERT_TRUE(put(**store, "after", "1"));
  EXPECT_EQ(get(**store, "after"), "1");
}

TEST_F(SqliteBadInputTest, OpeningALockedNewDatabaseGivesRetryableBusyUntilReleased) {
  // A rollback-journal database (not yet keel's) exclusively locked by another connection: keel cannot
  // even read its header.
  auto other = std::make_unique<RawDb>(path());
  other->exec("BEGIN EXCLUSIVE");
  auto store = open_sqlite_store(options());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code(), codes::kStoreBusy) << store.error().to_string();
  EXPECT_TRUE(store.error().retryable());

  other->exec("COMMIT");
  other.reset();
  auto reopened = open_sqlite_store(options());
  ASSERT_TRUE(reopened) << reopened.error().to_string();
  EXPECT_EQ((*reopened)->schema_version(), current_schema_version());
  ASSERT_TRUE(put(**reopened, "k", "v"));
}

// ---------------------------------------------------------------------------------------------------
// Oversized values

TEST_F(SqliteBadInputTest, OversizedValueIsRefusedBeforeItIsWritten) {
  SqliteStoreOptions opts = options();
  opts.max_value_bytes = 100;
  {
    auto store = open_sqlite_store(opts);
    ASSERT_TRUE(store) << store.error().to_string();
    auto tx = (*store)->begin(TxMode::kWrite);
    ASSERT_TRUE(tx) << tx.error().to_string();
    ASSERT_TRUE((*tx)->execute(kInsert, {"small", "ok", 1}));
    ASSERT_TRUE((*tx)->execute(kInsert, {"exact", std::string(100, 'e'), 1}));  // at the limit is fine

    auto text = (*tx)->execute(kInsert, {"text", std::string(101, 't'), 1});
    ASSERT_FALSE(text);
    EXPECT_EQ(text.error().code(), codes::kStorePayloadTooLarge) << text.error().to_string();
    auto blob = (*tx)->execute(
        "INSERT INTO credentials (id, shape, nonce, ciphertext, created_at, rotated_at) VALUES (?, ?, ?, ?, "
        "?, ?)",
        {"c", "shape", Blob{"n"}, Blob{std::string(1000, 'b')}, 1, 1});
    ASSERT_FALSE(blob);
    EXPECT_EQ(blob.error().code(), codes::kStorePayloadTooLarge);
    // A large key is a value too.
    auto key = (*tx)->execute(kInsert, {std::string(200, 'k'), "v", 1});
    ASSERT_FALSE(key);
    EXPECT_EQ(key.error().code(), codes::kStorePayloadTooLarge);

    // The transaction is still usable and commits what it did write.
    ASSERT_TRUE((*tx)->execute(kInsert, {"small2", "ok", 1}));
    ASSERT_TRUE((*tx)->commit());
    EXPECT_FALSE((*store)->poisoned());

    // Read transactions apply the bound as well.
    auto read = (*store)->begin(TxMode::kRead);
    ASSERT_TRUE(read);
    auto query = (*read)->query("SELECT count(*) FROM settings WHERE value = ?", {std::string(500, 'q')});
    ASSERT_FALSE(query);
    EXPECT_EQ(query.error().code(), codes::kStorePayloadTooLarge);
  }
  auto store = open_sqlite_store(options());
  ASSERT_TRUE(store) << store.error().to_string();
  EXPECT_EQ(count_settings(**store), 3);
  EXPECT_EQ(get(**store, "text"), std::nullopt);
  EXPECT_EQ(get(**store, "small"), "ok");
  EXPECT_EQ(get(**store, "small2"), "ok");
  EXPECT_EQ(get(**store, "exact"), std::string(100, 'e'));
  auto tx = (*store)->begin(TxMode::kRead);
  ASSERT_TRUE(tx);
  auto creds = (*tx)->query_one("SELECT count(*) FROM credentials");
  ASSERT_TRUE(creds && *creds);
  EXPECT_EQ((*creds)->integer(0), 0);
}

// ---------------------------------------------------------------------------------------------------
// Unusable paths

TEST_F(SqliteBadInputTest, PathInMissingDirectoryFailsToOpen) {
  const std::string missing = dir_.file("no/such/dir/keel.db");
  auto store = open_sqlite_store(SqliteStoreOptions{.path = missing});
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code(), codes::kStoreOpen) << store.error().to_string();
  EXPECT_FALSE(fs::exists(dir_.file("no")));
}

TEST_F(SqliteBadInputTest, PathThatIsADirectoryFailsWithACodedError) {
  const std::string directory = dir_.file("adir");
  fs::create_directory(directory);
  auto store = open_sqlite_store(SqliteStoreOptions{.path = directory});
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code(), codes::kStoreOpen) << store.error().to_string();
  EXPECT_TRUE(fs::is_directory(directory));
}

}  // namespace
}  // namespace keel
