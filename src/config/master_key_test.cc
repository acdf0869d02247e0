#include "config/master_key.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "config/config_errors.h"
#include "testing/temp_dir.h"

namespace keel::config {
namespace {

namespace fs = std::filesystem;

void write_key_file(const fs::path& path, size_t bytes, fs::perms perms) {
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string(bytes, 'k');
  }
  fs::permissions(path, perms, fs::perm_options::replace);
}

std::string code_of(const Result<MasterKey>& key) { return key ? "ok" : key.error().code(); }

class MasterKeyTest : public ::testing::Test {
 protected:
  fs::path key_path() const { return dir_.path() / "data" / "master.key"; }
  keel::testing::TempDir dir_;
};

TEST_F(MasterKeyTest, MissingKeyFileIsCreatedOwnerOnlyWithThirtyTwoRandomBytes) {
  auto created = MasterKey::load_or_create(key_path());
  ASSERT_TRUE(created) << created.error().to_string();
  EXPECT_EQ(created->key().size(), MasterKey::kBytes);
  EXPECT_FALSE(created->key() == Secret::zeroed(MasterKey::kBytes));
  EXPECT_EQ(fs::file_size(key_path()), MasterKey::kBytes);
  EXPECT_EQ(fs::status(key_path()).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::status(key_path().parent_path()).permissions() & fs::perms::all, fs::perms::owner_all)
      << "a directory created for the key is private too";
  std::vector<std::string> leftovers;
  for (const auto& entry : fs::directory_iterator(key_path().parent_path())) {
    leftovers.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(leftovers, std::vector<std::string>{"master.key"}) << "no temporary file is left behind";
}

TEST_F(MasterKeyTest, ExistingKeyIsLoadedAgainWithTheSameKeyId) {
  auto first = MasterKey::load_or_create(key_path());
  ASSERT_TRUE(first) << first.error().to_string();
  auto again = MasterKey::load_or_create(key_path());
  ASSERT_TRUE(again) << again.error().to_string();
  auto loaded = MasterKey::load(key_path());
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  EXPECT_TRUE(first->key() == again->key());
  EXPECT_EQ(first->key_id(), loaded->key_id());
  EXPECT_EQ(first->key_id().size(), 32u);
  EXPECT_EQ(first->key_id().find(std::string(first->key().reveal())), std::string::npos);
}

TEST_F(MasterKeyTest, DifferentKeysHaveDifferentIds) {
  auto a = MasterKey::generate();
  auto b = MasterKey::generate();
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->key_id(), b->key_id());
}

TEST_F(MasterKeyTest, KeyFileReadableOrWritableByOthersIsRefused) {
  fs::create_directories(key_path().parent_path());
  for (fs::perms extra : {fs::perms::group_read, fs::perms::others_read, fs::perms::group_write,
                          fs::perms::others_write, fs::perms::others_exec}) {
    write_key_file(key_path(), MasterKey::kBytes, fs::perms::owner_read | fs::perms::owner_write | extra);
    auto key = MasterKey::load_or_create(key_path());
    ASSERT_FALSE(key);
    EXPECT_EQ(key.error().code(), codes::kKeyFilePermissions);
    EXPECT_NE(key.error().message().find(key_path().string()), std::string::npos) << key.error().message();
    EXPECT_NE(key.error().message().find("chmod 600"), std::string::npos);
  }
  write_key_file(key_path(), MasterKey::kBytes, fs::perms::owner_read);
  EXPECT_EQ(code_of(MasterKey::load(key_path())), "ok") << "narrower than 0600 is fine";
}

TEST_F(MasterKeyTest, KeyFileOfTheWrongSizeIsRefused) {
  fs::create_directories(key_path().parent_path());
  for (size_t size : {size_t{0}, MasterKey::kBytes - 1, MasterKey::kBytes + 1, size_t{64}}) {
    write_key_file(key_path(), size, fs::perms::owner_read | fs::perms::owner_write);
    EXPECT_EQ(code_of(MasterKey::load_or_create(key_path())), codes::kKeyFileSize) << size;
  }
  EXPECT_EQ(fs::file_size(key_path()), 64u) << "a refused file is left as it is";
}

TEST_F(MasterKeyTest, SymlinkAndDirectoryAreUnsafe) {
  fs::create_directories(key_path().parent_path());
  const fs::path real = dir_.path() / "real.key";
  write_key_file(real, MasterKey::kBytes, fs::perms::owner_read | fs::perms::owner_write);
  fs::create_symlink(real, key_path());
  EXPECT_EQ(code_of(MasterKey::load_or_create(key_path())), codes::kKeyFileUnsafe);
  fs::remove(key_path());
  fs::create_directory(key_path());
  EXPECT_EQ(code_of(MasterKey::load_or_create(key_path())), codes::kKeyFileUnsafe);
}

TEST_F(MasterKeyTest, LoadDoesNotCreate) {
  EXPECT_EQ(code_of(MasterKey::load(key_path())), codes::kKeyFileIo);
  EXPECT_FALSE(fs::exists(key_path()));
}

TEST_F(MasterKeyTest, ConcurrentCreatorsAgreeOnOneKey) {
  constexpr int kRounds = 10;
  constexpr int kThreads = 4;
  for (int round = 0; round < kRounds; ++round) {
    const fs::path path = dir_.path() / ("race-" + std::to_string(round)) / "master.key";
    std::vector<std::string> ids(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        auto key = MasterKey::load_or_create(path);
        ids[t] = key ? key->key_id() : key.error().to_string();
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(ids[t], ids[0]) << "round " << round;
    auto final_key = MasterKey::load(path);
    ASSERT_TRUE(final_key) << final_key.error().to_string();
    EXPECT_EQ(final_key->key_id(), ids[0]);
  }
}

}  // namespace
}  // namespace keel::config
