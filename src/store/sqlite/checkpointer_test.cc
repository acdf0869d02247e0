#include "store/sqlite/checkpointer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "testing/temp_dir.h"

namespace keel::sqlite {
namespace {

class CheckpointerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Connection> open() {
    auto connection = Connection::open(dir_.file("c.db"), Connection::Access::kReadWrite, 1000, 1 << 20);
    EXPECT_TRUE(connection);
    return connection ? std::move(*connection) : nullptr;
  }
  testing::TempDir dir_;
};

TEST_F(CheckpointerTest, ARequestCopiesTheWalIntoTheDatabaseOnItsOwnThread) {
  auto writer = open();
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->exec("PRAGMA journal_mode=WAL"));
  ASSERT_TRUE(writer->exec("PRAGMA wal_autocheckpoint=0"));
  ASSERT_TRUE(writer->exec("CREATE TABLE t (x TEXT)"));
  for (int i = 0; i < 50; ++i) {
    const SqlValue row(std::string(3000, static_cast<char>('a' + i % 26)));
    ASSERT_TRUE(writer->execute("INSERT INTO t VALUES (?)", std::span<const SqlValue>(&row, 1), false));
  }
  // Until a checkpoint copies them, the rows live only in the WAL: the database file stays small.
  const auto db_size = [&] { return std::filesystem::file_size(dir_.file("c.db")); };
  const uintmax_t before = db_size();
  ASSERT_LT(before, 50u * 3000u);
  Checkpointer checkpointer(open());
  EXPECT_EQ(checkpointer.completed(), 0u) << "nothing runs before a request";
  EXPECT_EQ(db_size(), before);
  checkpointer.request();
  for (int i = 0; i < 2000 && checkpointer.completed() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(checkpointer.completed(), 1u);
  EXPECT_GT(db_size(), 50u * 3000u) << "the background checkpoint copied the rows into the database file";
}

}  // namespace
}  // namespace keel::sqlite
