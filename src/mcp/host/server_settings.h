// mcp/host/server_settings.h — the configured MCP servers ([mcp.servers.NAME], config/config.h) as the
// McpServerSettings McpHost takes. One mapping, so `keel mcp list` and the commands that run turns agree.
#pragma once

#include <vector>

#include "config/config.h"
#include "mcp/host/mcp_host.h"

namespace keel::mcp {

// Every configured server, in name order, disabled ones included (McpHost shows them as disabled).
std::vector<McpServerSettings> mcp_server_settings(const config::Config& config);

}  // namespace keel::mcp
