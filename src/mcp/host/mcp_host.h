// mcp/host/mcp_host.h — McpHost: the configured MCP servers, connected, and their tools in a ToolRegistry.
//
// For each enabled server the host opens a session through the injected factory (the real one spawns the
// server or reaches its URL and runs the MCP handshake), lists its tools, and registers each as an McpTool
// (mcp_tool.h) under its keel name (tool_names.h). A tool that cannot be made (bad schema, name conflict,
// a name another server registered) is skipped with its coded error, recorded in the server's status; the
// others register.
//
// Lifecycle (docs/mcp-client.md, "Tools from MCP servers"):
//   - start = "startup": start() begins connecting. start = "lazy": start() leaves the server idle; it is
//     connected by the first activate(), which the commands call when the first turn is about to begin, so
//     keel starts without spawning a server nobody uses. Its tools are in the registry from when its list
//     arrives (the turn that activated it may start before that and then does not see them).
//   - Each connection attempt runs on a thread of its own and is bounded by the server's connect timeout, so
//     a server that hangs or fails blocks neither the others nor the engine (nor the caller of start()).
//   - A failed attempt, a failed tools/list or a session that ends unregisters the server's tools and
//     schedules a reconnect after an exponential backoff (initial, doubled each failure, capped); a ready
//     session resets it. Time comes from the injected Clock and Scheduler (tests use SimulatedTime).
//   - tools/list_changed lists again and brings the registry in step: removed tools unregistered, changed
//     ones (their descriptor digest differs) unregistered and registered again, unchanged ones left alone.
//     Each list's changes reach the registry as one new generation (ToolRegistry::replace_tools), so no
//     turn binds a half-updated set; a run keeps the generation it bound, so a reconnect or a changed list
//     never changes a running turn's tools.
//   - A tool calls its server's current session; while the server is not ready the call fails with
//     mcp.server_unavailable.
//
// Thread-safe. Callbacks of sessions and timers hold only a weak reference to the host's state; shutdown()
// (also run by the destructor) unregisters every tool, cancels the timers, closes the sessions and joins the
// connection threads (each bounded by its connect timeout).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "keel/clock.h"
#include "keel/error.h"
#include "keel/scheduler.h"
#include "keel/tool_registry.h"
#include "mcp/client/mcp_session.h"
#include "mcp/host/mcp_tool.h"

namespace keel::mcp {

enum class McpStart { kStartup, kLazy };
std::string_view to_string(McpStart start);  // startup | lazy

// One configured server, as the host needs it (from [mcp.servers.NAME]: mcp_server_settings.h).
struct McpServerSettings {
  std::string name;
  // stdio: the command to spawn; exactly one of command and url is set.
  std::string command;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::filesystem::path cwd;
  // Streamable HTTP.
  std::string url;
  std::string credential;       // the credential reference ("" = none; "id" stored, "env:NAME")
  bool oauth = false;           // sign in with OAuth 2.1 on the server's 401 (mcp/host/session_factory.h)
  std::string oauth_client_id;  // with oauth: a pre-registered public client ("" = dynamic registration)
  bool trusted = false;
  bool enabled = true;
  McpStart start = McpStart::kStartup;
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(30);
  McpCallLimits limits;

  // The binding's endpoint: the URL, or the command line (command and arguments, space-separated).
  std::string endpoint() const;
};

// Opens a session to `server` (blocking; the host calls it on a thread of its own).
using McpSessionFactory = std::function<Result<std::shared_ptr<McpSession>>(const McpServerSettings& server,
                                                                            McpSessionEvents events)>;

enum class McpServerState { kDisabled, kIdle, kConnecting, kReady, kFailed, kStopped };
std::string_view to_string(McpServerState state);  // disabled | idle | connecting | ready | failed | stopped

struct McpToolStatus {
  std::string keel_name;
  std::string server_name;  // the server's name for it
  ToolEffects effects = ToolEffects::kWrite;
  ToolRecovery recovery = ToolRecovery::kNeverRetry;
};

struct McpSkippedTool {
  std::string server_name;
  Error error;
};

struct McpServerStatus {
  std::string name;
  McpServerState state = McpServerState::kIdle;
  std::optional<Error> last_error;  // the last failure (kept while it reconnects; cleared once ready)
  int failures = 0;                 // consecutive failures
  std::optional<std::chrono::steady_clock::time_point> retry_at;  // kFailed: the next attempt
  std::vector<McpToolStatus> tools;                               // registered now
  std::vector<McpSkippedTool> skipped;                            // listed but not registered
};

struct McpHostOptions {
  std::chrono::milliseconds backoff_initial = std::chrono::seconds(1);
  std::chrono::milliseconds backoff_max = std::chrono::minutes(5);
};

class McpHost {
 public:
  // `registry`, `clock` and `scheduler` must outlive the host.
  McpHost(std::vector<McpServerSettings> servers, McpSessionFactory factory, ToolRegistry& registry,
          const Clock& clock, Scheduler& scheduler, McpHostOptions options = {});
  ~McpHost();
  McpHost(const McpHost&) = delete;
  McpHost& operator=(const McpHost&) = delete;

  // Begins connecting every enabled start-up server. Returns at once.
  void start();
  // Begins connecting every enabled server that is still idle (the lazy ones). Returns at once.
  void activate();
  // Waits until no server is connecting (or `bound` passed, a hang guard): for `keel mcp list` and tests.
  // True when none is.
  bool wait_settled(std::chrono::milliseconds bound);
  // Waits until `done` holds for the servers' status (checked after every change), or `bound` passed.
  bool wait_until(const std::function<bool(const std::vector<McpServerStatus>&)>& done,
                  std::chrono::milliseconds bound);
  std::vector<McpServerStatus> status() const;
  // Unregisters every tool, stops reconnecting, closes the sessions. Idempotent.
  void shutdown();

 private:
  struct Core;
  std::shared_ptr<Core> core_;
};

}  // namespace keel::mcp
