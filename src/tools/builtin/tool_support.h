// tools/builtin/tool_support.h — small helpers shared by the builtin tools.
#pragma once

#include <string>
#include <string_view>

#include "keel/cancellation.h"
#include "keel/error.h"

namespace keel::builtin {

// The error a tool reports when its call was cancelled (codes::kCancelled), with the token's reason.
Error cancelled_error(const CancellationToken& cancel);

// `bytes` with every invalid UTF-8 sequence replaced by U+FFFD. Tool output is persisted as canonical
// JSON, which refuses invalid UTF-8, so text taken from files or file names goes through this first.
std::string valid_utf8(std::string_view bytes);

// At most `max_bytes` of `text`, cut at a UTF-8 character boundary, with `marker` appended when cut.
std::string truncate_utf8(std::string_view text, size_t max_bytes, std::string_view marker = "…");

}  // namespace keel::builtin
