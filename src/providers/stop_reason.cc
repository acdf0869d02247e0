// Names of the engine's normalized stop reasons, as persisted and sent in events.
#include "keel/provider.h"

namespace keel {

std::string_view to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kToolUse:
      return "tool_use";
    case StopReason::kEnd:
      return "end";
    case StopReason::kMaxTokens:
      return "max_tokens";
    case StopReason::kContentFilter:
      return "content_filter";
    case StopReason::kError:
      return "error";
  }
  return "error";
}

}  // namespace keel
