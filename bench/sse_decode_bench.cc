// sse_decode_bench — SSE parse + decode throughput (MB/s of response body) for each wire format: the bytes an
// HTTP client hands over, in 16 KiB chunks, through the SSE parser and the format's StreamDecoder into
// ProviderEvents (providers/wire/wire_stream.h). The providers issue asks for at least 200 MB/s.
//
// Streams, written as each API sends them:
//   text:  4,000 small text deltas (a few characters each, as models stream tokens), then usage and the end;
//   tool:  one tool call whose arguments (a 64 KiB file to write, so JSON text with escapes inside a JSON
//          string) arrive in fragments of `fragment` bytes (16: token-sized, as OpenAI and Anthropic stream
//          them; 1,024: servers that send bigger pieces).
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "providers/wire/wire_codec.h"
#include "providers/wire/wire_stream.h"

namespace keel::providers {
namespace {

using nlohmann::json;

constexpr int kTextDeltas = 4000;
constexpr size_t kChunkBytes = 16 * 1024;

const char* const kWords[] = {
    "The", " quick", " brown", " fox",  " jumps", " over",  " the", " lazy", " dog",           ".",
    " It", "'s",     " a",     " test", " of",    " strea", "ming", ",",     " \u00e9t\u00e9", "\\n"};

std::string event(std::string_view name, const json& data) {
  std::string out;
  if (!name.empty()) out += "event: " + std::string(name) + "\n";
  return out + "data: " + data.dump() + "\n\n";
}

std::string typed(const json& data) { return event(data.at("type").get<std::string>(), data); }

// The arguments of a write_file call: a JSON object holding a 64 KiB source file.
std::string large_arguments() {
  std::string file;
  for (int line = 0; file.size() < 64 * 1024; ++line) {
    file += "    if (value[" + std::to_string(line) + "] == \"quoted\\tthing\") { total += 1; }\n";
  }
  return json{{"path", "src/generated.cc"}, {"content", file}}.dump();
}

std::vector<std::string> fragments(const std::string& text, size_t size) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size(); at += size) {
    // Never cut a UTF-8 sequence: fragments are JSON strings themselves. (The text is ASCII.)
    out.push_back(text.substr(at, size));
  }
  return out;
}

// --- OpenAI Chat Completions ---

json chat_chunk(const json& delta, const json& finish = nullptr) {
  return {
      {"id", "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG"},
      {"object", "chat.completion.chunk"},
      {"created", 1741570283},
      {"model", "gpt-4o-2024-08-06"},
      {"system_fingerprint", "fp_eb9dce56a8"},
      {"choices",
       json::array({{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish}}})}};
}

std::string chat_tail(const std::string& finish) {
  return event("", chat_chunk(json::object(), finish)) +
         event("",
               {{"id", "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG"},
                {"object", "chat.completion.chunk"},
                {"choices", json::array()},
                {"usage", {{"prompt_tokens", 1200}, {"completion_tokens", 4000}, {"total_tokens", 5200}}}}) +
         "data: [DONE]\n\n";
}

std::string chat_text_stream() {
  std::string s = event("", chat_chunk({{"role", "assistant"}, {"content", ""}, {"refusal", nullptr}}));
  for (int i = 0; i < kTextDeltas; ++i) s += event("", chat_chunk({{"content", kWords[i % 20]}}));
  return s + chat_tail("stop");
}

std::string chat_tool_stream(size_t fragment) {
  std::string s = event(
      "", chat_chunk(
              {{"role", "assistant"},
               {"content", nullptr},
               {"tool_calls", json::array({{{"index", 0},
                                            {"id", "call_DdmO9pD3xa9XTPNJ32zg2hcA"},
                                            {"type", "function"},
                                            {"function", {{"name", "write_file"}, {"arguments", ""}}}}})}}));
  for (const std::string& piece : fragments(large_arguments(), fragment)) {
    s += event(
        "",
        chat_chunk({{"tool_calls", json::array({{{"index", 0}, {"function", {{"arguments", piece}}}}})}}));
  }
  return s + chat_tail("tool_calls");
}

// --- OpenAI Responses ---

std::string responses_head() {
  return typed({{"type", "response.created"},
                {"sequence_number", 0},
                {"response",
                 {{"id", "resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654"},
                  {"object", "response"},
                  {"status", "in_progress"},
                  {"model", "gpt-4.1-2025-04-14"},
                  {"output", json::array()}}}});
}

std::string responses_tail(int sequence) {
  return typed({{"type", "response.completed"},
                {"sequence_number", sequence},
                {"response",
                 {{"id", "resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654"},
                  {"status", "completed"},
                  {"usage",
                   {{"input_tokens", 1200},
                    {"input_tokens_details", {{"cached_tokens", 0}}},
                    {"output_tokens", 4000},
                    {"output_tokens_details", {{"reasoning_tokens", 0}}},
                    {"total_tokens", 5200}}}}}});
}

std::string responses_text_stream() {
  const std::string item = "msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654";
  std::string s = responses_head() + typed({{"type", "response.output_item.added"},
                                            {"sequence_number", 1},
                                            {"output_index", 0},
                                            {"item",
                                             {{"id", item},
                                              {"type", "message"},
                                              {"status", "in_progress"},
                                              {"role", "assistant"},
                                              {"content", json::array()}}}});
  int sequence = 2;
  for (int i = 0; i < kTextDeltas; ++i) {
    s += typed({{"type", "response.output_text.delta"},
                {"sequence_number", sequence++},
                {"item_id", item},
                {"output_index", 0},
                {"content_index", 0},
                {"delta", kWords[i % 20]},
                {"logprobs", json::array()}});
  }
  s += typed({{"type", "response.output_item.done"},
              {"sequence_number", sequence++},
              {"output_index", 0},
              {"item", {{"id", item}, {"type", "message"}, {"status", "completed"}, {"role", "assistant"}}}});
  return s + responses_tail(sequence);
}

std::string responses_tool_stream(size_t fragment) {
  const std::string item = "fc_67ca09c6bedc8190a7abfec07b1a1332096610f474011cc0";
  std::string s = responses_head() + typed({{"type", "response.output_item.added"},
                                            {"sequence_number", 1},
                                            {"output_index", 0},
                                            {"item",
                                             {{"id", item},
                                              {"type", "function_call"},
                                              {"status", "in_progress"},
                                              {"arguments", ""},
                                              {"call_id", "call_unLAR8MvFNptuiZK6K6HCy5k"},
                                              {"name", "write_file"}}}});
  int sequence = 2;
  for (const std::string& piece : fragments(large_arguments(), fragment)) {
    s += typed({{"type", "response.function_call_arguments.delta"},
                {"sequence_number", sequence++},
                {"item_id", item},
                {"output_index", 0},
                {"delta", piece}});
  }
  s += typed({{"type", "response.output_item.done"},
              {"sequence_number", sequence++},
              {"output_index", 0},
              {"item",
               {{"id", item},
                {"type", "function_call"},
                {"status", "completed"},
                {"call_id", "call_unLAR8MvFNptuiZK6K6HCy5k"},
                {"name", "write_file"}}}});
  return s + responses_tail(sequence);
}

// --- Anthropic Messages ---

std::string anthropic_head() {
  return typed({{"type", "message_start"},
                {"message",
                 {{"id", "msg_01XFDUDYJgAACzvnptvVoYEL"},
                  {"type", "message"},
                  {"role", "assistant"},
                  {"content", json::array()},
                  {"model", "claude-sonnet-4-5"},
                  {"stop_reason", nullptr},
                  {"stop_sequence", nullptr},
                  {"usage", {{"input_tokens", 1200}, {"output_tokens", 1}}}}}}) +
         typed({{"type", "ping"}});
}

std::string anthropic_tail(const std::string& stop_reason) {
  return typed({{"type", "content_block_stop"}, {"index", 0}}) +
         typed({{"type", "message_delta"},
                {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", nullptr}}},
                {"usage", {{"output_tokens", 4000}}}}) +
         typed({{"type", "message_stop"}});
}

std::string anthropic_text_stream() {
  std::string s = anthropic_head() + typed({{"type", "content_block_start"},
                                            {"index", 0},
                                            {"content_block", {{"type", "text"}, {"text", ""}}}});
  for (int i = 0; i < kTextDeltas; ++i) {
    s += typed({{"type", "content_block_delta"},
                {"index", 0},
                {"delta", {{"type", "text_delta"}, {"text", kWords[i % 20]}}}});
  }
  return s + anthropic_tail("end_turn");
}

std::string anthropic_tool_stream(size_t fragment) {
  std::string s = anthropic_head() + typed({{"type", "content_block_start"},
                                            {"index", 0},
                                            {"content_block",
                                             {{"type", "tool_use"},
                                              {"id", "toolu_01T1x1fJ34qAmk2tNTrN7Up6"},
                                              {"name", "write_file"},
                                              {"input", json::object()}}}});
  for (const std::string& piece : fragments(large_arguments(), fragment)) {
    s += typed({{"type", "content_block_delta"},
                {"index", 0},
                {"delta", {{"type", "input_json_delta"}, {"partial_json", piece}}}});
  }
  return s + anthropic_tail("tool_use");
}

// --- the measurement ---

void run(benchmark::State& state, WireFormat format, const std::string& body) {
  const auto codec = make_wire_codec(format);
  std::vector<ProviderEvent> out;
  size_t events = 0;
  for (auto _ : state) {
    WireStream stream(codec->new_decoder());
    for (size_t at = 0; at < body.size(); at += kChunkBytes) {
      out.clear();
      if (!stream.feed(std::string_view(body).substr(at, kChunkBytes), out)) {
        state.SkipWithError("decode failed");
      }
      events += out.size();
      benchmark::DoNotOptimize(out.data());
    }
    out.clear();
    if (!stream.finish(out)) state.SkipWithError("finish failed");
    events += out.size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["events_per_stream"] = static_cast<double>(events) / static_cast<double>(state.iterations());
  state.counters["stream_bytes"] = static_cast<double>(body.size());
}

void BM_ChatText(benchmark::State& state) { run(state, WireFormat::kOpenAiChat, chat_text_stream()); }
void BM_ChatTool(benchmark::State& state) {
  run(state, WireFormat::kOpenAiChat, chat_tool_stream(static_cast<size_t>(state.range(0))));
}
void BM_ResponsesText(benchmark::State& state) {
  run(state, WireFormat::kOpenAiResponses, responses_text_stream());
}
void BM_ResponsesTool(benchmark::State& state) {
  run(state, WireFormat::kOpenAiResponses, responses_tool_stream(static_cast<size_t>(state.range(0))));
}
void BM_AnthropicText(benchmark::State& state) {
  run(state, WireFormat::kAnthropicMessages, anthropic_text_stream());
}
void BM_AnthropicTool(benchmark::State& state) {
  run(state, WireFormat::kAnthropicMessages, anthropic_tool_stream(static_cast<size_t>(state.range(0))));
}

BENCHMARK(BM_ChatText);
BENCHMARK(BM_ChatTool)->Arg(16)->Arg(1024);
BENCHMARK(BM_ResponsesText);
BENCHMARK(BM_ResponsesTool)->Arg(16)->Arg(1024);
BENCHMARK(BM_AnthropicText);
BENCHMARK(BM_AnthropicTool)->Arg(16)->Arg(1024);

}  // namespace
}  // namespace keel::providers

BENCHMARK_MAIN();
