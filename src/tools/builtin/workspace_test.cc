// Tests for Workspace (tools/builtin/workspace.h): path confinement, bounded reads, atomic writes.
#include "tools/builtin/workspace.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "keel/error_codes.h"
#include "testing/temp_dir.h"
#include "tools/builtin/tool_test_util.h"
#include "tools/tool_errors.h"

namespace keel::builtin {
namespace {

namespace fs = std::filesystem;
using test::read_text;
using test::write_text;

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = temp_.path() / "root";
    outside_ = temp_.path() / "outside";
    fs::create_directories(root_ / "src");
    fs::create_directories(outside_);
    write_text(root_ / "src" / "main.cc", "int main() {}\n");
    write_text(outside_ / "secret.txt", "secret\n");
    auto workspace = Workspace::open(root_, WorkspaceLimits{.max_file_bytes = 64});
    ASSERT_TRUE(workspace.has_value()) << workspace.error().to_string();
    workspace_ = *workspace;
  }

  void expect_outside(std::string_view path) {
    auto resolved = workspace_->resolve(path);
    ASSERT_FALSE(resolved.has_value()) << path << " resolved to " << resolved->absolute;
    EXPECT_EQ(resolved.error().code(), codes::kWorkspacePathOutside) << resolved.error().to_string();
  }

  testing::TempDir temp_;
  fs::path root_;
  fs::path outside_;
  std::shared_ptr<const Workspace> workspace_;
};

TEST_F(WorkspaceTest, OpenKeepsTheCanonicalRoot) {
  fs::create_directory_symlink(root_, temp_.path() / "via-link");
  auto workspace = Workspace::open(temp_.path() / "via-link" / "src" / "..");
  ASSERT_TRUE(workspace.has_value());
  EXPECT_EQ((*workspace)->root(), fs::canonical(root_));
}

TEST_F(WorkspaceTest, OpenRefusesAMissingRootOrAFile) {
  auto missing = Workspace::open(temp_.path() / "nope");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), codes::kWorkspaceNotFound);
  auto file = Workspace::open(root_ / "src" / "main.cc");
  ASSERT_FALSE(file.has_value());
  EXPECT_EQ(file.error().code(), codes::kWorkspaceNotFound);
}

TEST_F(WorkspaceTest, ResolvesRelativePathsInsideTheRoot) {
  auto resolved = workspace_->resolve("src/main.cc");
  ASSERT_TRUE(resolved.has_value());
  EXPECT_EQ(resolved->relative, "src/main.cc");
  EXPECT_EQ(resolved->absolute, fs::canonical(root_) / "src" / "main.cc");
  EXPECT_EQ(workspace_->resolve("")->relative, ".");
  EXPECT_EQ(workspace_->resolve(".")->relative, ".");
  EXPECT_EQ(workspace_->resolve("src/")->relative, "src");
  EXPECT_EQ(workspace_->resolve("not/yet/there.txt")->relative, "not/yet/there.txt");
}

TEST_F(WorkspaceTest, DotDotThatStaysInsideIsAllowed) {
  EXPECT_EQ(workspace_->resolve("src/../src/main.cc")->relative, "src/main.cc");
  EXPECT_EQ(workspace_->resolve("missing/../src")->relative, "src");
}

TEST_F(WorkspaceTest, DotDotEscapesAreRefused) {
  expect_outside("..");
  expect_outside("../outside/secret.txt");
  expect_outside("src/../../outside/secret.txt");
  expect_outside("missing/../../outside");
  expect_outside("src/../../root-sibling.txt");
}

TEST_F(WorkspaceTest, AbsolutePathsOutsideAreRefusedAndInsideAllowed) {
  expect_outside((outside_ / "secret.txt").string());
  expect_outside("/etc/passwd");
  expect_outside("/");
  auto inside = workspace_->resolve((root_ / "src" / "main.cc").string());
  ASSERT_TRUE(inside.has_value());
  EXPECT_EQ(inside->relative, "src/main.cc");
}

TEST_F(WorkspaceTest, SiblingWithTheRootAsNamePrefixIsOutside) {
  fs::create_directories(temp_.path() / "root2");
  expect_outside((temp_.path() / "root2").string());
  expect_outside("../root2");
}

TEST_F(WorkspaceTest, SymlinksPointingOutsideAreRefused) {
  fs::create_directory_symlink(outside_, root_ / "link");
  fs::create_symlink(outside_ / "secret.txt", root_ / "secret-link.txt");
  expect_outside("link");
  expect_outside("link/secret.txt");
  expect_outside("link/not-yet.txt");
  expect_outside("secret-link.txt");
}

TEST_F(WorkspaceTest, SymlinksInsideResolveToTheirTarget) {
  fs::create_directory_symlink(root_ / "src", root_ / "code");
  auto resolved = workspace_->resolve("code/main.cc");
  ASSERT_TRUE(resolved.has_value());
  EXPECT_EQ(resolved->relative, "src/main.cc");
}

TEST_F(WorkspaceTest, NulInAPathIsInvalid) {
  auto resolved = workspace_->resolve(std::string_view("a\0b", 3));
  ASSERT_FALSE(resolved.has_value());
  EXPECT_EQ(resolved.error().code(), codes::kInvalidArgument);
}

TEST_F(WorkspaceTest, ResolveForWriteRefusesTheRootAndEscapes) {
  auto root = workspace_->resolve_for_write(".");
  ASSERT_FALSE(root.has_value());
  EXPECT_EQ(root.error().code(), codes::kWorkspaceNotAFile);
  fs::create_directory_symlink(outside_, root_ / "link");
  auto through_link = workspace_->resolve_for_write("link/new.txt");
  ASSERT_FALSE(through_link.has_value());
  EXPECT_EQ(through_link.error().code(), codes::kWorkspacePathOutside);
  auto up = workspace_->resolve_for_write("../new.txt");
  ASSERT_FALSE(up.has_value());
  EXPECT_EQ(up.error().code(), codes::kWorkspacePathOutside);
}

TEST_F(WorkspaceTest, ReadTextReturnsTheContent) {
  EXPECT_EQ(workspace_->read_text(*workspace_->resolve("src/main.cc")).value(), "int main() {}\n");
}

TEST_F(WorkspaceTest, ReadTextRefusesMissingFoldersLargeAndBinaryFiles) {
  write_text(root_ / "big.txt", std::string(65, 'x'));
  write_text(root_ / "exact.txt", std::string(64, 'x'));
  write_text(root_ / "blob.bin", std::string("a\0b", 3));
  const auto code_of = [&](const char* path) {
    return workspace_->read_text(*workspace_->resolve(path)).error().code();
  };
  EXPECT_EQ(code_of("nope.txt"), codes::kWorkspaceNotFound);
  EXPECT_EQ(code_of("src"), codes::kWorkspaceNotAFile);
  EXPECT_EQ(code_of("big.txt"), codes::kWorkspaceTooLarge);
  EXPECT_EQ(code_of("blob.bin"), codes::kWorkspaceBinaryFile);
  EXPECT_TRUE(workspace_->read_text(*workspace_->resolve("exact.txt")).has_value());
}

TEST_F(WorkspaceTest, WriteAtomicallyCreatesFoldersAndLeavesNoTemporaryFile) {
  auto target = workspace_->resolve_for_write("a/b/c.txt");
  ASSERT_TRUE(target.has_value());
  ASSERT_TRUE(workspace_->write_atomically(*target, "hello").has_value());
  EXPECT_EQ(read_text(root_ / "a" / "b" / "c.txt"), "hello");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(root_ / "a" / "b")) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST_F(WorkspaceTest, WriteAtomicallyReplacesTheFileInsteadOfRewritingIt) {
  // A second hard link keeps the old inode: rename() swaps in a new file, an in-place write would not.
  write_text(root_ / "f.txt", "old");
  fs::create_hard_link(root_ / "f.txt", temp_.path() / "old-inode.txt");
  ASSERT_TRUE(workspace_->write_atomically(*workspace_->resolve_for_write("f.txt"), "new").has_value());
  EXPECT_EQ(read_text(root_ / "f.txt"), "new");
  EXPECT_EQ(read_text(temp_.path() / "old-inode.txt"), "old");
}

TEST_F(WorkspaceTest, WriteAtomicallyKeepsPermissionBits) {
  write_text(root_ / "run.sh", "#!/bin/sh\n");
  fs::permissions(root_ / "run.sh", fs::perms::owner_all | fs::perms::group_read);
  ASSERT_TRUE(workspace_->write_atomically(*workspace_->resolve_for_write("run.sh"), "#!/bin/sh\necho\n")
                  .has_value());
  EXPECT_EQ(fs::status(root_ / "run.sh").permissions() & fs::perms::mask,
            fs::perms::owner_all | fs::perms::group_read);
}

TEST_F(WorkspaceTest, WriteAtomicallyRefusesAFolderInTheWay) {
  auto result = workspace_->write_atomically(*workspace_->resolve_for_write("src"), "x");
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kWorkspaceNotAFile);
  EXPECT_TRUE(fs::is_directory(root_ / "src"));
}

TEST_F(WorkspaceTest, WriteThroughADanglingSymlinkedFolderNeverLandsOutside) {
  // resolve() cannot see through "out" while its target is missing; the write must still not escape.
  fs::create_directory_symlink(outside_ / "later", root_ / "out");
  auto target = workspace_->resolve_for_write("out/new.txt");
  if (target.has_value()) {
    auto written = workspace_->write_atomically(*target, "x");
    ASSERT_FALSE(written.has_value());
    EXPECT_TRUE(written.error().code() == codes::kWorkspacePathOutside ||
                written.error().code() == codes::kWorkspaceIo)
        << written.error().to_string();
  }
  EXPECT_FALSE(fs::exists(outside_ / "later" / "new.txt"));
}

TEST_F(WorkspaceTest, WriteOntoADanglingSymlinkReplacesTheLinkNotItsTarget) {
  fs::create_symlink(outside_ / "planted.txt", root_ / "planted.txt");
  auto target = workspace_->resolve_for_write("planted.txt");
  ASSERT_TRUE(target.has_value());
  ASSERT_TRUE(workspace_->write_atomically(*target, "x").has_value());
  EXPECT_FALSE(fs::exists(outside_ / "planted.txt"));
  EXPECT_FALSE(fs::is_symlink(root_ / "planted.txt"));
  EXPECT_EQ(read_text(root_ / "planted.txt"), "x");
}

}  // namespace
}  // namespace keel::builtin
