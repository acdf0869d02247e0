// keel mcp-server — the configured workspace's builtin tools served to an MCP client over stdio
// (docs/mcp-server.md): stdout carries the protocol only, the log goes to stderr or --log-file.
//
// The gatekeeper is the one keel's engine would use, opened on the configured store without its lock (a
// reader, like `keel policy list`, so it runs beside a serving engine): its rules, host permissions and
// mode decide each call. Nobody is there to approve a call that asks, so it is refused with its reason
// unless --allow-writes.
//
// With --browser the browser_* tools are served too, on one BrowserRuntime made from [browser] (enabled or
// not in the file): the MCP session is one agent thread ("mcp"), with its own tabs and refs. Each call's
// target (the page's origin, or where a navigation goes) passes the gatekeeper like any other call, and the
// runtime's OriginPolicy (RuntimeOptions::policy, the navigation guard's question) is answered by the same
// gatekeeper: it refuses what the gatekeeper denies.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "browser/browser_runtime.h"
#include "browser/origin_guard.h"
#include "browser/tools/register.h"
#include "cli/browser_setup.h"
#include "cli/commands.h"
#include "cli/engine_host.h"
#include "cli/gatekeeper_origin_policy.h"
#include "cli/signals.h"
#include "keel/clock.h"
#include "keel/ids.h"
#include "keel/tool_registry.h"
#include "mcp/mcp_stdio_server.h"
#include "mcp/tool_bridge.h"
#include "policy/policy_gatekeeper.h"
#include "tools/builtin/builtin_tools.h"
#include "tools/builtin/workspace.h"
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
  // Held by its tools too: it closes the browser when the last of them is gone, before the gatekeeper its
  // navigation guard asks (declared earlier).
  std::shared_ptr<browser::BrowserRuntime> browser_runtime;
  if (options.browser) {
    auto runtime_options = browser_runtime_options(context.config.browser, context.config.data_dir);
    if (!runtime_options) return fail_setup(runtime_options.error());
    auto workspace_handle = builtin::Workspace::open(workspace);
    if (!workspace_handle) return fail_setup(workspace_handle.error());
    runtime_options->workspace = std::move(*workspace_handle);
    // Page-initiated navigations and redirect hops are refused where the gatekeeper denies the origin.
    auto policy = GatekeeperOriginPolicy::create(**gatekeeper);
    if (!policy) return fail_setup(policy.error());
    runtime_options->policy = std::move(*policy);
    browser_runtime = browser::BrowserRuntime::create(std::move(*runtime_options));
    if (auto registered = browser::register_browser_tools(registry, browser_runtime); !registered) {
      return fail_setup(registered.error());
    }
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
      (options.browser ? ", and a browser (the browser_* tools; pages keep their state between calls)" : "") +
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
