#include "util/private_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "testing/file_modes.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

namespace fs = std::filesystem;
using testing::mode_of;
using testing::read_all;

constexpr PrivateFileCodes kCodes{
    .io = "test.io", .unsafe = "test.unsafe", .permissions = "test.permissions"};

TEST(PrivateFileTest, MissingDirectoriesAreCreated0700AndExistingOnesLeftAlone) {
  const testing::UmaskScope umask(0);  // the widest: mkdir would give 0700 only because it is asked for
  testing::TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  ASSERT_TRUE(create_private_directories(dir.path() / "a" / "b", "test.io"));
  EXPECT_EQ(mode_of(dir.path()), 0755u);
  EXPECT_EQ(mode_of(dir.path() / "a"), 0700u);
  EXPECT_EQ(mode_of(dir.path() / "a" / "b"), 0700u);
  ASSERT_TRUE(create_private_directories(dir.path() / "a" / "b", "test.io"));  // exists: fine
}

TEST(PrivateFileTest, AWrittenFileIsWhole0600AndLeavesNoTemporary) {
  const testing::UmaskScope umask(0);
  testing::TempDir dir;
  const fs::path path = dir.path() / "token";
  ASSERT_TRUE(write_private_file(path, "secret\n", "the token file", kCodes));
  EXPECT_EQ(read_all(path), "secret\n");
  EXPECT_EQ(mode_of(path), 0600u);
  ASSERT_TRUE(write_private_file(path, "second\n", "the token file", kCodes));
  EXPECT_EQ(read_all(path), "second\n");
  size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST(PrivateFileTest, ASymlinkAtThePathIsReplacedNotFollowed) {
  testing::TempDir dir;
  const fs::path target = dir.path() / "victim";
  std::ofstream(target) << "precious\n";
  const fs::path path = dir.path() / "token";
  fs::create_symlink(target, path);
  ASSERT_TRUE(write_private_file(path, "secret\n", "the token file", kCodes));
  EXPECT_EQ(read_all(target), "precious\n");
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(read_all(path), "secret\n");
}

TEST(PrivateFileTest, TemporariesGetFreshNamesCreatedExclusively) {
  testing::TempDir dir;
  const fs::path target = dir.path() / "token";
  auto one = create_unique_temporary(target, "test.io");
  auto two = create_unique_temporary(target, "test.io");
  ASSERT_TRUE(one && two);
  EXPECT_NE(one->path, two->path);
  EXPECT_TRUE(one->path.filename().string().starts_with("token.tmp-"));
  EXPECT_EQ(mode_of(one->path), 0600u);
}

TEST(PrivateFileTest, OpenRefusesASymlinkAFifoAndAFileOthersMayAccess) {
  testing::TempDir dir;
  bool missing = false;
  const fs::path good = dir.path() / "good";
  ASSERT_TRUE(write_private_file(good, "x", "the file", kCodes));
  EXPECT_TRUE(open_private_file(good, "the file", kCodes, missing));

  const fs::path link = dir.path() / "link";
  fs::create_symlink(good, link);
  auto linked = open_private_file(link, "the file", kCodes, missing);
  ASSERT_FALSE(linked);
  EXPECT_EQ(linked.error().code(), "test.unsafe");
  EXPECT_FALSE(missing);

  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto piped = open_private_file(fifo, "the file", kCodes, missing);
  ASSERT_FALSE(piped);
  EXPECT_EQ(piped.error().code(), "test.unsafe");

  for (const mode_t mode : {0640u, 0604u, 0620u, 0666u}) {
    ASSERT_EQ(::chmod(good.c_str(), mode), 0);
    auto open = open_private_file(good, "the file", kCodes, missing);
    ASSERT_FALSE(open) << mode;
    EXPECT_EQ(open.error().code(), "test.permissions");
  }

  auto absent = open_private_file(dir.path() / "absent", "the file", kCodes, missing);
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().code(), "test.io");
  EXPECT_TRUE(missing);
}

TEST(PrivateFileTest, OpenRefusesAFileOfAnotherUser) {
  testing::TempDir dir;
  bool missing = false;
  fs::path theirs = dir.path() / "theirs";
  if (::geteuid() == 0) {
    ASSERT_TRUE(write_private_file(theirs, "x", "the file", kCodes));
    ASSERT_EQ(::chown(theirs.c_str(), 4242, 4242), 0);
  } else {
    theirs = "/etc/passwd";  // root's
  }
  auto open = open_private_file(theirs, "the file", kCodes, missing);
  ASSERT_FALSE(open);
  EXPECT_EQ(open.error().code(), "test.unsafe");
  EXPECT_NE(open.error().message().find("belongs to user"), std::string::npos) << open.error().message();
}

}  // namespace
}  // namespace keel
