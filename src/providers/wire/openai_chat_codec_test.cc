// Tests for providers/wire/openai_chat_codec.h: request bodies (tool-result grouping, images, reasoning not
// sent back unless asked), and streams of chat.completion.chunk events written from OpenAI's documented
// format and what compatible servers send: text, reasoning_content, parallel tool calls with interleaved
// argument fragments, usage, every finish_reason, error chunks and each kind of bad input.
#include "providers/wire/openai_chat_codec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "keel/error_codes.h"
#include "providers/provider_errors.h"
#include "providers/wire/wire_test_support.h"

namespace keel::providers {
namespace {

using nlohmann::json;
using namespace keel::providers::testing;

constexpr WireFormat kChat = WireFormat::kOpenAiChat;

std::string chunk(const json& delta, const json& finish_reason = nullptr) {
  return sse(
      "", {{"id", "chatcmpl-1"},
           {"object", "chat.completion.chunk"},
           {"created", 1700000000},
           {"model", "gpt-4o-mini"},
           {"choices", json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish_reason}}})}});
}

std::string usage_chunk(int prompt, int completion, int cached, int reasoning) {
  return sse("", {{"id", "chatcmpl-1"},
                  {"object", "chat.completion.chunk"},
                  {"choices", json::array()},
                  {"usage",
                   {{"prompt_tokens", prompt},
                    {"completion_tokens", completion},
                    {"total_tokens", prompt + completion},
                    {"prompt_tokens_details", {{"cached_tokens", cached}}},
                    {"completion_tokens_details", {{"reasoning_tokens", reasoning}}}}}});
}

const std::string kDone = "data: [DONE]\n\n";

json tool_delta(int index, const json& fields) {
  json call = {{"index", index}};
  call.update(fields);
  return {{"tool_calls", json::array({call})}};
}

// --- stream ---

TEST(OpenAiChatDecodeTest, TextStreamWithUsageEndsWithOneFinish) {
  const std::string stream = chunk({{"role", "assistant"}, {"content", ""}}) + chunk({{"content", "Hel"}}) +
                             ": keep-alive\n\n" + chunk({{"content", "lo \u00e9"}}) +
                             chunk(json::object(), "stop") + usage_chunk(120, 8, 100, 0) + kDone;
  const Summary s = decode_ok(kChat, stream);
  EXPECT_EQ(s.text, "Hello \u00e9");
  ASSERT_TRUE(s.usage);
  EXPECT_EQ(*s.usage, (TokenUsage{.input_tokens = 120, .output_tokens = 8, .cached_input_tokens = 100}));
  ASSERT_TRUE(s.finish);
  EXPECT_EQ(s.finish->reason, StopReason::kEnd);
  EXPECT_EQ(s.finish->provider_reason, "stop");
  const Decoded d = decode(kChat, stream);
  EXPECT_TRUE(std::holds_alternative<pe::Finish>(d.events.back()));
  EXPECT_TRUE(std::holds_alternative<pe::Usage>(d.events[d.events.size() - 2]));
}

TEST(OpenAiChatDecodeTest, ReasoningContentAndReasoningFieldsAreReasoningWithoutProviderData) {
  const std::string stream = chunk({{"reasoning_content", "Think "}}) + chunk({{"reasoning", "more."}}) +
                             chunk({{"content", "Answer"}}) + chunk(json::object(), "stop") +
                             usage_chunk(10, 30, 0, 22) + kDone;
  const Summary s = decode_ok(kChat, stream);
  EXPECT_EQ(s.reasoning, "Think more.");
  EXPECT_TRUE(s.reasoning_data.empty());
  EXPECT_EQ(s.text, "Answer");
  EXPECT_EQ(s.usage->reasoning_tokens, 22);
}

TEST(OpenAiChatDecodeTest, ParallelToolCallsAreAssembledFromInterleavedFragments) {
  const std::string stream =
      chunk({{"role", "assistant"}, {"content", nullptr}}) +
      chunk(tool_delta(
          0, {{"id", "call_a"}, {"type", "function"}, {"function", {{"name", "read"}, {"arguments", ""}}}})) +
      chunk(tool_delta(1, {{"id", "call_b"},
                           {"type", "function"},
                           {"function", {{"name", "list"}, {"arguments", "{\"di"}}}})) +
      chunk(tool_delta(0, {{"function", {{"arguments", "{\"path\":"}}}})) +
      chunk(tool_delta(1, {{"function", {{"arguments", "r\":\"/\"}"}}}})) +
      chunk(tool_delta(0, {{"function", {{"arguments", "\"a.txt\"}"}}}})) +
      chunk(json::object(), "tool_calls") + kDone;
  const Summary s = decode_ok(kChat, stream);
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls.at(0).id, "call_a");
  EXPECT_EQ(s.calls.at(0).name, "read");
  EXPECT_EQ(json::parse(s.calls.at(0).arguments), json({{"path", "a.txt"}}));
  EXPECT_EQ(s.calls.at(1).id, "call_b");
  EXPECT_EQ(json::parse(s.calls.at(1).arguments), json({{"dir", "/"}}));
  EXPECT_TRUE(s.calls.at(0).ended && s.calls.at(1).ended);
  EXPECT_EQ(s.finish->reason, StopReason::kToolUse);
  EXPECT_EQ(s.finish->provider_reason, "tool_calls");
}

TEST(OpenAiChatDecodeTest, ArgumentsThatAreNotJsonPassThroughVerbatim) {
  const std::string stream =
      chunk(tool_delta(0, {{"id", "c"}, {"function", {{"name", "f"}, {"arguments", "{not json"}}}})) +
      chunk(json::object(), "tool_calls") + kDone;
  EXPECT_EQ(decode_ok(kChat, stream).calls.at(0).arguments, "{not json");
}

TEST(OpenAiChatDecodeTest, CallsWithoutIndexFromCompatibleServersAreTakenWhole) {
  const json calls = {{"tool_calls",
                       {{{"id", "c1"}, {"function", {{"name", "a"}, {"arguments", "{}"}}}},
                        {{"id", "c2"}, {"function", {{"name", "b"}, {"arguments", {{"x", 1}}}}}}}}};
  const Summary s = decode_ok(kChat, chunk(calls) + chunk(json::object(), "tool_calls") + kDone);
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls.at(1).name, "b");
  EXPECT_EQ(json::parse(s.calls.at(1).arguments), json({{"x", 1}}));
  EXPECT_EQ(s.finish->reason, StopReason::kToolUse);
}

// Spec §2: tool calls with a stop reason other than tool_use fail closed. "stop" stays end, which the engine
// refuses before any tool runs, unless the provider is configured for servers that end tool calls so.
TEST(OpenAiChatDecodeTest, StopAfterToolCallsIsEndUnlessTheProviderTakesItAsToolUse) {
  const json calls = {
      {"tool_calls", {{{"index", 0}, {"id", "c1"}, {"function", {{"name", "a"}, {"arguments", "{}"}}}}}}};
  const std::string stream = chunk(calls) + chunk(json::object(), "stop") + kDone;
  const Summary strict = decode_ok(kChat, stream);
  ASSERT_EQ(strict.calls.size(), 1u);
  EXPECT_EQ(strict.finish->reason, StopReason::kEnd);
  EXPECT_EQ(strict.finish->provider_reason, "stop");
  const Summary lenient = decode_ok(kChat, stream, {.chat_stop_with_tool_calls_is_tool_use = true});
  EXPECT_EQ(lenient.finish->reason, StopReason::kToolUse);
  EXPECT_EQ(lenient.finish->provider_reason, "stop");
  // Without calls "stop" is end either way.
  EXPECT_EQ(decode_ok(kChat, chunk({{"content", "hi"}}) + chunk(json::object(), "stop") + kDone,
                      {.chat_stop_with_tool_calls_is_tool_use = true})
                .finish->reason,
            StopReason::kEnd);
}

TEST(OpenAiChatDecodeTest, EveryFinishReasonMapsAndKeepsTheRawWord) {
  const std::vector<std::pair<std::string, StopReason>> cases = {
      {"stop", StopReason::kEnd},
      {"length", StopReason::kMaxTokens},
      {"content_filter", StopReason::kContentFilter},
      {"error", StopReason::kError},
      {"something_new", StopReason::kError}};
  for (const auto& [raw, reason] : cases) {
    const Summary s = decode_ok(kChat, chunk({{"content", "x"}}) + chunk(json::object(), raw) + kDone);
    EXPECT_EQ(s.finish->reason, reason) << raw;
    EXPECT_EQ(s.finish->provider_reason, raw);
  }
  const std::string call =
      chunk(tool_delta(0, {{"id", "c"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}));
  EXPECT_EQ(decode_ok(kChat, call + chunk(json::object(), "function_call") + kDone).finish->reason,
            StopReason::kToolUse);
}

TEST(OpenAiChatDecodeTest, RefusalIsTextAndEndsAsContentFilter) {
  const Summary s = decode_ok(
      kChat, chunk({{"refusal", "I can't help with that."}}) + chunk(json::object(), "stop") + kDone);
  EXPECT_EQ(s.text, "I can't help with that.");
  EXPECT_EQ(s.finish->reason, StopReason::kContentFilter);
}

TEST(OpenAiChatDecodeTest, ErrorChunkMidStreamIsACodedError) {
  const std::string head = chunk({{"content", "partial"}});
  Error e = decode_error(
      kChat,
      head +
          sse("", {{"error",
                    {{"message", "The server had an error"}, {"type", "server_error"}, {"code", nullptr}}}}));
  EXPECT_EQ(e.code(), codes::kProviderServerError);
  EXPECT_TRUE(e.retryable());
  e = decode_error(kChat, head + sse("", {{"error",
                                           {{"message", "Rate limit reached"},
                                            {"type", "requests"},
                                            {"code", "rate_limit_exceeded"}}}}));
  EXPECT_EQ(e.code(), codes::kProviderRateLimited);
  EXPECT_TRUE(e.retryable());
  e = decode_error(
      kChat, head + sse("error", {{"message", "context overflow"}, {"code", "context_length_exceeded"}}));
  EXPECT_EQ(e.code(), codes::kProviderContextTooLong);
  EXPECT_FALSE(e.retryable());
  // The text before the error was still delivered.
  EXPECT_EQ(summarize(decode(kChat, head + sse("", {{"error", "boom"}})).events).text, "partial");
}

TEST(OpenAiChatDecodeTest, MalformedJsonIsBadEventJson) {
  EXPECT_EQ(decode_error(kChat, "data: {\"choices\": [\n\n").code(), codes::kProviderBadEventJson);
  EXPECT_EQ(decode_error(kChat, "data: [1, 2]\n\n").code(), codes::kProviderBadEventJson);
  EXPECT_EQ(decode_error(kChat, "data: {\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}\n\n").code(),
            codes::kProviderBadEventJson);
}

TEST(OpenAiChatDecodeTest, NamedEventsAreUnknown) {
  EXPECT_EQ(decode_error(kChat, sse("delta", {{"choices", json::array()}})).code(),
            codes::kProviderUnknownEvent);
  // The name is not JSON text: the message must still be writable as JSON.
  const Error e = decode_error(kChat, "event: \xFF\xFE\ndata: {}\n\n");
  EXPECT_EQ(e.code(), codes::kProviderUnknownEvent);
  EXPECT_NO_THROW((void)json(e.message()).dump());
}

TEST(OpenAiChatDecodeTest, FragmentForACallNeverStartedIsAProtocolError) {
  const Error e = decode_error(kChat, chunk(tool_delta(3, {{"function", {{"arguments", "{}"}}}})));
  EXPECT_EQ(e.code(), codes::kProviderProtocolError);
}

TEST(OpenAiChatDecodeTest, AnythingAfterDoneOrOutputAfterFinishReasonIsAProtocolError) {
  const std::string done = chunk({{"content", "x"}}) + chunk(json::object(), "stop") + kDone;
  EXPECT_EQ(decode_error(kChat, done + chunk({{"content", "late"}})).code(), codes::kProviderProtocolError);
  EXPECT_EQ(decode_error(kChat, done + kDone).code(), codes::kProviderProtocolError);
  EXPECT_EQ(decode_error(kChat, chunk(json::object(), "stop") + chunk({{"content", "late"}})).code(),
            codes::kProviderProtocolError);
  EXPECT_EQ(decode_error(kChat, chunk(json::object(), "stop") + chunk(json::object(), "length")).code(),
            codes::kProviderProtocolError);
}

TEST(OpenAiChatDecodeTest, StreamWithoutItsEndIsTruncatedOrAProtocolError) {
  const Error cut = decode_error(kChat, chunk({{"content", "x"}}) + chunk(json::object(), "stop"));
  EXPECT_EQ(cut.code(), codes::kProviderStreamTruncated);
  EXPECT_TRUE(cut.retryable());
  EXPECT_EQ(decode_error(kChat, chunk({{"content", "x"}}) + kDone).code(), codes::kProviderProtocolError);
  EXPECT_EQ(decode_error(kChat, chunk({{"content", "x"}}) + "data: {\"cho").code(),
            codes::kProviderStreamTruncated);
}

TEST(OpenAiChatDecodeTest, OnlyTheFirstChoiceIsRead) {
  const std::string two =
      sse("", {{"choices",
                {{{"index", 1}, {"delta", {{"content", "other"}}}, {"finish_reason", nullptr}},
                 {{"index", 0}, {"delta", {{"content", "mine"}}}, {"finish_reason", nullptr}}}}});
  EXPECT_EQ(decode_ok(kChat, two + chunk(json::object(), "stop") + kDone).text, "mine");
}

// --- request ---

// `messages` must outlive the request (it views them).
ProviderRequest request_with(const std::vector<Message>& messages) {
  ProviderRequest request;
  request.model = "gpt-4o";
  request.system_prompt = "Be brief.";
  request.messages = messages;
  return request;
}

const std::vector<Message> kNoMessages;

ContentBlock image(std::string data) {
  return ContentBlock{
      .kind = ContentBlock::Kind::kImage, .media_type = "image/png", .data_base64 = std::move(data)};
}

ContentBlock text(std::string t) { return ContentBlock{.text = std::move(t)}; }

TEST(OpenAiChatEncodeTest, EncodesTheConversationToolResultsAndTheirImages) {
  const std::vector<Message> messages = {
      {.role = Role::kUser, .content = {text("Look at this"), image("AAAA")}},
      {.role = Role::kAssistant,
       .content = {ContentBlock{.kind = ContentBlock::Kind::kReasoning, .text = "hidden"}, text("Reading.")},
       .tool_calls = {{.id = "call_1", .name = "read", .arguments = {{"path", "a"}}},
                      {.id = "call_2", .name = "shot", .arguments = json::object()}}},
      {.role = Role::kTool, .content = {text("file a")}, .tool_call_id = "call_1"},
      {.role = Role::kTool,
       .content = {text("screenshot"), image("BBBB")},
       .tool_call_id = "call_2",
       .is_error = false},
      {.role = Role::kUser, .content = {text("And?")}},
  };
  ProviderRequest request = request_with(messages);
  request.tools = {{.name = "read", .description = "Reads a file", .input_schema = {{"type", "object"}}}};
  request.parameters = {{"temperature", 0.2}};
  request.max_output_tokens = 9999;
  auto body = make_wire_codec(kChat)->encode(request, {.vision = true, .max_output_tokens = 1000});
  ASSERT_TRUE(body) << body.error().to_string();
  const json expected = json::parse(R"({
    "model": "gpt-4o", "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 1000,
    "temperature": 0.2,
    "tools": [{"type": "function", "function": {"name": "read", "description": "Reads a file",
                                                "parameters": {"type": "object"}}}],
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Look at this"},
                                   {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
      {"role": "assistant", "content": "Reading.", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "shot", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "file a"},
      {"role": "tool", "tool_call_id": "call_2", "content": "screenshot"},
      {"role": "user", "content": [{"type": "text", "text": "The image(s) returned by tool call call_2:"},
                                   {"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}}]},
      {"role": "user", "content": "And?"}
    ]})");
  EXPECT_EQ(*body, expected) << body->dump(2);
}

TEST(OpenAiChatEncodeTest, ReasoningModelsGetMaxCompletionTokensAndReasoningIsSentOnlyWhenAsked) {
  const std::vector<Message> messages = {
      {.role = Role::kUser, .content = {text("hi")}},
      {.role = Role::kAssistant,
       .content = {ContentBlock{.kind = ContentBlock::Kind::kReasoning, .text = "thought"}},
       .tool_calls = {{.id = "c", .name = "f"}}},
  };
  const ModelCapabilities caps{.reasoning = true, .max_output_tokens = 500};
  auto plain = make_wire_codec(kChat)->encode(request_with(messages), caps);
  ASSERT_TRUE(plain);
  EXPECT_EQ((*plain)["max_completion_tokens"], 500);
  EXPECT_FALSE(plain->contains("max_tokens"));
  EXPECT_FALSE((*plain)["messages"][2].contains("reasoning_content"));
  EXPECT_TRUE((*plain)["messages"][2]["content"].is_null());
  auto with =
      make_wire_codec(kChat, {.chat_send_reasoning_content = true})->encode(request_with(messages), caps);
  ASSERT_TRUE(with);
  EXPECT_EQ((*with)["messages"][2]["reasoning_content"], "thought");
}

TEST(OpenAiChatEncodeTest, ImagesNeedVisionAndToolsNeedToolUse) {
  const std::vector<Message> user_image = {{.role = Role::kUser, .content = {image("AAAA")}}};
  auto r = make_wire_codec(kChat)->encode(request_with(user_image), {.vision = false});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), codes::kProviderImageUnsupported);
  const std::vector<Message> tool_image = {
      {.role = Role::kTool, .content = {image("AAAA")}, .tool_call_id = "c"}};
  r = make_wire_codec(kChat)->encode(request_with(tool_image), {.vision = false});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), codes::kProviderImageUnsupported);
  ProviderRequest with_tools = request_with(kNoMessages);
  with_tools.tools = {{.name = "t", .description = "", .input_schema = json::object()}};
  r = make_wire_codec(kChat)->encode(with_tools, {.tool_use = false});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), codes::kProviderToolsUnsupported);
}

TEST(OpenAiChatEncodeTest, ParametersTheCodecSetsCannotBePassedThrough) {
  for (const char* key : {"model", "messages", "stream", "max_tokens"}) {
    ProviderRequest request = request_with(kNoMessages);
    request.parameters = {{key, 1}};
    auto r = make_wire_codec(kChat)->encode(request, {});
    ASSERT_FALSE(r) << key;
    EXPECT_EQ(r.error().code(), codes::kProviderReservedParameter);
  }
  ProviderRequest request = request_with(kNoMessages);
  request.parameters = json::array();
  auto r = make_wire_codec(kChat)->encode(request, {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), codes::kInvalidArgument);
}

}  // namespace
}  // namespace keel::providers
