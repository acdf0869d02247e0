// cli/commands.h — the keel subcommands, each a function from its parsed options to an exit status
// (docs/cli.md lists the commands, their options and exit statuses). main() parses the command line, loads
// the configuration and the logger, and calls one of these.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/turn_follower.h"
#include "config/config.h"

namespace spdlog {
class logger;
}

namespace keel::cli {

// Exit statuses shared by every command; a turn's own end maps through exit_status_for().
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitSetup = 2;  // bad arguments, configuration, store, model binding
// keel serve: the store refuses writes for good (a failed sync, e.g. a full disk); a supervisor should
// restart keel, whose recovery continues from what was synced. EX_TEMPFAIL of sysexits.h.
inline constexpr int kExitStoreFailed = 75;

// What every command gets from main().
struct CommandContext {
  config::Config config;
  std::shared_ptr<spdlog::logger> logger;
  std::ostream* out = nullptr;  // the command's output (stdout)
  std::ostream* err = nullptr;  // messages for the person (stderr)
  bool out_is_terminal = false;
  bool in_is_terminal = false;
};

struct ServeOptions {
  bool stdio = false;
  std::string listen;  // "HOST:PORT" for WebSocket
  std::optional<std::filesystem::path>
      token_file;                            // read the token from it (created with a new one if missing)
  bool no_token = false;                     // accept clients without a token (explicit opt-in)
  bool allow_remote = false;                 // listen on a non-loopback address (explicit opt-in)
  std::vector<std::string> allowed_origins;  // browser origins allowed besides keel's own
  std::vector<std::string> allowed_hosts;    // Host names allowed besides loopback ones
  std::optional<std::filesystem::path> port_file;  // write the bound port here once listening
  std::string model;
  std::optional<std::filesystem::path> workspace;
  // The built web app to serve (docs/web.md); unset: found beside the executable (cli/web_ui.h).
  std::optional<std::filesystem::path> ui_dir;
  bool open_web_page = false;  // keel ui: open the URL in a browser when a display exists
};
int serve_command(const CommandContext& context, const ServeOptions& options);

// keel ui: keel serve --listen 127.0.0.1:0 that opens its web interface (unless --no-open).
struct UiOptions {
  std::optional<std::filesystem::path> token_file;
  std::optional<std::filesystem::path> port_file;
  std::optional<std::filesystem::path> ui_dir;
  std::string model;
  std::optional<std::filesystem::path> workspace;
  bool no_open = false;
};
int ui_command(const CommandContext& context, const UiOptions& options);

struct RunOptions {
  std::string task;
  std::string thread_id;  // "" = a new thread
  std::string model;
  std::optional<std::filesystem::path> workspace;
  ApprovalPolicy approval_policy = ApprovalPolicy::kAsk;
  bool json = false;
  std::optional<int64_t> budget_tokens;
  bool show_reasoning = false;
};
int run_command(const CommandContext& context, const RunOptions& options);

struct ResumeOptions {
  std::string thread_id;
  std::string model;
  std::optional<std::filesystem::path> workspace;
  ApprovalPolicy approval_policy = ApprovalPolicy::kAsk;
  bool json = false;
};
int resume_command(const CommandContext& context, const ResumeOptions& options);

struct ThreadsOptions {
  std::string action;  // list | show | fork | select | delete
  std::string thread_id;
  std::string node_id;  // show: none; fork: --at; select: the leaf
  std::string title;
  bool json = false;
  bool all_nodes = false;  // show: every branch's nodes, not only the selected path
};
int threads_command(const CommandContext& context, const ThreadsOptions& options);

struct PolicyOptions {
  std::string action;  // list | revoke
  std::string rule_id;
  bool json = false;
};
// list reads the store beside a running engine; revoke takes the store lock (a client of a running engine
// sends policy.removeRule instead).
int policy_command(const CommandContext& context, const PolicyOptions& options);

// keel mcp list: the configured MCP servers, their state and tools (docs/cli.md).
struct McpListOptions {
  bool json = false;
};
int mcp_list_command(const CommandContext& context, const McpListOptions& options);

struct SkillsOptions {
  bool json = false;
};
// keel skills list: the configured skills and the problems of those that could not be loaded; kExitFailed
// when a skill could not be loaded (so a check in CI notices), kExitOk otherwise.
int skills_command(const CommandContext& context, const SkillsOptions& options);

struct ChatOptions {
  std::string thread_id;  // "" = a new thread
  std::string model;
  std::optional<std::filesystem::path> workspace;  // nullopt = the working directory
};
// Needs a terminal on stdin and stdout (kExitSetup otherwise); kExitOk when the person leaves.
int chat_command(const CommandContext& context, const ChatOptions& options);

struct McpServerCommandOptions {
  std::optional<std::filesystem::path> workspace;  // nullopt = the working directory
  bool allow_writes = false;                       // run calls the policy would ask a person about
  bool browser = false;  // serve the browser_* tools too ([browser] config; enabled forced on)
};
// Serves the workspace's builtin tools to an MCP client on stdin/stdout until stdin ends (kExitOk);
// kExitSetup when the store, the policy or the workspace cannot be opened.
int mcp_server_command(const CommandContext& context, const McpServerCommandOptions& options);

}  // namespace keel::cli
