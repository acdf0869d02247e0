// mcp/auth/oauth_http_auth.h — the OAuth 2.1 McpHttpAuth: what the Streamable HTTP transport uses to sign in
// to an MCP server that answers 401, to step up its scopes on 403 insufficient_scope, and to refresh tokens.
//
// token() is the grant's access token ("" before the first sign-in, so the first request goes without one
// and the server's 401 starts the flow). When the token's expires_in has passed (30 s early) and a refresh
// token is on hand, token() refreshes first; a refresh that fails keeps the old token (the server's 401
// then signs in again).
//
// on_challenge(status, WWW-Authenticate, used token):
//   - another request renewed the token since `used` was sent: nothing to do, the caller retries;
//   - 401 with a refresh token on hand: refresh; when that fails, sign in;
//   - 401 otherwise: sign in (oauth_flow.h sign_in(): discovery from the challenge, PKCE S256, `resource`,
//     the pre-registered client or dynamic registration) with the challenge's scope;
//   - 403 whose challenge says error="insufficient_scope": sign in again (step-up) asking for the union of
//     the scopes granted or asked for so far and the challenge's scope;
//   - 403 otherwise: mcp.auth_denied.
// Each sign-in uses a fresh random state and PKCE verifier. on_grant (when set) gets every new grant, for
// the person's credential store. Challenges are handled one at a time. Tokens are never logged or put in
// errors.
//
// Blocking (the fetch and the authorizer block); the transport calls it off the HTTP client's worker.
// Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "mcp/auth/oauth_flow.h"
#include "mcp/client/mcp_http_auth.h"

namespace keel::mcp {

struct OAuthHttpAuthOptions {
  std::string server_url;  // the MCP endpoint
  std::string client_name = "keel";
  std::string redirect_uri;                  // where the Authorizer's redirect goes
  std::optional<OAuthClient> preregistered;  // a client the person configured; else dynamic registration
  HttpFetch fetch;                           // must not run on the transport's HTTP client's worker
  Authorizer authorizer;
  std::optional<OAuthGrant> grant;                  // from an earlier sign-in (reused until refused)
  std::function<void(const OAuthGrant&)> on_grant;  // every new grant (sign-in or refresh)
  std::function<std::chrono::steady_clock::time_point()> now;  // null: steady_clock::now
};

std::shared_ptr<McpHttpAuth> make_oauth_http_auth(OAuthHttpAuthOptions options);

// The scopes of `a` then those of `b` not in `a`, space-separated (RFC 6749 scope strings). Exposed for
// tests.
std::string scope_union(const std::string& a, const std::string& b);

}  // namespace keel::mcp
