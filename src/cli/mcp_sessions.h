// cli/mcp_sessions.h — the MCP session factory the commands use (mcp/host/session_factory.h), with bearer
// tokens of HTTP servers read through the configuration's credential resolver, and OAuth sign-ins of servers
// with `oauth` (docs/mcp-auth.md): the authorization URL printed on stderr, grants kept in the credential
// vault.
#pragma once

#include <memory>

#include "config/credential_resolver.h"
#include "mcp/auth/oauth_grant_vault.h"
#include "mcp/host/mcp_host.h"

namespace spdlog {
class logger;
}

namespace keel::cli {

// `credentials` may be null (a command without the store): a server with a credential then fails to connect
// with mcp.server_unavailable. Otherwise it must outlive every session the factory opens.
// `logger` (may be null): where what the servers log goes (mcp/host/server_log.h).
// `grants` (may be null: a command without the store or the vault): where the OAuth grants of servers with
// `oauth` are kept; it must outlive every session. Null, such a server is not signed in to and fails to
// connect with mcp.server_unavailable. With it, a sign-in prints "MCP server NAME asks you to sign in: URL"
// on stderr and waits for the person's browser on a loopback port.
mcp::McpSessionFactory mcp_session_factory(const config::CredentialResolver* credentials,
                                           std::shared_ptr<spdlog::logger> logger = nullptr,
                                           mcp::OAuthGrantVault* grants = nullptr);

}  // namespace keel::cli
