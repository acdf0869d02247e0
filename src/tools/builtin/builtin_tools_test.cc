// Tests for register_builtin_tools() (tools/builtin/builtin_tools.h) and what every builtin tool shares.
#include "tools/builtin/builtin_tools.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "keel/error_codes.h"
#include "testing/simulated_time.h"
#include "testing/temp_dir.h"
#include "tools/tool_errors.h"

namespace keel::builtin {
namespace {

std::set<std::string> names(const ToolRegistry& registry) {
  std::set<std::string> result;
  for (const auto& [name, tool] : registry.snapshot()->tools()) result.insert(name);
  return result;
}

TEST(BuiltinToolsTest, RegistersEveryFamilyWhoseDependencyIsGiven) {
  testing::TempDir temp;
  testing::SimulatedTime scheduler;  // never advanced: nothing fires
  ToolRegistry registry;
  ASSERT_TRUE(register_builtin_tools(
                  registry, {.workspace_root = temp.path(), .scheduler = &scheduler, .interactions = true})
                  .has_value());
  EXPECT_EQ(names(registry), (std::set<std::string>{"ask_user", "edit_file", "list_files", "read_file",
                                                    "search_files", "set_timer", "wait", "write_file"}));
}

TEST(BuiltinToolsTest, RegistersOnlyTheFamiliesWhoseDependencyIsGiven) {
  testing::TempDir temp;
  testing::SimulatedTime scheduler;  // never advanced: nothing fires
  ToolRegistry workspace_only;
  ASSERT_TRUE(register_builtin_tools(workspace_only, {.workspace_root = temp.path()}).has_value());
  EXPECT_EQ(names(workspace_only),
            (std::set<std::string>{"edit_file", "list_files", "read_file", "search_files", "write_file"}));
  ToolRegistry wait_only;
  ASSERT_TRUE(register_builtin_tools(wait_only, {.scheduler = &scheduler}).has_value());
  EXPECT_EQ(names(wait_only), (std::set<std::string>{"wait"}));
  ToolRegistry none;
  ASSERT_TRUE(register_builtin_tools(none, {}).has_value());
  EXPECT_TRUE(names(none).empty());
}

// The read tools' results are the workspace's text, not keel's: untrusted, provenance workspace (issue 15).
TEST(BuiltinToolsTest, EveryBuiltinIsALocalToolWithAClosedSchemaAndOnlyTheReadToolsResultsAreUntrusted) {
  testing::TempDir temp;
  testing::SimulatedTime scheduler;  // never advanced: nothing fires
  ToolRegistry registry;
  ASSERT_TRUE(register_builtin_tools(
                  registry, {.workspace_root = temp.path(), .scheduler = &scheduler, .interactions = true})
                  .has_value());
  const std::set<std::string> writers = {"write_file", "edit_file"};
  const std::set<std::string> readers = {"list_files", "read_file", "search_files"};
  for (const auto& [name, tool] : registry.snapshot()->tools()) {
    const ToolDescriptor& d = *tool.descriptor;
    EXPECT_EQ(d.level, ToolLevel::kBuiltin) << name;
    EXPECT_EQ(d.binding.kind, ToolBinding::Kind::kLocal) << name;
    EXPECT_EQ(d.trust, readers.contains(name) ? ToolTrust::kUntrusted : ToolTrust::kTrusted) << name;
    EXPECT_EQ(d.provenance, readers.contains(name) ? ToolProvenance::kWorkspace : ToolProvenance::kTool)
        << name;
    EXPECT_EQ(d.effects, writers.contains(name) ? ToolEffects::kWrite : ToolEffects::kRead) << name;
    EXPECT_EQ(d.parameters.at("additionalProperties"), false) << name;
    EXPECT_TRUE(d.parameters.at("required").is_array()) << name;
    for (const auto& required : d.parameters.at("required")) {
      EXPECT_TRUE(d.parameters.at("properties").contains(required.get<std::string>())) << name;
    }
  }
}

TEST(BuiltinToolsTest, MissingWorkspaceRootRegistersNothing) {
  testing::TempDir temp;
  testing::SimulatedTime scheduler;  // never advanced: nothing fires
  ToolRegistry registry;
  auto result =
      register_builtin_tools(registry, {.workspace_root = temp.path() / "missing", .scheduler = &scheduler});
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kWorkspaceNotFound);
  EXPECT_TRUE(names(registry).empty());
}

TEST(BuiltinToolsTest, ANameClashUndoesThisCallsRegistrations) {
  testing::TempDir temp;
  testing::SimulatedTime scheduler;  // never advanced: nothing fires
  ToolRegistry registry;
  ASSERT_TRUE(register_builtin_tools(registry, {.scheduler = &scheduler}).has_value());  // "wait" taken
  auto result = register_builtin_tools(registry, {.workspace_root = temp.path(), .scheduler = &scheduler});
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kToolDuplicate);
  EXPECT_EQ(names(registry), (std::set<std::string>{"wait"}));
}

}  // namespace
}  // namespace keel::builtin
