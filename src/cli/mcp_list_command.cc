// cli/mcp_list_command.cc — `keel mcp list`: the configured MCP servers, connected once to show their state
// and tools (docs/cli.md, "keel mcp list"; docs/mcp-client.md).
//
// It starts every enabled server (lazy ones too), waits until none is still connecting (each bounded by its
// connect timeout), prints, and shuts them down. It registers their tools in a registry of its own, so what
// it shows is exactly what a run would get. Server-supplied text (tool names, error messages) is made
// terminal-safe before it is printed.
#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/commands.h"
#include "cli/mcp_sessions.h"
#include "keel/tool_registry.h"
#include "mcp/host/mcp_host.h"
#include "mcp/host/server_settings.h"
#include "util/terminal_text.h"
#include "util/thread_scheduler.h"

namespace keel::cli {

namespace {

nlohmann::json error_json(const Error& error) {
  return {{"code", error.code()}, {"message", error.message()}};
}

nlohmann::json status_json(const mcp::McpServerStatus& server) {
  nlohmann::json tools = nlohmann::json::array();
  for (const mcp::McpToolStatus& tool : server.tools) {
    tools.push_back({{"name", tool.keel_name},
                     {"serverName", tool.server_name},
                     {"effects", to_string(tool.effects)},
                     {"recovery", to_string(tool.recovery)}});
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const mcp::McpSkippedTool& tool : server.skipped) {
    skipped.push_back({{"serverName", tool.server_name}, {"error", error_json(tool.error)}});
  }
  nlohmann::json out = {{"name", server.name},
                        {"state", to_string(server.state)},
                        {"toolCount", server.tools.size()},
                        {"tools", std::move(tools)},
                        {"skipped", std::move(skipped)}};
  out["lastError"] = server.last_error ? error_json(*server.last_error) : nlohmann::json(nullptr);
  return terminal_safe_json(out);
}

}  // namespace

int mcp_list_command(const CommandContext& context, const McpListOptions& options) {
  std::ostream& out = *context.out;
  const std::vector<mcp::McpServerSettings> settings = mcp::mcp_server_settings(context.config);
  if (settings.empty()) {
    if (options.json) {
      out << nlohmann::json{{"servers", nlohmann::json::array()}}.dump(2) << "\n";
    } else {
      out << "No MCP servers are configured ([mcp.servers.NAME] in the configuration, "
             "docs/configuration.md).\n";
    }
    return kExitOk;
  }
  std::chrono::milliseconds bound{0};
  for (const auto& s : settings) bound = std::max(bound, s.connect_timeout);

  SystemClock clock;
  ThreadScheduler scheduler;
  ToolRegistry registry;
  std::vector<mcp::McpServerStatus> servers;
  {
    // No store and no resolver here: a server with a credential shows as unavailable (docs/mcp-client.md).
    mcp::McpHost host(settings, mcp_session_factory(nullptr), registry, clock, scheduler);
    host.start();
    host.activate();
    // The host's own connect timers end every attempt within `bound`; the margin only covers their delivery.
    (void)host.wait_settled(bound + std::chrono::seconds(5));
    servers = host.status();
  }

  if (options.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& server : servers) list.push_back(status_json(server));
    out << nlohmann::json{{"servers", std::move(list)}}.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& server : servers) {
    out << terminal_safe(server.name, LineBreaks::kShow) << "  " << to_string(server.state) << "  "
        << server.tools.size() << (server.tools.size() == 1 ? " tool" : " tools") << "\n";
    if (server.last_error) {
      out << "  last error: " << terminal_safe(server.last_error->to_string(), LineBreaks::kShow) << "\n";
    }
    for (const auto& tool : server.tools) {
      out << "  " << tool.keel_name << "  (" << terminal_safe(tool.server_name, LineBreaks::kShow) << ")  "
          << to_string(tool.effects) << ", " << to_string(tool.recovery) << "\n";
    }
    for (const auto& tool : server.skipped) {
      out << "  skipped " << terminal_safe(tool.server_name, LineBreaks::kShow) << ": "
          << terminal_safe(tool.error.to_string(), LineBreaks::kShow) << "\n";
    }
  }
  return kExitOk;
}

}  // namespace keel::cli
