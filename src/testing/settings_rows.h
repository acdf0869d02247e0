// testing/settings_rows.h — the store tests' simplest data: rows of the `settings` table, written one per
// transaction and read back through a fresh read transaction.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "keel/store.h"

namespace keel::testing {

inline constexpr char kInsertSetting[] = "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)";

// Commits one transaction inserting settings row `key` = `value`.
inline Result<void> put(Store& store, const std::string& key, const std::string& value) {
  auto tx = KEEL_TRY(store.begin(TxMode::kWrite));
  KEEL_TRY(tx->execute(kInsertSetting, {key, value, 1}));
  return tx->commit();
}

// The value of settings row `key` as a fresh read transaction sees it.
inline std::optional<std::string> get(Store& store, const std::string& key) {
  auto tx = store.begin(TxMode::kRead);
  EXPECT_TRUE(tx) << tx.error().to_string();
  if (!tx) return std::nullopt;
  auto row = (*tx)->query_one("SELECT value FROM settings WHERE key = ?", {key});
  EXPECT_TRUE(row) << row.error().to_string();
  if (!row || !*row) return std::nullopt;
  return (*row)->text(0);
}

}  // namespace keel::testing
