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

// The real client end to end: keel-mcp-test-server spawned over stdio, its tools listed under keel names.
// Untrusted, its read-only `echo` is still a never-retried write; trusted, the annotation counts.
TEST(McpListCommand, ListsARealServersToolsWithTheirEffects) {
  for (const bool trusted : {false, true}) {
    CommandContext context;
    std::ostringstream out;
    context.out = &out;
    context.err = &out;
    config::McpServerConfig& server = context.config.mcp_servers["srv"];
    server.command = KEEL_MCP_TEST_SERVER;
    server.args = {"--mode=legacy"};
    server.trusted = trusted;
    ASSERT_EQ(mcp_list_command(context, McpListOptions{.json = true}), kExitOk) << out.str();
    const auto listed = nlohmann::json::parse(out.str());
    ASSERT_EQ(listed["servers"].size(), 1u);
    const auto& srv = listed["servers"][0];
    EXPECT_EQ(srv["state"], "ready") << srv.dump();
    EXPECT_EQ(srv["toolCount"], 17) << srv.dump();
    bool saw_echo = false;
    for (const auto& tool : srv["tools"]) {
      if (tool["serverName"] != "echo") continue;
      saw_echo = true;
      EXPECT_EQ(tool["name"], "srv__echo");
      EXPECT_EQ(tool["effects"], trusted ? "read" : "write") << tool.dump();
      EXPECT_EQ(tool["recovery"], trusted ? "retry-safe" : "never-retry") << tool.dump();
    }
    EXPECT_TRUE(saw_echo) << srv.dump();
  }
}

// keel mcp list resolves no credentials: a url server that needs one is shown failed, with the reason.
TEST(McpListCommand, AUrlServerWithACredentialIsUnavailableWithoutTheStore) {
  CommandContext context;
  std::ostringstream out;
  context.out = &out;
  context.err = &out;
  config::McpServerConfig& server = context.config.mcp_servers["remote"];
  server.url = "http://127.0.0.1:9/mcp";
  server.credential.source = config::CredentialRef::Source::kEnvironment;
  server.credential.name = "KEEL_TEST_MCP_TOKEN";
  ASSERT_EQ(mcp_list_command(context, McpListOptions{.json = true}), kExitOk) << out.str();
  const auto listed = nlohmann::json::parse(out.str());
  EXPECT_EQ(listed["servers"][0]["state"], "failed");
  EXPECT_EQ(listed["servers"][0]["lastError"]["code"], "mcp.server_unavailable") << listed.dump();
}

// Nor does it sign in: a url server with oauth is shown failed without a sign-in being attempted.
TEST(McpListCommand, AUrlServerWithOAuthIsUnavailableWithoutTheStore) {
  CommandContext context;
  std::ostringstream out;
  context.out = &out;
  context.err = &out;
  config::McpServerConfig& server = context.config.mcp_servers["signed"];
  server.url = "http://127.0.0.1:9/mcp";
  server.oauth = true;
  ASSERT_EQ(mcp_list_command(context, McpListOptions{.json = true}), kExitOk) << out.str();
  const auto listed = nlohmann::json::parse(out.str());
  EXPECT_EQ(listed["servers"][0]["state"], "failed");
  EXPECT_EQ(listed["servers"][0]["lastError"]["code"], "mcp.server_unavailable") << listed.dump();
}

}  // namespace
}  // namespace keel::cli
