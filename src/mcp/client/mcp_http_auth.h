// mcp/client/mcp_http_auth.h — McpHttpAuth: what the Streamable HTTP transport asks about credentials, kept
// apart from how they are obtained (OAuth 2.1 lives in mcp/auth/oauth_http_auth.h; a fixed token is one too).
//
// The transport asks token() before each request and sends `Authorization: Bearer <token>` when it is not
// empty. When the server answers a POST with 401, or with 403 whose challenge says insufficient_scope, the
// transport calls on_challenge() once for that request, off the HTTP client's worker thread (it may block:
// an OAuth sign-in or refresh runs there), and on success sends the request again with token(); a second
// 401/403 for the same request fails it. Tokens never appear in errors or logs.
//
// Implementations are thread-safe: several requests may be challenged at once.
#pragma once

#include <string>

#include "keel/error.h"

namespace keel::mcp {

class McpHttpAuth {
 public:
  virtual ~McpHttpAuth() = default;

  // The token for the next request; "" for none. Errors fail the request with that error.
  virtual Result<std::string> token() = 0;

  // The server refused a request that carried `used_token` ("" for none) with `status` (401 or 403) and
  // this WWW-Authenticate header ("" when it sent none). Success: token() now holds a token worth one more
  // try. Errors: why not (the caller fails the request with it).
  virtual Result<void> on_challenge(int status, const std::string& www_authenticate,
                                    const std::string& used_token) = 0;
};

}  // namespace keel::mcp
