// mcp/auth/oauth_requests.h — the messages of OAuth 2.1's authorization-code flow with PKCE, built and read
// as values (RFC 6749, OAuth 2.1, RFC 7636, RFC 7591, RFC 8707, RFC 9207), so the flow (oauth_flow.h) only
// moves them over HTTP.
//
//   - build_authorization_url(): response_type=code, client_id, redirect_uri, code_challenge (S256),
//     state, the `resource` (the MCP server's canonical URI; MCP requires it in both the authorization and
//     the token request) and the scope when there is one;
//   - read_authorization_response(): the redirect keel's loopback listener received: an `error` is
//     mcp.auth_denied; a `state` other than the one sent is mcp.auth_state_mismatch (a forged redirect);
//     an `iss` other than the server's issuer, or none when the server promised one (RFC 9207), is
//     mcp.auth_state_mismatch too (a mix-up attack);
//   - token_request(): the authorization_code or refresh_token grant, with the client authenticated as the
//     registration says (client_secret_basic, client_secret_post or none) and the resource;
//   - read_token_response(): a Bearer access token, its expiry, refresh token and scope; an OAuth error
//     response is mcp.auth_token_failed naming `error` (never a token);
//   - registration_request() / read_registration_response(): dynamic client registration (RFC 7591) as a
//     public client with the loopback redirect URI.
//
// Nothing here logs; messages never contain a token, a code, a verifier or a secret. Pure; thread-safe.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"
#include "mcp/auth/oauth_discovery.h"
#include "mcp/auth/oauth_url.h"

namespace keel::mcp {

struct OAuthClient {
  std::string client_id;
  std::string client_secret;  // "" for a public client
  // "none", "client_secret_basic" or "client_secret_post".
  std::string token_endpoint_auth_method = "none";
};

struct AuthorizationParams {
  std::string redirect_uri;
  std::string resource;  // the canonical server URI
  std::optional<std::string> scope;
  std::string code_challenge;
  std::string state;
};

// Errors: mcp.auth_bad_url.
Result<std::string> build_authorization_url(const AuthorizationServerMetadata& server,
                                            const OAuthClient& client, const AuthorizationParams& params);

// The authorization code in `redirect_url`. Errors: mcp.auth_bad_url, mcp.auth_denied,
// mcp.auth_state_mismatch, mcp.auth_token_failed (no code).
Result<std::string> read_authorization_response(std::string_view redirect_url,
                                                std::string_view expected_state,
                                                const AuthorizationServerMetadata& server);

struct FormRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Type, Accept, Authorization
  std::string body;
};

struct AuthorizationCodeGrant {
  std::string code;
  std::string code_verifier;
  std::string redirect_uri;
};
struct RefreshGrant {
  std::string refresh_token;
  std::optional<std::string> scope;
};

FormRequest token_request(const AuthorizationServerMetadata& server, const OAuthClient& client,
                          std::string_view resource, const AuthorizationCodeGrant& grant);
FormRequest token_request(const AuthorizationServerMetadata& server, const OAuthClient& client,
                          std::string_view resource, const RefreshGrant& grant);

struct OAuthTokens {
  std::string access_token;
  std::string refresh_token;  // "" when none was issued
  std::string scope;          // "" when the response named none
  std::optional<std::chrono::seconds> expires_in;
};

// Errors: mcp.auth_token_failed (an error status or body, not JSON, no access_token, a token type other
// than Bearer).
Result<OAuthTokens> read_token_response(int status, std::string_view body);

// The RFC 7591 request body (JSON) for a public client of `client_name` with `redirect_uri`.
nlohmann::json registration_request(std::string_view client_name, std::string_view redirect_uri,
                                    const std::optional<std::string>& scope);
// Errors: mcp.auth_token_failed (refused, or no client_id).
Result<OAuthClient> read_registration_response(int status, std::string_view body);

}  // namespace keel::mcp
