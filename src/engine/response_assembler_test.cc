// ResponseAssembler: how streamed deltas become the assistant message's content blocks.
#include "engine/response_assembler.h"

#include <gtest/gtest.h>

namespace keel {
namespace {

namespace pe = provider_event;
using nlohmann::json;

TEST(ResponseAssemblerTest, ReasoningItemsEachKeepTheirOwnProviderData) {
  // Anthropic: a thinking block (deltas, then its signature), then a redacted_thinking block, then text.
  ResponseAssembler assembler;
  const json signed_thinking = {{"anthropic", {{"type", "thinking"}, {"signature", "sig-1"}}}};
  const json redacted = {{"anthropic", {{"type", "redacted_thinking"}, {"data", "opaque"}}}};
  for (const ProviderEvent& event : std::vector<ProviderEvent>{
           pe::ReasoningDelta{"first ", nullptr}, pe::ReasoningDelta{"thought", nullptr},
           pe::ReasoningDelta{"", signed_thinking}, pe::ReasoningDelta{"", redacted}, pe::TextDelta{"Hello"},
           pe::TextDelta{" there"}, pe::Finish{StopReason::kEnd, "end_turn"}}) {
    ASSERT_TRUE(assembler.add(event));
  }
  auto response = assembler.finish();
  ASSERT_TRUE(response) << response.error().to_string();
  ASSERT_EQ(response->content.size(), 3u);
  EXPECT_EQ(response->content[0].kind, ContentBlock::Kind::kReasoning);
  EXPECT_EQ(response->content[0].text, "first thought");
  EXPECT_EQ(response->content[0].provider_data, signed_thinking);
  EXPECT_EQ(response->content[1].kind, ContentBlock::Kind::kReasoning);
  EXPECT_EQ(response->content[1].provider_data, redacted);
  EXPECT_EQ(response->content[2].kind, ContentBlock::Kind::kText);
  EXPECT_EQ(response->content[2].text, "Hello there");
}

}  // namespace
}  // namespace keel
