// Tests for list_files, read_file and search_files (tools/builtin/workspace_read_tools.h).
#include "tools/builtin/workspace_read_tools.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "keel/error_codes.h"
#include "testing/temp_dir.h"
#include "tools/builtin/tool_test_util.h"
#include "tools/tool_errors.h"

namespace keel::builtin {
namespace {

namespace fs = std::filesystem;
using test::run_tool;
using test::text_of;
using test::write_text;

class WorkspaceReadToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = temp_.path() / "root";
    outside_ = temp_.path() / "outside";
    write_text(root_ / "README.md", "# Demo\nhello world\n");
    write_text(root_ / "src" / "main.cc", "int main() {\n  return hello();\n}\n");
    write_text(root_ / "src" / "util" / "hello.h", "int hello();\n");
    write_text(root_ / "blob.bin", std::string("hello\0world", 11));
    write_text(outside_ / "secret.txt", "hello from outside\n");
    workspace_ = Workspace::open(root_, WorkspaceLimits{.max_file_bytes = 4096}).value();
  }

  void expect_error(AgentTool& tool, const nlohmann::json& params, const char* code) {
    auto result = run_tool(tool, params);
    ASSERT_FALSE(result.has_value()) << text_of(*result);
    EXPECT_EQ(result.error().code(), code) << result.error().to_string();
  }

  testing::TempDir temp_;
  fs::path root_;
  fs::path outside_;
  std::shared_ptr<const Workspace> workspace_;
};

// --- list_files ---

TEST_F(WorkspaceReadToolsTest, ListFilesListsTheRootSortedWithFolderMarks) {
  ListFilesTool tool(workspace_);
  auto result = run_tool(tool, nlohmann::json::object());
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  EXPECT_EQ(text_of(*result), "README.md\nblob.bin\nsrc/\n");
  EXPECT_EQ(result->details.at("entries").size(), 3u);
  EXPECT_EQ(result->details.at("entries")[0],
            (nlohmann::json{{"path", "README.md"}, {"type", "file"}, {"size", 19}}));
  EXPECT_EQ(result->details.at("entries")[2].at("type"), "dir");
  EXPECT_FALSE(result->details.at("truncated").get<bool>());
}

TEST_F(WorkspaceReadToolsTest, ListFilesRecursiveListsEverythingBelowWithRootRelativePaths) {
  ListFilesTool tool(workspace_);
  auto result = run_tool(tool, {{"path", "src"}, {"recursive", true}});
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  EXPECT_EQ(text_of(*result), "src/main.cc\nsrc/util/\nsrc/util/hello.h\n");
}

TEST_F(WorkspaceReadToolsTest, ListFilesStopsAtMaxEntriesAndSaysSo) {
  ListFilesTool tool(workspace_);
  auto result = run_tool(tool, {{"recursive", true}, {"maxEntries", 2}});
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->details.at("entries").size(), 2u);
  EXPECT_TRUE(result->details.at("truncated").get<bool>());
  EXPECT_NE(text_of(*result).find("stopped after 2 entries"), std::string::npos) << text_of(*result);
}

TEST_F(WorkspaceReadToolsTest, ListFilesShowsSymlinksWithoutFollowingThem) {
  fs::create_directory_symlink(outside_, root_ / "link");
  ListFilesTool tool(workspace_);
  auto result = run_tool(tool, {{"recursive", true}});
  ASSERT_TRUE(result.has_value());
  const std::string text = text_of(*result);
  EXPECT_NE(text.find("link@\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("secret"), std::string::npos) << text;
}

TEST_F(WorkspaceReadToolsTest, ListFilesRefusesEscapes) {
  fs::create_directory_symlink(outside_, root_ / "link");
  ListFilesTool tool(workspace_);
  expect_error(tool, {{"path", ".."}}, codes::kWorkspacePathOutside);
  expect_error(tool, {{"path", outside_.string()}}, codes::kWorkspacePathOutside);
  expect_error(tool, {{"path", "link"}}, codes::kWorkspacePathOutside);
  expect_error(tool, {{"path", "nope"}}, codes::kWorkspaceNotFound);
}

TEST_F(WorkspaceReadToolsTest, ListFilesTargetIsTheResolvedPath) {
  ListFilesTool tool(workspace_);
  EXPECT_EQ(tool.resolve_target({{"path", "src/util/.."}})->path, "src");
  EXPECT_EQ(tool.resolve_target(nlohmann::json::object())->path, ".");
  EXPECT_EQ(tool.resolve_target({{"path", "../x"}}).error().code(), codes::kWorkspacePathOutside);
}

TEST_F(WorkspaceReadToolsTest, SchemasRefuseUnknownFields) {
  ListFilesTool list(workspace_);
  expect_error(list, {{"path", "."}, {"hidden", true}}, codes::kInvalidArgument);
  ReadFileTool read(workspace_);
  expect_error(read, nlohmann::json::object(), codes::kInvalidArgument);
  expect_error(read, {{"path", "README.md"}, {"offset", 0}}, codes::kInvalidArgument);
}

TEST_F(WorkspaceReadToolsTest, CancelledCallsCompleteWithCancelled) {
  CancellationSource source;
  source.cancel("interrupted");
  ListFilesTool list(workspace_);
  auto listed = run_tool(list, nlohmann::json::object(), source.token());
  ASSERT_FALSE(listed.has_value());
  EXPECT_EQ(listed.error().code(), codes::kCancelled);
  SearchFilesTool search(workspace_);
  auto searched = run_tool(search, {{"pattern", "hello"}}, source.token());
  ASSERT_FALSE(searched.has_value());
  EXPECT_EQ(searched.error().code(), codes::kCancelled);
}

// --- read_file ---

TEST_F(WorkspaceReadToolsTest, ReadFileNumbersTheLines) {
  ReadFileTool tool(workspace_);
  auto result = run_tool(tool, {{"path", "src/main.cc"}});
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  EXPECT_EQ(text_of(*result), "     1\tint main() {\n     2\t  return hello();\n     3\t}\n");
  EXPECT_EQ(result->details.at("totalLines"), 3);
  EXPECT_EQ(result->details.at("path"), "src/main.cc");
}

TEST_F(WorkspaceReadToolsTest, ReadFileShowsTheRequestedRangeAndHowToContinue) {
  std::string content;
  for (int i = 1; i <= 10; ++i) content += "line " + std::to_string(i) + "\n";
  write_text(root_ / "ten.txt", content);
  ReadFileTool tool(workspace_);
  auto result = run_tool(tool, {{"path", "ten.txt"}, {"offset", 4}, {"limit", 2}});
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(text_of(*result),
            "     4\tline 4\n     5\tline 5\n(showing lines 4-5 of 10; continue with offset 6)\n");
  auto past = run_tool(tool, {{"path", "ten.txt"}, {"offset", 11}});
  ASSERT_TRUE(past.has_value());
  EXPECT_NE(text_of(*past).find("past the end"), std::string::npos);
}

TEST_F(WorkspaceReadToolsTest, ReadFileCutsVeryLongLines) {
  write_text(root_ / "long.txt", std::string(3000, 'y') + "\n");
  ReadFileTool tool(workspace_);
  auto result = run_tool(tool, {{"path", "long.txt"}});
  ASSERT_TRUE(result.has_value());
  EXPECT_LT(text_of(*result).size(), 2100u);
  EXPECT_NE(text_of(*result).find("(line cut)"), std::string::npos);
}

TEST_F(WorkspaceReadToolsTest, ReadFileReplacesInvalidUtf8) {
  write_text(root_ / "latin1.txt", "caf\xE9\n");
  ReadFileTool tool(workspace_);
  auto result = run_tool(tool, {{"path", "latin1.txt"}});
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(text_of(*result), "     1\tcaf\xEF\xBF\xBD\n");
}

TEST_F(WorkspaceReadToolsTest, ReadFileRefusesEscapesAndUnreadableFiles) {
  fs::create_symlink(outside_ / "secret.txt", root_ / "secret-link.txt");
  write_text(root_ / "big.txt", std::string(5000, 'x'));
  ReadFileTool tool(workspace_);
  expect_error(tool, {{"path", "../outside/secret.txt"}}, codes::kWorkspacePathOutside);
  expect_error(tool, {{"path", (outside_ / "secret.txt").string()}}, codes::kWorkspacePathOutside);
  expect_error(tool, {{"path", "secret-link.txt"}}, codes::kWorkspacePathOutside);
  expect_error(tool, {{"path", "missing.txt"}}, codes::kWorkspaceNotFound);
  expect_error(tool, {{"path", "src"}}, codes::kWorkspaceNotAFile);
  expect_error(tool, {{"path", "big.txt"}}, codes::kWorkspaceTooLarge);
  expect_error(tool, {{"path", "blob.bin"}}, codes::kWorkspaceBinaryFile);
}

TEST_F(WorkspaceReadToolsTest, ReadFileTargetIsTheResolvedFile) {
  ReadFileTool tool(workspace_);
  const auto target = tool.resolve_target({{"path", "./src/main.cc"}});
  ASSERT_TRUE(target.has_value());
  ToolTarget expected;  // (ToolTarget{.path = ...} trips -Wmissing-field-initializers in g++ 12)
  expected.path = "src/main.cc";
  EXPECT_EQ(*target, expected);
}

// --- search_files ---

TEST_F(WorkspaceReadToolsTest, SearchFilesFindsSubstringsWithFileAndLine) {
  SearchFilesTool tool(workspace_);
  auto result = run_tool(tool, {{"pattern", "hello"}});
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  EXPECT_EQ(text_of(*result),
            "README.md:2: hello world\nsrc/main.cc:2:   return hello();\nsrc/util/hello.h:1: int hello();\n");
  EXPECT_EQ(result->details.at("matches").size(), 3u);
  EXPECT_EQ(result->details.at("filesSkipped"), 1);  // blob.bin
}

TEST_F(WorkspaceReadToolsTest, SearchFilesWithRegexAndPath) {
  SearchFilesTool tool(workspace_);
  auto result = run_tool(tool, {{"pattern", "^int \\w+\\(\\)"}, {"regex", true}, {"path", "src"}});
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  EXPECT_EQ(text_of(*result), "src/main.cc:1: int main() {\nsrc/util/hello.h:1: int hello();\n");
  // Without regex:true the same pattern is plain text and matches nothing.
  auto plain = run_tool(tool, {{"pattern", "^int \\w+\\(\\)"}, {"path", "src"}});
  ASSERT_TRUE(plain.has_value());
  EXPECT_NE(text_of(*plain).find("No matches"), std::string::npos);
}

TEST_F(WorkspaceReadToolsTest, SearchFilesRejectsAnInvalidRegex) {
  SearchFilesTool tool(workspace_);
  expect_error(tool, {{"pattern", "(unclosed"}, {"regex", true}}, codes::kToolInvalidRegex);
  // RE2 has no backreferences or lookaround: refused, not misread.
  expect_error(tool, {{"pattern", "(a)\\1"}, {"regex", true}}, codes::kToolInvalidRegex);
  expect_error(tool, {{"pattern", "a(?=b)"}, {"regex", true}}, codes::kToolInvalidRegex);
}

TEST_F(WorkspaceReadToolsTest, SearchFilesRefusesAPatternOverItsMemoryBound) {
  SearchFilesTool tool(workspace_);
  // Each counted repetition is within RE2's limit, but the program it compiles to is not within max_mem.
  const std::string huge = "([a-z0-9]{1000}x){1000}";
  auto result = run_tool(tool, {{"pattern", huge}, {"regex", true}});
  ASSERT_FALSE(result.has_value()) << text_of(*result);
  EXPECT_EQ(result.error().code(), codes::kToolInvalidRegex) << result.error().to_string();
  // And a pattern longer than the schema allows never reaches RE2.
  expect_error(tool, {{"pattern", std::string(SearchFilesTool::kMaxPatternBytes + 1, 'a')}, {"regex", true}},
               codes::kInvalidArgument);
}

// Issue 14: a backtracking matcher overflowed its stack on the first pattern and never returned on the
// second. RE2 answers both in time linear in the line.
TEST_F(WorkspaceReadToolsTest, SearchFilesSurvivesPatternsThatDefeatABacktrackingMatcher) {
  std::string abab;
  while (abab.size() < 4096) abab += "ab";
  const std::string many_a = std::string(100, 'a') + "!";
  write_text(root_ / "big" / "abab.txt", abab + "\n" + abab + "c\n");
  write_text(root_ / "big" / "aaa.txt", many_a + "\n" + std::string(64, 'a') + "\n");
  auto big = Workspace::open(root_, WorkspaceLimits{.max_file_bytes = 1 << 20}).value();
  SearchFilesTool tool(big);

  auto nested = run_tool(tool, {{"pattern", "((((((((((a|b))))))))))*c"}, {"regex", true}, {"path", "big"}});
  ASSERT_TRUE(nested.has_value()) << nested.error().to_string();
  ASSERT_EQ(nested->details.at("matches").size(), 1u) << text_of(*nested);
  EXPECT_EQ(nested->details.at("matches")[0].at("path"), "big/abab.txt");
  EXPECT_EQ(nested->details.at("matches")[0].at("line"), 2);

  auto alternation = run_tool(tool, {{"pattern", "^(a|aa)+$"}, {"regex", true}, {"path", "big"}});
  ASSERT_TRUE(alternation.has_value()) << alternation.error().to_string();
  ASSERT_EQ(alternation->details.at("matches").size(), 1u) << text_of(*alternation);
  EXPECT_EQ(alternation->details.at("matches")[0].at("path"), "big/aaa.txt");
  EXPECT_EQ(alternation->details.at("matches")[0].at("line"), 2);
}

TEST_F(WorkspaceReadToolsTest, SearchFilesStopsAtMaxResults) {
  SearchFilesTool tool(workspace_);
  auto result = run_tool(tool, {{"pattern", "hello"}, {"maxResults", 1}});
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->details.at("matches").size(), 1u);
  EXPECT_TRUE(result->details.at("truncated").get<bool>());
}

TEST_F(WorkspaceReadToolsTest, SearchFilesDoesNotFollowSymlinksOutOrSearchOutside) {
  fs::create_directory_symlink(outside_, root_ / "link");
  fs::create_symlink(outside_ / "secret.txt", root_ / "secret-link.txt");
  SearchFilesTool tool(workspace_);
  auto result = run_tool(tool, {{"pattern", "outside"}});
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->details.at("matches").empty()) << text_of(*result);
  expect_error(tool, {{"pattern", "hello"}, {"path", "../outside"}}, codes::kWorkspacePathOutside);
  expect_error(tool, {{"pattern", "hello"}, {"path", "link"}}, codes::kWorkspacePathOutside);
}

}  // namespace
}  // namespace keel::builtin
