#include "skills/read_skill_tool.h"

#include <gtest/gtest.h>

#include "skills/directory_skill_catalog.h"
#include "skills/skill_errors.h"
#include "skills/skill_test_support.h"
#include "testing/temp_dir.h"

namespace keel::skills {
namespace {

namespace fs = std::filesystem;

Result<ToolResult> call(AgentTool& tool, nlohmann::json params) {
  std::optional<Result<ToolResult>> out;
  ToolCallContext context;
  context.progress = [](ToolProgress) {};
  tool.execute(std::move(context), std::move(params), [&](Result<ToolResult> r) { out = std::move(r); });
  EXPECT_TRUE(out.has_value());  // read_skill completes synchronously
  return out ? std::move(*out) : fail("test.no_result", "no result");
}

TEST(ReadSkillTool, IsAReadOnlyBuiltin) {
  keel::testing::TempDir dir;
  DirectorySkillCatalog catalog(SkillDirectories{dir.path(), std::nullopt});
  ReadSkillTool tool(catalog);
  EXPECT_EQ(tool.spec().name, "read_skill");
  EXPECT_EQ(tool.spec().level, ToolLevel::kBuiltin);
  EXPECT_EQ(tool.spec().effects, ToolEffects::kRead);
}

TEST(ReadSkillTool, ReturnsTheInstructionsWithTheListOfFiles) {
  keel::testing::TempDir dir;
  const fs::path folder = testing::write_skill(dir.path(), "x", "y", "Use the template.\n");
  testing::write_file(folder / "template.md", "T");
  DirectorySkillCatalog catalog(SkillDirectories{dir.path(), std::nullopt});
  ReadSkillTool tool(catalog);
  auto result = call(tool, {{"name", "x"}});
  ASSERT_TRUE(result) << result.error().message();
  const std::string text = result->content.at(0).text;
  EXPECT_NE(text.find("Use the template."), std::string::npos);
  EXPECT_NE(text.find("- template.md"), std::string::npos);
  auto file = call(tool, {{"name", "x"}, {"path", "template.md"}});
  ASSERT_TRUE(file);
  EXPECT_EQ(file->content.at(0).text, "T");
}

TEST(ReadSkillTool, RefusalsAreTheCatalogsCodedErrors) {
  keel::testing::TempDir dir;
  testing::write_skill(dir.path(), "x", "y");
  DirectorySkillCatalog catalog(SkillDirectories{dir.path(), std::nullopt});
  ReadSkillTool tool(catalog);
  EXPECT_EQ(call(tool, {{"name", "z"}}).error().code(), codes::kSkillNotFound);
  EXPECT_EQ(call(tool, {{"name", "x"}, {"path", "../x/SKILL.md"}}).error().code(), codes::kSkillPathOutside);
  EXPECT_EQ(call(tool, {{"name", "x"}, {"path", "nope"}}).error().code(), codes::kSkillFileNotFound);
}

}  // namespace
}  // namespace keel::skills
