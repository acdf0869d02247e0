// mcp/client/mcp_results_test.cc — reading tools/list pages, CallToolResults and handshake results of any
// shape: wrong shapes are mcp.bad_response, unknown fields are ignored.
#include "mcp/client/mcp_results.h"

#include <gtest/gtest.h>

#include "mcp/mcp_errors.h"

namespace keel::mcp {
namespace {

using nlohmann::json;

TEST(McpResults, ACallResultKeepsContentStructuredContentIsErrorAndMeta) {
  auto result = parse_call_result({{"content", json::array({{{"type", "text"}, {"text", "t"}}})},
                                   {"structuredContent", {{"a", 1}}},
                                   {"isError", true},
                                   {"_meta", {{"k", "v"}}},
                                   {"resultType", "complete"},
                                   {"somethingNew", 42}});
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->content.size(), 1u);
  EXPECT_EQ((*result->structured_content)["a"], 1);
  EXPECT_TRUE(result->is_error);
  EXPECT_EQ(result->meta["k"], "v");
}

TEST(McpResults, AnEmptyCallResultHasDefaults) {
  auto result = parse_call_result(json::object());
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->content.empty());
  EXPECT_FALSE(result->structured_content.has_value());
  EXPECT_FALSE(result->is_error);
}

TEST(McpResults, MalformedCallResultsAreBadResponses) {
  for (const json& bad : {json(5), json{{"content", "text"}}, json{{"resultType", "input_required"}}}) {
    auto result = parse_call_result(bad);
    ASSERT_FALSE(result.has_value()) << bad.dump();
    EXPECT_EQ(result.error().code(), codes::kMcpBadResponse);
  }
}

TEST(McpResults, AToolPageSkipsMalformedEntriesAndKeepsTheCursor) {
  auto page = parse_tool_page({{"tools", json::array({{{"name", "ok"}, {"inputSchema", {{"type", "object"}}}},
                                                      {{"name", 3}},
                                                      "not an object",
                                                      {{"name", "no_schema"}}})},
                               {"nextCursor", "c2"}});
  ASSERT_TRUE(page.has_value());
  ASSERT_EQ(page->tools.size(), 1u);
  EXPECT_EQ(page->tools[0].name, "ok");
  EXPECT_EQ(page->skipped.size(), 3u);
  EXPECT_EQ(page->next_cursor, "c2");
}

TEST(McpResults, AToolPageWithoutToolsIsABadResponse) {
  for (const json& bad :
       {json::array(), json{{"tools", 1}}, json{{"tools", json::array()}, {"nextCursor", 5}}}) {
    auto page = parse_tool_page(bad);
    ASSERT_FALSE(page.has_value()) << bad.dump();
    EXPECT_EQ(page.error().code(), codes::kMcpBadResponse);
  }
}

TEST(McpResults, ServerInfoToleratesAbsentFields) {
  auto info = parse_server_info({{"serverInfo", "odd"}, {"capabilities", json::array()}});
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->name, "");
  EXPECT_TRUE(info->capabilities.is_object());
}

}  // namespace
}  // namespace keel::mcp
