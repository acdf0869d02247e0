#include "config/config.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "config/config_errors.h"
#include "util/assert.h"

namespace keel::config {
namespace {

constexpr std::array<std::pair<ProviderKind, std::string_view>, 3> kProviderKinds = {{
    {ProviderKind::kOpenAiChat, "openai-chat"},
    {ProviderKind::kOpenAiResponses, "openai-responses"},
    {ProviderKind::kAnthropic, "anthropic"},
}};

bool is_bare_key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
}

std::string quoted_segment(std::string_view segment) {
  // A key pasted where a name belongs must not be repeated by the message that refuses it.
  if (looks_like_secret(segment)) return "\"(redacted: looks like a key)\"";
  const bool bare = !segment.empty() && std::all_of(segment.begin(), segment.end(), is_bare_key_char);
  if (bare) return std::string(segment);
  std::string out = "\"";
  for (char c : segment) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += '?';  // a control character in a key name: shown, not reproduced
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string_view default_base_url(ProviderKind kind) {
  // Each vendor's SDK convention: OpenAI's base URL carries the /v1 prefix, Anthropic's does not.
  return kind == ProviderKind::kAnthropic ? "https://api.anthropic.com" : "https://api.openai.com/v1";
}

void add_problem(ConfigProblems& problems, const char* code, const Config& config, const std::string& where,
                 const std::string& path, std::string message) {
  if (problems.mentions(path)) return;
  problems.add(ConfigProblem{code, config.origin_of(where), path, std::move(message)});
}

}  // namespace

std::string_view to_string(ProviderKind kind) {
  for (const auto& [k, name] : kProviderKinds) {
    if (k == kind) return name;
  }
  KEEL_BUG("a ProviderKind missing from kProviderKinds");  // every enumerator is listed there
}

std::optional<ProviderKind> parse_provider_kind(std::string_view name) {
  for (const auto& [k, n] : kProviderKinds) {
    if (n == name) return k;
  }
  return std::nullopt;
}

std::string CredentialRef::reference() const {
  switch (source) {
    case Source::kNone:
      return "";
    case Source::kStored:
      return name;
    case Source::kEnvironment:
      return "env:" + name;
  }
  return "";
}

std::string_view to_string(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace:
      return "trace";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off";
  }
  return "info";
}

std::string_view to_string(LogFormat format) { return format == LogFormat::kJson ? "json" : "text"; }

std::string_view to_string(ValueOrigin::Layer layer) {
  switch (layer) {
    case ValueOrigin::Layer::kDefault:
      return "default";
    case ValueOrigin::Layer::kUserFile:
      return "user";
    case ValueOrigin::Layer::kProjectFile:
      return "project";
    case ValueOrigin::Layer::kEnvironment:
      return "env";
    case ValueOrigin::Layer::kCommandLine:
      return "command-line";
  }
  return "default";
}

std::string ValueOrigin::to_string() const {
  switch (layer) {
    case Layer::kDefault:
      return "built-in default";
    case Layer::kEnvironment:
      return "environment variable " + source;
    case Layer::kCommandLine:
      return source;
    case Layer::kUserFile:
    case Layer::kProjectFile:
      break;
  }
  std::string out = source;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (column > 0) out += ":" + std::to_string(column);
  }
  return out;
}

std::string ConfigProblem::to_string() const {
  std::string out = origin.to_string() + ": ";
  if (!key_path.empty()) out += key_path + ": ";
  return out + message;
}

void ConfigProblems::add(ConfigProblem problem) {
  if (problems_.size() >= kMaxProblems) {
    ++suppressed_;
    return;
  }
  problems_.push_back(std::move(problem));
}

bool ConfigProblems::mentions(std::string_view key_path) const {
  return std::any_of(problems_.begin(), problems_.end(),
                     [&](const ConfigProblem& p) { return p.key_path == key_path; });
}

Error ConfigProblems::to_error() const {
  const ConfigProblem& first = problems_.front();
  if (problems_.size() == 1 && suppressed_ == 0) return Error(first.code, first.to_string());
  std::string message = std::to_string(problems_.size() + suppressed_) + " problems in the configuration:";
  for (const ConfigProblem& p : problems_) message += "\n  " + p.to_string();
  if (suppressed_ > 0) message += "\n  ... and " + std::to_string(suppressed_) + " more";
  return Error(first.code, std::move(message));
}

ValueOrigin Config::origin_of(std::string_view key_path) const {
  auto it = origins.find(key_path);
  return it == origins.end() ? ValueOrigin{} : it->second;
}

const ModelConfig* Config::model(std::string_view name) const {
  auto it = models.find(std::string(name));
  return it == models.end() ? nullptr : &it->second;
}

const ProviderConfig* Config::provider(std::string_view name) const {
  auto it = providers.find(std::string(name));
  return it == providers.end() ? nullptr : &it->second;
}

Config default_config(const EnvLookup& env, const std::filesystem::path& working_dir) {
  Config config;
  const ValueOrigin builtin{ValueOrigin::Layer::kDefault, "built-in", 0, 0};
  auto add_provider = [&](const std::string& name, ProviderKind kind, std::string variable) {
    ProviderConfig p;
    p.kind = kind;
    p.base_url = std::string(default_base_url(kind));
    p.credential = CredentialRef{CredentialRef::Source::kEnvironment, std::move(variable)};
    config.providers.emplace(name, std::move(p));
    // Recorded so finalize_config sees that a built-in provider has its kind.
    config.origins.emplace(key_path({"providers", name}), builtin);
    config.origins.emplace(key_path({"providers", name, "kind"}), builtin);
  };
  add_provider("openai", ProviderKind::kOpenAiResponses, "OPENAI_API_KEY");
  add_provider("anthropic", ProviderKind::kAnthropic, "ANTHROPIC_API_KEY");

  const std::optional<std::string> xdg_data = env ? env("XDG_DATA_HOME") : std::nullopt;
  const std::optional<std::string> home = env ? env("HOME") : std::nullopt;
  if (xdg_data && std::filesystem::path(*xdg_data).is_absolute()) {
    config.data_dir = std::filesystem::path(*xdg_data) / "keel";
  } else if (home) {
    config.data_dir = std::filesystem::path(*home) / ".local" / "share" / "keel";
  } else {
    config.data_dir = working_dir / ".keel" / "data";
  }
  config.data_dir = config.data_dir.lexically_normal();
  // The user's skills sit beside the user's configuration file (config_loader.cc finds it the same way).
  const std::optional<std::string> xdg_config = env ? env("XDG_CONFIG_HOME") : std::nullopt;
  if (xdg_config && std::filesystem::path(*xdg_config).is_absolute()) {
    config.skills.user_dir = (std::filesystem::path(*xdg_config) / "keel" / "skills").lexically_normal();
  } else if (home) {
    config.skills.user_dir =
        (std::filesystem::path(*home) / ".config" / "keel" / "skills").lexically_normal();
  }
  config.skills.project_dir = (working_dir / ".keel" / "skills").lexically_normal();
  return config;
}

void finalize_config(Config& config, ConfigProblems& problems) {
  for (auto& [name, provider] : config.providers) {
    const std::string path = key_path({"providers", name});
    if (!config.origins.contains(path + ".kind")) {
      add_problem(problems, codes::kConfigMissingValue, config, path, path + ".kind",
                  "a provider needs kind = \"openai-chat\", \"openai-responses\" or \"anthropic\"");
    }
    if (provider.base_url.empty()) provider.base_url = std::string(default_base_url(provider.kind));
  }
  for (auto& [name, model] : config.models) {
    const std::string path = key_path({"models", name});
    if (model.model_id.empty()) model.model_id = name;
    if (model.provider.empty()) {
      add_problem(problems, codes::kConfigMissingValue, config, path, path + ".provider",
                  "a model needs provider = the name of a configured provider");
    } else if (!config.providers.contains(model.provider)) {
      add_problem(problems, codes::kConfigMissingReference, config, path + ".provider", path + ".provider",
                  "names provider " + quoted_segment(model.provider) + ", which is not configured");
    }
    if (model.capabilities.max_output_tokens > model.capabilities.context_window_tokens) {
      add_problem(problems, codes::kConfigBadValue, config, path + ".max_output", path + ".max_output",
                  "max_output (" + std::to_string(model.capabilities.max_output_tokens) +
                      ") is larger than context_window (" +
                      std::to_string(model.capabilities.context_window_tokens) + ")");
    }
  }
  for (const auto& [key, name] :
       {std::pair<std::string, const std::string&>{"default_model", config.default_model},
        {"task_model", config.task_model}}) {
    if (!name.empty() && !config.models.contains(name)) {
      add_problem(problems, codes::kConfigMissingReference, config, key, key,
                  "names model " + quoted_segment(name) + ", which is not configured");
    }
  }
  for (const auto& [name, server] : config.mcp_servers) {
    const std::string path = key_path({"mcp", "servers", name});
    if (server.command.empty() && server.url.empty()) {
      add_problem(problems, codes::kConfigMissingValue, config, path, path + ".command",
                  "an MCP server needs a command or a url");
    }
    if (!server.command.empty() && server.credential.source != CredentialRef::Source::kNone) {
      const std::string key = key_path_append(
          path, server.credential.source == CredentialRef::Source::kStored ? "credential" : "credential_env");
      add_problem(problems, codes::kConfigBadValue, config, key, key,
                  "a credential is for a server reached by url; a command's server reads what it needs from "
                  "the environment keel runs in");
    }
    if (server.oauth && server.url.empty()) {
      const std::string key = key_path_append(path, "oauth");
      add_problem(problems, codes::kConfigBadValue, config, key, key,
                  "OAuth sign-in is for a server reached by url");
    } else if (server.oauth && server.credential.source != CredentialRef::Source::kNone) {
      const std::string key = key_path_append(path, "oauth");
      add_problem(problems, codes::kConfigBadValue, config, key, key,
                  "set either oauth or a credential: a server signed in to with OAuth gets its tokens from "
                  "the sign-in");
    }
    if (!server.oauth_client_id.empty() && !server.oauth) {
      const std::string key = key_path_append(path, "oauth_client_id");
      add_problem(problems, codes::kConfigBadValue, config, key, key, "is for a server with oauth = true");
    }
    if (server.call_idle_timeout_ms > server.call_max_ms) {
      const std::string key = key_path_append(path, "call_idle_timeout_ms");
      add_problem(problems, codes::kConfigBadValue, config, key, key, "must not exceed call_max_ms");
    }
  }
  BrowserConfig& browser = config.browser;
  if (!browser.attach.empty() && browser.profile != BrowserConfig::Profile::kTemporary) {
    add_problem(
        problems, codes::kConfigBadValue, config, "browser.profile", "browser.profile",
        "a profile is for a browser keel launches; the browser keel attaches to (browser.attach) keeps "
        "its own (attach_context chooses keel's own context or the person's)");
  }
  if (browser.profile == BrowserConfig::Profile::kPersistent) {
    browser.profile_dir = config.data_dir / "browser" / "profile";
  }
  if (browser.downloads_dir.empty()) browser.downloads_dir = config.data_dir / "browser" / "downloads";
  if (config.store_path.empty()) config.store_path = config.data_dir / "keel.db";
  if (config.master_key_file.empty()) config.master_key_file = config.data_dir / "master.key";
}

std::string key_path(std::initializer_list<std::string_view> segments) {
  std::string out;
  for (std::string_view s : segments) out = key_path_append(out, s);
  return out;
}

std::string key_path_append(std::string_view parent, std::string_view segment) {
  std::string out(parent);
  if (!out.empty()) out += '.';
  return out + quoted_segment(segment);
}

bool looks_like_secret(std::string_view text) {
  // A long alphanumeric run mixing letters and digits: how random key material reads, and how names don't.
  size_t run = 0;
  bool run_digit = false;
  bool run_alpha = false;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0) {
      ++run;
      run_digit = run_digit || std::isdigit(u) != 0;
      run_alpha = run_alpha || std::isalpha(u) != 0;
      if (run >= 20 && run_digit && run_alpha) return true;
    } else {
      run = 0;
      run_digit = run_alpha = false;
    }
  }
  // Long keys with separators in them: upper- and lower-case letters and digits all together.
  if (text.size() >= 40) {
    const bool upper = std::any_of(text.begin(), text.end(),
                                   [](char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; });
    const bool lower = std::any_of(text.begin(), text.end(),
                                   [](char c) { return std::islower(static_cast<unsigned char>(c)) != 0; });
    const bool digit = std::any_of(text.begin(), text.end(),
                                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
    if (upper && lower && digit) return true;
  }
  return false;
}

}  // namespace keel::config
