// engine/response_assembler.h — turns a provider's event stream into one checked model response.
//
// Providers report a response as events (keel/provider.h). The assembler accumulates text and reasoning,
// assembles parallel tool calls from their argument fragments, and enforces the stream's grammar so that a
// malformed stream fails closed instead of half-running tools:
//   - at most one Finish, and nothing after it;
//   - tool-call fragments only for an index that was started, each index started once;
//   - a stream that ends successfully must have had a Finish;
//   - tool calls go with stop reason tool_use and tool_use goes with tool calls (spec §2: otherwise a
//     protocol error before any tool runs).
// Not thread-safe; owned by one turn.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "keel/error.h"
#include "keel/message.h"
#include "keel/provider.h"

namespace keel {

struct AssembledToolCall {
  int index = 0;
  std::string provider_id;  // as the provider sent it (may be empty or a duplicate)
  std::string name;
  std::string arguments_text;
};

struct AssembledResponse {
  std::vector<ContentBlock> content;          // reasoning blocks first, then text, as the model produced them
  std::vector<AssembledToolCall> tool_calls;  // in index order
  StopReason stop_reason = StopReason::kEnd;
  std::string provider_stop_reason;
  TokenUsage usage;
};

class ResponseAssembler {
 public:
  // Applies one event. provider.protocol_error when it breaks the grammar; the response is then unusable.
  Result<void> add(const ProviderEvent& event);
  // Completes the response after the provider reported success. provider.protocol_error when the stream
  // had no Finish or its tool calls and stop reason disagree.
  Result<AssembledResponse> finish();

  // What was streamed so far (for persisting a partial reply after an interrupt).
  std::string partial_text() const;
  bool finished() const { return stop_.has_value(); }

 private:
  void append_text(ContentBlock::Kind kind, const std::string& text, const nlohmann::json& provider_data);
  std::vector<ContentBlock> content_;
  std::map<int, AssembledToolCall> calls_;
  std::map<int, bool> ended_;
  std::optional<provider_event::Finish> stop_;
  TokenUsage usage_;
};

}  // namespace keel
