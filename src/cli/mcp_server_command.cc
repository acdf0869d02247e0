// keel mcp-server — the configured workspace's builtin tools served to an MCP client over stdio
// (docs/mcp-server.md): stdout carries the protocol only, the log goes to stderr or --log-file.
//
// The gatekeeper is the one keel's engine would use, opened on the configured store without its lock (a
// reader, like `keel policy list`, so it runs beside a serving engine): its rules, host permissions and
// mode decide each call. Nobody is there to approve a call that asks, so it is refused with its reason
// unless --allow-writes.
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/engine_host.h"
#include "cli/signals.h"
#include "keel/clock.h"
#include "keel/ids.h"
#include "keel/tool_registry.h"
#include "mcp/mcp_stdio_server.h"
#include "mcp/tool_bridge.h"
#include "policy/policy_gatekeeper.h"
#include "tools/builtin/builtin_tools.h"
#include "util/thread_scheduler.h"

namespace keel::cli {

int mcp_server_command(const CommandContext& context, const McpServerCommandOptions& options) {
  auto fail_setup = [&](const Error& error) {
    *context.err << "keel mcp-server: " << error.to_string() << "\n";
    return kExitSetup;
  };
  const std::filesystem::path workspace =
      options.workspace ? *options.workspace : std::filesystem::current_path();
  auto store = open_store(context.config, /*exclusive=*/false);
  if (!store) return fail_setup(store.error());
  SystemClock clock;
  UuidV7Source ids{clock};
  PolicySession session{.id = ids.next_id(), .workspace = workspace_key(workspace)};
  auto gatekeeper =
      PolicyGatekeeper::open(*store->store, clock, ids, context.config.policy_mode, std::move(session));
  if (!gatekeeper) return fail_setup(gatekeeper.error());

  ThreadScheduler scheduler;
  ToolRegistry registry;
  builtin::BuiltinToolsOptions tool_options;
  tool_options.workspace_root = workspace;
  tool_options.scheduler = &scheduler;
  // ask_user and set_timer wait durably inside the engine; an MCP client has no engine to hold them.
  tool_options.interactions = false;
  if (auto registered = builtin::register_builtin_tools(registry, tool_options); !registered) {
    return fail_setup(registered.error());
  }
  mcp::ToolBridgeOptions bridge_options;
  bridge_options.allow_writes = options.allow_writes;
  const mcp::ToolBridge bridge(registry.snapshot(), **gatekeeper, bridge_options);

  // Nothing is left half done by leaving at once: each tool call is its own, and the store is only read.
  const SignalWatcher signals([logger = context.logger](int signal_number) {
    logger->info("signal {}: stopping", signal_number);
    logger->flush();
    std::_Exit(128 + signal_number);
  });

  mcp::McpServerOptions server_options;
  server_options.instructions =
      "keel's tools on the workspace " + workspace_key(workspace) +
      ". Writes run only where keel's policy allows them" +
      (options.allow_writes ? " (calls that would ask a person run: --allow-writes)."
                            : "; others are refused.");
  server_options.log = [logger = context.logger](const std::string& line) { logger->info("{}", line); };
  mcp::McpStdioServer server(bridge, std::move(server_options));
  context.logger->info("mcp-server: serving {} tools on stdio", registry.snapshot()->tools().size());
  server.run(std::cin, *context.out);
  context.logger->info("mcp-server: input ended");
  return kExitOk;
}

}  // namespace keel::cli
