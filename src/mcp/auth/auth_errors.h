// mcp/auth/auth_errors.h — error codes of keel's OAuth 2.1 client for MCP servers over HTTP
// (docs/mcp-auth.md). Stable; each names one reason an authorization could not go on.
#pragma once

namespace keel::codes {

inline constexpr char kMcpAuthBadUrl[] = "mcp.auth_bad_url";  // a URL that is not absolute http(s)
inline constexpr char kMcpAuthBadChallenge[] =
    "mcp.auth_bad_challenge";  // a WWW-Authenticate header that does not parse
inline constexpr char kMcpAuthBadMetadata[] =
    "mcp.auth_bad_metadata";  // a metadata document that is not JSON or lacks a required member
inline constexpr char kMcpAuthResourceMismatch[] =
    "mcp.auth_resource_mismatch";  // the protected-resource metadata names another resource
inline constexpr char kMcpAuthIssuerMismatch[] =
    "mcp.auth_issuer_mismatch";  // the authorization server's issuer is not the one asked for
inline constexpr char kMcpAuthPkceUnsupported[] =
    "mcp.auth_pkce_unsupported";  // the authorization server does not offer PKCE with S256
inline constexpr char kMcpAuthStateMismatch[] =
    "mcp.auth_state_mismatch";  // the redirect's state (or iss) is not the one this flow sent
inline constexpr char kMcpAuthDenied[] =
    "mcp.auth_denied";  // the authorization server answered with an error
inline constexpr char kMcpAuthTokenFailed[] =
    "mcp.auth_token_failed";  // the token endpoint refused, or answered with something unusable

}  // namespace keel::codes
