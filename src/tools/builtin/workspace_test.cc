// Tests for Workspace (tools/builtin/workspace.h): path confinement, bounded reads, atomic writes.
#include "tools/builtin/workspace.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
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

// Every test runs twice: with openat2, and with the O_NOFOLLOW walk that stands in for it where the kernel
// has no openat2.
class WorkspaceTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    root_ = temp_.path() / "root";
    outside_ = temp_.path() / "outside";
    fs::create_directories(root_ / "src");
    fs::create_directories(outside_);
    write_text(root_ / "src" / "main.cc", "int main() {}\n");
    write_text(outside_ / "secret.txt", "secret\n");
    auto workspace = Workspace::open(root_, WorkspaceLimits{.max_file_bytes = 64}, hooks());
    ASSERT_TRUE(workspace.has_value()) << workspace.error().to_string();
    workspace_ = *workspace;
  }

  void expect_outside(std::string_view path) {
    auto resolved = workspace_->resolve(path);
    ASSERT_FALSE(resolved.has_value()) << path << " resolved to " << resolved->absolute;
    EXPECT_EQ(resolved.error().code(), codes::kWorkspacePathOutside) << resolved.error().to_string();
  }

  WorkspaceTestHooks hooks(std::function<void(std::string_view)> between = {}) const {
    WorkspaceTestHooks hooks;
    hooks.force_descriptor_walk = GetParam();
    hooks.between_resolve_and_use = std::move(between);
    return hooks;
  }

  // Swaps root/<name> (a folder) and root/<name>-link (a symlink to the outside folder), as an attacker's
  // renameat2(RENAME_EXCHANGE) would.
  void swap_for_link(const std::string& name) {
    const std::string folder = (root_ / name).string();
    const std::string link = (root_ / (name + "-link")).string();
    if (!fs::is_symlink(link)) fs::create_directory_symlink(outside_, link);
    ASSERT_EQ(::renameat2(AT_FDCWD, folder.c_str(), AT_FDCWD, link.c_str(), RENAME_EXCHANGE), 0)
        << std::strerror(errno);
  }

  testing::TempDir temp_;
  fs::path root_;
  fs::path outside_;
  std::shared_ptr<const Workspace> workspace_;
};

TEST_P(WorkspaceTest, OpenKeepsTheCanonicalRoot) {
  fs::create_directory_symlink(root_, temp_.path() / "via-link");
  auto workspace = Workspace::open(temp_.path() / "via-link" / "src" / "..");
  ASSERT_TRUE(workspace.has_value());
  EXPECT_EQ((*workspace)->root(), fs::canonical(root_));
}

TEST_P(WorkspaceTest, OpenRefusesAMissingRootOrAFile) {
  auto missing = Workspace::open(temp_.path() / "nope");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), codes::kWorkspaceNotFound);
  auto file = Workspace::open(root_ / "src" / "main.cc");
  ASSERT_FALSE(file.has_value());
  EXPECT_EQ(file.error().code(), codes::kWorkspaceNotFound);
}

TEST_P(WorkspaceTest, ResolvesRelativePathsInsideTheRoot) {
  auto resolved = workspace_->resolve("src/main.cc");
  ASSERT_TRUE(resolved.has_value());
  EXPECT_EQ(resolved->relative, "src/main.cc");
  EXPECT_EQ(resolved->absolute, fs::canonical(root_) / "src" / "main.cc");
  EXPECT_EQ(workspace_->resolve("")->relative, ".");
  EXPECT_EQ(workspace_->resolve(".")->relative, ".");
  EXPECT_EQ(workspace_->resolve("src/")->relative, "src");
  EXPECT_EQ(workspace_->resolve("not/yet/there.txt")->relative, "not/yet/there.txt");
}

TEST_P(WorkspaceTest, DotDotThatStaysInsideIsAllowed) {
  EXPECT_EQ(workspace_->resolve("src/../src/main.cc")->relative, "src/main.cc");
  EXPECT_EQ(workspace_->resolve("missing/../src")->relative, "src");
}

TEST_P(WorkspaceTest, DotDotEscapesAreRefused) {
  expect_outside("..");
  expect_outside("../outside/secret.txt");
  expect_outside("src/../../outside/secret.txt");
  expect_outside("missing/../../outside");
  expect_outside("src/../../root-sibling.txt");
}

TEST_P(WorkspaceTest, AbsolutePathsOutsideAreRefusedAndInsideAllowed) {
  expect_outside((outside_ / "secret.txt").string());
  expect_outside("/etc/passwd");
  expect_outside("/");
  auto inside = workspace_->resolve((root_ / "src" / "main.cc").string());
  ASSERT_TRUE(inside.has_value());
  EXPECT_EQ(inside->relative, "src/main.cc");
}

TEST_P(WorkspaceTest, SiblingWithTheRootAsNamePrefixIsOutside) {
  fs::create_directories(temp_.path() / "root2");
  expect_outside((temp_.path() / "root2").string());
  expect_outside("../root2");
}

TEST_P(WorkspaceTest, SymlinksPointingOutsideAreRefused) {
  fs::create_directory_symlink(outside_, root_ / "link");
  fs::create_symlink(outside_ / "secret.txt", root_ / "secret-link.txt");
  expect_outside("link");
  expect_outside("link/secret.txt");
  expect_outside("link/not-yet.txt");
  expect_outside("secret-link.txt");
}

TEST_P(WorkspaceTest, SymlinksAreNotFollowedEvenWhenTheyPointInside) {
  // A link inside may be repointed outside between any check and any use: no symlink is followed.
  fs::create_directory_symlink(root_ / "src", root_ / "code");
  fs::create_symlink(root_ / "src" / "main.cc", root_ / "main-link.cc");
  expect_outside("code/main.cc");
  expect_outside("main-link.cc");
  auto read = workspace_->read_text(WorkspacePath{root_ / "main-link.cc", "main-link.cc"});
  ASSERT_FALSE(read.has_value());
  EXPECT_EQ(read.error().code(), codes::kWorkspacePathOutside);
}

TEST_P(WorkspaceTest, NulInAPathIsInvalid) {
  auto resolved = workspace_->resolve(std::string_view("a\0b", 3));
  ASSERT_FALSE(resolved.has_value());
  EXPECT_EQ(resolved.error().code(), codes::kInvalidArgument);
}

TEST_P(WorkspaceTest, ResolveForWriteRefusesTheRootAndEscapes) {
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

TEST_P(WorkspaceTest, ReadTextReturnsTheContent) {
  EXPECT_EQ(workspace_->read_text(*workspace_->resolve("src/main.cc")).value(), "int main() {}\n");
}

TEST_P(WorkspaceTest, ReadTextRefusesMissingFoldersLargeAndBinaryFiles) {
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

TEST_P(WorkspaceTest, WriteAtomicallyCreatesFoldersAndLeavesNoTemporaryFile) {
  auto target = workspace_->resolve_for_write("a/b/c.txt");
  ASSERT_TRUE(target.has_value());
  ASSERT_TRUE(workspace_->write_atomically(*target, "hello").has_value());
  EXPECT_EQ(read_text(root_ / "a" / "b" / "c.txt"), "hello");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(root_ / "a" / "b")) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST_P(WorkspaceTest, WriteAtomicallyReplacesTheFileInsteadOfRewritingIt) {
  // A second hard link keeps the old inode: rename() swaps in a new file, an in-place write would not.
  write_text(root_ / "f.txt", "old");
  fs::create_hard_link(root_ / "f.txt", temp_.path() / "old-inode.txt");
  ASSERT_TRUE(workspace_->write_atomically(*workspace_->resolve_for_write("f.txt"), "new").has_value());
  EXPECT_EQ(read_text(root_ / "f.txt"), "new");
  EXPECT_EQ(read_text(temp_.path() / "old-inode.txt"), "old");
}

TEST_P(WorkspaceTest, WriteAtomicallyKeepsPermissionBits) {
  write_text(root_ / "run.sh", "#!/bin/sh\n");
  fs::permissions(root_ / "run.sh", fs::perms::owner_all | fs::perms::group_read);
  ASSERT_TRUE(workspace_->write_atomically(*workspace_->resolve_for_write("run.sh"), "#!/bin/sh\necho\n")
                  .has_value());
  EXPECT_EQ(fs::status(root_ / "run.sh").permissions() & fs::perms::mask,
            fs::perms::owner_all | fs::perms::group_read);
}

TEST_P(WorkspaceTest, WriteAtomicallyRefusesAFolderInTheWay) {
  auto result = workspace_->write_atomically(*workspace_->resolve_for_write("src"), "x");
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kWorkspaceNotAFile);
  EXPECT_TRUE(fs::is_directory(root_ / "src"));
}

TEST_P(WorkspaceTest, WriteThroughADanglingSymlinkedFolderNeverLandsOutside) {
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

TEST_P(WorkspaceTest, WriteOntoADanglingSymlinkReplacesTheLinkNotItsTarget) {
  fs::create_symlink(outside_ / "planted.txt", root_ / "planted.txt");
  auto target = workspace_->resolve_for_write("planted.txt");
  ASSERT_TRUE(target.has_value());
  ASSERT_TRUE(workspace_->write_atomically(*target, "x").has_value());
  EXPECT_FALSE(fs::exists(outside_ / "planted.txt"));
  EXPECT_FALSE(fs::is_symlink(root_ / "planted.txt"));
  EXPECT_EQ(read_text(root_ / "planted.txt"), "x");
}

// --- a concurrent attacker: a folder swapped for a symlink between the check and the use (issue 15) ---

TEST_P(WorkspaceTest, ReadOfAFolderSwappedForASymlinkAfterResolvingReadsNothingOutside) {
  write_text(root_ / "d" / "secret.txt", "inside\n");
  write_text(outside_ / "secret.txt", "OUTSIDE\n");
  auto path = workspace_->resolve("d/secret.txt");
  ASSERT_TRUE(path.has_value());
  swap_for_link("d");  // root/d is now a symlink to the outside folder
  auto read = workspace_->read_text(*path);
  ASSERT_FALSE(read.has_value()) << "read " << *read;
  EXPECT_EQ(read.error().code(), codes::kWorkspacePathOutside) << read.error().to_string();
}

TEST_P(WorkspaceTest, ReadOfAFolderSwappedOnceOpenedReadsTheFileThatWasOpened) {
  write_text(root_ / "d" / "secret.txt", "inside\n");
  write_text(outside_ / "secret.txt", "OUTSIDE\n");
  auto workspace = Workspace::open(root_, {}, hooks([&](std::string_view point) {
                                     if (point == "read.opened") swap_for_link("d");
                                   }))
                       .value();
  auto read = workspace->read_text(*workspace->resolve("d/secret.txt"));
  ASSERT_TRUE(read.has_value()) << read.error().to_string();
  EXPECT_EQ(*read, "inside\n");
  EXPECT_TRUE(fs::is_symlink(root_ / "d"));  // the swap did happen
}

TEST_P(WorkspaceTest, WriteIntoAFolderSwappedForASymlinkAfterResolvingWritesNothingOutside) {
  fs::create_directories(root_ / "d");
  auto path = workspace_->resolve_for_write("d/new.txt");
  ASSERT_TRUE(path.has_value());
  swap_for_link("d");
  auto written = workspace_->write_atomically(*path, "x");
  ASSERT_FALSE(written.has_value());
  EXPECT_EQ(written.error().code(), codes::kWorkspacePathOutside) << written.error().to_string();
  EXPECT_EQ(std::distance(fs::directory_iterator(outside_), fs::directory_iterator()), 1);  // secret.txt
}

TEST_P(WorkspaceTest, WriteIntoAFolderSwappedOnceOpenedLandsInThatFolderInside) {
  fs::create_directories(root_ / "d");
  auto workspace = Workspace::open(root_, {}, hooks([&](std::string_view point) {
                                     if (point == "write.folder_opened") swap_for_link("d");
                                   }))
                       .value();
  ASSERT_TRUE(workspace->write_atomically(*workspace->resolve_for_write("d/new.txt"), "x").has_value());
  EXPECT_EQ(std::distance(fs::directory_iterator(outside_), fs::directory_iterator()), 1);  // secret.txt
  EXPECT_EQ(read_text(root_ / "d-link" / "new.txt"), "x");  // the opened folder, now under the link's name
}

TEST_P(WorkspaceTest, WalkOfAFolderSwappedForASymlinkListsNothingOutside) {
  write_text(root_ / "d" / "inside.txt", "x");
  write_text(outside_ / "outside.txt", "x");
  auto path = workspace_->resolve("d");
  ASSERT_TRUE(path.has_value());
  swap_for_link("d");
  auto walked = workspace_->walk(*path, true, {}, [](const WorkspaceEntry& entry) {
    ADD_FAILURE() << "listed " << entry.relative;
    return true;
  });
  ASSERT_FALSE(walked.has_value());
  EXPECT_EQ(walked.error().code(), codes::kWorkspacePathOutside);
}

TEST_P(WorkspaceTest, WalkNeverEntersASubfolderSwappedForASymlinkDuringTheWalk) {
  write_text(root_ / "top" / "d" / "inside.txt", "x");
  write_text(outside_ / "outside.txt", "x");
  std::vector<std::string> listed;
  auto workspace = Workspace::open(root_, {}, hooks()).value();
  auto walked = workspace->walk(*workspace->resolve("top"), true, {}, [&](const WorkspaceEntry& entry) {
    listed.push_back(entry.relative);
    if (entry.relative == "top/d") {  // seen as a folder: swap it before the walk descends
      const std::string link = (root_ / "top" / "d-link").string();
      fs::create_directory_symlink(outside_, link);
      EXPECT_EQ(::renameat2(AT_FDCWD, (root_ / "top" / "d").c_str(), AT_FDCWD, link.c_str(), RENAME_EXCHANGE),
                0);
    }
    return true;
  });
  ASSERT_TRUE(walked.has_value()) << walked.error().to_string();
  for (const std::string& name : listed) EXPECT_EQ(name.find("outside"), std::string::npos) << name;
}

// --- hard links ---

TEST_P(WorkspaceTest, ReadOfAHardLinkOfAnotherUsersFileIsRefused) {
  write_text(outside_ / "theirs.txt", "OUTSIDE\n");
  fs::create_hard_link(outside_ / "theirs.txt", root_ / "linked.txt");
  // The file belongs to this process's user; the workspace is taken to belong to another.
  auto hooks_with_owner = hooks();
  hooks_with_owner.owner = ::getuid() + 1;
  auto workspace = Workspace::open(root_, {}, hooks_with_owner).value();
  auto read = workspace->read_text(*workspace->resolve("linked.txt"));
  ASSERT_FALSE(read.has_value());
  EXPECT_EQ(read.error().code(), codes::kWorkspacePathOutside);
  // A file with one link is read whoever owns it.
  write_text(root_ / "single.txt", "mine\n");
  EXPECT_EQ(workspace->read_text(*workspace->resolve("single.txt")).value(), "mine\n");
}

TEST_P(WorkspaceTest, ReadOfAHardLinkOfTheOwnersOwnFileIsAllowed) {
  write_text(root_ / "a.txt", "shared\n");
  fs::create_hard_link(root_ / "a.txt", root_ / "b.txt");  // pnpm stores, cp -l copies
  EXPECT_EQ(workspace_->read_text(*workspace_->resolve("b.txt")).value(), "shared\n");
}

TEST_P(WorkspaceTest, WriteOntoAHardLinkReplacesTheNameAndLeavesTheOtherFile) {
  write_text(outside_ / "theirs.txt", "OUTSIDE\n");
  fs::create_hard_link(outside_ / "theirs.txt", root_ / "linked.txt");
  auto written = workspace_->write_atomically(*workspace_->resolve_for_write("linked.txt"), "new\n");
  ASSERT_TRUE(written.has_value()) << written.error().to_string();
  EXPECT_TRUE(written->replaced);
  EXPECT_EQ(read_text(outside_ / "theirs.txt"), "OUTSIDE\n");
  EXPECT_EQ(read_text(root_ / "linked.txt"), "new\n");
}

TEST_P(WorkspaceTest, ReadRefusesAFifoWithoutWaitingForAWriter) {
  ASSERT_EQ(::mkfifo((root_ / "pipe").c_str(), 0600), 0);
  auto read = workspace_->read_text(*workspace_->resolve("pipe"));
  ASSERT_FALSE(read.has_value());
  EXPECT_EQ(read.error().code(), codes::kWorkspaceNotAFile);
}

INSTANTIATE_TEST_SUITE_P(OpenBeneath, WorkspaceTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? std::string("DescriptorWalk") : std::string("Openat2");
                         });

}  // namespace
}  // namespace keel::builtin
