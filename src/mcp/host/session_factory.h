// mcp/host/session_factory.h — the McpSessionFactory keel uses for real servers: a stdio server is spawned
// (make_stdio_transport) and the MCP handshake run over it (open_mcp_session), bounded by the server's
// connect timeout. It needs the client library (keel_mcp_client); the CLI uses it when that library is
// built (KEEL_MCP_CLIENT), and unavailable_session_factory() otherwise.
#pragma once

#include "mcp/host/mcp_host.h"

namespace keel::mcp {

McpSessionFactory make_mcp_session_factory();

// Refuses every server with mcp.server_unavailable ("this build has no MCP client"): what keel uses while
// the client library is not part of the build.
McpSessionFactory unavailable_session_factory();

}  // namespace keel::mcp
