// Histories as keel persists them — including the shapes older versions left in stores and the ends of
// turns that failed closed — built from a real store by the SessionContextBuilder and encoded by each wire
// codec, then checked against the API's own rules for a conversation (model_server/history_rules.h, what
// the scripted model server also enforces). Issue 14, points 4 and 12.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "model_server/history_rules.h"
#include "providers/wire/wire_codec.h"
#include "store/node_body.h"
#include "store/session_context.h"
#include "store/thread_repository.h"
#include "testing/manual_clock.h"
#include "testing/temp_dir.h"

namespace keel::providers {
namespace {

using model_server::Api;
using nlohmann::json;

ContentBlock text_block(std::string text) {
  ContentBlock block;
  block.kind = ContentBlock::Kind::kText;
  block.text = std::move(text);
  return block;
}

struct Wire {
  WireFormat format;
  Api api;
};
const Wire kWires[] = {{WireFormat::kOpenAiChat, Api::kChatCompletions},
                       {WireFormat::kOpenAiResponses, Api::kResponses},
                       {WireFormat::kAnthropicMessages, Api::kAnthropicMessages}};

class WireHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store =
        open_sqlite_store(SqliteStoreOptions{.path = dir_.file("t.db"), .synchronous = Synchronous::kOff});
    ASSERT_TRUE(store) << store.error().to_string();
    store_ = std::move(*store);
    auto tx = store_->begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(repo_.create(**tx, "th", "a thread"));
    ASSERT_TRUE((*tx)->commit());
  }

  std::string append(NodeKind kind, json body) {
    std::string id = "n" + std::to_string(++next_node_);
    auto tx = store_->begin(TxMode::kWrite);
    EXPECT_TRUE(tx);
    if (!tx) return id;
    NewNode node;
    node.id = id;
    node.thread_id = "th";
    node.kind = kind;
    node.body = std::move(body);
    auto appended = repo_.append(**tx, std::move(node));
    EXPECT_TRUE(appended) << appended.error().to_string();
    EXPECT_TRUE((*tx)->commit());
    leaf_ = id;
    return id;
  }
  void user(const std::string& text, bool steered = false) {
    UserMessageBody body{.content = {text_block(text)}, .steered = steered};
    if (steered) body.steer_id = "steer-" + text;
    append(NodeKind::kUserMessage, *encode_user_message(body));
  }
  std::string assistant(std::vector<ContentBlock> content, AssistantStopReason reason, std::string raw) {
    return append(NodeKind::kAssistantMessage,
                  *encode_assistant_message(
                      {.content = std::move(content), .stop_reason = reason, .provider_stop_reason = raw}));
  }
  // What the fail-closed path persists for a response refused as a protocol error (engine/model_step.cc): the
  // text said so far, stop reason error, no call.
  void refused_reply(std::string said) {
    std::vector<ContentBlock> content;
    if (!said.empty()) content.push_back(text_block(std::move(said)));
    json body = *encode_assistant_message({.content = std::move(content),
                                           .stop_reason = AssistantStopReason::kError,
                                           .provider_stop_reason = "protocol_error"});
    body["protocolError"] =
        "the response has 1 tool call(s) but stop reason 'end' (end_turn); no tool was run";
    append(NodeKind::kAssistantMessage, std::move(body));
  }
  void call(const std::string& id, const std::string& assistant_node) {
    append(NodeKind::kToolCall, *encode_tool_call({.tool_call_id = id,
                                                   .name = "search",
                                                   .arguments = {{"q", id}},
                                                   .assistant_node_id = assistant_node}));
  }
  void result(const std::string& id, const std::string& text, bool is_error = false) {
    append(NodeKind::kToolResult,
           *encode_tool_result({.tool_call_id = id, .content = {text_block(text)}, .is_error = is_error}));
  }
  void notice(const std::string& text) {
    append(NodeKind::kNotice, *encode_notice({.text = text, .for_model = true}));
  }

  // The request each wire format sends for the thread's leaf; fails the test when one breaks its API's rules.
  // `offer_tools` false: tools are off (the failure breaker), none is offered.
  std::vector<std::pair<Api, json>> requests(bool offer_tools = true) {
    SessionContextBuilder builder;
    auto tx = store_->begin(TxMode::kRead);
    EXPECT_TRUE(tx);
    if (!tx) return {};
    auto built = builder.build(**tx, leaf_);
    EXPECT_TRUE(built) << built.error().to_string();
    if (!built) return {};
    std::vector<Message> messages(built->begin(), built->end());
    std::vector<std::pair<Api, json>> out;
    for (const Wire& wire : kWires) {
      ProviderRequest request;
      request.model = "m";
      request.messages = messages;
      if (offer_tools) request.tools.push_back(ProviderTool{"search", "Searches.", json{{"type", "object"}}});
      auto body = make_wire_codec(wire.format)->encode(request, ModelCapabilities{});
      EXPECT_TRUE(body) << body.error().to_string();
      if (!body) continue;
      EXPECT_EQ(model_server::history_violation(wire.api, *body), std::nullopt)
          << to_string(wire.format) << ": " << body->dump(1);
      out.emplace_back(wire.api, std::move(*body));
    }
    return out;
  }

  testing::TempDir dir_;
  testing::ManualClock clock_;
  ThreadRepository repo_{clock_};
  std::unique_ptr<Store> store_;
  int next_node_ = 0;
  std::string leaf_;
};

// The roles of the request's conversation, the system prompt left out ("fc"/"fco" for Responses' function
// call items).
std::vector<std::string> roles(Api api, const json& body) {
  std::vector<std::string> out;
  for (const json& item : body.at(api == Api::kResponses ? "input" : "messages")) {
    if (item.contains("role")) {
      out.push_back(item["role"]);
    } else {
      out.push_back(item["type"] == "function_call" ? "fc" : "fco");
    }
  }
  return out;
}

TEST_F(WireHistoryTest, BreakerNoticesStoredBetweenParallelResultsAreSentAfterThem) {
  user("go");
  const std::string a = assistant({}, AssistantStopReason::kToolUse, "tool_calls");
  for (const char* id : {"c1", "c2", "c3", "c4", "c5", "c6"}) call(id, a);
  result("c1", "failed", true);
  result("c2", "failed", true);
  result("c3", "failed", true);
  notice("The last 3 tool calls failed.");
  result("c4", "failed", true);
  result("c5", "failed", true);
  notice("tools are now disabled");
  result("c6", "not run", true);
  assistant({text_block("I could not.")}, AssistantStopReason::kEnd, "stop");
  user("try again");
  EXPECT_EQ(requests(/*offer_tools=*/false).size(), 3u) << "the final request after tools went off";
  for (const auto& [api, body] : requests()) {
    if (api == Api::kChatCompletions) {
      EXPECT_EQ(roles(api, body),
                (std::vector<std::string>{"user", "assistant", "tool", "tool", "tool", "tool", "tool", "tool",
                                          "user", "user", "assistant", "user"}));
    }
  }
}

TEST_F(WireHistoryTest, ANoticeBetweenInterleavedCallsAndResultsOfAnOlderStoreIsSentAfterTheResults) {
  user("go");
  const std::string a = assistant({text_block("two")}, AssistantStopReason::kToolUse, "tool_use");
  call("c1", a);
  result("c1", "one");
  notice("remember");
  call("c2", a);
  result("c2", "two");
  assistant({text_block("done")}, AssistantStopReason::kEnd, "end_turn");
  user("more");
  EXPECT_EQ(requests().size(), 3u);
}

// Point 12: a reply refused as a protocol error (tool calls with stop reason end_turn) is persisted with no
// content; the next request must still hold it, between the user turns around it, on every wire format.
TEST_F(WireHistoryTest, AReplyRefusedAsAProtocolErrorStaysBetweenTheUserTurnsAroundIt) {
  user("first");
  refused_reply("");
  user("a steer that was ACKed while it streamed", /*steered=*/true);
  user("second");
  for (const auto& [api, body] : requests()) {
    const std::vector<std::string> got = roles(api, body);
    if (api == Api::kAnthropicMessages) {
      EXPECT_EQ(got, (std::vector<std::string>{"user", "assistant", "user"})) << body.dump(1);
      EXPECT_EQ(body["messages"][1]["content"][0]["text"], "(no reply)");
      EXPECT_EQ(body["messages"][2]["content"].size(), 2u) << "the steer and the next turn's input";
    } else {
      EXPECT_EQ(got, (std::vector<std::string>{"user", "assistant", "user", "user"})) << body.dump(1);
    }
    if (api == Api::kChatCompletions) {
      EXPECT_EQ(body["messages"][1]["content"], "(no reply)");
    }
    if (api == Api::kResponses) {
      EXPECT_EQ(body["input"][1]["content"], "(no reply)");
    }
  }
}

TEST_F(WireHistoryTest, ARefusedReplyWithTextKeepsItsText) {
  user("first");
  refused_reply("Let me look.");
  user("second");
  for (const auto& [api, body] : requests()) {
    EXPECT_EQ(roles(api, body), (std::vector<std::string>{"user", "assistant", "user"})) << body.dump(1);
  }
}

TEST_F(WireHistoryTest, AReasoningOnlyReplyIsNotAnEmptyTurn) {
  user("first");
  ContentBlock thought;
  thought.kind = ContentBlock::Kind::kReasoning;
  thought.text = "thinking until the limit";
  assistant({thought}, AssistantStopReason::kMaxTokens, "max_tokens");
  user("second");
  for (const auto& [api, body] : requests()) {
    EXPECT_EQ(roles(api, body), (std::vector<std::string>{"user", "assistant", "user"})) << body.dump(1);
  }
}

// The ends of turns that stop early: tools off with calls answered "not run", and an interrupt (results,
// ACKed steers, the notice), each followed by the next turn.
TEST_F(WireHistoryTest, TurnsEndedByTheBreakerOrAnInterruptLeaveAValidHistory) {
  user("go");
  const std::string a = assistant({}, AssistantStopReason::kToolUse, "tool_use");
  call("c1", a);
  result("c1", "Not run: tools are disabled for the rest of this turn.", true);
  user("next");
  const std::string b = assistant({text_block("on it")}, AssistantStopReason::kToolUse, "tool_use");
  call("c2", b);
  call("c3", b);
  result("c2", "Interrupted by the user before the tool finished; it may have partly run.", true);
  result("c3", "Interrupted by the user before the tool ran; it was not run.", true);
  user("steered", /*steered=*/true);
  notice("The user interrupted the previous turn.");
  user("after");
  EXPECT_EQ(requests().size(), 3u);
  for (const auto& [api, body] : requests(/*offer_tools=*/false)) {
    if (api != Api::kAnthropicMessages) continue;
    EXPECT_EQ(body["tool_choice"], json({{"type", "none"}})) << "tools are declared but none may be called";
    EXPECT_EQ(body["tools"].size(), 1u) << body.dump(1);
  }
}

}  // namespace
}  // namespace keel::providers
