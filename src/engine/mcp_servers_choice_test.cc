// The MCP servers a thread enables (thread.setMcpServers, issue 19 point 7): a new thread is offered every
// server's tools; a thread that names servers is offered only theirs (builtin tools always); the choice
// reaches the next turn, never the running one; a fork keeps it; a run's snapshot records only the tools the
// thread enabled, so a server outside its choice can change without refusing the run.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "engine/run_environment.h"
#include "keel/error_codes.h"
#include "store/thread_repository.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::ScriptedResponse;

ToolSpec mcp_spec(const std::string& server, const std::string& tool) {
  ToolSpec spec = testing::simple_spec(server + "__" + tool, ToolEffects::kWrite);
  spec.level = ToolLevel::kMcp;
  spec.binding.kind = ToolBinding::Kind::kMcp;
  spec.binding.server = server;
  spec.binding.endpoint = server + "-server --stdio";
  return spec;
}

std::shared_ptr<AgentTool> mcp_tool(const std::string& server, const std::string& tool) {
  return std::make_shared<testing::LambdaTool>(
      mcp_spec(server, tool),
      [](ToolCallContext, json, std::function<void(Result<ToolResult>)> done) { done(text_result("ok")); });
}

std::vector<std::string> names_of(const std::vector<ProviderTool>& tools) {
  std::vector<std::string> names;
  for (const ProviderTool& tool : tools) names.push_back(tool.name);
  std::sort(names.begin(), names.end());
  return names;
}

bool offers(const testing::RecordedRequest& request, const std::string& name) {
  const auto names = names_of(request.tools);
  return std::find(names.begin(), names.end(), name) != names.end();
}

class McpServersChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(h.tools.register_tool(mcp_tool("docs", "search")));
    ASSERT_TRUE(h.tools.register_tool(mcp_tool("mail", "send")));
    h.start();
  }

  AgentEvent choose(const std::string& thread, json servers) {
    return h.request("thread.setMcpServers", {{"threadId", thread}, {"servers", std::move(servers)}});
  }

  ThreadRecord stored(const std::string& thread) {
    auto tx = h.store().begin(TxMode::kRead);
    EXPECT_TRUE(tx);
    ThreadRepository threads(h.clock);
    auto record = threads.get(**tx, thread);
    EXPECT_TRUE(record) << record.error().to_string();
    return *record;
  }

  EngineHarness h;
};

TEST_F(McpServersChoiceTest, ANewThreadIsOfferedEveryServersTools) {
  const std::string thread = h.create_thread();
  h.provider.push(ScriptedResponse::text("done"));
  h.run_turn(thread, "hello");
  ASSERT_EQ(h.provider.requests().size(), 1u);
  EXPECT_TRUE(offers(h.provider.requests()[0], "docs__search"));
  EXPECT_TRUE(offers(h.provider.requests()[0], "mail__send"));
  EXPECT_TRUE(offers(h.provider.requests()[0], "echo"));
  EXPECT_FALSE(stored(thread).mcp_servers.has_value());
}

TEST_F(McpServersChoiceTest, AThreadThatNamesOneServerIsOfferedOnlyItsToolsAndTheBuiltinOnes) {
  const std::string thread = h.create_thread();
  const AgentEvent ack = choose(thread, {"docs"});
  ASSERT_EQ(ack.type, "command.ack") << ack.payload.dump();
  EXPECT_EQ(ack.payload["result"]["mcpServers"], json({"docs"}));
  h.provider.push(ScriptedResponse::text("done"));
  h.run_turn(thread, "hello");
  ASSERT_EQ(h.provider.requests().size(), 1u);
  EXPECT_TRUE(offers(h.provider.requests()[0], "docs__search"));
  EXPECT_FALSE(offers(h.provider.requests()[0], "mail__send"));
  EXPECT_TRUE(offers(h.provider.requests()[0], "echo"));
}

TEST_F(McpServersChoiceTest, AnEmptyListEnablesNoServerAndNullEnablesEveryOneAgain) {
  const std::string thread = h.create_thread();
  ASSERT_EQ(choose(thread, json::array()).type, "command.ack");
  h.provider.push(ScriptedResponse::text("one"));
  h.run_turn(thread, "first");
  ASSERT_EQ(choose(thread, nullptr).type, "command.ack");  // null is absent: every server
  h.provider.push(ScriptedResponse::text("two"));
  h.run_turn(thread, "second");
  ASSERT_EQ(h.provider.requests().size(), 2u);
  EXPECT_FALSE(offers(h.provider.requests()[0], "docs__search"));
  EXPECT_FALSE(offers(h.provider.requests()[0], "mail__send"));
  EXPECT_TRUE(offers(h.provider.requests()[0], "echo"));
  EXPECT_TRUE(offers(h.provider.requests()[1], "docs__search"));
  EXPECT_TRUE(offers(h.provider.requests()[1], "mail__send"));
  EXPECT_FALSE(stored(thread).mcp_servers.has_value());
}

TEST_F(McpServersChoiceTest, TheChoiceReachesTheNextTurnNotTheRunningOne) {
  const std::string thread = h.create_thread();
  h.provider.push(ScriptedResponse::held(ScriptedResponse::tool_calls({{"c1", "echo", R"({"text": "a"})"}})));
  h.provider.push(ScriptedResponse::text("first done"));
  h.provider.push(ScriptedResponse::text("second done"));
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "one"}}).type, "command.ack");
  ASSERT_TRUE(h.provider.wait_held(1));
  ASSERT_EQ(h.request("turn.enqueue", {{"threadId", thread}, {"input", "two"}}).type, "command.ack");
  ASSERT_EQ(choose(thread, {"mail"}).type, "command.ack");  // allowed while the turn runs
  ASSERT_TRUE(h.provider.release());
  EXPECT_EQ(h.wait_complete(thread, 2).payload["stopReason"], "end");
  const auto requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 3u);
  // Both requests of the running turn keep the tools it started with.
  EXPECT_TRUE(offers(requests[0], "docs__search"));
  EXPECT_TRUE(offers(requests[1], "docs__search"));
  EXPECT_FALSE(offers(requests[2], "docs__search"));
  EXPECT_TRUE(offers(requests[2], "mail__send"));
}

TEST_F(McpServersChoiceTest, NamesAreStoredSortedOnceAndAForkKeepsThem) {
  const std::string thread = h.create_thread();
  const AgentEvent ack = choose(thread, {"mail", "docs", "mail"});
  ASSERT_EQ(ack.type, "command.ack") << ack.payload.dump();
  EXPECT_EQ(ack.payload["result"]["mcpServers"], json({"docs", "mail"}));
  // thread.updated follows the ACK.
  EXPECT_TRUE(h.log.wait_until([](const std::vector<AgentEvent>& events) {
    for (const AgentEvent& event : events) {
      if (event.type == "thread.updated" &&
          event.payload.value("mcpServers", json()) == json({"docs", "mail"}))
        return true;
    }
    return false;
  })) << "thread.updated carries the choice";
  const AgentEvent forked = h.request("thread.fork", {{"threadId", thread}});
  ASSERT_EQ(forked.type, "command.ack") << forked.payload.dump();
  const ThreadRecord fork = stored(forked.payload["result"].value("threadId", ""));
  ASSERT_TRUE(fork.mcp_servers.has_value());
  EXPECT_EQ(*fork.mcp_servers, (std::vector<std::string>{"docs", "mail"}));
}

TEST_F(McpServersChoiceTest, AMalformedChoiceIsRefusedAndChangesNothing) {
  const std::string thread = h.create_thread();
  for (const json& servers : {json("docs"), json({""}), json({1}), json({std::string(129, 'a')})}) {
    const AgentEvent answer = choose(thread, servers);
    ASSERT_EQ(answer.type, "command.rejected") << servers.dump();
    EXPECT_EQ(answer.payload["error"].value("code", ""), codes::kInvalidArgument) << servers.dump();
  }
  json too_many = json::array();
  for (int i = 0; i < 65; ++i) too_many.push_back("s" + std::to_string(i));
  EXPECT_EQ(choose(thread, too_many).type, "command.rejected");
  EXPECT_FALSE(stored(thread).mcp_servers.has_value());
}

// The snapshot of a run on a thread that enables only "docs" records docs' tools and not mail's: mail's
// server changing (another endpoint) leaves the run's environment valid, docs' changing does not.
TEST(McpServersSnapshotTest, ARunsSnapshotHoldsOnlyItsThreadsServersTools) {
  ToolRegistry before;
  ASSERT_TRUE(before.register_tool(mcp_tool("docs", "search")));
  ASSERT_TRUE(before.register_tool(mcp_tool("mail", "send")));
  ModelSettings model;
  model.model = "m";
  ProviderTransport transport;
  transport.kind = "scripted";
  const auto enabled = tools_of_thread(before.snapshot(), std::vector<std::string>{"docs"});
  auto snapshot =
      capture_environment("snap-1", model, transport, *enabled, EnvironmentLimits{}, "m", nullptr);
  ASSERT_TRUE(snapshot) << snapshot.error().to_string();
  const auto env = environment_of(*snapshot);
  ASSERT_TRUE(env) << env.error().to_string();
  EXPECT_EQ(env->tool_names, std::vector<std::string>{"docs__search"});

  ToolRegistry mail_moved;
  ASSERT_TRUE(mail_moved.register_tool(mcp_tool("docs", "search")));
  ToolSpec moved = mcp_spec("mail", "send");
  moved.binding.endpoint = "https://mail.example.invalid/mcp";
  ASSERT_TRUE(mail_moved.register_tool(std::make_shared<testing::LambdaTool>(
      moved,
      [](ToolCallContext, json, std::function<void(Result<ToolResult>)> done) { done(text_result("")); })));
  EXPECT_TRUE(verify_environment(*snapshot, transport, *mail_moved.snapshot()));

  ToolRegistry docs_moved;
  ToolSpec docs = mcp_spec("docs", "search");
  docs.binding.endpoint = "https://docs.example.invalid/mcp";
  ASSERT_TRUE(docs_moved.register_tool(std::make_shared<testing::LambdaTool>(
      docs,
      [](ToolCallContext, json, std::function<void(Result<ToolResult>)> done) { done(text_result("")); })));
  const auto drift = verify_environment(*snapshot, transport, *docs_moved.snapshot());
  ASSERT_FALSE(drift);
  EXPECT_EQ(drift.error().code(), codes::kEnvironmentDrift);
}

}  // namespace
}  // namespace keel
