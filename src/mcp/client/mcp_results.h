// mcp/client/mcp_results.h — reading what an MCP server returns into keel's types (mcp_session.h).
//
// Everything here reads untrusted JSON: a value of the wrong shape is an mcp.bad_response, never an
// exception or a crash; unknown fields are ignored, absent optional ones take their defaults. The parsers
// are pure (no I/O), so the fuzz target drives them directly.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"
#include "mcp/client/mcp_session.h"

namespace keel::mcp {

// The protocol revisions keel speaks, newest first.
inline constexpr char kModernRevision[] = "2026-07-28";
inline constexpr const char* kLegacyRevisions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
bool is_legacy_revision_keel_speaks(const std::string& version);

// An InitializeResult or a DiscoverResult (serverInfo, capabilities, instructions; protocolVersion for the
// first). `protocol_version` is left for the caller to fill.
Result<McpServerInfo> parse_server_info(const nlohmann::json& result);

// An HTTP token (RFC 9110 tchar) of at most 64 characters: what an `x-mcp-header` name may be.
bool is_param_header_name(std::string_view name);

// Why the `x-mcp-header` declarations of a tool's input schema are invalid (2026-07-28), or nullopt when
// they are valid or absent. Each top-level property that declares one must name an HTTP token
// (is_param_header_name), have `type` "string", "integer" or "boolean", and no two names may be equal
// ignoring case.
std::optional<std::string> invalid_param_header(const nlohmann::json& input_schema);

// One page of tools/list: its tools (malformed entries are left out and described in `skipped`) and the
// cursor of the next page, if any. With check_param_headers (the 2026-07-28 revision), a tool whose
// `x-mcp-header` declarations are invalid (invalid_param_header) is malformed too.
struct McpToolPage {
  std::vector<McpToolInfo> tools;
  std::optional<std::string> next_cursor;
  std::vector<std::string> skipped;
};
Result<McpToolPage> parse_tool_page(const nlohmann::json& result, bool check_param_headers = false);

// A CallToolResult. `resultType` absent or "complete" is a result; "input_required" (2026-07-28) is refused
// with mcp.bad_response until keel declares the capability that allows it.
Result<McpCallResult> parse_call_result(const nlohmann::json& result);

// The params of notifications/message.
McpLogMessage parse_log_message(const nlohmann::json& params);

}  // namespace keel::mcp
