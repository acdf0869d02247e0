#include "skills/skill_loader.h"

#include <gtest/gtest.h>

#include "skills/skill_errors.h"
#include "skills/skill_test_support.h"
#include "testing/temp_dir.h"

namespace keel::skills {
namespace {

namespace fs = std::filesystem;
using testing::write_file;
using testing::write_skill;

TEST(SkillLoader, LoadsASkillWithItsFilesAndDigest) {
  keel::testing::TempDir dir;
  const fs::path folder = write_skill(dir.path(), "release-notes", "Write release notes.");
  write_file(folder / "templates" / "notes.md", "# Notes\n");
  write_file(folder / "logo.png", std::string("\x89PNG\0\x01", 6));
  write_file(folder / ".hidden", "x");
  auto skill = load_skill(folder, SkillSource::kUser);
  ASSERT_TRUE(skill) << skill.error().message();
  EXPECT_EQ(skill->name, "release-notes");
  EXPECT_EQ(skill->description, "Write release notes.");
  ASSERT_EQ(skill->files.size(), 3u);
  EXPECT_EQ(skill->files[0].path, "SKILL.md");
  EXPECT_EQ(skill->files[1].path, "logo.png");
  EXPECT_FALSE(skill->files[1].text);
  EXPECT_EQ(skill->files[2].path, "templates/notes.md");
  EXPECT_EQ(skill->digest.size(), 64u);
  EXPECT_TRUE(fs::path(skill->dir).is_absolute());
}

TEST(SkillLoader, TheDigestChangesWithAnyFile) {
  keel::testing::TempDir dir;
  const fs::path folder = write_skill(dir.path(), "x", "y");
  write_file(folder / "a.txt", "one");
  const std::string before = load_skill(folder, SkillSource::kUser)->digest;
  EXPECT_EQ(load_skill(folder, SkillSource::kUser)->digest, before);
  write_file(folder / "a.txt", "two");
  EXPECT_NE(load_skill(folder, SkillSource::kUser)->digest, before);
}

TEST(SkillLoader, SymlinksInsideASkillAreNotPartOfIt) {
  keel::testing::TempDir dir;
  write_file(dir.path() / "secret.txt", "secret");
  const fs::path folder = write_skill(dir.path() / "skills", "x", "y");
  fs::create_symlink(dir.path() / "secret.txt", folder / "link.txt");
  fs::create_directory_symlink(dir.path(), folder / "up");
  auto skill = load_skill(folder, SkillSource::kUser);
  ASSERT_TRUE(skill) << skill.error().message();
  ASSERT_EQ(skill->files.size(), 1u);
}

TEST(SkillLoader, ANameOtherThanTheFolderIsRefused) {
  keel::testing::TempDir dir;
  write_file(dir.path() / "folder" / "SKILL.md", testing::skill_md("other", "y"));
  auto skill = load_skill(dir.path() / "folder", SkillSource::kUser);
  ASSERT_FALSE(skill);
  EXPECT_EQ(skill.error().code(), codes::kSkillBadName);
  EXPECT_NE(skill.error().message().find((dir.path() / "folder" / "SKILL.md").string()), std::string::npos);
}

TEST(SkillLoader, AFolderWithoutSkillMdIsRefused) {
  keel::testing::TempDir dir;
  fs::create_directories(dir.path() / "empty");
  auto skill = load_skill(dir.path() / "empty", SkillSource::kUser);
  ASSERT_FALSE(skill);
  EXPECT_EQ(skill.error().code(), codes::kSkillMissingSkillMd);
}

TEST(SkillLoader, ASkillMdThatIsNotTextIsRefused) {
  keel::testing::TempDir dir;
  write_file(dir.path() / "x" / "SKILL.md", std::string("---\nname: x\0\n---\n", 17));
  auto skill = load_skill(dir.path() / "x", SkillSource::kUser);
  ASSERT_FALSE(skill);
  EXPECT_EQ(skill.error().code(), codes::kSkillBadFrontMatter);
}

TEST(SkillLoader, BoundsAreCodedErrors) {
  keel::testing::TempDir dir;
  const fs::path folder = write_skill(dir.path(), "x", "y");
  SkillLimits limits;
  limits.max_skill_md_bytes = 10;
  EXPECT_EQ(load_skill(folder, SkillSource::kUser, limits).error().code(), codes::kSkillTooLarge);
  limits = {};
  limits.max_file_bytes = 4;
  write_file(folder / "big.txt", "12345");
  EXPECT_EQ(load_skill(folder, SkillSource::kUser, limits).error().code(), codes::kSkillTooLarge);
  limits = {};
  limits.max_files = 2;
  write_file(folder / "more.txt", "1");
  EXPECT_EQ(load_skill(folder, SkillSource::kUser, limits).error().code(), codes::kSkillTooLarge);
  limits = {};
  limits.max_depth = 1;
  write_file(folder / "a" / "b" / "c.txt", "1");
  EXPECT_EQ(load_skill(folder, SkillSource::kUser, limits).error().code(), codes::kSkillTooLarge);
  limits = {};
  limits.max_skill_bytes = 40;
  EXPECT_EQ(load_skill(folder, SkillSource::kUser, limits).error().code(), codes::kSkillTooLarge);
}

TEST(SkillLoader, ScanReportsABadSkillAndLoadsTheOthers) {
  keel::testing::TempDir dir;
  write_skill(dir.path(), "good", "Fine.");
  write_file(dir.path() / "bad" / "SKILL.md", "no front matter\n");
  write_file(dir.path() / "loose-file.md", "not a skill folder");
  fs::create_directories(dir.path() / ".git");
  SkillScan scan = scan_skill_directory(dir.path(), SkillSource::kProject);
  ASSERT_EQ(scan.skills.size(), 1u);
  EXPECT_EQ(scan.skills[0].name, "good");
  EXPECT_EQ(scan.skills[0].source, SkillSource::kProject);
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_EQ(scan.problems[0].error.code(), codes::kSkillBadFrontMatter);
  EXPECT_EQ(scan.problems[0].path, (dir.path() / "bad" / "SKILL.md").string());
  EXPECT_NE(scan.problems[0].error.message().find((dir.path() / "bad" / "SKILL.md").string()),
            std::string::npos);
}

TEST(SkillLoader, AMissingDirectoryHoldsNoSkillsAndNoProblem) {
  keel::testing::TempDir dir;
  SkillScan scan = scan_skill_directory(dir.path() / "none", SkillSource::kUser);
  EXPECT_TRUE(scan.skills.empty());
  EXPECT_TRUE(scan.problems.empty());
}

TEST(SkillLoader, ScanStopsAtTheSkillBound) {
  keel::testing::TempDir dir;
  for (const char* name : {"a", "b", "c"}) write_skill(dir.path(), name, "y");
  SkillLimits limits;
  limits.max_skills = 2;
  SkillScan scan = scan_skill_directory(dir.path(), SkillSource::kUser, limits);
  EXPECT_EQ(scan.skills.size(), 2u);
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_EQ(scan.problems[0].error.code(), codes::kSkillTooMany);
}

}  // namespace
}  // namespace keel::skills
