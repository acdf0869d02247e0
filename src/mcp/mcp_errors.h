// mcp/mcp_errors.h — error codes of keel's MCP server (`keel mcp-server`, docs/mcp-server.md). Stable; they
// travel in a JSON-RPC error's `data.code` and in a CallToolResult's `_meta["keel/code"]`.
#pragma once

namespace keel::codes {

inline constexpr char kMcpCallRefused[] = "mcp.call_refused";  // the gatekeeper refused the tool call
inline constexpr char kMcpTooManyCalls[] =
    "mcp.too_many_calls";  // more tool calls in flight than the server runs at once
inline constexpr char kMcpDuplicateId[] =
    "mcp.duplicate_id";  // a request reuses the id of a call that is still in flight

}  // namespace keel::codes
