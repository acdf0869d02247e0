// Integration tests of the turn loop (spec §1, §2, §4, §7): whole turns through the DirectTransport against
// the scripted provider, asserting the persisted nodes and the events.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "engine/event_bus.h"
#include "keel/sqlite_store.h"
#include "store/node_body.h"
#include "tools/builtin/builtin_tools.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::HarnessOptions;
using testing::ScriptedResponse;
namespace pe = provider_event;

std::vector<std::string> types_for(const std::vector<AgentEvent>& events, const std::string& thread_id,
                                   bool with_deltas = true) {
  std::vector<std::string> out;
  for (const AgentEvent& e : events) {
    if (e.thread_id == thread_id && (with_deltas || !e.is_delta())) out.push_back(e.type);
  }
  return out;
}

const Message* last_tool_message(const testing::RecordedRequest& request) {
  for (auto it = request.messages.rbegin(); it != request.messages.rend(); ++it) {
    if (it->role == Role::kTool) return &*it;
  }
  return nullptr;
}

std::string text_of(const Message& message) {
  std::string text;
  for (const ContentBlock& block : message.content) text += block.text;
  return text;
}

TEST(TurnLoopTest, TextReplyPersistsTheTurnAndEmitsTheExactEventSequence) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::text("Hello!").with_usage(10, 3));
  h.start();
  std::string thread = h.create_thread();
  AgentEvent done = h.run_turn(thread, "Hi");
  EXPECT_EQ(done.payload["stopReason"], "end");
  EXPECT_EQ(done.payload["providerStopReason"], "stop");
  EXPECT_EQ(types_for(h.log.events(), thread),
            (std::vector<std::string>{"command.ack", "thread.updated",  // thread.create
                                      "command.ack", "thread.updated", "turn.start", "item.complete",
                                      "item.start", "item.delta", "item.complete", "token.usage",
                                      "run.updated", "turn.complete"}));
  EXPECT_EQ(h.kinds(thread), (std::vector<std::string>{"turn_context", "user_message", "assistant_message"}));
  auto path = h.path(thread);
  EXPECT_EQ(path[2].body["providerStopReason"], "stop");
  EXPECT_EQ(path[2].body["content"][0]["text"], "Hello!");
  auto usage = h.log.of_type("token.usage");
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].payload["total"]["totalTokens"], 13);
  EXPECT_FALSE(usage[0].payload["usage"].contains("costUsd"));  // no price configured
}

TEST(TurnLoopTest, TokenUsageReportsTheCostFromThePriceTable) {
  testing::HarnessOptions options;
  // $3 per million input tokens ($0.30 cached), $15 per million output tokens.
  options.engine.model.price = providers::ModelPrice{.input_per_million = 3,
                                                     .output_per_million = 15,
                                                     .cached_input_per_million = 0.3,
                                                     .reasoning_output_per_million = std::nullopt};
  EngineHarness h(std::move(options));
  ScriptedResponse response;
  response.add(provider_event::TextDelta{"Hello!"});
  response.add(provider_event::Usage{TokenUsage{.input_tokens = 1'000'000,
                                                .output_tokens = 100'000,
                                                .cached_input_tokens = 500'000,
                                                .reasoning_tokens = 0}});
  response.add(provider_event::Finish{StopReason::kEnd, "stop"});
  h.provider.push(std::move(response));
  h.start();
  const std::string thread = h.create_thread();
  h.run_turn(thread, "Hi");
  auto usage = h.log.of_type("token.usage");
  ASSERT_EQ(usage.size(), 1u);
  // 500k fresh input * 3 + 500k cached * 0.3 + 100k output * 15, per million: 1.5 + 0.15 + 1.5.
  EXPECT_NEAR(usage[0].payload["usage"]["costUsd"].get<double>(), 3.15, 1e-9);
  EXPECT_NEAR(usage[0].payload["total"]["costUsd"].get<double>(), 3.15, 1e-9);
}

// A page that opens the thread later shows every turn's usage and cost: thread.read lists each run of the
// branch once, in order, with its usage and the cost its token.usage reported.
TEST(TurnLoopTest, ThreadReadListsEachRunOfTheBranchWithItsUsageAndCost) {
  testing::HarnessOptions options;
  options.engine.model.price = providers::ModelPrice{.input_per_million = 3,
                                                     .output_per_million = 15,
                                                     .cached_input_per_million = std::nullopt,
                                                     .reasoning_output_per_million = std::nullopt};
  EngineHarness h(std::move(options));
  for (const int64_t output : {100'000, 200'000}) {
    ScriptedResponse response;
    response.add(provider_event::TextDelta{"answer"});
    response.add(provider_event::Usage{TokenUsage{.input_tokens = 1'000'000,
                                                  .output_tokens = output,
                                                  .cached_input_tokens = 0,
                                                  .reasoning_tokens = 0}});
    response.add(provider_event::Finish{StopReason::kEnd, "stop"});
    h.provider.push(std::move(response));
  }
  h.start();
  const std::string thread = h.create_thread();
  h.run_turn(thread, "first");
  h.run_turn(thread, "second");
  const auto usage = h.log.of_type("token.usage");
  ASSERT_EQ(usage.size(), 2u);

  AgentEvent read = h.request("thread.read", {{"threadId", thread}});
  ASSERT_EQ(read.type, "command.ack") << read.payload.dump();
  const nlohmann::json& runs = read.payload["result"]["runs"];
  ASSERT_EQ(runs.size(), 2u) << runs.dump();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(runs[i]["runId"], usage[i].payload["runId"]);
    EXPECT_EQ(runs[i]["state"], "completed");
    EXPECT_EQ(runs[i]["usage"]["outputTokens"], usage[i].payload["total"]["outputTokens"]);
    EXPECT_NEAR(runs[i]["usage"]["costUsd"].get<double>(), usage[i].payload["total"]["costUsd"].get<double>(),
                1e-9);
  }
  // 1M input * 3 + 100k output * 15, per million; the second turn: 3 + 3.
  EXPECT_NEAR(runs[0]["usage"]["costUsd"].get<double>(), 4.5, 1e-9);
  EXPECT_NEAR(runs[1]["usage"]["costUsd"].get<double>(), 6.0, 1e-9);
  EXPECT_EQ(read.payload["result"]["latestRun"]["usage"], runs[1]["usage"]);
}

TEST(TurnLoopTest, EventsOfAThreadCarryStrictlyIncreasingSeq) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::text("one"));
  h.start();
  std::string thread = h.create_thread();
  h.run_turn(thread, "Hi");
  uint64_t last = 0;
  for (const AgentEvent& e : h.log.events()) {
    if (e.thread_id != thread) continue;
    EXPECT_GT(e.seq, last);
    last = e.seq;
  }
}

TEST(TurnLoopTest, ToolCallRunsAndItsResultReachesTheNextRequestWithoutDetails) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "echo", R"({"text":"hi"})"}}, "Let me echo."));
  h.provider.push(ScriptedResponse::text("Done."));
  h.start();
  std::string thread = h.create_thread();
  AgentEvent done = h.run_turn(thread, "Echo hi");
  EXPECT_EQ(done.payload["stopReason"], "end");
  EXPECT_EQ(h.kinds(thread), (std::vector<std::string>{"turn_context", "user_message", "assistant_message",
                                                       "tool_call", "tool_result", "assistant_message"}));
  auto path = h.path(thread);
  EXPECT_EQ(path[4].body["content"][0]["text"], "echo: hi");
  EXPECT_EQ(path[4].body["details"]["echoed"], "hi");
  auto requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_FALSE(requests[0].tools.empty());
  const Message* tool = last_tool_message(requests[1]);
  ASSERT_NE(tool, nullptr);
  EXPECT_EQ(tool->tool_call_id, "c1");
  EXPECT_EQ(text_of(*tool), "echo: hi");
  EXPECT_EQ(text_of(*tool).find("echoed"), std::string::npos);
  EXPECT_EQ(types_for(h.log.events(), thread, false),
            (std::vector<std::string>{
                "command.ack", "thread.updated",  // thread.create
                "command.ack", "thread.updated", "turn.start", "item.complete", "item.start", "item.complete",
                "item.complete", "token.usage", "run.updated",  // assistant with its call
                "item.start", "item.complete",                  // result
                "item.start", "item.complete", "token.usage", "run.updated", "turn.complete"}));
}

TEST(TurnLoopTest, ParallelToolCallsCommitWithTheirAssistantMessageAndTheirResultsFollowInOrder) {
  EngineHarness h;
  h.provider.push(
      ScriptedResponse::tool_calls({{"a", "echo", R"({"text":"1"})"}, {"b", "echo", R"({"text":"2"})"}}));
  h.provider.push(ScriptedResponse::text("Both done."));
  h.start();
  std::string thread = h.create_thread();
  h.run_turn(thread, "two at once");
  EXPECT_EQ(h.kinds(thread),
            (std::vector<std::string>{"turn_context", "user_message", "assistant_message", "tool_call",
                                      "tool_call", "tool_result", "tool_result", "assistant_message"}));
  auto requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 2u);
  const auto& messages = requests[1].messages;
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[1].role, Role::kAssistant);
  ASSERT_EQ(messages[1].tool_calls.size(), 2u);
  EXPECT_EQ(messages[1].tool_calls[0].id, "a");
  EXPECT_EQ(messages[1].tool_calls[1].id, "b");
  EXPECT_EQ(messages[2].tool_call_id, "a");
  EXPECT_EQ(messages[3].tool_call_id, "b");
}

TEST(TurnLoopTest, EmptyAndRepeatedToolCallIdsAreReplacedWithThreadUniqueOnes) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::tool_calls({{"dup", "echo", "{}"}}));
  h.provider.push(
      ScriptedResponse::tool_calls({{"", "echo", "{}"}, {"dup", "echo", "{}"}, {"dup", "echo", "{}"}}));
  h.provider.push(ScriptedResponse::text("ok"));
  h.start();
  std::string thread = h.create_thread();
  h.run_turn(thread, "go");
  std::set<std::string> ids;
  size_t calls = 0;
  for (const NodeRecord& node : h.path(thread)) {
    if (node.kind != NodeKind::kToolCall) continue;
    ++calls;
    std::string id = node.body["toolCallId"];
    EXPECT_FALSE(id.empty());
    ids.insert(id);
  }
  EXPECT_EQ(calls, 4u);
  EXPECT_EQ(ids.size(), 4u) << "every persisted tool call id is unique in the thread";
  EXPECT_TRUE(ids.contains("dup"));
}

TEST(TurnLoopTest, ToolCallsWithAStopReasonOtherThanToolUseFailClosedBeforeAnyToolRuns) {
  EngineHarness h;
  ScriptedResponse bad;
  bad.add(pe::ToolCallStart{0, "c1", "write_note"}).add(pe::ToolCallDelta{0, "{}"}).add(pe::ToolCallEnd{0});
  bad.add(pe::Finish{StopReason::kEnd, "stop"});
  h.provider.push(bad);
  h.start();
  std::string thread = h.create_thread();
  AgentEvent done = h.run_turn(thread, "go");
  EXPECT_EQ(done.payload["stopReason"], "error");
  EXPECT_EQ(done.payload["error"]["code"], codes::kProviderProtocol);
  for (const NodeRecord& node : h.path(thread)) {
    EXPECT_NE(node.kind, NodeKind::kToolCall);
    EXPECT_NE(node.kind, NodeKind::kToolResult);
  }
  EXPECT_EQ(h.path(thread).back().body["stopReason"], "error");
}

TEST(TurnLoopTest, StreamThatEndsWithoutAStopReasonIsAProtocolError) {
  EngineHarness h;
  ScriptedResponse cut;
  cut.add(pe::TextDelta{"half an ans"});
  h.provider.push(cut);
  h.start();
  std::string thread = h.create_thread();
  AgentEvent done = h.run_turn(thread, "go");
  EXPECT_EQ(done.payload["error"]["code"], codes::kProviderProtocol);
  EXPECT_NE(done.payload["error"]["message"].get<std::string>().find("without a stop reason"),
            std::string::npos);
}

TEST(TurnLoopTest, EventsAfterTheStopReasonAreAProtocolError) {
  EngineHarness h;
  ScriptedResponse late = ScriptedResponse::text("done");
  late.add(pe::TextDelta{"more"});
  h.provider.push(late);
  h.start();
  std::string thread = h.create_thread();
  EXPECT_EQ(h.run_turn(thread, "go").payload["error"]["code"], codes::kProviderProtocol);
}

TEST(TurnLoopTest, ArgumentDeltaForAToolCallThatWasNeverStartedIsAProtocolError) {
  EngineHarness h;
  ScriptedResponse bad;
  bad.add(pe::ToolCallDelta{3, "{}"}).add(pe::Finish{StopReason::kToolUse, "tool_calls"});
  h.provider.push(bad);
  h.start();
  std::string thread = h.create_thread();
  EXPECT_EQ(h.run_turn(thread, "go").payload["error"]["code"], codes::kProviderProtocol);
}

TEST(TurnLoopTest, MaxTokensAndContentFilterEndTheTurnWithThatReasonAndKeepTheRawReason) {
  for (auto [reason, raw] :
       {std::pair{StopReason::kMaxTokens, "length"}, {StopReason::kContentFilter, "content_filter"}}) {
    EngineHarness h;
    ScriptedResponse cut;
    cut.add(pe::TextDelta{"partial"}).add(pe::Finish{reason, raw});
    h.provider.push(cut);
    h.start();
    std::string thread = h.create_thread();
    AgentEvent done = h.run_turn(thread, "go");
    EXPECT_EQ(done.payload["stopReason"], std::string(to_string(reason)));
    EXPECT_EQ(done.payload["providerStopReason"], raw);
    EXPECT_EQ(done.payload["mayBeIncomplete"], true);
    EXPECT_EQ(h.path(thread).back().body["providerStopReason"], raw);
  }
}

TEST(TurnLoopTest, ProviderFailureFailsTheTurnWithItsCode) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::failure(Error("provider.overloaded", "try later", true)));
  h.start();
  std::string thread = h.create_thread();
  AgentEvent done = h.run_turn(thread, "go");
  EXPECT_EQ(done.payload["stopReason"], "error");
  EXPECT_EQ(done.payload["error"]["code"], "provider.overloaded");
  auto read = h.request("thread.read", {{"threadId", thread}});
  EXPECT_EQ(read.payload["result"]["latestRun"]["state"], "failed");
}

TEST(TurnLoopTest, BadArgumentsAndUnknownToolsBecomeErrorResultsTheModelCanActOn) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "echo", "{not json"},
                                                {"c2", "echo", R"({"text": 5})"},
                                                {"c3", "echo", R"({"text": "x", "extra": 1})"},
                                                {"c4", "nope", "{}"},
                                                {"c5", "echo", "[1,2]"}}));
  h.provider.push(ScriptedResponse::text("I'll fix that."));
  h.start();
  std::string thread = h.create_thread();
  AgentEvent done = h.run_turn(thread, "go");
  EXPECT_EQ(done.payload["stopReason"], "end") << "bad calls are the model's to fix, not a turn failure";
  std::vector<json> results;
  for (const NodeRecord& node : h.path(thread)) {
    if (node.kind == NodeKind::kToolResult) results.push_back(node.body);
  }
  ASSERT_EQ(results.size(), 5u);
  for (const json& result : results) EXPECT_EQ(result["isError"], true) << result.dump();
  EXPECT_EQ(results[0]["details"]["code"], codes::kToolArgumentsNotJson);
  EXPECT_NE(results[1]["content"][0]["text"].get<std::string>().find("schema"), std::string::npos);
  EXPECT_NE(results[2]["content"][0]["text"].get<std::string>().find("schema"), std::string::npos);
  EXPECT_EQ(results[3]["details"]["code"], codes::kToolUnknown);
  EXPECT_NE(results[3]["content"][0]["text"].get<std::string>().find("echo"), std::string::npos)
      << "the model is told which tools exist";
  EXPECT_EQ(results[4]["details"]["code"], codes::kToolArgumentsNotJson);
}

TEST(TurnLoopTest, FailingAndThrowingToolsBecomeIsErrorResults) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "fail", "{}"}, {"c2", "throw", "{}"}}));
  h.provider.push(ScriptedResponse::text("Both failed."));
  h.start();
  std::string thread = h.create_thread();
  EXPECT_EQ(h.run_turn(thread, "go").payload["stopReason"], "end");
  auto path = h.path(thread);
  ASSERT_EQ(path[5].kind, NodeKind::kToolResult);
  EXPECT_EQ(path[5].body["isError"], true);
  EXPECT_NE(path[5].body["content"][0]["text"].get<std::string>().find("on purpose"), std::string::npos);
  ASSERT_EQ(path[6].kind, NodeKind::kToolResult);
  EXPECT_EQ(path[6].body["isError"], true);
  EXPECT_NE(path[6].body["content"][0]["text"].get<std::string>().find("threw"), std::string::npos);
}

TEST(TurnLoopTest, EnormousToolOutputIsBoundedForTheModelAndKeptWholeInDetails) {
  HarnessOptions options;
  options.engine.max_tool_output_chars = 1000;
  EngineHarness h(options);
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "big", "{}"}}));
  h.provider.push(ScriptedResponse::text("ok"));
  h.start();
  std::string thread = h.create_thread();
  h.run_turn(thread, "go");
  auto requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 2u);
  const Message* tool = last_tool_message(requests[1]);
  ASSERT_NE(tool, nullptr);
  std::string seen = text_of(*tool);
  EXPECT_LT(seen.size(), 1400u);
  EXPECT_NE(seen.find("output truncated"), std::string::npos);
  EXPECT_NE(seen.find("100000"), std::string::npos);
  json details = h.path(thread)[4].body["details"];
  EXPECT_EQ(details["truncated"], true);
  EXPECT_EQ(details["fullContent"][0]["text"].get<std::string>().size(), 100000u);
}

TEST(TurnLoopTest, FailureBreakerRemindsAfterThreeAndDisablesToolsAfterFive) {
  EngineHarness h;
  for (int i = 0; i < 5; ++i)
    h.provider.push(ScriptedResponse::tool_calls({{"f" + std::to_string(i), "fail", "{}"}}));
  h.provider.push(ScriptedResponse::text("I could not do it."));
  h.start();
  std::string thread = h.create_thread();
  AgentEvent done = h.run_turn(thread, "go");
  EXPECT_EQ(done.payload["stopReason"], "end");
  auto requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 6u);
  for (size_t i = 0; i < 5; ++i) EXPECT_FALSE(requests[i].tools.empty()) << "request " << i;
  EXPECT_TRUE(requests[5].tools.empty()) << "after 5 failures the final reply has tools disabled";
  std::vector<std::string> notices;
  for (const NodeRecord& node : h.path(thread)) {
    if (node.kind == NodeKind::kNotice) notices.push_back(node.body["text"]);
  }
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_NE(notices[0].find("3 tool calls failed"), std::string::npos);
  EXPECT_NE(notices[1].find("disabled"), std::string::npos);
  // The reminder reaches the model in the request after the third failure.
  EXPECT_NE(text_of(requests[3].messages.back()).find("Step back"), std::string::npos);
}

TEST(TurnLoopTest, BreakerNoticesFollowEveryResultOfAResponseWithParallelCalls) {
  EngineHarness h;
  std::vector<ScriptedResponse::Call> six;
  for (int i = 0; i < 6; ++i) six.push_back({"p" + std::to_string(i), "fail", "{}"});
  h.provider.push(ScriptedResponse::tool_calls(six));
  h.provider.push(ScriptedResponse::text("I could not do it."));
  h.start();
  std::string thread = h.create_thread();
  AgentEvent done = h.run_turn(thread, "go");
  EXPECT_EQ(done.payload["stopReason"], "end");
  std::vector<std::string> expected{"turn_context", "user_message", "assistant_message"};
  for (int i = 0; i < 6; ++i) expected.push_back("tool_call");
  for (int i = 0; i < 6; ++i) expected.push_back("tool_result");
  expected.insert(expected.end(), {"notice", "notice", "assistant_message"});
  EXPECT_EQ(h.kinds(thread), expected) << "the reminder and tools-off notices come after all six results";
  auto requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 2u);
  const auto& messages = requests[1].messages;
  ASSERT_EQ(messages.size(), 10u);
  EXPECT_EQ(messages[1].tool_calls.size(), 6u);
  for (size_t i = 2; i < 8; ++i) EXPECT_EQ(messages[i].role, Role::kTool) << i;
  EXPECT_NE(text_of(messages[8]).find("3 tool calls failed"), std::string::npos);
  EXPECT_NE(text_of(messages[9]).find("disabled"), std::string::npos);
  EXPECT_TRUE(requests[1].tools.empty());
}

TEST(TurnLoopTest, AToolCallInTheFinalReplyAfterToolsWentOffEndsTheTurnWithToolsDisabled) {
  EngineHarness h;
  for (int i = 0; i < 5; ++i)
    h.provider.push(ScriptedResponse::tool_calls({{"f" + std::to_string(i), "fail", "{}"}}));
  h.provider.push(ScriptedResponse::tool_calls({{"again", "echo", R"({"text":"x"})"}}));
  h.start();
  std::string thread = h.create_thread();
  AgentEvent done = h.run_turn(thread, "go");
  EXPECT_EQ(done.payload["stopReason"], "error") << done.payload.dump();
  EXPECT_EQ(done.payload["error"]["code"], "turn.tools_disabled");
  EXPECT_EQ(done.payload["providerStopReason"], "tool_calls");
  auto path = h.path(thread);
  ASSERT_GE(path.size(), 2u);
  // The call is answered, so the thread's history stays valid for the next turn.
  EXPECT_EQ(path[path.size() - 2].kind, NodeKind::kToolCall);
  EXPECT_EQ(path.back().kind, NodeKind::kToolResult);
  EXPECT_EQ(path.back().body["isError"], true);
  EXPECT_EQ(h.run(done.payload["runId"]).state, RunState::kFailed);
}

TEST(TurnLoopTest, ASuccessResetsTheFailureStreak) {
  EngineHarness h;
  for (int i = 0; i < 2; ++i)
    h.provider.push(ScriptedResponse::tool_calls({{"f" + std::to_string(i), "fail", "{}"}}));
  h.provider.push(ScriptedResponse::tool_calls({{"ok", "echo", "{}"}}));
  for (int i = 2; i < 4; ++i)
    h.provider.push(ScriptedResponse::tool_calls({{"f" + std::to_string(i), "fail", "{}"}}));
  h.provider.push(ScriptedResponse::text("done"));
  h.start();
  std::string thread = h.create_thread();
  h.run_turn(thread, "go");
  for (const NodeRecord& node : h.path(thread)) EXPECT_NE(node.kind, NodeKind::kNotice) << node.body.dump();
}

TEST(TurnLoopTest, PolicyRefusalsAreToldToTheModelAndDoNotCountAsFailures) {
  ReadOnlyGatekeeper read_only;
  HarnessOptions options;
  options.gatekeeper = &read_only;
  EngineHarness h(options);
  for (int i = 0; i < 6; ++i)
    h.provider.push(ScriptedResponse::tool_calls({{"w" + std::to_string(i), "write_note", "{}"}}));
  h.provider.push(ScriptedResponse::text("I may not write here."));
  h.start();
  std::string thread = h.create_thread();
  EXPECT_EQ(h.run_turn(thread, "go").payload["stopReason"], "end");
  size_t refused = 0;
  for (const NodeRecord& node : h.path(thread)) {
    EXPECT_NE(node.kind, NodeKind::kNotice);
    if (node.kind == NodeKind::kToolResult) {
      EXPECT_EQ(node.body["refused"], true);
      EXPECT_NE(node.body["content"][0]["text"].get<std::string>().find("refused"), std::string::npos);
      ++refused;
    }
  }
  EXPECT_EQ(refused, 6u);
  for (const auto& request : h.provider.requests()) EXPECT_FALSE(request.tools.empty());
}

TEST(TurnLoopTest, TokenBudgetPausesTheTurnAndRunResumeContinuesIt) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "echo", "{}"}}).with_usage(80, 40));
  h.provider.push(ScriptedResponse::text("finished").with_usage(10, 5));
  h.start();
  std::string thread = h.create_thread();
  AgentEvent paused = h.run_turn(thread, "go", {{"budgetTokens", 100}});
  EXPECT_EQ(paused.payload["stopReason"], "budget_pause");
  EXPECT_EQ(h.provider.requests().size(), 1u);
  AgentEvent resume = h.request("run.resume", {{"threadId", thread}, {"additionalBudgetTokens", 1000}});
  ASSERT_EQ(resume.type, "command.ack") << resume.payload.dump();
  AgentEvent done = h.wait_complete(thread, 2);
  EXPECT_EQ(done.payload["stopReason"], "end");
  EXPECT_EQ(done.payload["turnId"], paused.payload["turnId"]) << "the same turn continues";
  EXPECT_EQ(h.provider.requests().size(), 2u);
}

TEST(TurnLoopTest, ResumingARunThatIsNotPausedIsRejected) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::text("done"));
  h.start();
  std::string thread = h.create_thread();
  h.run_turn(thread, "go");
  AgentEvent resume = h.request("run.resume", {{"threadId", thread}});
  EXPECT_EQ(resume.type, "command.rejected");
  EXPECT_EQ(resume.payload["error"]["code"], codes::kRunNotResumable);
}

TEST(TurnLoopTest, InterruptWhileStreamingKeepsThePartialReplyAndTellsTheNextRequest) {
  EngineHarness h;
  ScriptedResponse stalls;
  stalls.add(pe::TextDelta{"Working on i"});
  stalls.steps.push_back({testing::ScriptedStep::Kind::kStallUntilCancelled, pe::TextDelta{}, std::nullopt});
  h.provider.push(stalls);
  h.provider.push(ScriptedResponse::text("Resumed."));
  h.start();
  std::string thread = h.create_thread();
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "go"}}).type, "command.ack");
  ASSERT_TRUE(h.log.wait_count("item.delta", 1));
  AgentEvent ack = h.request("turn.interrupt", {{"threadId", thread}});
  EXPECT_EQ(ack.payload["result"]["interrupted"], true);
  AgentEvent done = h.wait_complete(thread, 1);
  EXPECT_EQ(done.payload["stopReason"], "interrupted");
  EXPECT_EQ(h.kinds(thread),
            (std::vector<std::string>{"turn_context", "user_message", "assistant_message", "notice"}));
  EXPECT_EQ(h.path(thread)[2].body["interrupted"], true);
  h.run_turn(thread, "continue");
  auto requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 2u);
  bool told = false;
  for (const Message& m : requests[1].messages) told |= text_of(m).find("interrupted") != std::string::npos;
  EXPECT_TRUE(told) << "the next request carries the interrupt notice";
}

TEST(TurnLoopTest, InterruptReachesTheRunningToolAndItsCallGetsAResult) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "block", "{}"}}));
  h.start();
  std::string thread = h.create_thread();
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "go"}}).type, "command.ack");
  ASSERT_TRUE(h.log.wait_until([&](const auto& events) {
    for (const AgentEvent& e : events) {
      if (e.type == "item.delta" && e.payload.contains("toolProgress")) return true;
    }
    return false;
  })) << "tool progress arrives as item.delta{toolProgress}";
  h.request("turn.interrupt", {{"threadId", thread}});
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "interrupted");
  EXPECT_EQ(h.kinds(thread), (std::vector<std::string>{"turn_context", "user_message", "assistant_message",
                                                       "tool_call", "tool_result", "notice"}));
  EXPECT_EQ(h.path(thread)[4].body["isError"], true);
  EXPECT_EQ(h.path(thread)[4].body["interrupted"], true);
}

TEST(TurnLoopTest, InterruptDuringTheFirstOfTwoCallsAnswersBothAndSaysWhichOneMayHavePartlyRun) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "block", "{}"}, {"c2", "echo", R"({"text":"x"})"}}));
  h.start();
  std::string thread = h.create_thread();
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "go"}}).type, "command.ack");
  h.wait_tool_progress(thread);
  h.request("turn.interrupt", {{"threadId", thread}});
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "interrupted");
  EXPECT_EQ(h.kinds(thread),
            (std::vector<std::string>{"turn_context", "user_message", "assistant_message", "tool_call",
                                      "tool_call", "tool_result", "tool_result", "notice"}));
  auto path = h.path(thread);
  EXPECT_EQ(path[5].body["toolCallId"], "c1");
  EXPECT_NE(path[5].body["content"][0]["text"].get<std::string>().find("may have partly run"),
            std::string::npos);
  EXPECT_EQ(path[6].body["toolCallId"], "c2");
  EXPECT_NE(path[6].body["content"][0]["text"].get<std::string>().find("not run"), std::string::npos);
  for (int i : {5, 6}) EXPECT_EQ(path[static_cast<size_t>(i)].body["isError"], true);
}

TEST(TurnLoopTest, AWriteIsRecordedAsDispatchedBeforeItRunsWhileARetrySafeCallNeedsNoSuchWrite) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::tool_calls({{"r1", "block", "{}"}}));
  h.provider.push(ScriptedResponse::tool_calls({{"w1", "block_write", "{}"}}));
  h.start();
  std::string thread = h.create_thread();
  auto run_id_of_turn = [&](size_t nth) {
    size_t n = 0;
    for (const AgentEvent& e : h.log.events()) {
      if (e.thread_id == thread && e.type == "turn.start" && ++n == nth) return e.payload.value("runId", "");
    }
    return std::string();
  };

  // A read: its tool_call is committed (with the assistant message) but nothing marks it dispatched; after
  // a crash it simply runs again.
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "read"}}).type, "command.ack");
  h.wait_tool_progress(thread);
  RunRecord reading = h.run(run_id_of_turn(1));
  EXPECT_EQ(reading.state, RunState::kExecutingTool);
  EXPECT_FALSE(reading.pending_tool.has_value());
  EXPECT_EQ(h.kinds(thread).back(), "tool_call");
  const uint64_t commits_before_interrupt = h.store().stats().commits;
  h.request("turn.interrupt", {{"threadId", thread}});
  h.wait_complete(thread, 1);
  EXPECT_GT(h.store().stats().commits, commits_before_interrupt);

  // A write: that it was dispatched commits before it runs, naming the call.
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "write"}}).type, "command.ack");
  h.wait_tool_progress(thread, 2);
  RunRecord writing = h.run(run_id_of_turn(2));
  EXPECT_EQ(writing.state, RunState::kExecutingTool);
  ASSERT_TRUE(writing.pending_tool.has_value());
  EXPECT_EQ(writing.pending_tool->tool_call_id, "w1");
  EXPECT_EQ(writing.pending_tool->name, "block_write");
  h.request("turn.interrupt", {{"threadId", thread}});
  h.wait_complete(thread, 2);
  EXPECT_FALSE(h.run(run_id_of_turn(2)).pending_tool.has_value()) << "settled when the turn ended";
}

TEST(TurnLoopTest, InterruptWithNothingRunningIsAcknowledged) {
  EngineHarness h;
  h.start();
  std::string thread = h.create_thread();
  AgentEvent ack = h.request("turn.interrupt", {{"threadId", thread}});
  EXPECT_EQ(ack.type, "command.ack");
  EXPECT_EQ(ack.payload["result"]["interrupted"], false);
}

TEST(TurnLoopTest, ASecondSubmitWhileATurnRunsIsRejectedWithTurnBusy) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::stall());
  h.start();
  std::string thread = h.create_thread();
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "go"}}).type, "command.ack");
  AgentEvent second = h.request("turn.submit", {{"threadId", thread}, {"input", "again"}});
  EXPECT_EQ(second.type, "command.rejected");
  EXPECT_EQ(second.payload["error"]["code"], codes::kTurnBusy);
  h.request("turn.interrupt", {{"threadId", thread}});
  h.wait_complete(thread, 1);
}

TEST(TurnLoopTest, ADuplicateSubmitReplaysItsAckAndStartsNoSecondTurn) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::text("once"));
  h.start();
  std::string thread = h.create_thread();
  Op op{"turn.submit", "client", "same-submission", {{"threadId", thread}, {"input", "hi"}}};
  h.transport->send(op);
  h.wait_complete(thread, 1);
  h.transport->send(op);
  ASSERT_TRUE(h.log.wait_until([&](const auto& events) {
    size_t acks = 0;
    for (const AgentEvent& e : events)
      acks += e.type == "command.ack" && e.payload["submissionId"] == "same-submission";
    return acks == 2;
  }));
  auto acks = h.log.of_type("command.ack");
  EXPECT_EQ(acks.back().payload["replayed"], true);
  EXPECT_EQ(acks.back().payload["result"], acks[acks.size() - 2].payload["result"]);
  EXPECT_EQ(h.provider.requests().size(), 1u);
  EXPECT_EQ(h.kinds(thread).size(), 3u);
}

TEST(TurnLoopTest, ModelWithoutToolUseGetsNoToolSchemas) {
  HarnessOptions options;
  options.engine.model.tool_use = false;
  EngineHarness h(options);
  h.provider.push(ScriptedResponse::text("plain"));
  h.start();
  std::string thread = h.create_thread();
  h.run_turn(thread, "go");
  EXPECT_TRUE(h.provider.requests()[0].tools.empty());
}

TEST(TurnLoopTest, ModelWithoutVisionIsNotOfferedToolsThatNeedVision) {
  for (const bool vision : {false, true}) {
    HarnessOptions options;
    options.engine.model.vision = vision;
    EngineHarness h(options);
    ToolSpec spec = testing::simple_spec("page_picture");
    spec.needs_vision = true;
    auto tool = std::make_shared<testing::LambdaTool>(
        spec, [](ToolCallContext, json, auto done) { done(text_result("a picture")); });
    ASSERT_TRUE(h.tools.register_tool(tool));
    h.provider.push(ScriptedResponse::text("plain"));
    h.start();
    std::string thread = h.create_thread();
    h.run_turn(thread, "go");
    const auto requests = h.provider.requests();
    ASSERT_EQ(requests.size(), 1u);
    bool offered = false;
    for (const ProviderTool& offered_tool : requests[0].tools) {
      offered = offered || offered_tool.name == "page_picture";
    }
    EXPECT_EQ(offered, vision) << "vision: " << vision;
    EXPECT_FALSE(requests[0].tools.empty()) << "the other tools are still offered";
  }
}

TEST(TurnLoopTest, ModelWithoutVisionRefusesImageInputBeforeTheProviderCall) {
  HarnessOptions options;
  options.engine.model.vision = false;
  EngineHarness h(options);
  h.start();
  std::string thread = h.create_thread();
  json image_input = json::array({{{"type", "image"}, {"mediaType", "image/png"}, {"data", "iVBORw0KGgo="}}});
  AgentEvent rejected = h.request("turn.submit", {{"threadId", thread}, {"input", image_input}});
  EXPECT_EQ(rejected.type, "command.rejected");
  EXPECT_EQ(rejected.payload["error"]["code"], codes::kImageUnsupported);
  EXPECT_TRUE(h.provider.requests().empty());
}

TEST(TurnLoopTest, InvalidInputIsRejectedWithACode) {
  EngineHarness h;
  h.start();
  std::string thread = h.create_thread();
  for (json input : {json(""), json(42), json::array({{{"type", "bogus"}}})}) {
    AgentEvent rejected = h.request("turn.submit", {{"threadId", thread}, {"input", input}});
    EXPECT_EQ(rejected.type, "command.rejected") << input.dump();
    EXPECT_EQ(rejected.payload["error"]["code"], codes::kInputInvalid) << input.dump();
  }
  EXPECT_EQ(
      h.request("turn.submit", {{"threadId", "no-such-thread"}, {"input", "x"}}).payload["error"]["code"],
      codes::kThreadNotFound);
  EXPECT_EQ(h.request("no.such.method", {{"threadId", thread}}).payload["error"]["code"],
            codes::kInvalidCommand);
}

TEST(TurnLoopTest, FirstTurnSetsAFallbackTitleAtOnceThenTheTaskModelsTitle) {
  HarnessOptions options;
  options.with_task_provider = true;
  options.engine.task_model = "small-model";
  EngineHarness h(options);
  h.provider.push(ScriptedResponse::text("answer"));
  h.task_provider.push(ScriptedResponse::text("  \"Lisbon trip planning\"\n"));
  h.start();
  std::string thread = h.create_thread();
  h.run_turn(thread, "Plan a trip to Lisbon\nwith details");
  ASSERT_TRUE(h.log.wait_count("thread.updated", 3));  // thread.create, fallback title, model title
  std::vector<AgentEvent> updates;
  for (const AgentEvent& e : h.log.of_type("thread.updated")) {
    if (e.payload.contains("title")) updates.push_back(e);
  }
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[0].payload["title"], "Plan a trip to Lisbon");
  EXPECT_EQ(updates[1].payload["title"], "Lisbon trip planning");
  ASSERT_EQ(h.task_provider.requests().size(), 1u);
  EXPECT_EQ(h.task_provider.requests()[0].model, "small-model");
  // Only the first turn names the thread.
  h.provider.push(ScriptedResponse::text("again"));
  h.run_turn(thread, "second");
  EXPECT_EQ(h.task_provider.requests().size(), 1u);
}

TEST(TurnLoopTest, AFailingTitleModelKeepsTheFallbackTitle) {
  HarnessOptions options;
  options.with_task_provider = true;
  options.engine.task_model = "small-model";
  EngineHarness h(options);
  h.provider.push(ScriptedResponse::text("answer"));
  h.task_provider.push(ScriptedResponse::failure(Error("provider.unavailable", "down", true)));
  h.start();
  std::string thread = h.create_thread();
  h.run_turn(thread, "Hello there");
  auto read = h.request("thread.read", {{"threadId", thread}});
  EXPECT_EQ(read.payload["result"]["title"], "Hello there");
}

// Answers by looking at the conversation, so concurrent threads can share it: a tool call first, then a
// text reply once the last message is a tool result.
class ReactiveProvider final : public Provider {
 public:
  std::string name() const override { return "reactive"; }
  void stream(ProviderRequest request, CancellationToken, std::shared_ptr<ProviderSink> sink) override {
    const bool after_tool = !request.messages.empty() && request.messages.back().role == Role::kTool;
    calls.fetch_add(1);
    if (after_tool) {
      sink->on_event(pe::TextDelta{"done"});
      sink->on_event(pe::Finish{StopReason::kEnd, "stop"});
    } else {
      sink->on_event(pe::ToolCallStart{0, "c", "echo"});
      sink->on_event(pe::ToolCallDelta{0, "{}"});
      sink->on_event(pe::Finish{StopReason::kToolUse, "tool_calls"});
    }
    sink->on_done({});
  }
  std::atomic<int> calls{0};
};

TEST(TurnLoopTest, ManyThreadsRunTheirTurnsInParallel) {
  testing::TempDir dir;
  testing::SimulatedTime clock;
  testing::SequentialIdSource ids("p");
  auto store = open_sqlite_store({.path = dir.file("keel.db"), .synchronous = Synchronous::kOff});
  ASSERT_TRUE(store);
  ReactiveProvider provider;
  ToolRegistry tools;
  ASSERT_TRUE(tools.register_tool(std::make_shared<testing::LambdaTool>(
      testing::simple_spec("echo"), [](ToolCallContext, json, auto done) { done(text_result("ok")); })));
  AllowAllGatekeeper gate;
  EngineOptions options;
  options.io_threads = 2;
  testing::EventLog log;
  {
    EngineCore engine({store->get(), &provider, nullptr, &tools, &gate, &clock, &ids}, options);
    auto subscription = engine.subscribe([&](const AgentEvent& e) { log.add(e); });
    constexpr int kThreads = 8;
    for (int i = 0; i < kThreads; ++i)
      engine.submit(Op{"thread.create", "c", "create" + std::to_string(i), {}});
    ASSERT_TRUE(log.wait_count("command.ack", kThreads));
    std::vector<std::string> threads;
    for (const AgentEvent& e : log.of_type("command.ack")) threads.push_back(e.payload["result"]["threadId"]);
    for (const std::string& thread : threads) {
      engine.submit(Op{"turn.submit", "c", "s" + thread, {{"threadId", thread}, {"input", "go"}}});
    }
    ASSERT_TRUE(log.wait_count("turn.complete", kThreads));
    for (const AgentEvent& e : log.of_type("turn.complete")) EXPECT_EQ(e.payload["stopReason"], "end");
    EXPECT_EQ(provider.calls.load(), 2 * kThreads);
    // Each thread's events are in seq order, whatever the interleaving across threads.
    std::map<std::string, uint64_t> last;
    for (const AgentEvent& e : log.events()) {
      EXPECT_GT(e.seq, last[e.thread_id]);
      last[e.thread_id] = e.seq;
    }
  }
}

TEST(TurnLoopTest, ASlowSubscriberNeitherStallsTheEngineNorLosesNonDeltaEvents) {
  EngineHarness h;
  ScriptedResponse many;
  std::string expected;
  for (int i = 0; i < 2000; ++i) {
    std::string piece = "w" + std::to_string(i) + " ";
    expected += piece;
    many.add(pe::TextDelta{piece});
  }
  many.add(pe::Finish{StopReason::kEnd, "stop"});
  h.provider.push(many);
  h.start();
  std::mutex slow_mu;
  std::condition_variable slow_cv;
  std::vector<AgentEvent> slow_events;
  bool release = false;
  auto slow = h.transport->on_event([&](const AgentEvent& event) {
    std::unique_lock<std::mutex> lock(slow_mu);
    slow_cv.wait(lock, [&] { return release; });  // stuck until the turn completed for everyone else
    slow_events.push_back(event);
    slow_cv.notify_all();
  });
  std::string thread = h.create_thread();
  AgentEvent done = h.run_turn(thread, "talk");  // completes while the slow subscriber has seen nothing
  EXPECT_EQ(done.payload["stopReason"], "end");
  {
    std::lock_guard<std::mutex> guard(slow_mu);
    release = true;
  }
  slow_cv.notify_all();
  const size_t expected_non_delta = [&] {
    size_t n = 0;
    for (const AgentEvent& e : h.log.events()) n += !e.is_delta();
    return n;
  }();
  {
    std::unique_lock<std::mutex> lock(slow_mu);
    EXPECT_TRUE(slow_cv.wait_for(lock, std::chrono::seconds(30), [&] {  // a hang guard, not a timing check
      return !slow_events.empty() && slow_events.back().type == "turn.complete";
    }));
  }
  slow.reset();
  std::string text;
  size_t non_delta = 0;
  for (const AgentEvent& e : slow_events) {
    if (e.is_delta())
      text += e.payload.value("text", "");
    else
      ++non_delta;
  }
  EXPECT_EQ(non_delta, expected_non_delta);
  EXPECT_EQ(text, expected) << "coalesced deltas still carry every piece of text";
  // The slow subscriber's mailbox held everything the turn published. Deltas are merged only once more than
  // EventBus::kCoalesceAfter events wait, so whether merging had to happen depends on how many events the
  // engine published — fewer under load, when it batches the provider's deltas itself.
  const size_t published = h.log.events().size();
  if (published > EventBus::kCoalesceAfter + expected_non_delta + 1) {
    EXPECT_LT(slow_events.size(), published) << "deltas were coalesced for the slow subscriber";
  } else {
    EXPECT_EQ(slow_events.size(), published) << "too few events waited to be coalesced";
  }
}

TEST(TurnLoopTest, WaitToolReportsProgressOnTheEngineSchedulerAndCompletes) {
  EngineHarness h;
  h.provider.push(
      ScriptedResponse::tool_calls({{"w", "wait", R"({"seconds": 2, "reason": "let it settle"})"}}));
  h.provider.push(ScriptedResponse::text("Waited."));
  h.start();
  ASSERT_TRUE(builtin::register_builtin_tools(h.tools, {.scheduler = &h.engine->scheduler()}));
  std::string thread = h.create_thread();
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "wait two seconds"}}).type,
            "command.ack");
  ASSERT_TRUE(h.clock.wait_scheduled(2));    // the call's time budget and the wait's first second
  h.clock.advance(std::chrono::seconds(2));  // each second ticks; in no real time
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  bool progressed = false;
  for (const AgentEvent& e : h.log.of_type("item.delta")) progressed |= e.payload.contains("toolProgress");
  EXPECT_TRUE(progressed);
  EXPECT_EQ(h.path(thread)[4].body["isError"], false);
}

TEST(TurnLoopTest, InterruptEndsAWaitAtOnce) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::tool_calls({{"w", "wait", R"({"seconds": 3600})"}}));
  h.start();
  ASSERT_TRUE(builtin::register_builtin_tools(h.tools, {.scheduler = &h.engine->scheduler()}));
  std::string thread = h.create_thread();
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "wait an hour"}}).type, "command.ack");
  ASSERT_TRUE(h.log.wait_until([&](const auto& events) {
    for (const AgentEvent& e : events) {
      if (e.type == "item.start" && e.payload.value("kind", "") == "tool_result") return true;
    }
    return false;
  }));
  h.request("turn.interrupt", {{"threadId", thread}});
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "interrupted");
}

}  // namespace
}  // namespace keel

namespace keel {
namespace {

// A client that submits the moment it sees turn.complete is admitted: the thread is free for a new turn
// before its turn.complete goes out (the event is published in the same strand step that releases the
// thread). Each answer submits the next turn from the event callback itself, the fastest a client can be.
TEST(TurnLoopTest, ASubmitSentOnTurnCompleteIsNeverRefusedAsBusy) {
  constexpr int kTurns = 200;
  EngineHarness h;
  for (int i = 0; i < kTurns; ++i) h.provider.push(ScriptedResponse::text("answer " + std::to_string(i)));
  h.start();
  const std::string thread = h.create_thread();
  std::atomic<int> submitted{1};
  auto chain = h.transport->on_event([&](const AgentEvent& event) {
    if (event.type != "turn.complete" || event.thread_id != thread) return;
    const int next = submitted.fetch_add(1);
    if (next >= kTurns) return;
    h.transport->send(Op{"turn.submit",
                         "chain-client",
                         "chain-" + std::to_string(next),
                         {{"threadId", thread}, {"input", "again"}}});
  });
  h.send("turn.submit", {{"threadId", thread}, {"input", "first"}});
  ASSERT_TRUE(h.log.wait_until([&](const std::vector<AgentEvent>& events) {
    size_t answered = 0;
    for (const AgentEvent& e : events) {
      if (e.type == "command.rejected") return true;  // fail fast below
      answered += e.type == "turn.complete" && e.thread_id == thread;
    }
    return answered == static_cast<size_t>(kTurns);
  }));
  for (const AgentEvent& e : h.log.of_type("command.rejected")) ADD_FAILURE() << e.payload.dump();
  chain.reset();
}

}  // namespace
}  // namespace keel
