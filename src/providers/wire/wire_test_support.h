// providers/wire/wire_test_support.h — helpers for the wire codec tests (never linked into keel): building
// SSE text, decoding a whole stream in chunks of any size, and summarizing the ProviderEvents while checking
// the grammar the engine's ResponseAssembler enforces (calls started once before their fragments, ended
// once, exactly one Finish and nothing after it).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/provider.h"
#include "providers/wire/wire_codec.h"
#include "providers/wire/wire_stream.h"
#include "util/overloaded.h"

namespace keel::providers::testing {

namespace pe = provider_event;

// "event: <name>\ndata: <json>\n\n"; no event line when `name` is empty.
inline std::string sse(std::string_view name, const nlohmann::json& data) {
  std::string out;
  if (!name.empty()) out += "event: " + std::string(name) + "\n";
  return out + "data: " + data.dump() + "\n\n";
}

// A Responses / Anthropic event: the SSE name repeats the data's type.
inline std::string typed(const nlohmann::json& data) { return sse(data.at("type").get<std::string>(), data); }

struct Decoded {
  std::vector<ProviderEvent> events;
  std::optional<Error> error;  // the first error (from feed or finish)
};

// Feeds `text` in chunks of `chunk` bytes (0: all at once), then finishes.
inline Decoded decode(WireFormat format, std::string_view text, size_t chunk = 0, CodecOptions options = {}) {
  WireStream stream(make_wire_codec(format, options)->new_decoder());
  Decoded decoded;
  const size_t step = chunk == 0 ? std::max<size_t>(text.size(), 1) : chunk;
  for (size_t at = 0; at < text.size(); at += step) {
    auto r = stream.feed(text.substr(at, step), decoded.events);
    if (!r) {
      decoded.error = r.error();
      return decoded;
    }
  }
  auto r = stream.finish(decoded.events);
  if (!r) decoded.error = r.error();
  return decoded;
}

// One line per event, for comparing event sequences and for failure messages.
inline std::string describe(const std::vector<ProviderEvent>& events) {
  std::string out;
  for (const ProviderEvent& event : events) {
    out += std::visit(
        Overloaded{
            [](const pe::TextDelta& e) { return "text " + nlohmann::json(e.text).dump(); },
            [](const pe::ReasoningDelta& e) {
              return "reasoning " + nlohmann::json(e.text).dump() + " " + e.provider_data.dump();
            },
            [](const pe::ToolCallStart& e) {
              return "start " + std::to_string(e.index) + " " + e.id + " " + e.name;
            },
            [](const pe::ToolCallDelta& e) {
              return "args " + std::to_string(e.index) + " " + nlohmann::json(e.arguments_fragment).dump();
            },
            [](const pe::ToolCallEnd& e) { return "end " + std::to_string(e.index); },
            [](const pe::Usage& e) {
              return "usage " + std::to_string(e.usage.input_tokens) + " " +
                     std::to_string(e.usage.output_tokens) + " " +
                     std::to_string(e.usage.cached_input_tokens) + " " +
                     std::to_string(e.usage.reasoning_tokens);
            },
            [](const pe::Finish& e) {
              return "finish " + std::string(to_string(e.reason)) + " " + e.provider_reason;
            },
        },
        event);
    out += "\n";
  }
  return out;
}

struct SummaryCall {
  std::string id;
  std::string name;
  std::string arguments;
  bool ended = false;
};

// What a response amounts to, built the way the engine assembles it.
struct Summary {
  std::string text;
  std::string reasoning;
  std::vector<nlohmann::json> reasoning_data;  // each non-null provider_data, in order
  std::map<int, SummaryCall> calls;
  std::optional<TokenUsage> usage;
  std::optional<pe::Finish> finish;
  std::vector<std::string> grammar_errors;
};

inline Summary summarize(const std::vector<ProviderEvent>& events) {
  Summary s;
  for (const ProviderEvent& event : events) {
    if (s.finish) s.grammar_errors.push_back("an event after Finish");
    std::visit(Overloaded{
                   [&](const pe::TextDelta& e) { s.text += e.text; },
                   [&](const pe::ReasoningDelta& e) {
                     s.reasoning += e.text;
                     if (!e.provider_data.is_null()) s.reasoning_data.push_back(e.provider_data);
                   },
                   [&](const pe::ToolCallStart& e) {
                     if (s.calls.contains(e.index)) s.grammar_errors.push_back("call started twice");
                     s.calls[e.index] = SummaryCall{e.id, e.name, "", false};
                   },
                   [&](const pe::ToolCallDelta& e) {
                     auto it = s.calls.find(e.index);
                     if (it == s.calls.end() || it->second.ended) {
                       s.grammar_errors.push_back("fragment for a call that is not open");
                     } else {
                       it->second.arguments += e.arguments_fragment;
                     }
                   },
                   [&](const pe::ToolCallEnd& e) {
                     auto it = s.calls.find(e.index);
                     if (it == s.calls.end() || it->second.ended) {
                       s.grammar_errors.push_back("end of a call that is not open");
                     } else {
                       it->second.ended = true;
                     }
                   },
                   [&](const pe::Usage& e) { s.usage = e.usage; },
                   [&](const pe::Finish& e) { s.finish = e; },
               },
               event);
  }
  if (!s.finish) s.grammar_errors.push_back("no Finish");
  return s;
}

// Decodes and summarizes a stream that must succeed, in one piece and byte by byte alike.
inline Summary decode_ok(WireFormat format, std::string_view text, CodecOptions options = {}) {
  Decoded whole = decode(format, text, 0, options);
  EXPECT_FALSE(whole.error.has_value()) << whole.error->to_string();
  Decoded bytes = decode(format, text, 1, options);
  EXPECT_FALSE(bytes.error.has_value()) << bytes.error->to_string();
  EXPECT_EQ(describe(whole.events), describe(bytes.events)) << "chunking changed the events";
  Summary summary = summarize(whole.events);
  EXPECT_TRUE(summary.grammar_errors.empty()) << summary.grammar_errors.front();
  return summary;
}

// Decodes a stream that must fail; returns its error.
inline Error decode_error(WireFormat format, std::string_view text) {
  Decoded decoded = decode(format, text);
  EXPECT_TRUE(decoded.error.has_value()) << "the stream was accepted";
  return decoded.error.value_or(Error("none", "none"));
}

// The assistant Message the engine would persist from `summary` (reasoning as one block with the last
// provider_data, as ResponseAssembler merges consecutive reasoning deltas).
inline Message assistant_message(const Summary& summary) {
  Message message{.role = Role::kAssistant};
  if (!summary.reasoning.empty() || !summary.reasoning_data.empty()) {
    message.content.push_back(ContentBlock{
        .kind = ContentBlock::Kind::kReasoning,
        .text = summary.reasoning,
        .provider_data = summary.reasoning_data.empty() ? nlohmann::json() : summary.reasoning_data.back()});
  }
  if (!summary.text.empty()) message.content.push_back(ContentBlock{.text = summary.text});
  for (const auto& [index, call] : summary.calls) {
    message.tool_calls.push_back(
        ToolCall{.id = call.id, .name = call.name, .arguments = nlohmann::json::parse(call.arguments)});
  }
  return message;
}

}  // namespace keel::providers::testing
