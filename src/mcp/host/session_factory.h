// mcp/host/session_factory.h — the McpSessionFactory keel uses for real servers: a stdio server is spawned
// (make_stdio_transport), a `url` server is reached over Streamable HTTP (make_http_transport) with the
// bearer token its credential reference names or, with `oauth`, the OAuth 2.1 grant keel signs in for
// (McpOAuthHooks below), and the MCP handshake runs over the transport
// (open_mcp_session), bounded by the server's connect timeout. With a logger, what each server logs
// (notifications/message, stderr lines, problems the session survived) goes to it through McpServerLog
// (server_log.h), and a server with the logging capability is asked for the logger's level.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "keel/error.h"
#include "mcp/auth/oauth_flow.h"
#include "mcp/host/mcp_host.h"

namespace spdlog {
class logger;
}

namespace keel::mcp {

// The bearer token behind a server's credential reference ("id" of a stored credential, "env:NAME"), asked
// before every HTTP request so a rotated credential is used at once. nullopt: the server has none. The token
// must never be logged.
using McpBearerTokens = std::function<Result<std::optional<std::string>>(const std::string& reference)>;

// How the factory signs in to a server with `oauth` (docs/mcp-auth.md, "Signing in to a configured server").
// Its transport carries make_oauth_http_auth() (mcp/auth/oauth_http_auth.h): the grant load_grant returns is
// used first, a 401 refreshes it or signs in, and every new or refreshed grant goes to save_grant. The
// sign-in's redirect comes back to a loopback listener (mcp/auth/loopback_redirect.h) opened when the server
// connects and kept while its session lives; show_sign_in tells the person the authorization URL, and the
// person has the server's connect timeout to finish signing in.
struct McpOAuthHooks {
  HttpFetch fetch;  // the sign-in's HTTP (never on the transport's HTTP client); null: no sign-in here
  // The grant saved for the server (nullopt: none). Null: none is.
  std::function<Result<std::optional<OAuthGrant>>(const McpServerSettings& server)> load_grant;
  // Every new or refreshed grant. Null: grants last as long as the session.
  std::function<void(const McpServerSettings& server, const OAuthGrant& grant)> save_grant;
  std::function<void(const std::string& server, const std::string& url)> show_sign_in;
  // Tests: an Authorizer that consents without a person, used instead of the loopback listener, with this
  // redirect URI.
  Authorizer authorizer;
  std::string redirect_uri;
};

// `tokens` may be null: then a server with a credential fails to connect with mcp.server_unavailable.
// `log` may be null: then nothing the servers log is written anywhere. Without oauth.fetch, a server with
// `oauth` fails to connect with mcp.server_unavailable (no sign-in is attempted).
McpSessionFactory make_mcp_session_factory(McpBearerTokens tokens,
                                           std::shared_ptr<spdlog::logger> log = nullptr,
                                           McpOAuthHooks oauth = {});

}  // namespace keel::mcp
