// config/config.h — keel's typed configuration, where each value came from, and its problems.
//
// A Config is a plain value built by config_loader.h from layers (built-in defaults < user file < project
// file < KEEL_* variables < --set overrides; docs/configuration.md). Every value a layer set remembers its
// origin (layer, file, line, column) by key path, so `keel config show --origin` can say why a value is
// what it is, and every problem found while loading names the same origin and key path.
//
// A Config holds no secrets: a provider names its credential (an id in the credentials table, or an
// environment variable) and config/credential_resolver.h turns that reference into the secret when a
// request needs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/environment.h"
#include "keel/error.h"
#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "policy/gatekeeper.h"
#include "providers/model_capabilities.h"

namespace keel::config {

enum class ProviderKind { kOpenAiChat, kOpenAiResponses, kAnthropic };
std::string_view to_string(ProviderKind kind);  // openai-chat | openai-responses | anthropic
std::optional<ProviderKind> parse_provider_kind(std::string_view name);

// Where a provider's API key comes from.
struct CredentialRef {
  enum class Source { kNone, kStored, kEnvironment };
  Source source = Source::kNone;
  std::string name;  // the credential id (kStored) or the environment variable's name (kEnvironment)

  // What a run's snapshot records as the reference: "" (none), the credential id, or "env:NAME".
  std::string reference() const;
  friend bool operator==(const CredentialRef&, const CredentialRef&) = default;
};

struct ProviderConfig {
  ProviderKind kind = ProviderKind::kOpenAiChat;
  std::string base_url;  // http:// or https://; defaults to the kind's public endpoint
  CredentialRef credential;
  std::map<std::string, std::string> headers;  // extra request headers; never credentials (refused)
  int64_t connect_timeout_ms = 10'000;
  int64_t idle_timeout_ms = 120'000;  // longest silence inside a stream
  int64_t max_retries = 2;
  // openai-chat: a response whose tool calls end with finish_reason "stop" is taken as tool_calls
  // (`stop_with_tool_calls = "tool_use"`, for compatible servers that send it) instead of failing closed as
  // a protocol error before any tool runs (the default, "error"; spec §2).
  bool stop_with_tool_calls_is_tool_use = false;
};

struct ModelConfig {
  std::string provider;  // a key of Config::providers
  std::string model_id;  // what the provider calls it; defaults to the model's name in the config
  providers::ModelCapabilities capabilities;
  providers::ModelPrice price;
};

// [mcp.servers.NAME]: an MCP server whose tools keel offers (docs/mcp-client.md): either a command to start
// (stdio) or a URL (Streamable HTTP).
struct McpServerConfig {
  std::string command;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;  // added to keel's own environment for the command; no secrets
  std::filesystem::path cwd;               // the command's working directory; empty = keel's
  std::string url;
  CredentialRef credential;     // url servers: the bearer token
  bool oauth = false;           // url servers: sign in with OAuth 2.1 on the server's 401 (docs/mcp-auth.md)
  std::string oauth_client_id;  // with oauth: a pre-registered public client; "" = dynamic registration
  bool trusted = false;         // the server's tool annotations count (effects, recovery)
  bool enabled = true;
  bool lazy = false;  // start = "lazy": connected when first needed, not when keel starts
  int64_t connect_timeout_ms = 30'000;
  int64_t call_idle_timeout_ms = 60'000;  // no result or progress for this long ends a call
  int64_t call_max_ms = 600'000;          // the longest call, progress or not
};

// [browser]: the browser tools over the Chrome DevTools Protocol (docs/browser.md). Off by default, so a
// configuration without the section offers exactly the tools it did before (and run digests stay the same).
struct BrowserConfig {
  enum class Profile { kTemporary, kPersistent, kPath };
  enum class AttachContext { kOwn, kDefault };
  enum class NoSandbox { kAuto, kYes, kNo };

  bool enabled = false;
  // An absolute path, or a bare command name looked up on PATH when the browser is launched.
  std::string executable = "/usr/bin/chromium";
  bool headless = true;
  // kTemporary: a new profile per launch, removed afterwards; kPersistent: data_dir/browser/profile (logins
  // survive restarts); kPath: profile_dir, given by the person.
  Profile profile = Profile::kTemporary;
  std::filesystem::path profile_dir;  // kPersistent and kPath (finalize_config fills kPersistent's)
  // "" launches a browser; "http://127.0.0.1:9222" (its /json/version is asked for the WebSocket URL) or a
  // "ws://" URL attaches to one that runs already.
  std::string attach;
  // Attached: keel's own browser context (kOwn), or the browser's default one, with the person's logins.
  AttachContext attach_context = AttachContext::kOwn;
  int64_t window_width = 1280;
  int64_t window_height = 800;
  NoSandbox no_sandbox = NoSandbox::kAuto;  // kAuto: --no-sandbox only when keel runs as root
  std::vector<std::string> extra_args;      // more command-line switches for a launched browser
  int64_t command_timeout_ms = 30'000;      // one CDP command
  int64_t navigation_timeout_ms = 15'000;
  int64_t screenshot_timeout_ms = 10'000;
  int64_t settle_quiet_ms = 30;         // how long a page must be quiet after an action before it is reported
  int64_t snapshot_max_chars = 12'000;  // the longest snapshot a tool returns
  int64_t max_message_mb = 256;         // the largest CDP message accepted
  std::filesystem::path downloads_dir;  // defaults to data_dir/browser/downloads
};

// [skills]: skill folders offered to the model (docs/skills.md). On by default: without skill folders
// nothing changes (no read_skill tool is offered, run digests stay the same).
struct SkillsConfig {
  bool enabled = true;
  // "" = no skills from there. Defaults: $XDG_CONFIG_HOME/keel/skills (or ~/.config/keel/skills) and
  // <working dir>/.keel/skills (default_config fills them).
  std::filesystem::path user_dir;
  std::filesystem::path project_dir;
};

enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kOff };
std::string_view to_string(LogLevel level);
enum class LogFormat { kText, kJson };
std::string_view to_string(LogFormat format);

// Where a value came from. Lines and columns count from 1; 0 when the source has none.
struct ValueOrigin {
  enum class Layer { kDefault, kUserFile, kProjectFile, kEnvironment, kCommandLine };
  Layer layer = Layer::kDefault;
  std::string source;  // the file's path, the variable's name, or the --set argument ("--set #2")
  uint32_t line = 0;
  uint32_t column = 0;

  // "path:12:3", "environment variable KEEL_MODEL", "--set #2", "built-in default".
  std::string to_string() const;
  friend bool operator==(const ValueOrigin&, const ValueOrigin&) = default;
};
std::string_view to_string(ValueOrigin::Layer layer);  // default | user | project | env | command-line

// One problem found while loading. key_path is dotted ("models.sonnet.provider"; segments that are not
// bare TOML keys are quoted) and may be empty for a problem with a whole file.
struct ConfigProblem {
  std::string code;
  ValueOrigin origin;
  std::string key_path;
  std::string message;

  // "origin: key.path: message".
  std::string to_string() const;
};

// The problems of one load, bounded: after kMaxProblems further ones are only counted.
class ConfigProblems {
 public:
  static constexpr size_t kMaxProblems = 25;

  void add(ConfigProblem problem);
  bool empty() const { return problems_.empty(); }
  const std::vector<ConfigProblem>& list() const { return problems_; }
  size_t suppressed() const { return suppressed_; }
  // Whether a problem was already reported for `key_path` (later checks skip it to avoid cascades).
  bool mentions(std::string_view key_path) const;
  // One Error for all of them: the first problem's code, every problem on its own line. Precondition:
  // !empty().
  Error to_error() const;

 private:
  std::vector<ConfigProblem> problems_;
  size_t suppressed_ = 0;
};

struct Config {
  std::map<std::string, ProviderConfig> providers;
  std::map<std::string, ModelConfig> models;
  std::string default_model;            // "" = none configured
  std::string task_model;               // for titles; "" = use the default model
  std::optional<int64_t> token_budget;  // tokens per turn; nullopt = no budget

  struct Compaction {
    bool enabled = true;
    double threshold = 0.8;  // compact once a request would fill this fraction of the context window
  } compaction;

  std::filesystem::path data_dir;
  std::filesystem::path store_path;             // defaults to data_dir / "keel.db"
  std::filesystem::path master_key_file;        // defaults to data_dir / "master.key"
  Synchronous durability = Synchronous::kFull;  // full | normal
  int64_t quick_check_ms = 2000;  // budget of the store's PRAGMA quick_check at open; 0 = skip it
  PolicyMode policy_mode = PolicyMode::kAskWrites;
  LogLevel log_level = LogLevel::kInfo;
  LogFormat log_format = LogFormat::kText;
  std::map<std::string, McpServerConfig> mcp_servers;
  BrowserConfig browser;
  SkillsConfig skills;

  // The origin of every value a layer set, by key path. Values no layer set are built-in defaults.
  std::map<std::string, ValueOrigin, std::less<>> origins;
  ValueOrigin origin_of(std::string_view key_path) const;

  // nullptr when not configured.
  const ModelConfig* model(std::string_view name) const;
  const ProviderConfig* provider(std::string_view name) const;
};

// The built-in defaults: the public OpenAI and Anthropic endpoints as providers "openai" (Responses API)
// and "anthropic", with their keys from OPENAI_API_KEY and ANTHROPIC_API_KEY; data in
// $XDG_DATA_HOME/keel (or ~/.local/share/keel, or <working_dir>/.keel/data without a home); skills from
// $XDG_CONFIG_HOME/keel/skills (or ~/.config/keel/skills; none without a home) and
// <working_dir>/.keel/skills.
Config default_config(const EnvLookup& env, const std::filesystem::path& working_dir);

// Completes a loaded Config (derived paths, model ids, base URLs) and checks what no single layer can:
// every provider has a kind, every model a provider that exists, the default and task models exist, and
// max_output fits the context window, and a browser profile is not given for a browser keel attaches to. Adds
// each failure to `problems`, skipping key paths already reported.
void finalize_config(Config& config, ConfigProblems& problems);

// A dotted key path from segments, quoting those that are not bare TOML keys: {"models", "gpt-4.1"} ->
// models."gpt-4.1".
std::string key_path(std::initializer_list<std::string_view> segments);
std::string key_path_append(std::string_view parent, std::string_view segment);

// Whether `text` looks like a pasted API key rather than a name (a long run of letters mixed with
// digits). Names that look like keys are refused and never repeated in messages.
bool looks_like_secret(std::string_view text);

}  // namespace keel::config
