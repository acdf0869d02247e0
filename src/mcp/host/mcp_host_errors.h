// mcp/host/mcp_host_errors.h — error codes of keel's MCP host: turning a connected server's tools into keel
// tools (docs/mcp-client.md, "Tools from MCP servers"). Stable; a tool that cannot be registered is reported
// with one of them (for that tool only), a call's failure reaches the model with one of them.
#pragma once

namespace keel::codes {

// A tool's schema has a $ref that is not local to the schema ("https://...", "other.json#/x"); keel never
// fetches one, so the tool is not registered.
inline constexpr char kMcpSchemaRemoteRef[] = "mcp.schema_remote_ref";
// A tool's schema cannot be used: not an object, a $ref that does not resolve or refers to itself, nesting
// or size over keel's bounds, a keyword keel cannot validate safely; the tool is not registered.
inline constexpr char kMcpSchemaUnusable[] = "mcp.schema_unusable";
// A tool's name is empty or was listed twice, or two tools would get the same keel name; not registered.
inline constexpr char kMcpToolNameConflict[] = "mcp.tool_name_conflict";
// A tool result is larger than keel accepts from a server.
inline constexpr char kMcpResultTooLarge[] = "mcp.result_too_large";
// A tool result keel cannot read (its content is not a list).
inline constexpr char kMcpBadToolResult[] = "mcp.bad_tool_result";
// A result's structuredContent does not match the tool's outputSchema.
inline constexpr char kMcpOutputMismatch[] = "mcp.output_schema_mismatch";
// The server answered the call with isError: the tool failed; its text is in the message.
inline constexpr char kMcpToolError[] = "mcp.tool_error";
// The tool's server is not connected (it failed, is reconnecting, or was shut down).
inline constexpr char kMcpServerUnavailable[] = "mcp.server_unavailable";
// Connecting to a server took longer than its connect timeout.
inline constexpr char kMcpConnectTimedOut[] = "mcp.connect_timed_out";

}  // namespace keel::codes
