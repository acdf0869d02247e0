// engine/tool_output.h — bounds what a tool result puts into the model's context.
//
// A tool may return far more text than a model should read (a huge file, a long listing). The model gets
// at most `max_chars` characters of text, cut on a UTF-8 boundary and followed by a notice that says how
// much was cut and that the full output was kept; the full content goes to the result's details for the
// UI (never to the model).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "keel/message.h"
#include "keel/tool.h"

namespace keel {

struct BoundedToolOutput {
  std::vector<ContentBlock> content;  // for the model
  nlohmann::json details;             // for the UI: the tool's details, plus the full output when cut
  bool truncated = false;
};

BoundedToolOutput bound_tool_output(ToolResult result, size_t max_chars);

}  // namespace keel
