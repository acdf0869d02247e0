#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "testing/temp_dir.h"

namespace keel::cli {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

class SkillsCommandTest : public ::testing::Test {
 protected:
  SkillsCommandTest() {
    context.config.skills.user_dir = dir.path() / "user";
    context.config.skills.project_dir = dir.path() / "project";
    context.out = &out;
    context.err = &err;
  }
  int list(bool json = false) { return skills_command(context, SkillsOptions{.json = json}); }

  keel::testing::TempDir dir;
  std::ostringstream out;
  std::ostringstream err;
  CommandContext context;
};

TEST_F(SkillsCommandTest, ListsEachSkillWithItsSourceAndFolderAndTheProblems) {
  write(dir.path() / "user" / "deploy" / "SKILL.md", "---\nname: deploy\ndescription: The user's.\n---\n");
  write(dir.path() / "project" / "deploy" / "SKILL.md", "---\nname: deploy\ndescription: Ours.\n---\n");
  write(dir.path() / "user" / "notes" / "SKILL.md", "---\nname: notes\ndescription: Take notes.\n---\n");
  write(dir.path() / "project" / "broken" / "SKILL.md", "no front matter\n");
  EXPECT_EQ(list(), kExitFailed);
  const std::string text = out.str();
  EXPECT_NE(text.find("deploy (project)\n  Ours.\n  " + (dir.path() / "project" / "deploy").string()),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("notes (user)\n  Take notes."), std::string::npos) << text;
  EXPECT_EQ(text.find("The user's."), std::string::npos) << "the project's skill replaces the user's";
  EXPECT_NE(text.find("skill.bad_front_matter: " + (dir.path() / "project" / "broken" / "SKILL.md").string()),
            std::string::npos)
      << text;
}

TEST_F(SkillsCommandTest, JsonListsSkillsAndProblems) {
  write(dir.path() / "user" / "notes" / "SKILL.md", "---\nname: notes\ndescription: Take notes.\n---\n");
  write(dir.path() / "user" / "notes" / "a.md", "x");
  EXPECT_EQ(list(true), kExitOk);
  const auto listed = nlohmann::json::parse(out.str());
  ASSERT_EQ(listed["skills"].size(), 1u);
  EXPECT_EQ(listed["skills"][0]["name"], "notes");
  EXPECT_EQ(listed["skills"][0]["source"], "user");
  EXPECT_EQ(listed["skills"][0]["files"], nlohmann::json::array({"SKILL.md", "a.md"}));
  EXPECT_EQ(listed["problems"], nlohmann::json::array());
}

TEST_F(SkillsCommandTest, SkillsTurnedOffListNothing) {
  write(dir.path() / "user" / "notes" / "SKILL.md", "---\nname: notes\ndescription: Take notes.\n---\n");
  context.config.skills.enabled = false;
  EXPECT_EQ(list(), kExitOk);
  EXPECT_NE(out.str().find("Skills are off"), std::string::npos);
}

}  // namespace
}  // namespace keel::cli
