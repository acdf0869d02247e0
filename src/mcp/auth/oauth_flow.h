// mcp/auth/oauth_flow.h — signing in to an MCP server over HTTP: discovery, registration, the person's
// consent, the code exchange, and refreshing the token later (MCP "Authorization").
//
// sign_in() runs the whole authorization-code flow after a server answered 401 (its challenge, when it
// sent one, guides discovery and the scope):
//   1. fetch the protected-resource metadata from the candidate URLs in order (oauth_discovery.h), and
//      check that it is for this server;
//   2. for its first authorization server, fetch the authorization-server metadata from the candidate
//      URLs in order, and check issuer and PKCE;
//   3. use the pre-registered client when the options hold one, else register dynamically when the server
//      offers it (RFC 7591), else fail (mcp.auth_token_failed: keel has no client to sign in as);
//   4. hand the authorization URL to the Authorizer (the person's browser and keel's loopback listener;
//      a test or the conformance client follows the redirect itself) and read the redirect it returns;
//   5. exchange the code (PKCE verifier, resource) for tokens.
// The `resource` parameter of both requests is the identifier exactly as the protected-resource metadata
// publishes it (the server itself or a parent path on its origin, checked in step 1).
// refresh() exchanges a grant's refresh token for new tokens, keeping the old refresh token when the server
// does not rotate it.
//
// HTTP goes through the injected HttpFetch (blocking; the real one wraps keel's HTTP client), so the flow is
// tested without sockets. A fetch failure, a non-2xx metadata answer or a body that is not JSON moves on to
// the next candidate URL; when none is left the last problem is returned.
//
// Blocking; call it from a thread that may wait (the MCP host's connect thread). Thread-compatible.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "keel/error.h"
#include "mcp/auth/oauth_discovery.h"
#include "mcp/auth/oauth_requests.h"
#include "mcp/auth/www_authenticate.h"

namespace keel::mcp {

struct HttpCall {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct HttpReply {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// One HTTP exchange, redirects not followed. Errors: whatever the transport reports (connect failed, ...).
using HttpFetch = std::function<Result<HttpReply>(const HttpCall& call)>;

// Shows the person `authorization_url` and returns the URL the browser was redirected to (on
// `redirect_uri`). Errors: mcp.auth_denied when the person gave up, or a transport error.
using Authorizer =
    std::function<Result<std::string>(const std::string& authorization_url, const std::string& redirect_uri)>;

struct SignInOptions {
  std::string client_name = "keel";
  std::string redirect_uri;                  // keel's loopback listener, "http://127.0.0.1:PORT/callback"
  std::optional<OAuthClient> preregistered;  // a client id (and secret) the person configured
  std::string state;                         // random; the Authorizer's redirect must carry it back
  std::array<uint8_t, 32> pkce_entropy{};    // random; the verifier is made from it
};

// What a sign-in yields, and what refresh() needs later. Holds secrets: never log it.
struct OAuthGrant {
  std::string resource;  // the `resource` identifier as the protected-resource metadata publishes it
  AuthorizationServerMetadata server;
  OAuthClient client;
  OAuthTokens tokens;
};

// Errors: every code of oauth_discovery.h and oauth_requests.h, and the fetch's or authorizer's errors.
Result<OAuthGrant> sign_in(const std::string& server_url, const std::optional<BearerChallenge>& challenge,
                           const SignInOptions& options, const HttpFetch& fetch,
                           const Authorizer& authorizer);

// Errors: mcp.auth_token_failed (no refresh token, or the server refused it), the fetch's errors.
Result<OAuthGrant> refresh(OAuthGrant grant, const HttpFetch& fetch);

}  // namespace keel::mcp
