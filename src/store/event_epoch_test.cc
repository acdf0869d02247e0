#include "store/event_epoch.h"

#include <gtest/gtest.h>

#include <memory>

#include "keel/error_codes.h"
#include "keel/sqlite_store.h"
#include "testing/manual_clock.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

class EventEpochTest : public ::testing::Test {
 protected:
  void SetUp() override { reopen(); }
  void reopen() {
    store_.reset();
    auto store =
        open_sqlite_store(SqliteStoreOptions{.path = dir_.file("e.db"), .synchronous = Synchronous::kOff});
    ASSERT_TRUE(store) << store.error().to_string();
    store_ = std::move(*store);
  }
  Result<uint64_t> take() {
    auto tx = KEEL_TRY(store_->begin(TxMode::kWrite));
    const uint64_t epoch = KEEL_TRY(take_event_epoch(*tx, clock_));
    KEEL_TRY(tx->commit());
    return epoch;
  }

  testing::TempDir dir_;
  testing::ManualClock clock_;
  std::unique_ptr<Store> store_;
};

TEST_F(EventEpochTest, EveryTakeIsAboveTheLastOneAlsoAfterReopening) {
  EXPECT_EQ(take().value_or(0), 1u);
  EXPECT_EQ(take().value_or(0), 2u);
  reopen();
  EXPECT_EQ(take().value_or(0), 3u);
  auto tx = store_->begin(TxMode::kRead);
  ASSERT_TRUE(tx);
  EXPECT_EQ(stored_event_epoch(**tx).value_or(0), 3u);
}

TEST_F(EventEpochTest, AnUncommittedTakeIsNotKept) {
  {
    auto tx = store_->begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    EXPECT_EQ(take_event_epoch(**tx, clock_).value_or(0), 1u);
  }  // rolled back
  EXPECT_EQ(take().value_or(0), 1u);
}

TEST_F(EventEpochTest, ADamagedValueIsADecodeError) {
  {
    auto tx = store_->begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE((*tx)->execute("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)",
                               {std::string(kEventEpochKey), std::string("-3x"), int64_t{1}}));
    ASSERT_TRUE((*tx)->commit());
  }
  auto taken = take();
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code(), codes::kStoreDecode);
}

}  // namespace
}  // namespace keel
