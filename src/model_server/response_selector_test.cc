#include "model_server/response_selector.h"

#include <gtest/gtest.h>

namespace keel::model_server {
namespace {

using nlohmann::json;

TEST(LastInputTextTest, ChatTakesTheLastUserOrToolMessage) {
  const json body = {{"messages",
                      {{{"role", "user"}, {"content", "first"}},
                       {{"role", "assistant"}, {"content", "reply"}},
                       {{"role", "tool"}, {"tool_call_id", "c"}, {"content", "tool output"}},
                       {{"role", "assistant"}, {"content", nullptr}}}}};
  EXPECT_EQ(last_input_text(Api::kChatCompletions, body), "tool output");
  const json parts = {{"messages",
                       {{{"role", "user"},
                         {"content",
                          {{{"type", "text"}, {"text", "a"}},
                           {{"type", "image_url"}},
                           {{"type", "text"}, {"text", "b"}}}}}}}};
  EXPECT_EQ(last_input_text(Api::kChatCompletions, parts), "a\nb");
}

TEST(LastInputTextTest, ResponsesReadsStringInputMessagesAndFunctionOutputs) {
  EXPECT_EQ(last_input_text(Api::kResponses, {{"input", "plain"}}), "plain");
  const json items = {{"input",
                       {{{"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "question"}}}}},
                        {{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", "{}"}},
                        {{"type", "function_call_output"}, {"call_id", "c"}, {"output", "42"}}}}};
  EXPECT_EQ(last_input_text(Api::kResponses, items), "42");
}

TEST(LastInputTextTest, AnthropicReadsTextAndToolResultBlocks) {
  const json body = {
      {"messages",
       {{{"role", "user"}, {"content", "hi"}},
        {{"role", "assistant"},
         {"content", {{{"type", "tool_use"}, {"id", "t"}, {"name", "f"}, {"input", json::object()}}}}},
        {{"role", "user"},
         {"content",
          {{{"type", "tool_result"},
            {"tool_use_id", "t"},
            {"content", {{{"type", "text"}, {"text", "result text"}}}}}}}}}}};
  EXPECT_EQ(last_input_text(Api::kAnthropicMessages, body), "result text");
}

TEST(LastInputTextTest, IsEmptyWithoutMessages) {
  EXPECT_EQ(last_input_text(Api::kChatCompletions, json::object()), "");
  EXPECT_EQ(last_input_text(Api::kAnthropicMessages, json::array()), "");
}

Script script_of(json responses) {
  auto script = parse_script({{"responses", std::move(responses)}});
  EXPECT_TRUE(script) << script.error().to_string();
  return *script;
}

TEST(ResponseSelectorTest, TakesUnmatchedResponsesInOrderEachOnce) {
  const Script script = script_of({{{"steps", json::array()}, {"stop_reason", "one"}},
                                   {{"steps", json::array()}, {"stop_reason", "two"}}});
  ResponseSelector selector(script);
  EXPECT_EQ(selector.choose("x")->stop_reason, "one");
  EXPECT_EQ(selector.choose("x")->stop_reason, "two");
  EXPECT_EQ(selector.choose("x"), nullptr);
}

TEST(ResponseSelectorTest, MatchChoosesTheSameResponseEveryTimeWithoutUsingTheOrder) {
  const Script script =
      script_of({{{"steps", json::array()}, {"stop_reason", "ordered"}},
                 {{"match", "weather"}, {"steps", json::array()}, {"stop_reason", "matched"}}});
  ResponseSelector selector(script);
  EXPECT_EQ(selector.choose("what is the weather")->stop_reason, "matched");
  EXPECT_EQ(selector.choose("the weather again")->stop_reason, "matched");
  EXPECT_EQ(selector.choose("something else")->stop_reason, "ordered");
  EXPECT_EQ(selector.choose("something else"), nullptr);
}

TEST(ResponseSelectorTest, EmptyMatchAnswersEveryRequest) {
  const Script script = script_of({{{"match", ""}, {"steps", json::array()}}});
  ResponseSelector selector(script);
  for (int i = 0; i < 3; ++i) EXPECT_NE(selector.choose("anything"), nullptr);
}

}  // namespace
}  // namespace keel::model_server
