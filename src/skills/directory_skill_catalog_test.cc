#include "skills/directory_skill_catalog.h"

#include <gtest/gtest.h>

#include "skills/skill_errors.h"
#include "skills/skill_test_support.h"
#include "testing/temp_dir.h"

namespace keel::skills {
namespace {

namespace fs = std::filesystem;
using testing::write_file;
using testing::write_skill;

struct TwoDirs {
  keel::testing::TempDir dir;
  fs::path user = dir.path() / "user";
  fs::path project = dir.path() / "project";
  SkillDirectories dirs() const { return {user, project}; }
};

TEST(DirectorySkillCatalog, FindsSkillsInBothDirectories) {
  TwoDirs t;
  write_skill(t.user, "mine", "The user's.");
  write_skill(t.project, "ours", "The project's.");
  DirectorySkillCatalog catalog(t.dirs());
  ASSERT_EQ(catalog.skills().size(), 2u);
  EXPECT_EQ(catalog.skills()[0].name, "mine");
  EXPECT_EQ(catalog.skills()[0].source, SkillSource::kUser);
  EXPECT_EQ(catalog.skills()[1].name, "ours");
  EXPECT_EQ(catalog.skills()[1].source, SkillSource::kProject);
  EXPECT_TRUE(catalog.problems().empty());
}

TEST(DirectorySkillCatalog, TheProjectsSkillWinsOverTheUsersOfTheSameName) {
  TwoDirs t;
  write_skill(t.user, "deploy", "The user's way.");
  write_skill(t.project, "deploy", "The project's way.");
  DirectorySkillCatalog catalog(t.dirs());
  ASSERT_EQ(catalog.skills().size(), 1u);
  EXPECT_EQ(catalog.skills()[0].description, "The project's way.");
  EXPECT_EQ(catalog.skills()[0].source, SkillSource::kProject);
  EXPECT_EQ(catalog.skills()[0].dir, (t.project / "deploy").string());
}

TEST(DirectorySkillCatalog, ABadProjectSkillDoesNotHideTheUsersNorTheOthers) {
  TwoDirs t;
  write_skill(t.user, "deploy", "The user's way.");
  write_file(t.project / "deploy" / "SKILL.md", "---\nname: deploy\n---\n");
  write_skill(t.project, "lint", "Lint.");
  DirectorySkillCatalog catalog(t.dirs());
  ASSERT_EQ(catalog.skills().size(), 2u);
  EXPECT_EQ(catalog.find("deploy")->source, SkillSource::kUser);
  ASSERT_EQ(catalog.problems().size(), 1u);
  EXPECT_EQ(catalog.problems()[0].error.code(), codes::kSkillMissingField);
  EXPECT_EQ(catalog.problems()[0].source, SkillSource::kProject);
  EXPECT_NE(catalog.problems()[0].error.message().find((t.project / "deploy" / "SKILL.md").string()),
            std::string::npos);
}

TEST(DirectorySkillCatalog, ReadsInstructionsAndFiles) {
  TwoDirs t;
  const fs::path folder = write_skill(t.user, "x", "y", "Step one.\n");
  write_file(folder / "ref" / "guide.md", "Guide.\n");
  DirectorySkillCatalog catalog(t.dirs());
  EXPECT_EQ(catalog.read("x", "").value(), "Step one.\n");
  EXPECT_EQ(catalog.read("x", "SKILL.md").value(), "Step one.\n");
  EXPECT_EQ(catalog.read("x", "ref/guide.md").value(), "Guide.\n");
  EXPECT_EQ(catalog.read("x", "./ref/../ref/guide.md").value(), "Guide.\n");
}

TEST(DirectorySkillCatalog, ReadRefusesWhatIsNotTheSkillsText) {
  TwoDirs t;
  write_file(t.dir.path() / "secret.txt", "secret");
  const fs::path folder = write_skill(t.user, "x", "y");
  write_file(folder / "image.bin", std::string("\0\1\2", 3));
  fs::create_symlink(t.dir.path() / "secret.txt", folder / "link.txt");
  DirectorySkillCatalog catalog(t.dirs());
  EXPECT_EQ(catalog.read("nope", "").error().code(), codes::kSkillNotFound);
  EXPECT_EQ(catalog.read("x", "../../secret.txt").error().code(), codes::kSkillPathOutside);
  EXPECT_EQ(catalog.read("x", "/etc/passwd").error().code(), codes::kSkillPathOutside);
  EXPECT_EQ(catalog.read("x", "link.txt").error().code(), codes::kSkillPathOutside);
  EXPECT_EQ(catalog.read("x", "missing.md").error().code(), codes::kSkillFileNotFound);
  EXPECT_EQ(catalog.read("x", "image.bin").error().code(), codes::kSkillBinaryFile);
}

TEST(DirectorySkillCatalog, AFileEditedAfterLoadingIsRefusedAsChanged) {
  TwoDirs t;
  const fs::path folder = write_skill(t.user, "x", "y", "Old.\n");
  write_file(folder / "a.md", "old");
  DirectorySkillCatalog catalog(t.dirs());
  write_file(folder / "SKILL.md", testing::skill_md("x", "y", "New.\n"));
  EXPECT_EQ(catalog.read("x", "").error().code(), codes::kSkillChanged);
  fs::remove(folder / "a.md");
  EXPECT_EQ(catalog.read("x", "a.md").error().code(), codes::kSkillChanged);
}

TEST(DirectorySkillCatalog, TheSkillBoundHoldsForBothDirectoriesTogether) {
  TwoDirs t;
  write_skill(t.user, "a", "y");
  write_skill(t.project, "b", "y");
  SkillLimits limits;
  limits.max_skills = 1;
  DirectorySkillCatalog catalog(t.dirs(), limits);
  EXPECT_EQ(catalog.skills().size(), 1u);
  ASSERT_EQ(catalog.problems().size(), 1u);
  EXPECT_EQ(catalog.problems()[0].error.code(), codes::kSkillTooMany);
}

}  // namespace
}  // namespace keel::skills
