// model_server/anthropic_encoder.cc — the Anthropic Messages stream (message_start ... message_stop).
//
// Usage: the script's input_tokens counts all input; Anthropic reports cache reads apart, so input_tokens
// here is the uncached rest and cache_read_input_tokens the cached part.
#include "model_server/wire_encoder.h"

namespace keel::model_server {

namespace {

using json = OrderedJson;

class AnthropicEncoder final : public WireEncoder {
 public:
  AnthropicEncoder(const ScriptedResponse& response, RenderContext context)
      : response_(response),
        context_(std::move(context)),
        id_("msg_scripted_" + std::to_string(context_.request_number)) {}

  void begin(EventWriter& out) override {
    const ScriptedUsage& u = response_.usage;
    json message = {{"id", id_},
                    {"type", "message"},
                    {"role", "assistant"},
                    {"model", context_.model},
                    {"content", json::array()},
                    {"stop_reason", nullptr},
                    {"stop_sequence", nullptr},
                    {"usage",
                     {{"input_tokens", u.input_tokens - u.cached_input_tokens},
                      {"cache_creation_input_tokens", 0},
                      {"cache_read_input_tokens", u.cached_input_tokens},
                      {"output_tokens", 1}}}};
    out.write(sse_event("message_start", {{"type", "message_start"}, {"message", std::move(message)}}));
  }

  void text(EventWriter& out, const std::vector<std::string>& pieces) override {
    const int index = start_block(out, {{"type", "text"}, {"text", ""}});
    for (const std::string& piece : pieces) delta(out, index, {{"type", "text_delta"}, {"text", piece}});
    stop_block(out, index);
  }

  void reasoning(EventWriter& out, const std::vector<std::string>& pieces,
                 const std::string& signature) override {
    const int index = start_block(out, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
    for (const std::string& piece : pieces)
      delta(out, index, {{"type", "thinking_delta"}, {"thinking", piece}});
    // The signature arrives in one delta, just before the block stops.
    if (!signature.empty()) delta(out, index, {{"type", "signature_delta"}, {"signature", signature}});
    stop_block(out, index);
  }

  void tool_calls(EventWriter& out,
                  const std::vector<std::pair<ScriptedToolCall, std::vector<std::string>>>& calls,
                  bool) override {
    any_tool_call_ = true;
    for (const auto& [call, pieces] : calls) {
      const std::string id = call.id.empty() ? "toolu_scripted_" + std::to_string(context_.request_number) +
                                                   "_" + std::to_string(next_block_)
                                             : call.id;
      const int index = start_block(
          out, {{"type", "tool_use"}, {"id", id}, {"name", call.name}, {"input", json::object()}});
      for (const std::string& piece : pieces)
        delta(out, index, {{"type", "input_json_delta"}, {"partial_json", piece}});
      stop_block(out, index);
    }
  }

  void ping(EventWriter& out) override { out.write(sse_event("ping", {{"type", "ping"}})); }

  void error(EventWriter& out, const Step& step) override {
    const std::string type =
        step.error_type.empty() ? default_error_type(Api::kAnthropicMessages, step.status) : step.error_type;
    const std::string message = step.message.empty() ? "scripted error in the stream" : step.message;
    out.write(sse_event("error", {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}}));
  }

  void finish(EventWriter& out) override {
    const std::string reason = response_.stop_reason.value_or(any_tool_call_ ? "tool_use" : "end_turn");
    out.write(sse_event("message_delta", {{"type", "message_delta"},
                                          {"delta", {{"stop_reason", reason}, {"stop_sequence", nullptr}}},
                                          {"usage", {{"output_tokens", response_.usage.output_tokens}}}}));
    out.write(sse_event("message_stop", {{"type", "message_stop"}}));
  }

 private:
  int start_block(EventWriter& out, json block) {
    const int index = next_block_++;
    out.write(
        sse_event("content_block_start",
                  {{"type", "content_block_start"}, {"index", index}, {"content_block", std::move(block)}}));
    return index;
  }
  static void delta(EventWriter& out, int index, json delta) {
    out.write(sse_event("content_block_delta",
                        {{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(delta)}}));
  }
  static void stop_block(EventWriter& out, int index) {
    out.write(sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index}}));
  }

  const ScriptedResponse& response_;
  RenderContext context_;
  std::string id_;
  int next_block_ = 0;
  bool any_tool_call_ = false;
};

}  // namespace

std::unique_ptr<WireEncoder> make_anthropic_encoder(const ScriptedResponse& response, RenderContext context) {
  return std::make_unique<AnthropicEncoder>(response, std::move(context));
}

}  // namespace keel::model_server
