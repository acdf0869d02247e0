// mcp/host/session_factory.h — the McpSessionFactory keel uses for real servers: a stdio server is spawned
// (make_stdio_transport), a `url` server is reached over Streamable HTTP (make_http_transport) with the
// bearer token its credential reference names, and the MCP handshake runs over the transport
// (open_mcp_session), bounded by the server's connect timeout. With a logger, what each server logs
// (notifications/message, stderr lines, problems the session survived) goes to it through McpServerLog
// (server_log.h), and a server with the logging capability is asked for the logger's level.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "keel/error.h"
#include "mcp/host/mcp_host.h"

namespace spdlog {
class logger;
}

namespace keel::mcp {

// The bearer token behind a server's credential reference ("id" of a stored credential, "env:NAME"), asked
// before every HTTP request so a rotated credential is used at once. nullopt: the server has none. The token
// must never be logged.
using McpBearerTokens = std::function<Result<std::optional<std::string>>(const std::string& reference)>;

// `tokens` may be null: then a server with a credential fails to connect with mcp.server_unavailable.
// `log` may be null: then nothing the servers log is written anywhere.
McpSessionFactory make_mcp_session_factory(McpBearerTokens tokens,
                                           std::shared_ptr<spdlog::logger> log = nullptr);

}  // namespace keel::mcp
