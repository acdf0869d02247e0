// The store's files are private (issue 15, point 7): created 0700 / 0600 whatever the umask, and an existing
// store that others may read is reported with store.not_private.
#include "cli/store_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/engine_host.h"
#include "keel/error_codes.h"
#include "testing/file_modes.h"
#include "testing/temp_dir.h"

namespace keel::cli {
namespace {

namespace fs = std::filesystem;
using testing::mode_of;

TEST(StoreFilesTest, ANewStoreItsDirectoriesWalAndShmArePrivateUnderUmask022) {
  const testing::UmaskScope umask(022);
  testing::TempDir dir;
  config::Config config;
  config.data_dir = dir.path() / "share" / "keel";
  config.store_path = config.data_dir / "keel.db";
  {
    auto handle = open_store(config, /*exclusive=*/true);
    ASSERT_TRUE(handle) << handle.error().to_string();
    // A write, so that SQLite has its -wal and -shm open.
    auto tx = handle->store->begin(TxMode::kWrite);
    ASSERT_TRUE(tx) << tx.error().to_string();
    ASSERT_TRUE((*tx)->commit());
    EXPECT_EQ(mode_of(dir.path() / "share"), 0700u);
    EXPECT_EQ(mode_of(config.data_dir), 0700u);
    EXPECT_EQ(mode_of(config.store_path), 0600u);
    EXPECT_EQ(mode_of(config.store_path.string() + "-wal"), 0600u);
    EXPECT_EQ(mode_of(config.store_path.string() + "-shm"), 0600u);
  }
  EXPECT_EQ(mode_of(config.store_path), 0600u);
}

TEST(StoreFilesTest, AnExistingStoreOthersCanReadIsWarnedAboutAndLeftAsItIs) {
  testing::TempDir dir;
  const fs::path store = dir.path() / "data" / "keel.db";
  fs::create_directories(store.parent_path());
  ASSERT_EQ(::chmod(store.parent_path().c_str(), 0755), 0);
  std::ofstream(store).close();
  ASSERT_EQ(::chmod(store.c_str(), 0644), 0);
  auto warnings = prepare_store_files(store);
  ASSERT_TRUE(warnings) << warnings.error().to_string();
  ASSERT_EQ(warnings->size(), 2u);
  EXPECT_EQ((*warnings)[0].code(), codes::kStoreNotPrivate);
  EXPECT_NE((*warnings)[0].message().find("has mode 0755"), std::string::npos) << (*warnings)[0].message();
  EXPECT_EQ((*warnings)[1].code(), codes::kStoreNotPrivate);
  EXPECT_NE((*warnings)[1].message().find(store.string() + " has mode 0644"), std::string::npos)
      << (*warnings)[1].message();
  EXPECT_EQ(mode_of(store), 0644u);  // warned about, not changed behind the person's back
}

TEST(StoreFilesTest, APrivateStoreGetsNoWarning) {
  testing::TempDir dir;
  const fs::path store = dir.path() / "data" / "keel.db";
  auto first = prepare_store_files(store);
  ASSERT_TRUE(first) << first.error().to_string();
  EXPECT_TRUE(first->empty());
  auto again = prepare_store_files(store);
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_TRUE(again->empty());
}

}  // namespace
}  // namespace keel::cli
