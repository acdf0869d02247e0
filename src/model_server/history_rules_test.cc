#include "model_server/history_rules.h"

#include <gtest/gtest.h>

namespace keel::model_server {
namespace {

using nlohmann::json;

json chat(json messages) { return {{"model", "m"}, {"stream", true}, {"messages", std::move(messages)}}; }
json call(const std::string& id) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}};
}
json tool(const std::string& id) { return {{"role", "tool"}, {"tool_call_id", id}, {"content", "r"}}; }
json user(const std::string& text) { return {{"role", "user"}, {"content", text}}; }

TEST(HistoryRulesTest, ChatToolMessagesFollowTheirCallsBeforeAnyOtherMessage) {
  const json calls = {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call("a"), call("b")}}};
  EXPECT_EQ(
      history_violation(Api::kChatCompletions, chat({user("go"), calls, tool("b"), tool("a"), user("x")})),
      std::nullopt);
  // The breaker's notices between results (issue 14, point 4).
  auto between =
      history_violation(Api::kChatCompletions, chat({user("go"), calls, tool("a"), user("n"), tool("b")}));
  ASSERT_TRUE(between);
  EXPECT_NE(between->find("must be followed by tool messages"), std::string::npos) << *between;
  EXPECT_TRUE(history_violation(Api::kChatCompletions, chat({user("go"), calls, tool("a")})));
  EXPECT_TRUE(history_violation(Api::kChatCompletions, chat({user("go"), tool("a")})));
  EXPECT_TRUE(
      history_violation(Api::kChatCompletions, chat({user("go"), calls, tool("a"), tool("a"), tool("b")})));
  EXPECT_TRUE(history_violation(Api::kChatCompletions, chat({user("go"), {{"role", "assistant"}}})));
}

json input(json items) { return {{"model", "m"}, {"stream", true}, {"input", std::move(items)}}; }
json fc(const std::string& id) {
  return {{"type", "function_call"}, {"call_id", id}, {"name", "f"}, {"arguments", "{}"}};
}
json fco(const std::string& id) {
  return {{"type", "function_call_output"}, {"call_id", id}, {"output", "r"}};
}
json rmsg(const std::string& role) {
  return {{"role", role}, {"content", json::array({{{"type", "input_text"}, {"text", "t"}}})}};
}

TEST(HistoryRulesTest, ResponsesOutputsAnswerEarlierCallsWithNoMessageBetween) {
  EXPECT_EQ(history_violation(Api::kResponses,
                              input({rmsg("user"), fc("a"), fc("b"), fco("a"), fco("b"), rmsg("user")})),
            std::nullopt);
  EXPECT_TRUE(history_violation(Api::kResponses,
                                input({rmsg("user"), fc("a"), fc("b"), fco("a"), rmsg("user"), fco("b")})));
  EXPECT_TRUE(history_violation(Api::kResponses, input({rmsg("user"), fc("a")})));
  EXPECT_TRUE(history_violation(Api::kResponses, input({rmsg("user"), fco("a")})));
  EXPECT_EQ(history_violation(Api::kResponses, {{"input", "just text"}}), std::nullopt);
}

json amsg(const std::string& role, json blocks) { return {{"role", role}, {"content", std::move(blocks)}}; }
json messages(json list) {
  return {{"model", "m"},
          {"stream", true},
          {"messages", std::move(list)},
          {"tools", json::array({{{"name", "f"}}})}};
}
json text(const std::string& t) { return {{"type", "text"}, {"text", t}}; }
json use(const std::string& id) {
  return {{"type", "tool_use"}, {"id", id}, {"name", "f"}, {"input", json::object()}};
}
json result(const std::string& id) {
  return {{"type", "tool_result"}, {"tool_use_id", id}, {"content", "r"}};
}

TEST(HistoryRulesTest, AnthropicAlternatesAndPairsEveryToolUseWithAResultInTheNextMessage) {
  const json ok =
      messages({amsg("user", {text("go")}), amsg("assistant", {text("calling"), use("a"), use("b")}),
                amsg("user", {result("b"), result("a"), text("also")}), amsg("assistant", {text("done")}),
                amsg("user", {text("next")})});
  EXPECT_EQ(history_violation(Api::kAnthropicMessages, ok), std::nullopt);
  // Two user turns in a row: the reply between them was left out (issue 14, point 12).
  EXPECT_TRUE(history_violation(Api::kAnthropicMessages,
                                messages({amsg("user", {text("a")}), amsg("user", {text("b")})})));
  EXPECT_TRUE(history_violation(Api::kAnthropicMessages, messages({amsg("assistant", {text("a")})})));
  EXPECT_TRUE(history_violation(
      Api::kAnthropicMessages,
      messages({amsg("user", {text("a")}), amsg("assistant", json::array()), amsg("user", {text("b")})})));
  EXPECT_TRUE(history_violation(
      Api::kAnthropicMessages,
      messages({amsg("user", {text("a")}), amsg("assistant", {text("")}), amsg("user", {text("b")})})));
  EXPECT_TRUE(history_violation(Api::kAnthropicMessages,
                                messages({amsg("user", {text("go")}), amsg("assistant", {use("a"), use("b")}),
                                          amsg("user", {result("a")})})));
  EXPECT_TRUE(history_violation(Api::kAnthropicMessages,
                                messages({amsg("user", {text("go")}), amsg("assistant", {use("a")}),
                                          amsg("user", {text("n"), result("a")})})));
  EXPECT_TRUE(history_violation(Api::kAnthropicMessages,
                                messages({amsg("user", {text("go")}), amsg("assistant", {use("a")}),
                                          amsg("user", {result("a"), result("z")})})));
  EXPECT_TRUE(history_violation(Api::kAnthropicMessages,
                                messages({amsg("user", {text("go")}), amsg("assistant", {use("a")})})));
  // A history with tool_use blocks needs tool definitions, even when no tool may be called.
  json no_tools = ok;
  no_tools.erase("tools");
  auto undefined = history_violation(Api::kAnthropicMessages, no_tools);
  ASSERT_TRUE(undefined);
  EXPECT_NE(undefined->find("must define tools"), std::string::npos) << *undefined;
}

TEST(HistoryRulesTest, BodiesOfAnyShapeGiveAnAnswerNotAnException) {
  for (const char* raw : {R"({})", R"({"messages": 3})", R"({"messages": [1, null, "x"]})",
                          R"({"messages": [{"role": "assistant", "tool_calls": [1, {"id": 2}]}]})",
                          R"({"input": [{"type": 3}, {"type": "function_call_output"}]})",
                          R"({"messages": [{"role": "user", "content": [1, {"type": "tool_result"}]}]})"}) {
    const json body = json::parse(raw);
    for (Api api : {Api::kChatCompletions, Api::kResponses, Api::kAnthropicMessages}) {
      EXPECT_NO_THROW((void)history_violation(api, body)) << raw;
    }
  }
}

}  // namespace
}  // namespace keel::model_server
