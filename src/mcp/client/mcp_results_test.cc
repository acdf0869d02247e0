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

json schema_with(json properties) { return {{"type", "object"}, {"properties", std::move(properties)}}; }

TEST(McpResults, ValidParamHeaderDeclarationsPass) {
  EXPECT_FALSE(
      invalid_param_header(schema_with({{"region", {{"type", "string"}, {"x-mcp-header", "Region"}}},
                                        {"count", {{"type", "integer"}, {"x-mcp-header", "X-Count"}}},
                                        {"flag", {{"type", "boolean"}, {"x-mcp-header", "Flag"}}},
                                        {"score", {{"type", "number"}}}}))
          .has_value());
  EXPECT_FALSE(invalid_param_header({{"type", "object"}}).has_value());
}

TEST(McpResults, InvalidParamHeaderDeclarationsAreNamed) {
  const std::vector<json> invalid = {
      schema_with({{"v", {{"type", "string"}, {"x-mcp-header", ""}}}}),
      schema_with({{"v", {{"type", "string"}, {"x-mcp-header", 5}}}}),
      schema_with({{"v", {{"type", "string"}, {"x-mcp-header", "My Region"}}}}),
      schema_with({{"v", {{"type", "string"}, {"x-mcp-header", "Region:Primary"}}}}),
      schema_with({{"v", {{"type", "string"}, {"x-mcp-header", "R\xc3\xa9gion"}}}}),
      schema_with({{"v", {{"type", "string"}, {"x-mcp-header", "Region\t1"}}}}),
      schema_with({{"v", {{"type", "string"}, {"x-mcp-header", std::string(65, 'a')}}}}),
      schema_with({{"v", {{"type", "object"}, {"x-mcp-header", "Data"}}}}),
      schema_with({{"v", {{"type", "array"}, {"x-mcp-header", "Items"}}}}),
      schema_with({{"v", {{"type", "null"}, {"x-mcp-header", "Nil"}}}}),
      schema_with({{"v", {{"type", "number"}, {"x-mcp-header", "Score"}}}}),
      schema_with({{"v", {{"x-mcp-header", "Untyped"}}}}),
      schema_with({{"a", {{"type", "string"}, {"x-mcp-header", "Region"}}},
                   {"b", {{"type", "string"}, {"x-mcp-header", "Region"}}}}),
      schema_with({{"a", {{"type", "string"}, {"x-mcp-header", "MyField"}}},
                   {"b", {{"type", "string"}, {"x-mcp-header", "myfield"}}}})};
  for (const json& schema : invalid) EXPECT_TRUE(invalid_param_header(schema).has_value()) << schema.dump();
}

TEST(McpResults, AToolWithAnInvalidParamHeaderIsSkippedOnlyWhenChecked) {
  const json result = {
      {"tools",
       json::array(
           {{{"name", "valid"},
             {"inputSchema", schema_with({{"r", {{"type", "string"}, {"x-mcp-header", "Region"}}}})}},
            {{"name", "invalid"},
             {"inputSchema", schema_with({{"r", {{"type", "object"}, {"x-mcp-header", "Data"}}}})}}})}};
  auto checked = parse_tool_page(result, /*check_param_headers=*/true);
  ASSERT_TRUE(checked.has_value());
  ASSERT_EQ(checked->tools.size(), 1u);
  EXPECT_EQ(checked->tools[0].name, "valid");
  ASSERT_EQ(checked->skipped.size(), 1u);
  EXPECT_NE(checked->skipped[0].find("tool invalid"), std::string::npos);
  auto unchecked = parse_tool_page(result);
  ASSERT_TRUE(unchecked.has_value());
  EXPECT_EQ(unchecked->tools.size(), 2u);
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
