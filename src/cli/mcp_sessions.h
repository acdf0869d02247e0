// cli/mcp_sessions.h — the MCP session factory the commands use: the real client when the build has it
// (keel_mcp_session_factory, mcp/host/session_factory.h), otherwise one that reports every server as
// unavailable, so configured servers show up as failed with that reason instead of silently missing.
#pragma once

#include "mcp/host/mcp_host.h"

namespace keel::cli {

mcp::McpSessionFactory mcp_session_factory();

}  // namespace keel::cli
