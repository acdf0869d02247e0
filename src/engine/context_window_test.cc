// Context window rules (engine/context_window.h): the size estimate, where the kept tail starts, and the
// summary request.
#include "engine/context_window.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace keel {
namespace {

Message text_message(Role role, std::string text) {
  Message message;
  message.role = role;
  message.content.push_back(ContentBlock{.text = std::move(text)});
  return message;
}

Message tool_message(std::string call_id, std::string text) {
  Message message = text_message(Role::kTool, std::move(text));
  message.tool_call_id = std::move(call_id);
  return message;
}

TEST(ContextWindowTest, EstimateCountsTextCallsImagesAndAFixedCostPerMessage) {
  Message message = text_message(Role::kUser, std::string(400, 'x'));
  EXPECT_EQ(estimate_tokens(message), kTokensPerMessage + 100);
  message.content.push_back(ContentBlock{.kind = ContentBlock::Kind::kImage,
                                         .media_type = "image/png",
                                         .data_base64 = std::string(100000, 'A')});
  EXPECT_EQ(estimate_tokens(message), kTokensPerMessage + 100 + kTokensPerImage);
  Message call = text_message(Role::kAssistant, "");
  call.tool_calls.push_back(ToolCall{"c1", "read", nlohmann::json{{"path", std::string(396, 'p')}}});
  EXPECT_GT(estimate_tokens(call), 100);
}

TEST(ContextWindowTest, RequestNeedsCompactionOnlyPastTheThresholdOfAKnownWindow) {
  std::vector<Message> messages{text_message(Role::kUser, std::string(4000, 'x'))};  // ~1000 tokens
  ProviderRequest request;
  request.messages = messages;
  EXPECT_FALSE(needs_compaction(request, 0, 0, 0.8));      // unknown window
  EXPECT_FALSE(needs_compaction(request, 0, 2000, 0.8));   // 1004 of 1600
  EXPECT_TRUE(needs_compaction(request, 700, 2000, 0.8));  // the reply's room counts
  EXPECT_TRUE(needs_compaction(request, 0, 1200, 0.8));
}

TEST(ContextWindowTest, KeptTailFitsItsBudgetAndNeverStartsWithAToolResult) {
  std::vector<Message> messages{
      text_message(Role::kUser, std::string(400, 'a')),       // 104
      text_message(Role::kAssistant, std::string(400, 'b')),  // 104 (the call's message)
      tool_message("c1", std::string(400, 'c')),              // 104
      tool_message("c2", std::string(400, 'd')),              // 104
      text_message(Role::kAssistant, std::string(400, 'e')),  // 104
  };
  // Room for three: it would start at the first result, so it starts after the results.
  EXPECT_EQ(choose_kept_tail(messages, 320), 4u);
  // Room for four: from the assistant message that made the calls.
  EXPECT_EQ(choose_kept_tail(messages, 420), 1u);
  // Room for everything: nothing would be left to summarize.
  EXPECT_EQ(choose_kept_tail(messages, 10'000), std::nullopt);
  // Room for nothing: the newest message is kept all the same.
  EXPECT_EQ(choose_kept_tail(messages, 0), 4u);
  // When the newest messages are results, their call is kept with them.
  messages.pop_back();
  EXPECT_EQ(choose_kept_tail(messages, 0), 1u);
  messages.erase(messages.begin());
  EXPECT_EQ(choose_kept_tail(messages, 0), std::nullopt);  // nothing before the call to summarize
}

TEST(ContextWindowTest, SummaryRequestRendersCallsAndResultsAsTextAndIsBounded) {
  Message call = text_message(Role::kAssistant, "let me look");
  call.tool_calls.push_back(ToolCall{"c1", "read_file", nlohmann::json{{"path", "notes.txt"}}});
  std::vector<Message> replaced{text_message(Role::kUser, "summarize my notes"), call,
                                tool_message("c1", "the notes say hello")};
  std::vector<Message> holder;
  ProviderRequest request = summary_request(replaced, "m", 500, 100'000, holder);
  ASSERT_EQ(request.messages.size(), 1u);
  EXPECT_EQ(request.model, "m");
  EXPECT_EQ(request.max_output_tokens, 500);
  EXPECT_TRUE(request.tools.empty());
  const std::string& transcript = request.messages[0].content[0].text;
  EXPECT_NE(transcript.find("User: summarize my notes"), std::string::npos) << transcript;
  EXPECT_NE(transcript.find("called read_file (c1)"), std::string::npos) << transcript;
  EXPECT_NE(transcript.find("Tool result (c1): the notes say hello"), std::string::npos) << transcript;

  std::vector<Message> long_history;
  for (int i = 0; i < 100; ++i)
    long_history.push_back(text_message(Role::kUser, "turn " + std::to_string(i) + std::string(200, '.')));
  ProviderRequest bounded = summary_request(long_history, "m", 500, 2'000, holder);
  const std::string& cut = bounded.messages[0].content[0].text;
  EXPECT_LT(cut.size(), 2'200u);
  EXPECT_NE(cut.find("turn 0"), std::string::npos);   // the beginning is kept
  EXPECT_NE(cut.find("turn 99"), std::string::npos);  // and the most recent part
  EXPECT_NE(cut.find("omitted"), std::string::npos);
}

}  // namespace
}  // namespace keel
