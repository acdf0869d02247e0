// mcp/host/server_settings.cc — mcp_server_settings() (server_settings.h).
#include "mcp/host/server_settings.h"

namespace keel::mcp {

std::vector<McpServerSettings> mcp_server_settings(const config::Config& config) {
  std::vector<McpServerSettings> out;
  for (const auto& [name, server] : config.mcp_servers) {
    McpServerSettings s;
    s.name = name;
    s.command = server.command;
    s.args = server.args;
    s.env = server.env;
    s.cwd = server.cwd;
    s.url = server.url;
    s.credential = server.credential.reference();
    s.oauth = server.oauth;
    s.oauth_client_id = server.oauth_client_id;
    s.trusted = server.trusted;
    s.enabled = server.enabled;
    s.start = server.lazy ? McpStart::kLazy : McpStart::kStartup;
    s.connect_timeout = std::chrono::milliseconds(server.connect_timeout_ms);
    s.limits.idle_timeout = std::chrono::milliseconds(server.call_idle_timeout_ms);
    s.limits.max_total = std::chrono::milliseconds(server.call_max_ms);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace keel::mcp
