// model_server/responses_encoder.cc — the OpenAI Responses stream (semantic events with sequence numbers).
#include <algorithm>

#include "model_server/wire_encoder.h"

namespace keel::model_server {

namespace {

using json = OrderedJson;

class ResponsesEncoder final : public WireEncoder {
 public:
  ResponsesEncoder(const ScriptedResponse& response, RenderContext context)
      : response_(response),
        context_(std::move(context)),
        id_("resp_scripted_" + std::to_string(context_.request_number)) {}

  void begin(EventWriter& out) override {
    emit(out, "response.created", {{"response", snapshot("in_progress")}});
    emit(out, "response.in_progress", {{"response", snapshot("in_progress")}});
  }

  void text(EventWriter& out, const std::vector<std::string>& pieces) override {
    const int index = output_index();
    const std::string item_id = item_name("msg", index);
    emit(out, "response.output_item.added",
         {{"output_index", index},
          {"item",
           {{"id", item_id},
            {"type", "message"},
            {"status", "in_progress"},
            {"role", "assistant"},
            {"content", json::array()}}}});
    const json location = {{"item_id", item_id}, {"output_index", index}, {"content_index", 0}};
    emit(out, "response.content_part.added", with(location, {{"part", text_part("")}}));
    std::string text;
    for (const std::string& piece : pieces) {
      text += piece;
      emit(out, "response.output_text.delta",
           with(location, {{"delta", piece}, {"logprobs", json::array()}}));
    }
    emit(out, "response.output_text.done", with(location, {{"text", text}, {"logprobs", json::array()}}));
    emit(out, "response.content_part.done", with(location, {{"part", text_part(text)}}));
    done_item(out, index,
              {{"id", item_id},
               {"type", "message"},
               {"status", "completed"},
               {"role", "assistant"},
               {"content", json::array({text_part(text)})}});
  }

  // Reasoning streams as a summary; the script's signature stands in for the encrypted reasoning content
  // that a client sends back on the next turn.
  void reasoning(EventWriter& out, const std::vector<std::string>& pieces,
                 const std::string& signature) override {
    const int index = output_index();
    const std::string item_id = item_name("rs", index);
    emit(out, "response.output_item.added",
         {{"output_index", index},
          {"item", {{"id", item_id}, {"type", "reasoning"}, {"summary", json::array()}}}});
    const json location = {{"item_id", item_id}, {"output_index", index}, {"summary_index", 0}};
    emit(out, "response.reasoning_summary_part.added", with(location, {{"part", summary_part("")}}));
    std::string text;
    for (const std::string& piece : pieces) {
      text += piece;
      emit(out, "response.reasoning_summary_text.delta", with(location, {{"delta", piece}}));
    }
    emit(out, "response.reasoning_summary_text.done", with(location, {{"text", text}}));
    emit(out, "response.reasoning_summary_part.done", with(location, {{"part", summary_part(text)}}));
    json item = {{"id", item_id}, {"type", "reasoning"}, {"summary", json::array({summary_part(text)})}};
    if (!signature.empty()) item["encrypted_content"] = signature;
    done_item(out, index, std::move(item));
  }

  void tool_calls(EventWriter& out,
                  const std::vector<std::pair<ScriptedToolCall, std::vector<std::string>>>& calls,
                  bool interleave) override {
    std::vector<OpenCall> open;
    for (const auto& [call, pieces] : calls) {
      const int index = output_index();
      const std::string call_id =
          call.id.empty() ? "call_" + std::to_string(context_.request_number) + "_" + std::to_string(index)
                          : call.id;
      json item = {{"id", item_name("fc", index)}, {"type", "function_call"},
                   {"status", "in_progress"},      {"arguments", ""},
                   {"call_id", call_id},           {"name", call.name}};
      open.push_back({index, item});
      if (!interleave) {
        emit(out, "response.output_item.added", {{"output_index", index}, {"item", item}});
        for (const std::string& piece : pieces) argument_delta(out, open.back(), piece);
        finish_call(out, open.back(), call.arguments);
      }
    }
    if (!interleave) return;
    for (const OpenCall& call : open)
      emit(out, "response.output_item.added", {{"output_index", call.index}, {"item", call.item}});
    size_t most = 0;
    for (const auto& call : calls) most = std::max(most, call.second.size());
    for (size_t part = 0; part < most; ++part) {
      for (size_t i = 0; i < calls.size(); ++i) {
        if (part < calls[i].second.size()) argument_delta(out, open[i], calls[i].second[part]);
      }
    }
    for (size_t i = 0; i < calls.size(); ++i) finish_call(out, open[i], calls[i].first.arguments);
  }

  void ping(EventWriter& out) override { out.write(": keep-alive\n\n"); }

  void error(EventWriter& out, const Step& step) override {
    const std::string type =
        step.error_type.empty() ? default_error_type(Api::kResponses, step.status) : step.error_type;
    const std::string message = step.message.empty() ? "scripted error in the stream" : step.message;
    emit(out, "error", {{"code", type}, {"message", message}, {"param", nullptr}});
    json failed = snapshot("failed");
    failed["error"] = {{"code", type}, {"message", message}};
    emit(out, "response.failed", {{"response", std::move(failed)}});
  }

  void finish(EventWriter& out) override {
    const bool incomplete = response_.stop_reason == "max_output_tokens";
    json final_response = snapshot(incomplete ? "incomplete" : "completed");
    if (incomplete) final_response["incomplete_details"] = {{"reason", "max_output_tokens"}};
    const ScriptedUsage& u = response_.usage;
    final_response["usage"] = {{"input_tokens", u.input_tokens},
                               {"input_tokens_details", {{"cached_tokens", u.cached_input_tokens}}},
                               {"output_tokens", u.output_tokens},
                               {"output_tokens_details", {{"reasoning_tokens", u.reasoning_tokens}}},
                               {"total_tokens", u.input_tokens + u.output_tokens}};
    emit(out, incomplete ? "response.incomplete" : "response.completed",
         {{"response", std::move(final_response)}});
  }

 private:
  struct OpenCall {  // a function_call item between output_item.added and output_item.done
    int index;
    json item;
  };

  void emit(EventWriter& out, std::string_view type, const json& fields) {
    json event = {{"type", type}, {"sequence_number", sequence_++}};
    for (const auto& [key, value] : fields.items()) event[key] = value;
    out.write(sse_event(type, event));
  }

  static json with(json location, const json& fields) {
    for (const auto& [key, value] : fields.items()) location[key] = value;
    return location;
  }

  void argument_delta(EventWriter& out, const OpenCall& call, const std::string& piece) {
    emit(out, "response.function_call_arguments.delta",
         {{"item_id", call.item["id"]}, {"output_index", call.index}, {"delta", piece}});
  }

  void finish_call(EventWriter& out, const OpenCall& call, const std::string& arguments) {
    emit(out, "response.function_call_arguments.done",
         {{"item_id", call.item["id"]}, {"output_index", call.index}, {"arguments", arguments}});
    json item = call.item;
    item["status"] = "completed";
    item["arguments"] = arguments;
    done_item(out, call.index, std::move(item));
  }

  void done_item(EventWriter& out, int index, json item) {
    output_.push_back(item);
    emit(out, "response.output_item.done", {{"output_index", index}, {"item", std::move(item)}});
  }

  json snapshot(std::string_view status) const {
    return {{"id", id_},
            {"object", "response"},
            {"created_at", context_.created},
            {"status", status},
            {"error", nullptr},
            {"incomplete_details", nullptr},
            {"model", context_.model},
            {"output", status == "in_progress" ? json::array() : output_},
            {"usage", nullptr}};
  }

  static json text_part(const std::string& text) {
    return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}};
  }
  static json summary_part(const std::string& text) { return {{"type", "summary_text"}, {"text", text}}; }

  int output_index() { return next_output_index_++; }
  std::string item_name(std::string_view prefix, int index) const {
    return std::string(prefix) + "_scripted_" + std::to_string(context_.request_number) + "_" +
           std::to_string(index);
  }

  const ScriptedResponse& response_;
  RenderContext context_;
  std::string id_;
  int64_t sequence_ = 0;
  int next_output_index_ = 0;
  json output_ = json::array();  // finished items, in order, for the final snapshot
};

}  // namespace

std::unique_ptr<WireEncoder> make_responses_encoder(const ScriptedResponse& response, RenderContext context) {
  return std::make_unique<ResponsesEncoder>(response, std::move(context));
}

}  // namespace keel::model_server
