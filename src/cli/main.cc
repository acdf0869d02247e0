// keel — the command-line entry point: parses the command line, loads the configuration (docs/
// configuration.md) and the logger, and runs one subcommand (cli/commands.h; docs/cli.md).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "cli/demo.h"
#include "cli/logging.h"
#include "cli/signals.h"
#include "config/config_loader.h"
#include "config/environment.h"
#include "util/terminal_text.h"

namespace {

using keel::cli::ApprovalPolicy;

// keel writes only plain text to stderr (errors, prompts, notes, never colours), and many of those lines
// quote what did not come from keel: an error's message, a file name, a model's question. While this lives,
// std::cerr passes through a filter that shows their control sequences instead of sending them to the
// terminal (util/terminal_text.h). It puts the old buffer back before the filter goes.
class SafeStderr {
 public:
  SafeStderr() : filter_(std::cerr.rdbuf()) { previous_ = std::cerr.rdbuf(&filter_); }
  ~SafeStderr() { std::cerr.rdbuf(previous_); }
  SafeStderr(const SafeStderr&) = delete;
  SafeStderr& operator=(const SafeStderr&) = delete;

 private:
  keel::TerminalSafeStreambuf filter_;
  std::streambuf* previous_ = nullptr;
};

// CLI11 checks the value against this list before the command runs.
const std::map<std::string, ApprovalPolicy> kApprovalPolicies = {{"ask", ApprovalPolicy::kAsk},
                                                                 {"accept", ApprovalPolicy::kAccept},
                                                                 {"decline", ApprovalPolicy::kDecline}};

constexpr const char* kBrowserFlagHelp =
    "Offer the browser tools (browser.enabled=true; Chromium starts with the first browser call)";

}  // namespace

int main(int argc, char** argv) {
  // Before any thread exists, so that signals reach only the watchers (cli/signals.h).
  keel::cli::block_termination_signals();

  CLI::App app{"keel — a durable, steerable LLM agent engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "keel 0.1.0");

  std::vector<std::string> overrides;
  std::string config_file;
  std::string log_level;
  std::string log_file;
  bool log_json = false;
  // Global options may also follow the subcommand (`keel threads show ID --set data_dir=...`).
  app.fallthrough();
  app.add_option("--set", overrides, "Override a configuration value: key.path=value (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--config", config_file,
                 "Read this configuration file in place of the project's .keel/config.toml")
      ->check(CLI::ExistingFile);
  app.add_option("--log-level", log_level,
                 "trace | debug | info | warn | error | off (default: the config's log.level)");
  app.add_option("--log-file", log_file, "Append the log to this file instead of stderr");
  app.add_flag("--log-json", log_json, "Log JSON lines");

  // serve
  keel::cli::ServeOptions serve;
  std::string serve_workspace;
  CLI::App* serve_cmd =
      app.add_subcommand("serve", "Serve the engine over JSON-RPC 2.0 (stdio or WebSocket)");
  serve_cmd->add_flag("--stdio", serve.stdio, "One client on stdin/stdout (logs go to stderr or --log-file)");
  serve_cmd->add_option("--listen", serve.listen, "WebSocket on HOST:PORT (port 0 picks one)");
  serve_cmd->add_option("--token-file", serve.token_file,
                        "Clients' token: read from this file, or written there if missing");
  serve_cmd->add_flag("--no-token", serve.no_token, "Accept WebSocket clients without a token");
  serve_cmd->add_flag("--allow-remote", serve.allow_remote,
                      "Listen on a non-loopback address (plain ws:// shows the token to the network)");
  serve_cmd->add_option(
      "--allow-origin", serve.allowed_origins,
      "A web page origin (scheme://host[:port]) that may connect besides keel's own; repeatable");
  serve_cmd->add_option(
      "--allow-host", serve.allowed_hosts,
      "A Host name clients may use besides loopback ones and the listen address; repeatable");
  serve_cmd->add_option("--port-file", serve.port_file, "Write the bound port to this file");
  serve_cmd->add_option("--model", serve.model, "A model of the configuration (default: default_model)");
  serve_cmd->add_option("--workspace", serve_workspace, "The file tools' folder (default: none)");
  serve_cmd->add_option("--ui-dir", serve.ui_dir,
                        "The built web app to serve (default: found beside the executable)");
  bool serve_browser = false;
  serve_cmd->add_flag("--browser", serve_browser, kBrowserFlagHelp);

  // ui
  keel::cli::UiOptions ui;
  std::string ui_workspace;
  CLI::App* ui_cmd = app.add_subcommand(
      "ui", "The web interface: serve on a free loopback port and open the page (keel serve --listen)");
  ui_cmd->add_option("--token-file", ui.token_file,
                     "The server token: read from this file, or written there if missing");
  ui_cmd->add_option("--port-file", ui.port_file, "Write the bound port to this file");
  ui_cmd->add_option("--ui-dir", ui.ui_dir,
                     "The built web app to serve (default: found beside the executable)");
  ui_cmd->add_option("--model", ui.model, "A model of the configuration (default: default_model)");
  ui_cmd->add_option("--workspace", ui_workspace, "The file tools' folder (default: none)");
  ui_cmd->add_flag("--no-open", ui.no_open, "Print the URL only; do not open a browser");
  bool ui_browser = false;
  ui_cmd->add_flag("--browser", ui_browser, kBrowserFlagHelp);

  // run
  keel::cli::RunOptions run;
  std::string run_workspace;
  int64_t run_budget = 0;
  CLI::App* run_cmd =
      app.add_subcommand("run", "Run one task and stream it; the exit status says how the turn ended");
  run_cmd->add_option("task", run.task, "What to do")->required();
  run_cmd->add_option("--thread", run.thread_id, "Continue this thread instead of starting one");
  run_cmd->add_option("--model", run.model, "A model of the configuration (default: default_model)");
  run_cmd->add_option("--workspace", run_workspace,
                      "The file tools' folder (default: the working directory)");
  run_cmd->add_option("--approval-policy", run.approval_policy, "ask (on the terminal) | accept | decline")
      ->transform(CLI::CheckedTransformer(kApprovalPolicies));
  run_cmd->add_flag("--json", run.json, "Print the events as JSON lines");
  run_cmd->add_option("--budget", run_budget, "Token budget for the turn");
  run_cmd->add_flag("--show-reasoning", run.show_reasoning, "Show the model's reasoning as it streams");
  bool run_browser = false;
  run_cmd->add_flag("--browser", run_browser, kBrowserFlagHelp);

  // resume
  keel::cli::ResumeOptions resume;
  std::string resume_workspace;
  CLI::App* resume_cmd =
      app.add_subcommand("resume", "Continue a thread's unfinished turn (interrupted, paused, waiting)");
  resume_cmd->add_option("thread", resume.thread_id, "The thread")->required();
  resume_cmd->add_option("--model", resume.model, "A model of the configuration (default: default_model)");
  resume_cmd->add_option("--workspace", resume_workspace,
                         "The file tools' folder (default: the working directory)");
  resume_cmd->add_option("--approval-policy", resume.approval_policy, "ask | accept | decline")
      ->transform(CLI::CheckedTransformer(kApprovalPolicies));
  resume_cmd->add_flag("--json", resume.json, "Print the events as JSON lines");
  bool resume_browser = false;
  resume_cmd->add_flag("--browser", resume_browser, kBrowserFlagHelp);

  // threads
  keel::cli::ThreadsOptions threads;
  CLI::App* threads_cmd = app.add_subcommand("threads", "List, show, fork, select and delete threads");
  threads_cmd->require_subcommand(1);
  threads_cmd->add_flag("--json", threads.json, "Print JSON");
  CLI::App* list_cmd = threads_cmd->add_subcommand("list", "Every thread, newest first");
  list_cmd->add_flag("--json", threads.json, "Print JSON");
  CLI::App* show_cmd =
      threads_cmd->add_subcommand("show", "A thread's selected branch, its runs and branches");
  show_cmd->add_option("thread", threads.thread_id, "The thread")->required();
  show_cmd->add_flag("--json", threads.json, "Print JSON");
  CLI::App* fork_cmd = threads_cmd->add_subcommand("fork", "A new thread sharing this one's history");
  fork_cmd->add_option("thread", threads.thread_id, "The thread")->required();
  fork_cmd->add_option("--at", threads.node_id, "Fork at this node (default: the selected leaf)");
  fork_cmd->add_option("--title", threads.title, "The fork's title");
  fork_cmd->add_flag("--json", threads.json, "Print JSON");
  CLI::App* select_cmd = threads_cmd->add_subcommand("select", "Make a branch the thread's current one");
  select_cmd->add_option("thread", threads.thread_id, "The thread")->required();
  select_cmd->add_option("leaf", threads.node_id, "The branch's leaf node")->required();
  select_cmd->add_flag("--json", threads.json, "Print JSON");
  CLI::App* delete_cmd = threads_cmd->add_subcommand("delete", "Delete a thread");
  delete_cmd->add_option("thread", threads.thread_id, "The thread")->required();
  delete_cmd->add_flag("--json", threads.json, "Print JSON");

  // policy
  keel::cli::PolicyOptions policy;
  keel::cli::McpListOptions mcp_list;
  CLI::App* mcp_cmd = app.add_subcommand("mcp", "The configured MCP servers");
  mcp_cmd->require_subcommand(1);
  CLI::App* mcp_list_cmd =
      mcp_cmd->add_subcommand("list", "Connect each configured MCP server once; show its state and tools");
  mcp_list_cmd->add_flag("--json", mcp_list.json, "Print JSON");

  CLI::App* policy_cmd = app.add_subcommand("policy", "List and revoke remembered decisions and site rules");
  policy_cmd->require_subcommand(1);
  CLI::App* policy_list_cmd =
      policy_cmd->add_subcommand("list", "Every rule: remembered approvals and site rules");
  policy_list_cmd->add_flag("--json", policy.json, "Print JSON");
  CLI::App* policy_revoke_cmd = policy_cmd->add_subcommand("revoke", "Remove a rule, so its calls ask again");
  policy_revoke_cmd->add_option("rule", policy.rule_id, "The rule's id (keel policy list shows it)")
      ->required();
  policy_revoke_cmd->add_flag("--json", policy.json, "Print JSON");

  // skills
  keel::cli::SkillsOptions skills;
  CLI::App* skills_cmd = app.add_subcommand("skills", "The skills offered to the model (docs/skills.md)");
  skills_cmd->require_subcommand(1);
  CLI::App* skills_list_cmd = skills_cmd->add_subcommand(
      "list", "Each skill's name, source, description and folder, and the skills that could not be loaded");
  skills_list_cmd->add_flag("--json", skills.json, "Print JSON");

  // chat
  keel::cli::ChatOptions chat;
  std::string chat_workspace;
  CLI::App* chat_cmd = app.add_subcommand(
      "chat", "Talk with the agent on a terminal; steer, queue and interrupt while it works");
  chat_cmd->add_option("--thread", chat.thread_id,
                       "Continue this thread (offers to continue an interrupted turn)");
  chat_cmd->add_option("--model", chat.model, "A model of the configuration (default: default_model)");
  chat_cmd->add_option("--workspace", chat_workspace,
                       "The file tools' folder (default: the working directory)");
  bool chat_browser = false;
  chat_cmd->add_flag("--browser", chat_browser, kBrowserFlagHelp);

  // demo
  keel::cli::DemoOptions demo;
  CLI::App* demo_cmd =
      app.add_subcommand("demo", "A real agent task end to end, with the scripted model (no API key)");
  demo_cmd->add_option("--model", demo.model, "Run the same task against this configured model instead");
  demo_cmd->add_option("--dir", demo.dir,
                       "Where to put the demo's store and workspace (default: a new folder)");
  demo_cmd->add_flag("--json", demo.json, "Print the events as JSON lines");
  demo_cmd->add_flag("--browser", demo.browser,
                     "The browser task instead: order from a demo shop served on 127.0.0.1 (Chromium)");

  // mcp-server
  keel::cli::McpServerCommandOptions mcp_server;
  std::string mcp_workspace;
  CLI::App* mcp_server_cmd = app.add_subcommand(
      "mcp-server", "Serve the workspace's tools to an MCP client over stdio (logs go to stderr)");
  mcp_server_cmd->add_option("--workspace", mcp_workspace,
                             "The file tools' folder (default: the working directory)");
  mcp_server_cmd->add_flag("--allow-writes", mcp_server.allow_writes,
                           "Run calls the policy would ask a person about (denials still refuse)");
  mcp_server_cmd->add_flag("--browser", mcp_server.browser,
                           "Serve the browser_* tools too, on a browser from [browser] (enabled or not)");

  CLI11_PARSE(app, argc, argv);
  const SafeStderr safe_stderr;

  std::error_code cwd_error;
  const std::filesystem::path cwd = std::filesystem::current_path(cwd_error);
  auto sources = keel::config::discover_sources(keel::config::process_environment(), cwd, overrides);
  if (!config_file.empty()) sources.project_file = config_file;
  auto config = keel::config::load_config(sources);
  if (!config) {
    std::cerr << "keel: " << config.error().to_string() << "\n";
    return keel::cli::kExitSetup;
  }
  keel::cli::LogOptions log_options{
      .level = config->log_level, .format = config->log_format, .file = log_file};
  if (!log_level.empty()) {
    using keel::config::LogLevel;
    static const std::map<std::string, LogLevel> kLevels = {
        {"trace", LogLevel::kTrace}, {"debug", LogLevel::kDebug}, {"info", LogLevel::kInfo},
        {"warn", LogLevel::kWarn},   {"error", LogLevel::kError}, {"off", LogLevel::kOff}};
    auto level = kLevels.find(log_level);
    if (level == kLevels.end()) {
      std::cerr << "keel: --log-level: expected trace, debug, info, warn, error or off\n";
      return keel::cli::kExitSetup;
    }
    log_options.level = level->second;
  }
  if (log_json) log_options.format = keel::config::LogFormat::kJson;
  // The line-oriented commands print their own progress; their log stays quiet unless asked.
  if (!serve_cmd->parsed() && log_level.empty() && log_file.empty())
    log_options.level = keel::config::LogLevel::kWarn;
  auto logger = keel::cli::make_logger(log_options);
  if (!logger) {
    std::cerr << "keel: " << logger.error().to_string() << "\n";
    return keel::cli::kExitSetup;
  }

  keel::cli::CommandContext context{.config = std::move(*config),
                                    .logger = *logger,
                                    .out = &std::cout,
                                    .err = &std::cerr,
                                    .out_is_terminal = ::isatty(STDOUT_FILENO) == 1,
                                    .in_is_terminal = ::isatty(STDIN_FILENO) == 1};
  // --browser is browser.enabled=true for this command (the browser's other settings stay the config's).
  if ((serve_cmd->parsed() && serve_browser) || (ui_cmd->parsed() && ui_browser) ||
      (run_cmd->parsed() && run_browser) || (resume_cmd->parsed() && resume_browser) ||
      (chat_cmd->parsed() && chat_browser)) {
    context.config.browser.enabled = true;
  }
  if (serve_cmd->parsed()) {
    if (!serve_workspace.empty()) serve.workspace = serve_workspace;
    return keel::cli::serve_command(context, serve);
  }
  if (ui_cmd->parsed()) {
    if (!ui_workspace.empty()) ui.workspace = ui_workspace;
    return keel::cli::ui_command(context, ui);
  }
  if (run_cmd->parsed()) {
    if (!run_workspace.empty()) run.workspace = run_workspace;
    if (run_budget > 0) run.budget_tokens = run_budget;
    return keel::cli::run_command(context, run);
  }
  if (resume_cmd->parsed()) {
    if (!resume_workspace.empty()) resume.workspace = resume_workspace;
    return keel::cli::resume_command(context, resume);
  }
  if (threads_cmd->parsed()) {
    for (CLI::App* sub : {list_cmd, show_cmd, fork_cmd, select_cmd, delete_cmd}) {
      if (sub->parsed()) threads.action = sub->get_name();
    }
    return keel::cli::threads_command(context, threads);
  }
  if (mcp_list_cmd->parsed()) return keel::cli::mcp_list_command(context, mcp_list);
  if (policy_cmd->parsed()) {
    policy.action = policy_list_cmd->parsed() ? "list" : "revoke";
    return keel::cli::policy_command(context, policy);
  }
  if (skills_cmd->parsed()) return keel::cli::skills_command(context, skills);
  if (chat_cmd->parsed()) {
    if (!chat_workspace.empty()) chat.workspace = chat_workspace;
    return keel::cli::chat_command(context, chat);
  }
  if (demo_cmd->parsed()) return keel::cli::demo_command(context, demo);
  if (mcp_server_cmd->parsed()) {
    if (!mcp_workspace.empty()) mcp_server.workspace = mcp_workspace;
    return keel::cli::mcp_server_command(context, mcp_server);
  }
  return 0;
}
