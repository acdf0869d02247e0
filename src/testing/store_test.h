// testing/store_test.h — the common ground of store tests: a fresh SQLite store per test (synchronous=OFF,
// tests need no durability), a manual clock, and helpers for results.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "store/thread_repository.h"
#include "testing/manual_clock.h"
#include "testing/temp_dir.h"

namespace keel::testing {

// The value of a successful result; a failed one throws, which GoogleTest reports with the error.
template <typename T>
T must(Result<T> result) {
  if (!result) throw std::runtime_error(result.error().to_string());
  return std::move(result).value();
}
inline void must(Result<void> result) {
  if (!result) throw std::runtime_error(result.error().to_string());
}
// "ok" for a success, the error code otherwise.
template <typename T>
std::string code_of(const Result<T>& result) {
  return result ? "ok" : result.error().code();
}

class StoreTest : public ::testing::Test {
 protected:
  // Closes and opens the store again (what a restart does).
  void reopen() {
    store_.reset();
    store_ = must(open_sqlite_store(options_));
  }
  std::unique_ptr<Transaction> begin(TxMode mode = TxMode::kWrite) { return must(store_->begin(mode)); }

  TempDir dir_;
  ManualClock clock_;
  SqliteStoreOptions options_{.path = dir_.file("t.db"), .synchronous = Synchronous::kOff};
  std::unique_ptr<Store> store_;
  ThreadRepository threads_{clock_};
};

}  // namespace keel::testing
