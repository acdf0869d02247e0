#include "mcp/host/tool_names.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "mcp/host/mcp_host_errors.h"

namespace keel::mcp {
namespace {

bool provider_accepts(const std::string& name) {
  static const std::regex kAllowed("^[a-zA-Z0-9_-]{1,64}$");
  return std::regex_match(name, kAllowed);
}

TEST(McpToolNames, APlainNameIsServerTwoUnderscoresTool) {
  EXPECT_EQ(keel_tool_name("files", "read_file"), "files__read_file");
  EXPECT_EQ(keel_tool_name("git-hub", "search-issues"), "git-hub__search-issues");
}

TEST(McpToolNames, CharactersAProviderRefusesAreReplacedAndAHashKeepsNamesApart) {
  const std::string dotted = keel_tool_name("files", "read.file");
  const std::string spaced = keel_tool_name("files", "read file");
  EXPECT_TRUE(provider_accepts(dotted)) << dotted;
  EXPECT_TRUE(provider_accepts(spaced)) << spaced;
  EXPECT_TRUE(dotted.starts_with("files__read_file-")) << dotted;
  EXPECT_NE(dotted, spaced);
  EXPECT_NE(dotted, keel_tool_name("files", "read_file"));
  EXPECT_TRUE(provider_accepts(keel_tool_name("sérveur", "outil/ü")));
}

TEST(McpToolNames, ALongNameIsShortenedWithAHashSuffix) {
  const std::string tool(100, 'x');
  const std::string a = keel_tool_name("server", tool);
  const std::string b = keel_tool_name("server", tool + "y");
  EXPECT_EQ(a.size(), kMaxToolNameLength);
  EXPECT_EQ(b.size(), kMaxToolNameLength);
  EXPECT_TRUE(provider_accepts(a));
  EXPECT_NE(a, b);
}

TEST(McpToolNames, NamesAreDeterministic) {
  EXPECT_EQ(keel_tool_name("s", "a.b"), keel_tool_name("s", "a.b"));
  EXPECT_EQ(keel_tool_name("s", std::string(80, 'q')), keel_tool_name("s", std::string(80, 'q')));
}

TEST(McpToolNames, ServersWhoseNamesRunTogetherDoNotCollide) {
  // "a" + "b__c" and "a__b" + "c" would both read a__b__c.
  const std::string first = keel_tool_name("a", "b__c");
  const std::string second = keel_tool_name("a__b", "c");
  EXPECT_EQ(first, "a__b__c");
  EXPECT_NE(first, second);
  EXPECT_TRUE(provider_accepts(second));
  // The same tool on two servers.
  EXPECT_NE(keel_tool_name("one", "search"), keel_tool_name("two", "search"));
}

TEST(McpToolNames, EmptyNamesStillGetAUsableName) {
  EXPECT_TRUE(provider_accepts(keel_tool_name("", "")));
  EXPECT_TRUE(provider_accepts(keel_tool_name("s", "")));
}

TEST(McpToolNames, ToolsOfOneServerThatWouldShareANameAreAllRefused) {
  // Distinct names that sanitize to the same text still differ by their hash; a tool listed twice and a
  // nameless tool are refused.
  const auto names = assign_tool_names("s", {"read.file", "read file", "dup", "dup", "", "ok"});
  ASSERT_EQ(names.size(), 6u);
  ASSERT_TRUE(names[0].has_value());
  ASSERT_TRUE(names[1].has_value());
  EXPECT_NE(*names[0], *names[1]);
  for (size_t i : {2u, 3u, 4u}) {
    ASSERT_FALSE(names[i].has_value()) << i;
    EXPECT_EQ(names[i].error().code(), codes::kMcpToolNameConflict);
  }
  ASSERT_TRUE(names[5].has_value());
  EXPECT_EQ(*names[5], "s__ok");
}

TEST(McpToolNames, AToolWhoseExactNameEqualsAnotherToolsHashedNameIsRefusedWithIt) {
  const std::string hashed = keel_tool_name("s", "a.b");  // s__a_b-<hash>
  const std::string tool = hashed.substr(3);              // the part after "s__"
  const auto names = assign_tool_names("s", {"a.b", tool});
  ASSERT_EQ(names.size(), 2u);
  EXPECT_FALSE(names[0].has_value());
  EXPECT_FALSE(names[1].has_value());
}

TEST(McpToolNames, ManyToolsGetDistinctAcceptedNames) {
  std::vector<std::string> tools;
  for (int i = 0; i < 500; ++i) tools.push_back("tool." + std::to_string(i) + std::string(70, 'z'));
  std::set<std::string> seen;
  for (const auto& name : assign_tool_names("server", tools)) {
    ASSERT_TRUE(name.has_value());
    EXPECT_TRUE(provider_accepts(*name));
    EXPECT_TRUE(seen.insert(*name).second) << *name;
  }
}

}  // namespace
}  // namespace keel::mcp
