// mcp/mcp_errors.h — error codes of keel's MCP server (`keel mcp-server`, docs/mcp-server.md) and of its MCP
// client (src/mcp/client/, docs/mcp-client.md). Stable; the server's travel in a JSON-RPC error's `data.code`
// and in a CallToolResult's `_meta["keel/code"]`.
#pragma once

namespace keel::codes {

inline constexpr char kMcpCallRefused[] = "mcp.call_refused";  // the gatekeeper refused the tool call
inline constexpr char kMcpTooManyCalls[] =
    "mcp.too_many_calls";  // more tool calls in flight than the server runs at once
inline constexpr char kMcpDuplicateId[] =
    "mcp.duplicate_id";  // a request reuses the id of a call that is still in flight

// --- The MCP client: what keel reports about a server it talks to. ---
inline constexpr char kMcpSpawnFailed[] = "mcp.spawn_failed";  // a stdio server could not be started
inline constexpr char kMcpServerExited[] =
    "mcp.server_exited";  // the server process ended (or closed its stdout) while keel talked to it
inline constexpr char kMcpTransportClosed[] =
    "mcp.transport_closed";  // keel closed the session; the call did not complete
inline constexpr char kMcpServerLog[] =
    "mcp.server_log";  // a line the server wrote on stderr (a log, not an error)
inline constexpr char kMcpStrayOutput[] =
    "mcp.stray_output";  // a stdout line that is not a JSON-RPC message: reported and skipped
inline constexpr char kMcpMessageTooLarge[] =
    "mcp.message_too_large";  // a message over the size bound, in either direction: dropped
inline constexpr char kMcpBadResponse[] =
    "mcp.bad_response";  // a message or result that does not have the shape the protocol requires
inline constexpr char kMcpUnexpectedResponse[] =
    "mcp.unexpected_response";  // a response with an id keel never sent, or a second one to a request:
                                // ignored
inline constexpr char kMcpRpcError[] =
    "mcp.rpc_error";  // the server answered a request with a JSON-RPC error
inline constexpr char kMcpCallTimedOut[] = "mcp.call_timed_out";  // a request got no answer (nor progress) in
                                                                  // time; keel sent notifications/cancelled
inline constexpr char kMcpHandshakeTimedOut[] =
    "mcp.handshake_timed_out";  // the server did not finish the version probe and handshake in time
inline constexpr char kMcpVersionUnsupported[] =
    "mcp.version_unsupported";  // the server speaks no protocol revision keel speaks
inline constexpr char kMcpTooManyTools[] =
    "mcp.too_many_tools";  // tools/list returned more tools or pages than allowed

}  // namespace keel::codes
