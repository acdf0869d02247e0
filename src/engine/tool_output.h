// engine/tool_output.h — bounds what a tool result puts into the model's context and into the store.
//
// A tool may return far more text than a model should read (a huge file, a long listing). The model gets
// at most `max_chars` characters of text, cut on a UTF-8 boundary and followed by a notice that says how
// much was cut; the full content goes to the result's details for the UI (never to the model) when it is at
// most kMaxKeptFullOutputBytes, and the notice says whether it was kept.
//
// The result is also made storable, because a result the store refuses would leave its call without a
// result (issue 14): text that is not valid UTF-8 gets U+FFFD for each bad byte, non-finite numbers in the
// details become null, details nested deeper than the store accepts are cut, and when the content and
// details together would exceed kMaxStoredResultBytes the details, then the images, are replaced by a
// short description of what was left out. The full output is not kept anywhere else: a tool result is a
// message to the model, and an output that large is better asked for again in narrower pieces than kept
// whole in every copy of the store.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "keel/message.h"
#include "keel/tool.h"

namespace keel {

// The largest full output kept in the details of a cut result.
inline constexpr size_t kMaxKeptFullOutputBytes = 1024 * 1024;
// What a tool result's content and details may take together: the store's node limit (4 MiB) less room
// for the rest of the node's body.
inline constexpr size_t kMaxStoredResultBytes = 4 * 1024 * 1024 - 64 * 1024;

struct BoundedToolOutput {
  std::vector<ContentBlock> content;  // for the model
  nlohmann::json details;             // for the UI: the tool's details, plus the full output when cut
  bool truncated = false;
};

BoundedToolOutput bound_tool_output(ToolResult result, size_t max_chars);

// `value` with invalid UTF-8 replaced (in strings and keys), non-finite numbers as null and anything nested
// deeper than canonical JSON accepts replaced by a string saying so: something canonical_json() encodes.
nlohmann::json storable_json(nlohmann::json value);

}  // namespace keel
