// model_server/chat_completions_encoder.cc — the OpenAI Chat Completions stream (chat.completion.chunk).
#include <algorithm>

#include "model_server/wire_encoder.h"

namespace keel::model_server {

namespace {

using json = OrderedJson;

class ChatCompletionsEncoder final : public WireEncoder {
 public:
  ChatCompletionsEncoder(const ScriptedResponse& response, RenderContext context)
      : response_(response),
        context_(std::move(context)),
        id_("chatcmpl-scripted-" + std::to_string(context_.request_number)) {}

  void begin(EventWriter& out) override {
    out.write(sse_data(chunk({{"role", "assistant"}, {"content", ""}, {"refusal", nullptr}})));
  }

  void text(EventWriter& out, const std::vector<std::string>& pieces) override {
    for (const std::string& piece : pieces) out.write(sse_data(chunk({{"content", piece}})));
  }

  // Chat Completions has no reasoning field of its own; OpenAI-compatible servers (llama.cpp, vLLM,
  // DeepSeek) stream it as delta.reasoning_content and have no signature.
  void reasoning(EventWriter& out, const std::vector<std::string>& pieces, const std::string&) override {
    for (const std::string& piece : pieces) out.write(sse_data(chunk({{"reasoning_content", piece}})));
  }

  void tool_calls(EventWriter& out,
                  const std::vector<std::pair<ScriptedToolCall, std::vector<std::string>>>& calls,
                  bool interleave) override {
    any_tool_call_ = true;
    const int first_index = next_tool_index_;
    next_tool_index_ += static_cast<int>(calls.size());
    // Each call's first delta carries its id and name; the rest carry argument pieces.
    auto delta_for = [&](size_t call, size_t part) -> json {
      const int index = first_index + static_cast<int>(call);
      if (part == 0) {
        const ScriptedToolCall& c = calls[call].first;
        const std::string id =
            c.id.empty() ? "call_" + std::to_string(context_.request_number) + "_" + std::to_string(index)
                         : c.id;
        return {{"index", index},
                {"id", id},
                {"type", "function"},
                {"function", {{"name", c.name}, {"arguments", ""}}}};
      }
      return {{"index", index}, {"function", {{"arguments", calls[call].second[part - 1]}}}};
    };
    auto emit = [&](size_t call, size_t part) {
      out.write(sse_data(chunk({{"tool_calls", json::array({delta_for(call, part)})}})));
    };
    if (interleave) {
      size_t most = 0;
      for (const auto& call : calls) most = std::max(most, call.second.size() + 1);
      for (size_t part = 0; part < most; ++part) {
        for (size_t call = 0; call < calls.size(); ++call) {
          if (part <= calls[call].second.size()) emit(call, part);
        }
      }
    } else {
      for (size_t call = 0; call < calls.size(); ++call) {
        for (size_t part = 0; part <= calls[call].second.size(); ++part) emit(call, part);
      }
    }
  }

  void ping(EventWriter& out) override { out.write(": keep-alive\n\n"); }

  void error(EventWriter& out, const Step& step) override {
    const std::string type =
        step.error_type.empty() ? default_error_type(Api::kChatCompletions, step.status) : step.error_type;
    const std::string message = step.message.empty() ? "scripted error in the stream" : step.message;
    out.write(
        sse_data({{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}}));
  }

  void finish(EventWriter& out) override {
    const std::string reason = response_.stop_reason.value_or(any_tool_call_ ? "tool_calls" : "stop");
    out.write(sse_data(chunk(json::object(), reason)));
    if (context_.include_usage) {
      const ScriptedUsage& u = response_.usage;
      json last = base();
      last["choices"] = json::array();
      last["usage"] = {{"prompt_tokens", u.input_tokens},
                       {"completion_tokens", u.output_tokens},
                       {"total_tokens", u.input_tokens + u.output_tokens},
                       {"prompt_tokens_details", {{"cached_tokens", u.cached_input_tokens}}},
                       {"completion_tokens_details", {{"reasoning_tokens", u.reasoning_tokens}}}};
      out.write(sse_data(last));
    }
    out.write("data: [DONE]\n\n");
  }

 private:
  json base() const {
    return {{"id", id_},
            {"object", "chat.completion.chunk"},
            {"created", context_.created},
            {"model", context_.model}};
  }

  json chunk(json delta, json finish_reason = nullptr) const {
    json out = base();
    out["choices"] = json::array({{{"index", 0},
                                   {"delta", std::move(delta)},
                                   {"logprobs", nullptr},
                                   {"finish_reason", std::move(finish_reason)}}});
    // With include_usage, every chunk but the last carries "usage": null.
    if (context_.include_usage) out["usage"] = nullptr;
    return out;
  }

  const ScriptedResponse& response_;
  RenderContext context_;
  std::string id_;
  int next_tool_index_ = 0;
  bool any_tool_call_ = false;
};

}  // namespace

std::unique_ptr<WireEncoder> make_chat_completions_encoder(const ScriptedResponse& response,
                                                           RenderContext context) {
  return std::make_unique<ChatCompletionsEncoder>(response, std::move(context));
}

}  // namespace keel::model_server
