#include "model_server/wire_encoder.h"

#include <gtest/gtest.h>

#include <map>

#include "model_server/sse_test_support.h"

namespace keel::model_server {
namespace {

using nlohmann::json;
using testing::parse_sse;
using testing::SseEvent;
using testing::written_bytes;

ScriptedResponse response_of(json response) {
  auto script = parse_script({{"responses", {std::move(response)}}});
  if (!script) {
    ADD_FAILURE() << script.error().to_string();
    return {};
  }
  return script->responses.at(0);
}

std::vector<SseEvent> stream(Api api, json response, RenderContext context = {}) {
  const RenderedResponse rendered = render_response(api, response_of(std::move(response)), context);
  EXPECT_TRUE(rendered.streamed);
  EXPECT_EQ(rendered.status, 200);
  return parse_sse(written_bytes(rendered));
}

std::vector<std::string> names(const std::vector<SseEvent>& events) {
  std::vector<std::string> out;
  for (const SseEvent& event : events) out.push_back(event.name);
  return out;
}

const json kTextAndCalls = {
    {"usage",
     {{"input_tokens", 12}, {"output_tokens", 7}, {"cached_input_tokens", 4}, {"reasoning_tokens", 3}}},
    {"steps",
     {{{"type", "text"}, {"text", "Hello there"}, {"chunk_size", 4}},
      {{"type", "tool_calls"},
       {"chunk_size", 3},
       {"calls",
        {{{"id", "call_a"}, {"name", "read"}, {"arguments", R"({"path":"a.txt"})"}},
         {{"id", "call_b"}, {"name", "list"}, {"arguments", R"({"dir":"src"})"}}}}}}}};

// --- OpenAI Chat Completions ---

TEST(ChatCompletionsStreamTest, StreamsContentDeltasThenFinishReasonThenDone) {
  const auto events = stream(Api::kChatCompletions,
                             {{"steps", {{{"type", "text"}, {"text", "Hello there"}, {"chunk_size", 4}}}}});
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back().data, "[DONE]");
  const json first = events.front().json();
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (size_t i = 1; i + 2 < events.size(); ++i) {
    const json chunk = events[i].json();
    text += chunk["choices"][0]["delta"]["content"].get<std::string>();
    EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
  }
  EXPECT_EQ(text, "Hello there");
  EXPECT_EQ(events.size(), 1 + 3 + 1 + 1u);  // role, three deltas, finish, [DONE]
  const json finish = events[events.size() - 2].json();
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(finish.contains("usage"));
}

TEST(ChatCompletionsStreamTest, AssemblesParallelToolCallsFromInterleavedDeltas) {
  const auto events = stream(Api::kChatCompletions, kTextAndCalls);
  std::map<int, std::string> arguments;
  std::map<int, std::string> ids;
  std::vector<int> order;
  for (const SseEvent& event : events) {
    if (event.data == "[DONE]") continue;
    const json delta = event.json()["choices"][0]["delta"];
    if (!delta.contains("tool_calls")) continue;
    const json call = delta["tool_calls"][0];
    const int index = call["index"];
    order.push_back(index);
    if (call.contains("id")) {
      ids[index] = call["id"];
      EXPECT_EQ(call["type"], "function");
      EXPECT_TRUE(arguments[index].empty()) << "id and name come first";
    }
    arguments[index] += call["function"]["arguments"].get<std::string>();
  }
  EXPECT_EQ(ids[0], "call_a");
  EXPECT_EQ(ids[1], "call_b");
  EXPECT_EQ(arguments[0], R"({"path":"a.txt"})");
  EXPECT_EQ(arguments[1], R"({"dir":"src"})");
  ASSERT_GE(order.size(), 4u);
  EXPECT_EQ(std::vector<int>(order.begin(), order.begin() + 4), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(events[events.size() - 2].json()["choices"][0]["finish_reason"], "tool_calls");
}

TEST(ChatCompletionsStreamTest, SendsAUsageChunkOnlyWhenAskedTo) {
  RenderContext context;
  context.include_usage = true;
  const auto events = stream(Api::kChatCompletions, kTextAndCalls, context);
  const json usage_chunk = events[events.size() - 2].json();
  EXPECT_TRUE(usage_chunk["choices"].empty());
  EXPECT_EQ(usage_chunk["usage"]["prompt_tokens"], 12);
  EXPECT_EQ(usage_chunk["usage"]["completion_tokens"], 7);
  EXPECT_EQ(usage_chunk["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
  EXPECT_EQ(usage_chunk["usage"]["completion_tokens_details"]["reasoning_tokens"], 3);
  EXPECT_TRUE(events.front().json()["usage"].is_null());
}

TEST(ChatCompletionsStreamTest, StreamsReasoningAsReasoningContent) {
  const auto events =
      stream(Api::kChatCompletions, {{"steps", {{{"type", "reasoning"}, {"text", "think"}}}}});
  EXPECT_EQ(events[1].json()["choices"][0]["delta"]["reasoning_content"], "think");
}

// --- OpenAI Responses ---

TEST(ResponsesStreamTest, EmitsTheDocumentedEventSequenceForText) {
  const auto events =
      stream(Api::kResponses, {{"steps", {{{"type", "text"}, {"text", "Hi you"}, {"chunk_size", 3}}}}});
  EXPECT_EQ(names(events),
            (std::vector<std::string>{"response.created", "response.in_progress",
                                      "response.output_item.added", "response.content_part.added",
                                      "response.output_text.delta", "response.output_text.delta",
                                      "response.output_text.done", "response.content_part.done",
                                      "response.output_item.done", "response.completed"}));
  for (size_t i = 0; i < events.size(); ++i) {
    const json data = events[i].json();
    EXPECT_EQ(data["type"], events[i].name);
    EXPECT_EQ(data["sequence_number"], i);
  }
  EXPECT_EQ(events[6].json()["text"], "Hi you");
  const json completed = events.back().json()["response"];
  EXPECT_EQ(completed["status"], "completed");
  EXPECT_EQ(completed["output"][0]["content"][0]["text"], "Hi you");
}

TEST(ResponsesStreamTest, StreamsFunctionCallArgumentsPerItemAndReportsUsage) {
  const auto events = stream(Api::kResponses, kTextAndCalls);
  std::map<std::string, std::string> arguments;
  std::map<std::string, std::string> call_ids;
  for (const SseEvent& event : events) {
    const json data = event.json();
    if (event.name == "response.output_item.added" && data["item"]["type"] == "function_call") {
      call_ids[data["item"]["id"]] = data["item"]["call_id"];
      EXPECT_EQ(data["item"]["arguments"], "");
    }
    if (event.name == "response.function_call_arguments.delta")
      arguments[data["item_id"]] += data["delta"].get<std::string>();
    if (event.name == "response.function_call_arguments.done") {
      EXPECT_EQ(arguments[data["item_id"]], data["arguments"]);
    }
  }
  ASSERT_EQ(call_ids.size(), 2u);
  EXPECT_EQ(arguments[call_ids.begin()->first], R"({"path":"a.txt"})");
  const json usage = events.back().json()["response"]["usage"];
  EXPECT_EQ(usage["input_tokens"], 12);
  EXPECT_EQ(usage["input_tokens_details"]["cached_tokens"], 4);
  EXPECT_EQ(usage["output_tokens_details"]["reasoning_tokens"], 3);
  EXPECT_EQ(usage["total_tokens"], 19);
}

TEST(ResponsesStreamTest, CarriesTheReasoningSignatureAsEncryptedContent) {
  const auto events = stream(
      Api::kResponses, {{"steps", {{{"type", "reasoning"}, {"text", "hmm"}, {"signature", "opaque"}}}}});
  bool found = false;
  for (const SseEvent& event : events) {
    const json data = event.json();
    if (event.name == "response.output_item.done") {
      EXPECT_EQ(data["item"]["type"], "reasoning");
      EXPECT_EQ(data["item"]["encrypted_content"], "opaque");
      EXPECT_EQ(data["item"]["summary"][0]["text"], "hmm");
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(ResponsesStreamTest, EndsIncompleteOnMaxOutputTokens) {
  const auto events = stream(Api::kResponses, {{"stop_reason", "max_output_tokens"},
                                               {"steps", {{{"type", "text"}, {"text", "cut"}}}}});
  EXPECT_EQ(events.back().name, "response.incomplete");
  EXPECT_EQ(events.back().json()["response"]["incomplete_details"]["reason"], "max_output_tokens");
}

// --- Anthropic Messages ---

TEST(AnthropicStreamTest, EmitsBlocksWithThinkingSignatureTextAndToolUse) {
  json response = kTextAndCalls;
  response["steps"].insert(
      response["steps"].begin(),
      json{{"type", "reasoning"}, {"text", "let me see"}, {"signature", "sig=="}, {"chunk_size", 5}});
  response["steps"].push_back(json{{"type", "ping"}});
  const auto events = stream(Api::kAnthropicMessages, response);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().name, "message_start");
  EXPECT_EQ(events.front().json()["message"]["usage"]["input_tokens"], 8);
  EXPECT_EQ(events.front().json()["message"]["usage"]["cache_read_input_tokens"], 4);
  std::vector<std::string> block_types;
  std::map<int, std::string> text;
  std::string signature;
  int open_block = -1;
  for (const SseEvent& event : events) {
    const json data = event.json();
    EXPECT_EQ(data["type"], event.name);
    if (event.name == "content_block_start") {
      EXPECT_EQ(open_block, -1) << "blocks never overlap";
      open_block = data["index"];
      EXPECT_EQ(open_block, static_cast<int>(block_types.size()));
      block_types.push_back(data["content_block"]["type"]);
    } else if (event.name == "content_block_delta") {
      EXPECT_EQ(data["index"], open_block);
      const json delta = data["delta"];
      if (delta["type"] == "text_delta") text[open_block] += delta["text"].get<std::string>();
      if (delta["type"] == "thinking_delta") text[open_block] += delta["thinking"].get<std::string>();
      if (delta["type"] == "input_json_delta") text[open_block] += delta["partial_json"].get<std::string>();
      if (delta["type"] == "signature_delta") signature = delta["signature"];
    } else if (event.name == "content_block_stop") {
      EXPECT_EQ(data["index"], open_block);
      open_block = -1;
    }
  }
  EXPECT_EQ(block_types, (std::vector<std::string>{"thinking", "text", "tool_use", "tool_use"}));
  EXPECT_EQ(text[0], "let me see");
  EXPECT_EQ(signature, "sig==");
  EXPECT_EQ(text[1], "Hello there");
  EXPECT_EQ(text[2], R"({"path":"a.txt"})");
  EXPECT_EQ(text[3], R"({"dir":"src"})");
  const size_t n = events.size();
  EXPECT_EQ(events[n - 3].name, "ping");
  EXPECT_EQ(events[n - 2].name, "message_delta");
  EXPECT_EQ(events[n - 2].json()["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(events[n - 2].json()["usage"]["output_tokens"], 7);
  EXPECT_EQ(events[n - 1].name, "message_stop");
}

TEST(AnthropicStreamTest, AnErrorAfterOutputIsAnErrorEventThatEndsTheStream) {
  const auto events =
      stream(Api::kAnthropicMessages,
             {{"steps", {{{"type", "text"}, {"text", "partial"}}, {{"type", "error"}, {"status", 529}}}}});
  EXPECT_EQ(events.back().name, "error");
  EXPECT_EQ(events.back().json()["error"]["type"], "overloaded_error");
  for (const SseEvent& event : events) EXPECT_NE(event.name, "message_stop");
}

// --- Shared behaviour ---

TEST(RenderTest, AnErrorAsTheFirstStepIsAnHttpErrorInTheApisShape) {
  const ScriptedResponse response = response_of(
      {{"steps", {{{"type", "error"}, {"status", 429}, {"retry_after", 2}, {"message", "slow down"}}}}});
  const RenderedResponse openai = render_response(Api::kChatCompletions, response, {});
  EXPECT_FALSE(openai.streamed);
  EXPECT_EQ(openai.status, 429);
  const json openai_body = json::parse(openai.body);
  EXPECT_EQ(openai_body["error"]["message"], "slow down");
  EXPECT_EQ(openai_body["error"]["code"], "rate_limit_exceeded");
  bool retry_after = false;
  for (const auto& [name, value] : openai.headers) retry_after |= name == "Retry-After" && value == "2";
  EXPECT_TRUE(retry_after);

  const json anthropic_body = json::parse(render_response(Api::kAnthropicMessages, response, {}).body);
  EXPECT_EQ(anthropic_body["type"], "error");
  EXPECT_EQ(anthropic_body["error"]["type"], "rate_limit_error");
}

TEST(RenderTest, ScriptedErrorBodyIsSentAsWritten) {
  const RenderedResponse rendered = render_response(
      Api::kResponses,
      response_of({{"steps", {{{"type", "error"}, {"status", 503}, {"body", "upstream down"}}}}}), {});
  EXPECT_EQ(rendered.status, 503);
  EXPECT_EQ(rendered.body, "upstream down");
}

TEST(RenderTest, LeadingDelayAndHangComeBeforeTheHead) {
  const RenderedResponse rendered =
      render_response(Api::kChatCompletions,
                      response_of({{"steps", {{{"type", "delay"}, {"ms", 30}}, {{"type", "hang"}}}}}), {});
  ASSERT_EQ(rendered.before_head.size(), 2u);
  EXPECT_EQ(rendered.before_head[0].kind, Action::Kind::kDelay);
  EXPECT_EQ(rendered.before_head[0].delay, std::chrono::milliseconds(30));
  EXPECT_EQ(rendered.before_head[1].kind, Action::Kind::kHang);
}

TEST(RenderTest, DisconnectMidStreamEndsWithoutTheTerminator) {
  const RenderedResponse rendered = render_response(
      Api::kChatCompletions,
      response_of({{"steps", {{{"type", "text"}, {"text", "abc"}}, {{"type", "disconnect"}}}}}), {});
  ASSERT_FALSE(rendered.actions.empty());
  EXPECT_EQ(rendered.actions.back().kind, Action::Kind::kDisconnect);
  EXPECT_EQ(written_bytes(rendered).find("[DONE]"), std::string::npos);
}

TEST(RenderTest, MalformedStepWritesItsBytesIntoTheStream) {
  const RenderedResponse rendered =
      render_response(Api::kAnthropicMessages,
                      response_of({{"steps", {{{"type", "malformed"}, {"raw", "data: {oops\n\n"}}}}}), {});
  const auto events = parse_sse(written_bytes(rendered));
  bool found = false;
  for (const SseEvent& event : events) {
    if (event.data == "{oops") found = true;
  }
  EXPECT_TRUE(found);
}

TEST(RenderTest, NotSseIsAFixedBodyWithItsContentType) {
  const RenderedResponse rendered = render_response(
      Api::kResponses, response_of({{"steps", {{{"type", "not_sse"}, {"body", "<html>busy</html>"}}}}}), {});
  EXPECT_FALSE(rendered.streamed);
  EXPECT_EQ(rendered.status, 200);
  EXPECT_EQ(rendered.body, "<html>busy</html>");
  EXPECT_EQ(rendered.headers[0].second, "text/html; charset=utf-8");
}

TEST(RenderTest, ChunkDelaySeparatesEveryEventAndNoDelayMergesWrites) {
  const json steps = {{{"type", "text"}, {"text", "abcdef"}, {"chunk_size", 2}}};
  const RenderedResponse merged = render_response(Api::kChatCompletions, response_of({{"steps", steps}}), {});
  EXPECT_EQ(merged.actions.size(), 1u);
  const RenderedResponse paced =
      render_response(Api::kChatCompletions, response_of({{"steps", steps}, {"chunk_delay_ms", 10}}), {});
  size_t writes = 0;
  for (size_t i = 0; i < paced.actions.size(); ++i) {
    if (paced.actions[i].kind == Action::Kind::kWrite) ++writes;
    if (i > 0) {
      EXPECT_NE(paced.actions[i].kind, paced.actions[i - 1].kind) << "a delay between every two writes";
    }
  }
  EXPECT_EQ(writes, 1 + 3 + 1 + 1u);
}

TEST(RenderTest, SplitNeverCutsAUtf8Character) {
  const std::string text = "aé€😀b";  // 1, 2, 3, 4 and 1 bytes
  for (size_t size = 1; size <= 6; ++size) {
    std::string joined;
    for (const std::string& piece : split_utf8(text, size)) {
      EXPECT_TRUE(json::accept(json(piece).dump())) << "piece of size " << size;
      EXPECT_NE(static_cast<unsigned char>(piece[0]) & 0xC0, 0x80) << "starts inside a character";
      joined += piece;
    }
    EXPECT_EQ(joined, text);
  }
  EXPECT_EQ(split_utf8("whole", 0), std::vector<std::string>{"whole"});
  EXPECT_TRUE(split_utf8("", 3).empty());
}

}  // namespace
}  // namespace keel::model_server
