#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"

namespace keel::cli {
namespace {

TEST(McpListCommand, WithoutServersItSaysSo) {
  CommandContext context;
  std::ostringstream out;
  context.out = &out;
  context.err = &out;
  EXPECT_EQ(mcp_list_command(context, McpListOptions{}), kExitOk);
  EXPECT_NE(out.str().find("No MCP servers are configured"), std::string::npos) << out.str();
}

TEST(McpListCommand, ShowsEachServersStateAndLastError) {
  CommandContext context;
  std::ostringstream out;
  context.out = &out;
  context.err = &out;
  // A command that does not exist: the server fails (with or without the MCP client in the build).
  config::McpServerConfig& broken = context.config.mcp_servers["broken"];
  broken.command = "/nonexistent/keel-test-mcp-server";
  broken.connect_timeout_ms = 5'000;
  config::McpServerConfig& off = context.config.mcp_servers["off"];
  off.command = "srv";
  off.enabled = false;
  ASSERT_EQ(mcp_list_command(context, McpListOptions{.json = true}), kExitOk);
  const nlohmann::json listed = nlohmann::json::parse(out.str());
  ASSERT_EQ(listed["servers"].size(), 2u);
  EXPECT_EQ(listed["servers"][0]["name"], "broken");
  EXPECT_EQ(listed["servers"][0]["state"], "failed");
  EXPECT_TRUE(listed["servers"][0]["lastError"].contains("code"));
  EXPECT_EQ(listed["servers"][0]["toolCount"], 0);
  EXPECT_EQ(listed["servers"][1]["name"], "off");
  EXPECT_EQ(listed["servers"][1]["state"], "disabled");
}

}  // namespace
}  // namespace keel::cli
