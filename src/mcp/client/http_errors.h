// mcp/client/http_errors.h — error codes of the MCP client's Streamable HTTP transport (http_transport.h,
// docs/mcp-client.md "Streamable HTTP"). Stable; rows in docs/protocol.md "Error codes".
//
// `retryable` follows the HTTP client's rule (providers/http/http_errors.h): true when the same exchange
// tried again later can succeed without anyone changing configuration.
#pragma once

namespace keel::codes {

inline constexpr char kMcpHttpStatus[] =
    "mcp.http_status";  // the server answered an HTTP error status without a JSON-RPC answer in the body
inline constexpr char kMcpHttpUnauthorized[] =
    "mcp.http_unauthorized";  // 401 or 403: the server wants (other) credentials
inline constexpr char kMcpHttpUnreachable[] =
    "mcp.http_unreachable";  // no exchange with the server: connection refused, DNS, TLS, timeout
inline constexpr char kMcpHttpStreamEnded[] =
    "mcp.http_stream_ended";  // a response stream ended before the answer and could not be resumed
inline constexpr char kMcpHttpBadContentType[] =
    "mcp.http_bad_content_type";  // a 200 answer neither application/json nor text/event-stream
inline constexpr char kMcpHttpBusy[] =
    "mcp.http_busy";  // more requests in flight than the transport allows: the send is refused
inline constexpr char kMcpSessionExpired[] =
    "mcp.session_expired";  // 404 on a request carrying the session id: open a new session (initialize)
inline constexpr char kMcpSseBadEvent[] =
    "mcp.sse_bad_event";  // an SSE event whose data is not a JSON-RPC message: reported and skipped

}  // namespace keel::codes
