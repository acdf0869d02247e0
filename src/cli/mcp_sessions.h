// cli/mcp_sessions.h — the MCP session factory the commands use (mcp/host/session_factory.h), with bearer
// tokens of HTTP servers read through the configuration's credential resolver.
#pragma once

#include "config/credential_resolver.h"
#include "mcp/host/mcp_host.h"

namespace spdlog {
class logger;
}

namespace keel::cli {

// `credentials` may be null (a command without the store): a server with a credential then fails to connect
// with mcp.server_unavailable. Otherwise it must outlive every session the factory opens.
// `logger` (may be null): where what the servers log goes (mcp/host/server_log.h).
mcp::McpSessionFactory mcp_session_factory(const config::CredentialResolver* credentials,
                                           std::shared_ptr<spdlog::logger> logger = nullptr);

}  // namespace keel::cli
