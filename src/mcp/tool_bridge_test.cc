// The bridge from an MCP tools/call to keel's checks and tool: list entries, content mapping, and every way
// a call ends as a tool execution error (validation, target, gate, the tool's error or exception).
#include "mcp/tool_bridge.h"

#include <gtest/gtest.h>

#include <optional>

#include "mcp/fake_tools_test_util.h"
#include "mcp/mcp_errors.h"

namespace keel::mcp {
namespace {

using nlohmann::json;
using testing::EchoTool;
using testing::FakeGatekeeper;
using testing::registry_of;

class ToolBridgeTest : public ::testing::Test {
 protected:
  // Runs one call to its end (the fake tools answer at once).
  CallOutcome call(const std::string& name, json arguments, bool allow_writes = false) {
    ToolBridge bridge(tools_, gate_, ToolBridgeOptions{.allow_writes = allow_writes});
    std::optional<CallOutcome> outcome;
    int answers = 0;
    bridge.call(name, std::move(arguments), "c1", CancellationToken(), nullptr, [&](CallOutcome o) {
      ++answers;
      outcome = std::move(o);
    });
    EXPECT_EQ(answers, 1);
    return outcome.value_or(CallOutcome{});
  }

  std::shared_ptr<const ToolRegistryGeneration> tools_ = registry_of(
      {std::make_shared<EchoTool>("echo"), std::make_shared<EchoTool>("put", ToolEffects::kWrite)});
  FakeGatekeeper gate_;
};

TEST_F(ToolBridgeTest, ListsEachToolWithSchemaAndHintsFromItsDescriptor) {
  ToolBridge bridge(tools_, gate_);
  const json list = bridge.list_tools();
  ASSERT_EQ(list.size(), 2u);
  const json& echo = list[0];
  EXPECT_EQ(echo["name"], "echo");
  EXPECT_EQ(echo["title"], "Echo echo");
  EXPECT_EQ(echo["description"], "Answers with what it is given.");
  EXPECT_EQ(echo["inputSchema"]["type"], "object");
  EXPECT_EQ(echo["annotations"]["readOnlyHint"], true);
  EXPECT_EQ(echo["annotations"]["destructiveHint"], false);
  EXPECT_EQ(echo["annotations"]["idempotentHint"], true);  // reads are retry-safe
  EXPECT_EQ(echo["annotations"]["openWorldHint"], false);  // builtin level
  const json& put = list[1];
  EXPECT_EQ(put["name"], "put");
  EXPECT_EQ(put["annotations"]["readOnlyHint"], false);
  EXPECT_EQ(put["annotations"]["destructiveHint"], true);
  EXPECT_EQ(put["annotations"]["idempotentHint"], false);  // writes are never-retry
}

TEST_F(ToolBridgeTest, TextAndImageBlocksBecomeMcpContent) {
  const CallOutcome outcome = call("echo", {{"text", "hello"}, {"image", true}});
  EXPECT_FALSE(outcome.code);
  EXPECT_EQ(outcome.result["isError"], false);
  ASSERT_EQ(outcome.result["content"].size(), 2u);
  EXPECT_EQ(outcome.result["content"][0], (json{{"type", "text"}, {"text", "hello"}}));
  EXPECT_EQ(outcome.result["content"][1],
            (json{{"type", "image"}, {"data", "iVBORw0KGgo="}, {"mimeType", "image/png"}}));
}

TEST_F(ToolBridgeTest, ArgumentsAgainstTheSchemaAreAToolErrorTheModelCanRead) {
  const CallOutcome outcome = call("echo", {{"text", 5}});
  EXPECT_EQ(outcome.result["isError"], true);
  EXPECT_EQ(outcome.code, "invalid_argument");
  EXPECT_EQ(outcome.result["_meta"]["keel/code"], "invalid_argument");
  EXPECT_NE(outcome.result["content"][0]["text"].get<std::string>().find("do not match the tool's schema"),
            std::string::npos);
  EXPECT_TRUE(gate_.checked.empty()) << "an invalid call never reaches the gate";
}

TEST_F(ToolBridgeTest, ATargetThatDoesNotResolveIsAToolError) {
  const CallOutcome outcome = call("echo", {{"path", "/unresolvable"}});
  EXPECT_EQ(outcome.code, "invalid_argument");
  EXPECT_TRUE(gate_.checked.empty());
}

TEST_F(ToolBridgeTest, AnAskVerdictIsRefusedWithItsReasonUnlessWritesAreAllowed) {
  gate_.verdict = GateVerdict{.kind = GateVerdict::Kind::kAsk, .reason = "put writes"};
  const CallOutcome refused = call("put", {{"text", "x"}});
  EXPECT_EQ(refused.code, codes::kMcpCallRefused);
  const std::string text = refused.result["content"][0]["text"];
  EXPECT_NE(text.find("refused and not run: put writes"), std::string::npos) << text;
  EXPECT_NE(text.find("--allow-writes"), std::string::npos) << text;

  const CallOutcome allowed = call("put", {{"text", "x"}}, /*allow_writes=*/true);
  EXPECT_FALSE(allowed.code);
  EXPECT_EQ(allowed.result["content"][0]["text"], "x");
}

TEST_F(ToolBridgeTest, ADenyVerdictRefusesEvenWithAllowWrites) {
  gate_.verdict = GateVerdict{.kind = GateVerdict::Kind::kDeny, .reason = "no host permission"};
  const CallOutcome outcome = call("put", {{"text", "x"}}, /*allow_writes=*/true);
  EXPECT_EQ(outcome.code, codes::kMcpCallRefused);
  EXPECT_EQ(outcome.result["content"][0]["text"], "The call was refused and not run: no host permission");
}

TEST_F(ToolBridgeTest, TheToolsErrorKeepsItsCode) {
  const CallOutcome outcome = call("echo", {{"fail", "tool.io_error"}});
  EXPECT_EQ(outcome.code, "tool.io_error");
  EXPECT_EQ(outcome.result["isError"], true);
  EXPECT_EQ(outcome.result["content"][0]["text"], "it failed as asked");
}

TEST_F(ToolBridgeTest, AnExceptionFromTheToolIsAnInternalToolError) {
  const CallOutcome outcome = call("echo", {{"throw", true}});
  EXPECT_EQ(outcome.code, "internal");
  EXPECT_NE(outcome.result["content"][0]["text"].get<std::string>().find("boom"), std::string::npos);
}

TEST_F(ToolBridgeTest, ACallCancelledBeforeItRunsDoesNotRun) {
  ToolBridge bridge(tools_, gate_);
  CancellationSource source;
  source.cancel();
  std::optional<CallOutcome> outcome;
  bridge.call("echo", json{{"text", "x"}}, "c1", source.token(), nullptr,
              [&](CallOutcome o) { outcome = std::move(o); });
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->code, "cancelled");
}

}  // namespace
}  // namespace keel::mcp
