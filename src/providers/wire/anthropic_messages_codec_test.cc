// Tests for providers/wire/anthropic_messages_codec.h: request bodies (role alternation, tool results grouped
// in one user turn, images, thinking sent back with its signature), and event streams written from
// Anthropic's documented streaming format: text, thinking with signature_delta, redacted thinking, parallel
// tool_use blocks, cache-aware usage, every stop_reason, error events and each kind of bad input.
#include "providers/wire/anthropic_messages_codec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "providers/provider_errors.h"
#include "providers/wire/wire_test_support.h"

namespace keel::providers {
namespace {

using nlohmann::json;
using namespace keel::providers::testing;

constexpr WireFormat kAnthropic = WireFormat::kAnthropicMessages;

std::string message_start(int input = 10, int cache_read = 0, int cache_creation = 0) {
  return typed({{"type", "message_start"},
                {"message",
                 {{"id", "msg_1"},
                  {"type", "message"},
                  {"role", "assistant"},
                  {"content", json::array()},
                  {"model", "claude-sonnet-4-5"},
                  {"stop_reason", nullptr},
                  {"stop_sequence", nullptr},
                  {"usage",
                   {{"input_tokens", input},
                    {"cache_read_input_tokens", cache_read},
                    {"cache_creation_input_tokens", cache_creation},
                    {"output_tokens", 1}}}}}});
}

std::string block_start(int index, const json& block) {
  return typed({{"type", "content_block_start"}, {"index", index}, {"content_block", block}});
}

std::string block_delta(int index, const json& delta) {
  return typed({{"type", "content_block_delta"}, {"index", index}, {"delta", delta}});
}

std::string block_stop(int index) { return typed({{"type", "content_block_stop"}, {"index", index}}); }

std::string text_block(int index, const std::string& a, const std::string& b) {
  return block_start(index, {{"type", "text"}, {"text", ""}}) +
         block_delta(index, {{"type", "text_delta"}, {"text", a}}) +
         block_delta(index, {{"type", "text_delta"}, {"text", b}}) + block_stop(index);
}

std::string message_end(const std::string& stop_reason, int output_tokens = 25) {
  return typed({{"type", "message_delta"},
                {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", nullptr}}},
                {"usage", {{"output_tokens", output_tokens}}}}) +
         typed({{"type", "message_stop"}});
}

const std::string kPing = typed({{"type", "ping"}});

// --- stream ---

TEST(AnthropicDecodeTest, TextStreamCountsCacheReadsAndWritesInsideInput) {
  const Summary s = decode_ok(kAnthropic, message_start(10, 1000, 200) + kPing +
                                              text_block(0, "Hello", ", world") + message_end("end_turn"));
  EXPECT_EQ(s.text, "Hello, world");
  EXPECT_EQ(*s.usage, (TokenUsage{.input_tokens = 1210, .output_tokens = 25, .cached_input_tokens = 1000}));
  EXPECT_EQ(s.finish->reason, StopReason::kEnd);
  EXPECT_EQ(s.finish->provider_reason, "end_turn");
}

std::string thinking_stream() {
  return message_start() + block_start(0, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}) +
         block_delta(0, {{"type", "thinking_delta"}, {"thinking", "Let me think"}}) +
         block_delta(0, {{"type", "thinking_delta"}, {"thinking", " step by step."}}) +
         block_delta(0, {{"type", "signature_delta"}, {"signature", "EqQBCgIYAhIM"}}) +
         block_delta(0, {{"type", "signature_delta"}, {"signature", "1gbcDa9GJwZA"}}) + block_stop(0) +
         text_block(1, "Forty", "-two") + message_end("end_turn");
}

TEST(AnthropicDecodeTest, ThinkingKeepsItsSignatureForSendingBack) {
  const Summary s = decode_ok(kAnthropic, thinking_stream());
  EXPECT_EQ(s.reasoning, "Let me think step by step.");
  ASSERT_EQ(s.reasoning_data.size(), 1u);
  EXPECT_EQ(s.reasoning_data[0],
            json({{"anthropic", {{"type", "thinking"}, {"signature", "EqQBCgIYAhIM1gbcDa9GJwZA"}}}}));
  EXPECT_EQ(s.text, "Forty-two");
}

TEST(AnthropicDecodeTest, ThinkingSentBackIsExactlyWhatWasReceived) {
  const Summary s = decode_ok(kAnthropic, thinking_stream());
  const std::vector<Message> messages = {{.role = Role::kUser, .content = {ContentBlock{.text = "Answer?"}}},
                                         assistant_message(s),
                                         {.role = Role::kUser, .content = {ContentBlock{.text = "Why?"}}}};
  ProviderRequest request;
  request.model = "claude-sonnet-4-5";
  request.messages = messages;
  auto body = make_wire_codec(kAnthropic)->encode(request, {.reasoning = true});
  ASSERT_TRUE(body) << body.error().to_string();
  EXPECT_EQ((*body)["messages"][1], json::parse(R"({"role": "assistant", "content": [
      {"type": "thinking", "thinking": "Let me think step by step.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA"},
      {"type": "text", "text": "Forty-two"}]})"));
  auto plain = make_wire_codec(kAnthropic)->encode(request, {.reasoning = false});
  ASSERT_TRUE(plain);
  EXPECT_EQ((*plain)["messages"][1]["content"].size(), 1u);
}

TEST(AnthropicDecodeTest, RedactedThinkingIsKeptWhole) {
  const Summary s =
      decode_ok(kAnthropic, message_start() +
                                block_start(0, {{"type", "redacted_thinking"}, {"data", "EmwKAhgBEgy3va"}}) +
                                block_stop(0) + text_block(1, "o", "k") + message_end("end_turn"));
  ASSERT_EQ(s.reasoning_data.size(), 1u);
  EXPECT_EQ(s.reasoning_data[0],
            json({{"anthropic", {{"type", "redacted_thinking"}, {"data", "EmwKAhgBEgy3va"}}}}));
  const std::vector<Message> messages = {assistant_message(s)};
  ProviderRequest request;
  request.model = "m";
  request.messages = messages;
  auto body = make_wire_codec(kAnthropic)->encode(request, {.reasoning = true});
  ASSERT_TRUE(body);
  EXPECT_EQ((*body)["messages"][0]["content"][0],
            json({{"type", "redacted_thinking"}, {"data", "EmwKAhgBEgy3va"}}));
}

TEST(AnthropicDecodeTest, ParallelToolUseBlocksAreAssembledEvenWhenInterleaved) {
  const std::string stream =
      message_start() + text_block(0, "Checking ", "both.") +
      block_start(
          1, {{"type", "tool_use"}, {"id", "toolu_01"}, {"name", "get_weather"}, {"input", json::object()}}) +
      block_start(
          2, {{"type", "tool_use"}, {"id", "toolu_02"}, {"name", "get_time"}, {"input", json::object()}}) +
      block_delta(1, {{"type", "input_json_delta"}, {"partial_json", ""}}) +
      block_delta(1, {{"type", "input_json_delta"}, {"partial_json", "{\"city\": \"Pa"}}) +
      block_delta(2, {{"type", "input_json_delta"}, {"partial_json", "{\"tz\": \"CET\"}"}}) +
      block_delta(1, {{"type", "input_json_delta"}, {"partial_json", "ris\"}"}}) + block_stop(2) +
      block_stop(1) + message_end("tool_use");
  const Summary s = decode_ok(kAnthropic, stream);
  EXPECT_EQ(s.text, "Checking both.");
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls.at(0).id, "toolu_01");
  EXPECT_EQ(s.calls.at(0).name, "get_weather");
  EXPECT_EQ(json::parse(s.calls.at(0).arguments), json({{"city", "Paris"}}));
  EXPECT_EQ(s.calls.at(1).id, "toolu_02");
  EXPECT_EQ(json::parse(s.calls.at(1).arguments), json({{"tz", "CET"}}));
  EXPECT_EQ(s.finish->reason, StopReason::kToolUse);
}

TEST(AnthropicDecodeTest, EveryStopReasonMapsAndKeepsTheRawWord) {
  const std::vector<std::pair<std::string, StopReason>> cases = {
      {"end_turn", StopReason::kEnd},
      {"stop_sequence", StopReason::kEnd},
      {"pause_turn", StopReason::kEnd},
      {"max_tokens", StopReason::kMaxTokens},
      {"model_context_window_exceeded", StopReason::kMaxTokens},
      {"refusal", StopReason::kContentFilter},
      {"something_new", StopReason::kError}};
  for (const auto& [raw, reason] : cases) {
    const Summary s = decode_ok(kAnthropic, message_start() + text_block(0, "a", "b") + message_end(raw));
    EXPECT_EQ(s.finish->reason, reason) << raw;
    EXPECT_EQ(s.finish->provider_reason, raw);
  }
}

TEST(AnthropicDecodeTest, ErrorEventsAreCodedAndRetryableWhenWaitingHelps) {
  auto error_event = [](const std::string& type) {
    return typed({{"type", "error"}, {"error", {{"type", type}, {"message", "details"}}}});
  };
  const std::string head = message_start() + block_start(0, {{"type", "text"}, {"text", ""}});
  const std::vector<std::tuple<std::string, std::string, bool>> cases = {
      {"overloaded_error", codes::kProviderOverloaded, true},
      {"rate_limit_error", codes::kProviderRateLimited, true},
      {"api_error", codes::kProviderServerError, true},
      {"invalid_request_error", codes::kProviderBadRequest, false},
      {"authentication_error", codes::kProviderUnauthorized, false},
      {"request_too_large", codes::kProviderRequestTooLarge, false},
      {"mystery_error", codes::kProviderOtherError, false}};
  for (const auto& [type, code, retryable] : cases) {
    const Error e = decode_error(kAnthropic, head + error_event(type));
    EXPECT_EQ(e.code(), code) << type;
    EXPECT_EQ(e.retryable(), retryable) << type;
  }
}

TEST(AnthropicDecodeTest, UnknownEventsBlocksAndDeltasAreIgnored) {
  const std::string stream =
      message_start() + typed({{"type", "future_event"}, {"x", 1}}) +
      block_start(0, {{"type", "server_tool_use"}, {"id", "srvtoolu_1"}, {"name", "web_search"}}) +
      block_delta(0, {{"type", "input_json_delta"}, {"partial_json", "{\"query\":\"x\"}"}}) + block_stop(0) +
      block_start(1, {{"type", "text"}, {"text", ""}}) +
      block_delta(1, {{"type", "citations_delta"}, {"citation", {{"type", "char_location"}}}}) +
      block_delta(1, {{"type", "text_delta"}, {"text", "cited"}}) + block_stop(1) + message_end("end_turn");
  const Summary s = decode_ok(kAnthropic, stream);
  EXPECT_EQ(s.text, "cited");
  EXPECT_TRUE(s.calls.empty());
}

TEST(AnthropicDecodeTest, GrammarViolationsAreProtocolErrors) {
  const std::string start = message_start();
  const std::vector<std::string> bad = {
      start + block_delta(3, {{"type", "text_delta"}, {"text", "x"}}),  // never started
      start + block_start(0, {{"type", "tool_use"}, {"id", "t"}, {"name", "f"}}) +
          block_delta(0, {{"type", "text_delta"}, {"text", "x"}}),  // text in a tool block
      start + text_block(0, "a", "b") +
          block_delta(0, {{"type", "text_delta"}, {"text", "x"}}),           // after its stop
      start + text_block(0, "a", "b") + block_start(0, {{"type", "text"}}),  // started twice
      start + block_start(0, {{"type", "tool_use"}, {"id", "t"}}),           // no name
      text_block(0, "a", "b"),                                               // before message_start
      start + start,
      start + text_block(0, "a", "b") + typed({{"type", "message_stop"}}),  // no stop_reason
      start + text_block(0, "a", "b") + message_end("end_turn") + kPing,    // after message_stop
  };
  for (const std::string& stream : bad) {
    EXPECT_EQ(decode_error(kAnthropic, stream).code(), codes::kProviderProtocolError) << stream;
  }
}

TEST(AnthropicDecodeTest, StreamWithoutMessageStopIsTruncated) {
  const Error e = decode_error(
      kAnthropic, message_start() + text_block(0, "a", "b") +
                      typed({{"type", "message_delta"}, {"delta", {{"stop_reason", "end_turn"}}}}));
  EXPECT_EQ(e.code(), codes::kProviderStreamTruncated);
  EXPECT_TRUE(e.retryable());
}

TEST(AnthropicDecodeTest, MalformedJsonIsBadEventJson) {
  EXPECT_EQ(
      decode_error(kAnthropic, message_start() + "event: content_block_delta\ndata: {\"index\": 0,,}\n\n")
          .code(),
      codes::kProviderBadEventJson);
}

// --- request ---

TEST(AnthropicEncodeTest, ToolResultsShareOneUserTurnAheadOfItsText) {
  const std::vector<Message> messages = {
      {.role = Role::kUser,
       .content = {ContentBlock{.text = "Describe"}, ContentBlock{.kind = ContentBlock::Kind::kImage,
                                                                  .media_type = "image/png",
                                                                  .data_base64 = "iVBO"}}},
      {.role = Role::kAssistant,
       .content = {ContentBlock{.kind = ContentBlock::Kind::kReasoning, .text = "unsigned, from elsewhere"},
                   ContentBlock{.text = ""}},
       .tool_calls = {{.id = "toolu_1", .name = "look", .arguments = {{"at", "x"}}},
                      {.id = "toolu_2", .name = "shot", .arguments = json::object()}}},
      {.role = Role::kTool,
       .content = {ContentBlock{.text = "failed"}},
       .tool_call_id = "toolu_1",
       .is_error = true},
      {.role = Role::kTool,
       .content = {ContentBlock{.text = "here"}, ContentBlock{.kind = ContentBlock::Kind::kImage,
                                                              .media_type = "image/jpeg",
                                                              .data_base64 = "/9j/"}},
       .tool_call_id = "toolu_2"},
      {.role = Role::kUser, .content = {ContentBlock{.text = "Steer: be quick"}}},
  };
  ProviderRequest request;
  request.model = "claude-opus-4-1";
  request.system_prompt = "You are keel.";
  request.messages = messages;
  request.tools = {{.name = "look", .description = "Looks", .input_schema = {{"type", "object"}}}};
  request.parameters = {{"temperature", 1}, {"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}};
  auto body = make_wire_codec(kAnthropic)
                  ->encode(request, {.vision = true, .reasoning = true, .max_output_tokens = 8192});
  ASSERT_TRUE(body) << body.error().to_string();
  const json expected = json::parse(R"({
    "model": "claude-opus-4-1", "max_tokens": 8192, "stream": true, "system": "You are keel.",
    "temperature": 1, "thinking": {"type": "enabled", "budget_tokens": 1024},
    "tools": [{"name": "look", "description": "Looks", "input_schema": {"type": "object"}}],
    "messages": [
      {"role": "user", "content": [
        {"type": "text", "text": "Describe"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}]},
      {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "look", "input": {"at": "x"}},
        {"type": "tool_use", "id": "toolu_2", "name": "shot", "input": {}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "failed", "is_error": true},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": [
          {"type": "text", "text": "here"},
          {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}}]},
        {"type": "text", "text": "Steer: be quick"}]}
    ]})");
  EXPECT_EQ(*body, expected) << body->dump(2);
}

TEST(AnthropicEncodeTest, ImagesNeedVisionAndReservedParametersAreRefused) {
  const std::vector<Message> messages = {
      {.role = Role::kUser,
       .content = {
           ContentBlock{.kind = ContentBlock::Kind::kImage, .media_type = "image/png", .data_base64 = "x"}}}};
  ProviderRequest request;
  request.model = "m";
  request.messages = messages;
  auto r = make_wire_codec(kAnthropic)->encode(request, {.vision = false});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), codes::kProviderImageUnsupported);
  request.parameters = {{"system", "override"}};
  r = make_wire_codec(kAnthropic)->encode(request, {.vision = true});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), codes::kProviderReservedParameter);
}

}  // namespace
}  // namespace keel::providers
