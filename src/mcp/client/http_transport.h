// mcp/client/http_transport.h — HttpTransport: McpTransport over MCP's Streamable HTTP (revisions 2025-03-26
// through 2025-11-25, and 2026-07-28), on keel's HTTP client (providers/http) and SSE parser (providers/sse).
//
// Every outbound message is one POST to the endpoint URL with `Accept: application/json, text/event-stream`
// and `Content-Type: application/json`. The answer is one JSON message, or an SSE stream carrying zero or
// more messages (notifications, server requests) and then the response; 202 Accepted (for notifications and
// responses) carries nothing. Headers the transport adds:
//   - Mcp-Session-Id: taken from the answer to `initialize` (only there), sent on every later request;
//   - MCP-Protocol-Version: the revision set_protocol_version() named, or the message's own
//     `params._meta["io.modelcontextprotocol/protocolVersion"]` (2026-07-28 requires both to agree);
//   - for 2026-07-28 and later: Mcp-Method (the message's method) and Mcp-Name (params.name of tools/call and
//     prompts/get, params.uri of resources/read, params.taskId of tasks/*), a value that is not plain
//     printable ASCII sent as `=?base64?<Base64 of its UTF-8>?=`; and on tools/call, Mcp-Param-<Name> for
//     each argument whose input-schema property declares `"x-mcp-header": "<Name>"` (learnt from the
//     tools/list answers that pass through; strings encoded the same way, numbers and booleans as JSON,
//     others skipped);
//   - Authorization: Bearer <token> when a token provider or an McpHttpAuth is configured (asked before every
//     request, so a refreshed token is used at once). Tokens never appear in messages, errors or logs.
//
// With an McpHttpAuth (options.auth), a POST the server refuses with 401 or 403 is not failed at once: on the
// transport's timer thread (never the HTTP client's worker) auth->on_challenge() gets the status and the
// WWW-Authenticate header, and when it renewed the credentials the POST is sent again with the new token,
// once per message; its error, or a second refusal, fails the request as below. close() waits for a renewal
// under way.
//
// open_server_stream() (after the handshake of a revision with sessions) opens the standalone GET stream
// once: its messages (the server's unasked notifications and requests) are delivered like any other; a 405
// ends it quietly; an end reopens it after the stream's `retry` (with Last-Event-ID when it gave event ids),
// at most options.max_resumptions times in a row without a message in between.
//
// What happens when an exchange goes wrong:
//   - 404 on a request that carried a session id: the server forgot the session. The transport ends with
//     on_closed(mcp.session_expired, retryable); whoever owns the session opens a new transport and sends a
//     fresh initialize (the MCP specification's rule: a new session, never the old id again).
//   - an SSE answer that ends (cleanly or not) before the request's response arrived: when the stream gave
//     event ids, the transport resumes it with GET + `Last-Event-ID`, after the stream's last `retry` delay
//     (options.default_retry when it gave none, capped by options.max_retry), at most
//     options.max_resumptions times per request; a resumed stream is dropped once the response arrived.
//   - any other failure of a request's exchange (an HTTP error status whose body is no JSON-RPC answer, a
//     connection that cannot be made, a body over the bound, a stream that cannot be resumed, an unexpected
//     content type) is reported through on_problem with its code and answered locally, so the caller's
//     pending request ends at once instead of waiting for its timeout: on_message receives
//     {"jsonrpc":"2.0","id":<the request's id>,"error":{"code":-32000,"message":"<code>: <why>",
//     "data":{"keel/code":"<code>"}}}. An HTTP error status whose body is a JSON-RPC message (a 400 with a
//     JSON-RPC error, as the 2026 version probe expects) is delivered as it is.
//   - an SSE event whose data is not a JSON object: on_problem(mcp.sse_bad_event), skipped.
//
// Bounds: a JSON answer or one SSE event over options.max_message_bytes ends that exchange
// (mcp.message_too_large); more than options.max_concurrent_requests requests in flight (their resumptions
// included) and send() refuses with mcp.http_busy (retryable). Notifications and responses count too while
// their POST runs.
//
// close() DELETEs the session (when there is one and it has not expired), waiting at most
// options.delete_timeout unless called from inside a handler, then cancels every exchange. No GET stream for
// server-initiated messages is opened outside resumption (the specification makes it optional).
//
// Threading: handlers run on the HTTP client's worker thread, one at a time (McpTransport's contract).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "keel/error.h"
#include "mcp/client/mcp_http_auth.h"
#include "mcp/client/mcp_transport.h"
#include "providers/http/http_client.h"

namespace keel::mcp {

struct HttpTransportOptions {
  std::string url;  // the MCP endpoint, http:// or https://
  // Asked before each request; its token goes in `Authorization: Bearer`. Null: no Authorization header.
  // An error fails the send() with that error.
  std::function<Result<std::string>()> bearer_token;
  // Credentials that can be renewed (mcp_http_auth.h; OAuth: mcp/auth/oauth_http_auth.h). When set it is
  // asked instead of bearer_token, and a POST refused with 401 or 403 is sent again once after
  // auth->on_challenge() renewed them.
  std::shared_ptr<McpHttpAuth> auth;
  size_t max_message_bytes = size_t{16} << 20;  // a JSON answer, or one SSE event
  size_t max_concurrent_requests = 32;
  int max_resumptions = 3;  // GET + Last-Event-ID attempts per request
  std::chrono::milliseconds default_retry{1000};
  std::chrono::milliseconds max_retry{30'000};
  std::chrono::milliseconds connect_timeout{10'000};
  // No byte for this long ends an exchange (an SSE answer may be quiet while a tool runs: keep it long).
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};
  std::chrono::milliseconds delete_timeout{2000};
  // The HTTP client to use; null: a CurlHttpClient of the transport's own (proxies from the environment).
  std::shared_ptr<providers::HttpClient> http_client;
};

// Fails with invalid_argument when the URL is not http(s).
Result<std::unique_ptr<McpTransport>> make_http_transport(HttpTransportOptions options);

// Mcp-Name's value for one message (the 2026-07-28 rules), or "" when the method has none. Exposed for tests.
std::string mcp_name_header(const std::string& method, const nlohmann::json& params);
// A header value as it may travel: itself when it is printable ASCII without leading or trailing spaces,
// `=?base64?...?=` otherwise. Exposed for tests.
std::string encode_header_value(const std::string& value);

}  // namespace keel::mcp
