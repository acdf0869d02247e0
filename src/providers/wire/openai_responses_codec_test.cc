// Tests for providers/wire/openai_responses_codec.h: request bodies (input items, function_call_output with
// images, encrypted reasoning sent back), and typed event streams written from OpenAI's documented streaming
// events: text, reasoning summaries with encrypted content, parallel function calls with interleaved
// argument deltas, usage, every end (completed, incomplete, failed, error) and each kind of bad input.
#include "providers/wire/openai_responses_codec.h"

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

constexpr WireFormat kResponses = WireFormat::kOpenAiResponses;

std::string event(const json& data) { return typed(data); }

std::string created() {
  return event(
      {{"type", "response.created"},
       {"response",
        {{"id", "resp_1"}, {"object", "response"}, {"status", "in_progress"}, {"output", json::array()}}}});
}

std::string added(int output_index, const json& item) {
  return event({{"type", "response.output_item.added"}, {"output_index", output_index}, {"item", item}});
}

std::string item_done(int output_index, const json& item) {
  return event({{"type", "response.output_item.done"}, {"output_index", output_index}, {"item", item}});
}

std::string text_delta(int output_index, const std::string& delta) {
  return event({{"type", "response.output_text.delta"},
                {"item_id", "msg_1"},
                {"output_index", output_index},
                {"content_index", 0},
                {"delta", delta}});
}

std::string args_delta(int output_index, const std::string& delta) {
  return event({{"type", "response.function_call_arguments.delta"},
                {"item_id", "fc_" + std::to_string(output_index)},
                {"output_index", output_index},
                {"delta", delta}});
}

json usage(int input, int cached, int output, int reasoning) {
  return {{"input_tokens", input},
          {"input_tokens_details", {{"cached_tokens", cached}}},
          {"output_tokens", output},
          {"output_tokens_details", {{"reasoning_tokens", reasoning}}},
          {"total_tokens", input + output}};
}

std::string completed(const json& usage_json) {
  return event({{"type", "response.completed"},
                {"response", {{"id", "resp_1"}, {"status", "completed"}, {"usage", usage_json}}}});
}

std::string message_item(int output_index, const std::string& text) {
  const json item = {{"id", "msg_1"},
                     {"type", "message"},
                     {"role", "assistant"},
                     {"status", "in_progress"},
                     {"content", json::array()}};
  json done = item;
  done["status"] = "completed";
  done["content"] = json::array({{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}}});
  return added(output_index, item) +
         event({{"type", "response.content_part.added"},
                {"item_id", "msg_1"},
                {"output_index", output_index},
                {"content_index", 0},
                {"part", {{"type", "output_text"}, {"text", ""}}}}) +
         text_delta(output_index, text.substr(0, 3)) + text_delta(output_index, text.substr(3)) +
         event({{"type", "response.output_text.done"},
                {"item_id", "msg_1"},
                {"output_index", output_index},
                {"content_index", 0},
                {"text", text}}) +
         item_done(output_index, done);
}

// --- stream ---

TEST(OpenAiResponsesDecodeTest, TextStreamWithUsage) {
  const Summary s = decode_ok(
      kResponses, created() + event({{"type", "response.in_progress"}, {"response", {{"id", "resp_1"}}}}) +
                      message_item(0, "Hello there") + completed(usage(50, 30, 12, 4)));
  EXPECT_EQ(s.text, "Hello there");
  EXPECT_EQ(*s.usage,
            (TokenUsage{
                .input_tokens = 50, .output_tokens = 12, .cached_input_tokens = 30, .reasoning_tokens = 4}));
  EXPECT_EQ(s.finish->reason, StopReason::kEnd);
  EXPECT_EQ(s.finish->provider_reason, "completed");
}

json reasoning_done() {
  return {{"id", "rs_1"},
          {"type", "reasoning"},
          {"summary",
           {{{"type", "summary_text"}, {"text", "First part."}},
            {{"type", "summary_text"}, {"text", "Second."}}}},
          {"encrypted_content", "gAAAAABencrypted=="}};
}

std::string reasoning_stream() {
  auto summary_delta = [](int part, const std::string& delta) {
    return event({{"type", "response.reasoning_summary_text.delta"},
                  {"item_id", "rs_1"},
                  {"output_index", 0},
                  {"summary_index", part},
                  {"delta", delta}});
  };
  return created() + added(0, {{"id", "rs_1"}, {"type", "reasoning"}, {"summary", json::array()}}) +
         event({{"type", "response.reasoning_summary_part.added"},
                {"item_id", "rs_1"},
                {"output_index", 0},
                {"summary_index", 0},
                {"part", {{"type", "summary_text"}, {"text", ""}}}}) +
         summary_delta(0, "First ") + summary_delta(0, "part.") +
         event({{"type", "response.reasoning_summary_text.done"},
                {"item_id", "rs_1"},
                {"output_index", 0},
                {"summary_index", 0},
                {"text", "First part."}}) +
         summary_delta(1, "Second.") + item_done(0, reasoning_done()) + message_item(1, "The answer") +
         completed(usage(20, 0, 90, 64));
}

TEST(OpenAiResponsesDecodeTest, ReasoningSummaryAndEncryptedContentAreKeptForSendingBack) {
  const Summary s = decode_ok(kResponses, reasoning_stream());
  EXPECT_EQ(s.reasoning, "First part.\n\nSecond.");
  ASSERT_EQ(s.reasoning_data.size(), 1u);
  EXPECT_EQ(s.reasoning_data[0], json({{"openai_responses",
                                        {{"type", "reasoning"},
                                         {"id", "rs_1"},
                                         {"summary", reasoning_done()["summary"]},
                                         {"encrypted_content", "gAAAAABencrypted=="}}}}));
  EXPECT_EQ(s.text, "The answer");
  EXPECT_EQ(s.usage->reasoning_tokens, 64);
}

TEST(OpenAiResponsesDecodeTest, ReasoningTheServerDidNotStreamIsTakenFromTheDoneItem) {
  const Summary s = decode_ok(kResponses, created() + added(0, {{"id", "rs_1"}, {"type", "reasoning"}}) +
                                              item_done(0, reasoning_done()) + completed(usage(1, 0, 1, 0)));
  EXPECT_EQ(s.reasoning, "First part.\n\nSecond.");
}

TEST(OpenAiResponsesDecodeTest, ReasoningSentBackMatchesWhatWasReceived) {
  const Summary s = decode_ok(kResponses, reasoning_stream());
  const std::vector<Message> messages = {{.role = Role::kUser, .content = {ContentBlock{.text = "Why?"}}},
                                         assistant_message(s)};
  ProviderRequest request;
  request.model = "o4-mini";
  request.messages = messages;
  auto body = make_wire_codec(kResponses)->encode(request, {.reasoning = true});
  ASSERT_TRUE(body) << body.error().to_string();
  EXPECT_EQ((*body)["include"], json::array({"reasoning.encrypted_content"}));
  EXPECT_EQ((*body)["input"][1], json({{"type", "reasoning"},
                                       {"id", "rs_1"},
                                       {"summary", reasoning_done()["summary"]},
                                       {"encrypted_content", "gAAAAABencrypted=="}}));
  EXPECT_EQ((*body)["input"][2], json({{"role", "assistant"}, {"content", "The answer"}}));
  // A model configured without reasoning is sent none.
  auto plain = make_wire_codec(kResponses)->encode(request, {.reasoning = false});
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->contains("include"));
  EXPECT_EQ((*plain)["input"].size(), 2u);
}

TEST(OpenAiResponsesDecodeTest, ParallelFunctionCallsAreAssembledFromInterleavedDeltas) {
  auto call = [](int i, const std::string& name) {
    return json{{"id", "fc_" + std::to_string(i)},
                {"type", "function_call"},
                {"status", "in_progress"},
                {"call_id", "call_" + std::to_string(i)},
                {"name", name},
                {"arguments", ""}};
  };
  json done_1 = call(1, "read");
  done_1["arguments"] = R"({"path":"a"})";
  json done_2 = call(2, "list");
  done_2["arguments"] = R"({"dir":"/"})";
  const std::string stream = created() + added(1, call(1, "read")) + added(2, call(2, "list")) +
                             args_delta(1, "{\"pa") + args_delta(2, "{\"dir\":") +
                             args_delta(1, "th\":\"a\"}") + args_delta(2, "\"/\"}") +
                             event({{"type", "response.function_call_arguments.done"},
                                    {"item_id", "fc_1"},
                                    {"output_index", 1},
                                    {"arguments", R"({"path":"a"})"}}) +
                             item_done(1, done_1) + item_done(2, done_2) + completed(usage(5, 0, 5, 0));
  const Summary s = decode_ok(kResponses, stream);
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls.at(0).id, "call_1");
  EXPECT_EQ(s.calls.at(0).name, "read");
  EXPECT_EQ(s.calls.at(0).arguments, R"({"path":"a"})");
  EXPECT_EQ(s.calls.at(1).arguments, R"({"dir":"/"})");
  EXPECT_EQ(s.finish->reason, StopReason::kToolUse);
}

TEST(OpenAiResponsesDecodeTest, ArgumentsOnlyInTheDoneEventsAreStillDelivered) {
  const json item = {
      {"id", "fc_0"}, {"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", ""}};
  json done = item;
  done["arguments"] = "{\"x\":1}";
  const Summary s =
      decode_ok(kResponses, created() + added(0, item) + item_done(0, done) + completed(usage(1, 0, 1, 0)));
  EXPECT_EQ(s.calls.at(0).arguments, "{\"x\":1}");
}

TEST(OpenAiResponsesDecodeTest, IncompleteResponsesMapTheirReason) {
  const std::vector<std::pair<std::string, StopReason>> cases = {
      {"max_output_tokens", StopReason::kMaxTokens},
      {"content_filter", StopReason::kContentFilter},
      {"other", StopReason::kError}};
  for (const auto& [why, reason] : cases) {
    const Summary s = decode_ok(kResponses, created() + message_item(0, "cut off") +
                                                event({{"type", "response.incomplete"},
                                                       {"response",
                                                        {{"status", "incomplete"},
                                                         {"incomplete_details", {{"reason", why}}},
                                                         {"usage", usage(3, 0, 100, 0)}}}}));
    EXPECT_EQ(s.finish->reason, reason) << why;
    EXPECT_EQ(s.finish->provider_reason, why);
    EXPECT_EQ(s.usage->output_tokens, 100);
  }
}

TEST(OpenAiResponsesDecodeTest, RefusalIsTextEndingAsContentFilter) {
  const Summary s = decode_ok(
      kResponses, created() + added(0, {{"id", "msg_1"}, {"type", "message"}}) +
                      event({{"type", "response.refusal.delta"}, {"output_index", 0}, {"delta", "No."}}) +
                      completed(usage(1, 0, 1, 0)));
  EXPECT_EQ(s.text, "No.");
  EXPECT_EQ(s.finish->reason, StopReason::kContentFilter);
}

TEST(OpenAiResponsesDecodeTest, FailedResponsesAndErrorEventsAreCodedErrors) {
  Error e = decode_error(
      kResponses,
      created() + event({{"type", "response.failed"},
                         {"response",
                          {{"status", "failed"},
                           {"error", {{"code", "server_error"}, {"message", "Something broke"}}}}}}));
  EXPECT_EQ(e.code(), codes::kProviderServerError);
  EXPECT_TRUE(e.retryable());
  e = decode_error(kResponses, created() + event({{"type", "error"},
                                                  {"code", "rate_limit_exceeded"},
                                                  {"message", "Slow down"},
                                                  {"param", nullptr}}));
  EXPECT_EQ(e.code(), codes::kProviderRateLimited);
  EXPECT_TRUE(e.retryable());
  e = decode_error(kResponses,
                   event({{"type", "error"}, {"code", "context_length_exceeded"}, {"message", "Too long"}}));
  EXPECT_EQ(e.code(), codes::kProviderContextTooLong);
  EXPECT_FALSE(e.retryable());
  e = decode_error(kResponses, event({{"type", "error"}, {"code", nullptr}, {"message", "?"}}));
  EXPECT_EQ(e.code(), codes::kProviderOtherError);
}

TEST(OpenAiResponsesDecodeTest, UnknownResponseEventsAreIgnoredOthersAreUnknown) {
  const std::string extra = event({{"type", "response.web_search_call.searching"}, {"output_index", 0}}) +
                            event({{"type", "response.output_text.annotation.added"}, {"output_index", 0}});
  EXPECT_EQ(
      decode_ok(kResponses, created() + extra + message_item(0, "Hi there") + completed(usage(1, 0, 1, 0)))
          .text,
      "Hi there");
  EXPECT_EQ(decode_error(kResponses, created() + event({{"type", "session.update"}})).code(),
            codes::kProviderUnknownEvent);
}

TEST(OpenAiResponsesDecodeTest, DeltasForUnknownOrWrongItemsAreProtocolErrors) {
  EXPECT_EQ(decode_error(kResponses, created() + text_delta(4, "x")).code(), codes::kProviderProtocolError);
  EXPECT_EQ(decode_error(kResponses, created() + args_delta(0, "{}")).code(), codes::kProviderProtocolError);
  EXPECT_EQ(
      decode_error(kResponses, created() + added(0, {{"type", "message"}}) + args_delta(0, "{}")).code(),
      codes::kProviderProtocolError);
  EXPECT_EQ(
      decode_error(kResponses, created() + added(0, {{"type", "message"}}) + added(0, {{"type", "message"}}))
          .code(),
      codes::kProviderProtocolError);
  EXPECT_EQ(
      decode_error(kResponses, created() + added(0, {{"type", "function_call"}, {"call_id", "c"}})).code(),
      codes::kProviderProtocolError);  // no name
}

TEST(OpenAiResponsesDecodeTest, EventsAfterTheEndAndStreamsWithoutOneAreRefused) {
  const std::string whole = created() + message_item(0, "Hello") + completed(usage(1, 0, 1, 0));
  EXPECT_EQ(decode_error(kResponses, whole + text_delta(0, "late")).code(), codes::kProviderProtocolError);
  const Error cut = decode_error(kResponses, created() + message_item(0, "Hello"));
  EXPECT_EQ(cut.code(), codes::kProviderStreamTruncated);
  EXPECT_TRUE(cut.retryable());
}

TEST(OpenAiResponsesDecodeTest, MalformedJsonIsBadEventJson) {
  EXPECT_EQ(decode_error(kResponses, "event: response.created\ndata: {\"type\":\n\n").code(),
            codes::kProviderBadEventJson);
}

// --- request ---

TEST(OpenAiResponsesEncodeTest, EncodesInputItemsToolOutputsWithImagesAndFunctionTools) {
  const std::vector<Message> messages = {
      {.role = Role::kUser,
       .content = {ContentBlock{.text = "What is in the picture?"},
                   ContentBlock{.kind = ContentBlock::Kind::kImage,
                                .media_type = "image/jpeg",
                                .data_base64 = "/9j/"}}},
      {.role = Role::kAssistant,
       .content = {ContentBlock{
                       .kind = ContentBlock::Kind::kReasoning,
                       .text = "from another API",
                       .provider_data = {{"anthropic", {{"type", "thinking"}, {"signature", "sig"}}}}},
                   ContentBlock{.text = "Let me zoom."}},
       .tool_calls = {{.id = "call_9", .name = "zoom", .arguments = {{"factor", 2}}}}},
      {.role = Role::kTool,
       .content = {ContentBlock{.text = "zoomed"},
                   ContentBlock{
                       .kind = ContentBlock::Kind::kImage, .media_type = "image/png", .data_base64 = "iVBO"}},
       .tool_call_id = "call_9"},
      {.role = Role::kTool, .content = {ContentBlock{.text = "plain"}}, .tool_call_id = "call_10"},
  };
  ProviderRequest request;
  request.model = "gpt-5";
  request.system_prompt = "You are keel.";
  request.messages = messages;
  request.tools = {{.name = "zoom", .description = "Zooms", .input_schema = {{"type", "object"}}}};
  request.parameters = {{"reasoning", {{"effort", "low"}}}};
  auto body = make_wire_codec(kResponses)
                  ->encode(request, {.vision = true, .reasoning = true, .max_output_tokens = 2048});
  ASSERT_TRUE(body) << body.error().to_string();
  const json expected = json::parse(R"({
    "model": "gpt-5", "stream": true, "store": false, "max_output_tokens": 2048, "instructions": "You are keel.",
    "include": ["reasoning.encrypted_content"], "reasoning": {"effort": "low"},
    "tools": [{"type": "function", "name": "zoom", "description": "Zooms", "parameters": {"type": "object"},
               "strict": false}],
    "input": [
      {"role": "user", "content": [{"type": "input_text", "text": "What is in the picture?"},
                                   {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/"}]},
      {"role": "assistant", "content": "Let me zoom."},
      {"type": "function_call", "call_id": "call_9", "name": "zoom", "arguments": "{\"factor\":2}"},
      {"type": "function_call_output", "call_id": "call_9",
       "output": [{"type": "input_text", "text": "zoomed"},
                  {"type": "input_image", "image_url": "data:image/png;base64,iVBO"}]},
      {"type": "function_call_output", "call_id": "call_10", "output": "plain"}
    ]})");
  EXPECT_EQ(*body, expected) << body->dump(2);
}

TEST(OpenAiResponsesEncodeTest, ReasoningWithoutEncryptedContentIsNotSentBack) {
  const std::vector<Message> messages = {
      {.role = Role::kAssistant,
       .content = {
           ContentBlock{.kind = ContentBlock::Kind::kReasoning,
                        .text = "summary",
                        .provider_data = {{"openai_responses", {{"type", "reasoning"}, {"id", "rs_2"}}}}},
           ContentBlock{.text = "ok"}}}};
  ProviderRequest request;
  request.model = "o3";
  request.messages = messages;
  auto body = make_wire_codec(kResponses)->encode(request, {.reasoning = true});
  ASSERT_TRUE(body);
  EXPECT_EQ((*body)["input"], json::array({{{"role", "assistant"}, {"content", "ok"}}}));
}

TEST(OpenAiResponsesEncodeTest, ImagesNeedVisionAndReservedParametersAreRefused) {
  const std::vector<Message> messages = {
      {.role = Role::kTool,
       .content = {ContentBlock{
           .kind = ContentBlock::Kind::kImage, .media_type = "image/png", .data_base64 = "x"}},
       .tool_call_id = "c"}};
  ProviderRequest request;
  request.model = "m";
  request.messages = messages;
  auto r = make_wire_codec(kResponses)->encode(request, {.vision = false});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), codes::kProviderImageUnsupported);
  request.messages = {};
  request.parameters = {{"input", "sneaky"}};
  r = make_wire_codec(kResponses)->encode(request, {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), codes::kProviderReservedParameter);
}

}  // namespace
}  // namespace keel::providers
