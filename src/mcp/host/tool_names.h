// mcp/host/tool_names.h — the keel names of an MCP server's tools.
//
// A model provider accepts tool names matching [a-zA-Z0-9_-]{1,64}; MCP servers may name tools anything
// and two servers may both have a "search". Each tool gets `<server>__<tool>`:
//   - when both parts are already made of allowed characters, the server part has no "__" (so the split
//     after the first "__" is unambiguous) and the whole fits 64 characters, that is the name, unchanged;
//   - otherwise characters outside the set become '_', the text is cut to leave room, and "-" and the first
//     10 hex digits of SHA-256(server NUL tool) are appended, so names that lost information stay apart.
// The name depends only on the server's and the tool's names (never on other tools), so a server listing
// its tools again, or another server appearing, never renames a tool (its digest stays the same).
//
// assign_tool_names() applies this to one server's list and refuses, for that tool only, an empty name, a
// name listed twice, and any keel name two tools would share (all of them: no one of them wins by order).
// The registry refuses a name another server already registered (tool.duplicate), equally per tool.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"

namespace keel::mcp {

inline constexpr size_t kMaxToolNameLength = 64;

// The keel name of `tool` on `server` (pure; see above). Never empty, always [a-zA-Z0-9_-]{1,64}.
std::string keel_tool_name(std::string_view server, std::string_view tool);

// keel names for every tool of one server, in the same order: the name, or mcp.tool_name_conflict.
std::vector<Result<std::string>> assign_tool_names(std::string_view server,
                                                   const std::vector<std::string>& tools);

}  // namespace keel::mcp
