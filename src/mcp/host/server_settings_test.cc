#include "mcp/host/server_settings.h"

#include <gtest/gtest.h>

namespace keel::mcp {
namespace {

TEST(McpServerSettings, EveryConfiguredValueReachesTheHost) {
  config::Config config;
  config::McpServerConfig& local = config.mcp_servers["local"];
  local.command = "srv";
  local.args = {"--stdio", "-v"};
  local.env = {{"LOG", "1"}};
  local.cwd = "/work";
  local.trusted = true;
  local.lazy = true;
  local.connect_timeout_ms = 1234;
  local.call_idle_timeout_ms = 2000;
  local.call_max_ms = 3000;
  config::McpServerConfig& web = config.mcp_servers["web"];
  web.url = "https://mcp.example.com/mcp";
  web.credential = config::CredentialRef{config::CredentialRef::Source::kEnvironment, "WEB_TOKEN"};
  web.enabled = false;
  config::McpServerConfig& signed_in = config.mcp_servers["x-signed"];
  signed_in.url = "https://mcp.example.com/signed";
  signed_in.oauth = true;
  signed_in.oauth_client_id = "keel-client";

  const std::vector<McpServerSettings> settings = mcp_server_settings(config);
  ASSERT_EQ(settings.size(), 3u);
  const McpServerSettings& s = settings[0];
  EXPECT_EQ(s.name, "local");
  EXPECT_EQ(s.endpoint(), "srv --stdio -v");
  EXPECT_EQ(s.env.at("LOG"), "1");
  EXPECT_EQ(s.cwd, "/work");
  EXPECT_TRUE(s.trusted);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.start, McpStart::kLazy);
  EXPECT_EQ(s.connect_timeout, std::chrono::milliseconds(1234));
  EXPECT_EQ(s.limits.idle_timeout, std::chrono::milliseconds(2000));
  EXPECT_EQ(s.limits.max_total, std::chrono::milliseconds(3000));
  EXPECT_EQ(s.credential, "");
  EXPECT_FALSE(s.oauth);
  const McpServerSettings& w = settings[1];
  EXPECT_EQ(w.endpoint(), "https://mcp.example.com/mcp");
  EXPECT_EQ(w.credential, "env:WEB_TOKEN");
  EXPECT_FALSE(w.enabled);
  EXPECT_FALSE(w.trusted);
  EXPECT_EQ(w.start, McpStart::kStartup);
  EXPECT_FALSE(w.oauth);
  EXPECT_TRUE(settings[2].oauth);
  EXPECT_EQ(settings[2].oauth_client_id, "keel-client");
}

}  // namespace
}  // namespace keel::mcp
