#include "engine/response_assembler.h"

#include "engine/engine_errors.h"
#include "util/overloaded.h"

namespace keel {
namespace {

namespace pe = provider_event;

Error protocol_error(std::string message) {
  return Error(codes::kProviderProtocol, "the model's response stream was malformed: " + std::move(message));
}

}  // namespace

void ResponseAssembler::append_text(ContentBlock::Kind kind, const std::string& text,
                                    const nlohmann::json& provider_data) {
  // Consecutive deltas of one kind form one block; a change of kind starts a new block, so reasoning and
  // text keep the order the model produced them in. A block's provider_data closes it (the codecs send a
  // reasoning item's signature or encrypted content with its last delta), so two reasoning items in a row
  // stay two blocks, each with its own data to send back.
  if (content_.empty() || content_.back().kind != kind || !content_.back().provider_data.is_null()) {
    ContentBlock block;
    block.kind = kind;
    content_.push_back(std::move(block));
  }
  content_.back().text += text;
  if (!provider_data.is_null()) content_.back().provider_data = provider_data;
}

Result<void> ResponseAssembler::add(const ProviderEvent& event) {
  if (stop_) return fail(protocol_error("an event arrived after the stop reason"));
  return std::visit(
      Overloaded{
          [&](const pe::TextDelta& e) -> Result<void> {
            append_text(ContentBlock::Kind::kText, e.text, nullptr);
            return {};
          },
          [&](const pe::ReasoningDelta& e) -> Result<void> {
            append_text(ContentBlock::Kind::kReasoning, e.text, e.provider_data);
            return {};
          },
          [&](const pe::ToolCallStart& e) -> Result<void> {
            if (calls_.contains(e.index)) {
              return fail(protocol_error("tool call " + std::to_string(e.index) + " was started twice"));
            }
            if (e.name.empty())
              return fail(protocol_error("tool call " + std::to_string(e.index) + " has no name"));
            calls_[e.index] = AssembledToolCall{e.index, e.id, e.name, ""};
            return {};
          },
          [&](const pe::ToolCallDelta& e) -> Result<void> {
            auto it = calls_.find(e.index);
            if (it == calls_.end() || ended_[e.index]) {
              return fail(protocol_error("arguments for tool call " + std::to_string(e.index) +
                                         ", which is not open"));
            }
            it->second.arguments_text += e.arguments_fragment;
            return {};
          },
          [&](const pe::ToolCallEnd& e) -> Result<void> {
            if (!calls_.contains(e.index) || ended_[e.index]) {
              return fail(
                  protocol_error("end of tool call " + std::to_string(e.index) + ", which is not open"));
            }
            ended_[e.index] = true;
            return {};
          },
          [&](const pe::Usage& e) -> Result<void> {
            usage_ = e.usage;
            return {};
          },
          [&](const pe::Finish& e) -> Result<void> {
            stop_ = e;
            return {};
          },
      },
      event);
}

Result<AssembledResponse> ResponseAssembler::finish() {
  if (!stop_) return fail(protocol_error("the stream ended without a stop reason"));
  AssembledResponse response;
  response.content = content_;
  for (auto& [index, call] : calls_) response.tool_calls.push_back(call);
  response.stop_reason = stop_->reason;
  response.provider_stop_reason = stop_->provider_reason;
  response.usage = usage_;
  if (!response.tool_calls.empty() && response.stop_reason != StopReason::kToolUse) {
    return fail(protocol_error("the response has " + std::to_string(response.tool_calls.size()) +
                               " tool call(s) but stop reason '" +
                               std::string(to_string(response.stop_reason)) + "' (" +
                               response.provider_stop_reason + "); no tool was run"));
  }
  if (response.tool_calls.empty() && response.stop_reason == StopReason::kToolUse) {
    return fail(protocol_error("the stop reason is tool_use but the response has no tool call"));
  }
  return response;
}

std::string ResponseAssembler::partial_text() const {
  std::string text;
  for (const ContentBlock& block : content_) {
    if (block.kind == ContentBlock::Kind::kText) text += block.text;
  }
  return text;
}

}  // namespace keel
