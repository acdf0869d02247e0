// MCP tools and recovery (spec §5): a run's environment snapshot records each MCP tool's binding, and a
// server whose endpoint or credential changed, or whose tool changed, refuses the run's recovery.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/engine_errors.h"
#include "engine/run_environment.h"
#include "keel/error_codes.h"
#include "mcp/host/mcp_host.h"
#include "mcp/testing/fake_mcp_session.h"
#include "testing/simulated_time.h"

namespace keel::mcp {
namespace {

using nlohmann::json;

McpToolInfo search_tool(const std::string& query_type = "string") {
  McpToolInfo info;
  info.name = "search";
  info.description = "Searches.";
  info.input_schema = {{"type", "object"}, {"properties", {{"q", {{"type", query_type}}}}}};
  return info;
}

// One McpHost over one server "docs", its tools in its own registry.
struct Connected {
  ToolRegistry registry;
  keel::testing::SimulatedTime time;
  std::unique_ptr<McpHost> host;

  Connected(McpServerSettings settings, const McpToolInfo& tool) {
    McpSessionFactory factory = [tool](const McpServerSettings&,
                                       McpSessionEvents events) -> Result<std::shared_ptr<McpSession>> {
      return std::shared_ptr<McpSession>(
          std::make_shared<testing::FakeMcpSession>(std::vector{tool}, std::move(events)));
    };
    host = std::make_unique<McpHost>(std::vector{std::move(settings)}, factory, registry, time, time);
    host->start();
    EXPECT_TRUE(host->wait_until(
        [](const std::vector<McpServerStatus>& all) { return all.at(0).state == McpServerState::kReady; },
        std::chrono::seconds(30)));
  }
};

McpServerSettings docs(std::string command = "docs-server", std::string credential = "") {
  McpServerSettings s;
  s.name = "docs";
  s.command = std::move(command);
  s.credential = std::move(credential);
  return s;
}

class McpRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    transport_.kind = "openai-chat";
    transport_.base_url = "http://127.0.0.1:8080/v1";
    transport_.wire_format = "chat-completions";
    model_.model = "m-1";
  }
  EnvironmentSnapshotRecord capture(const ToolRegistry& registry) {
    auto captured = capture_environment("s1", model_, transport_, *registry.snapshot());
    EXPECT_TRUE(captured.has_value()) << captured.error().to_string();
    return captured.value_or(EnvironmentSnapshotRecord{});
  }
  Result<void> verify(const EnvironmentSnapshotRecord& snapshot, const ToolRegistry& registry) {
    return verify_environment(snapshot, transport_, *registry.snapshot());
  }

  ModelSettings model_;
  ProviderTransport transport_;
};

TEST_F(McpRecoveryTest, TheSameServerAndToolsRecover) {
  Connected before(docs(), search_tool());
  const EnvironmentSnapshotRecord snapshot = capture(before.registry);
  Connected after(docs(), search_tool());
  EXPECT_TRUE(verify(snapshot, after.registry).has_value());
}

TEST_F(McpRecoveryTest, AnotherEndpointOrCredentialRefusesRecovery) {
  Connected before(docs(), search_tool());
  const EnvironmentSnapshotRecord snapshot = capture(before.registry);
  Connected moved(docs("other-docs-server"), search_tool());
  auto refused = verify(snapshot, moved.registry);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), codes::kEnvironmentDrift);
  Connected reauthed(docs("docs-server", "docs-token"), search_tool());
  refused = verify(snapshot, reauthed.registry);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), codes::kEnvironmentDrift);
}

TEST_F(McpRecoveryTest, AToolWhoseSchemaChangedRefusesRecovery) {
  Connected before(docs(), search_tool("string"));
  const EnvironmentSnapshotRecord snapshot = capture(before.registry);
  Connected changed(docs(), search_tool("integer"));
  auto refused = verify(snapshot, changed.registry);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), codes::kEnvironmentDrift);
}

}  // namespace
}  // namespace keel::mcp
