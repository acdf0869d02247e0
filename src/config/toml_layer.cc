// The one translation unit that includes toml++ (see toml_layer.h).
#include "config/toml_layer.h"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "config/config_errors.h"
#include "keel/sqlite_store.h"

namespace keel::config {
namespace {

using Layer = ValueOrigin::Layer;

template <typename E>
struct Choice {
  E value;
  std::string_view name;
};

constexpr std::array<Choice<ProviderKind>, 3> kKinds = {{{ProviderKind::kOpenAiChat, "openai-chat"},
                                                         {ProviderKind::kOpenAiResponses, "openai-responses"},
                                                         {ProviderKind::kAnthropic, "anthropic"}}};
constexpr std::array<Choice<Synchronous>, 2> kDurabilities = {
    {{Synchronous::kFull, "full"}, {Synchronous::kNormal, "normal"}}};
constexpr std::array<Choice<PolicyMode>, 4> kPolicyModes = {{{PolicyMode::kAskEveryWrite, "ask_every_write"},
                                                             {PolicyMode::kAskWrites, "ask_writes"},
                                                             {PolicyMode::kReadOnly, "read_only"},
                                                             {PolicyMode::kAllowAll, "allow_all"}}};
constexpr std::array<Choice<LogLevel>, 6> kLogLevels = {{{LogLevel::kTrace, "trace"},
                                                         {LogLevel::kDebug, "debug"},
                                                         {LogLevel::kInfo, "info"},
                                                         {LogLevel::kWarn, "warn"},
                                                         {LogLevel::kError, "error"},
                                                         {LogLevel::kOff, "off"}}};
constexpr std::array<Choice<LogFormat>, 2> kLogFormats = {
    {{LogFormat::kText, "text"}, {LogFormat::kJson, "json"}}};
// A provider's `stop_with_tool_calls`: whether a "stop" that comes with tool calls is taken as tool_use.
constexpr std::array<Choice<bool>, 2> kStopWithToolCalls = {{{false, "error"}, {true, "tool_use"}}};
constexpr std::array<Choice<bool>, 2> kMcpStarts = {{{false, "startup"}, {true, "lazy"}}};

constexpr std::array<Choice<BrowserConfig::AttachContext>, 2> kAttachContexts = {
    {{BrowserConfig::AttachContext::kOwn, "own"}, {BrowserConfig::AttachContext::kDefault, "default"}}};
// Switches keel sets itself when it launches a browser: given again in browser.extra_args they would cut
// keel off its browser (another debugging transport) or from its profile handling.
constexpr std::array<std::string_view, 4> kReservedBrowserSwitches = {
    "--remote-debugging-pipe", "--remote-debugging-port", "--remote-debugging-address", "--user-data-dir"};

// Headers that carry credentials: those come from `credential` / `api_key_env`, so that no secret sits in
// a configuration file or a run's snapshot.
constexpr std::array<std::string_view, 5> kCredentialHeaders = {"authorization", "proxy-authorization",
                                                                "x-api-key", "api-key", "cookie"};

constexpr size_t kMaxNameBytes = 128;
constexpr size_t kMaxHeaderValueBytes = 8 * 1024;

std::string_view type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

bool is_credential_id(std::string_view id) {
  return !id.empty() && id.size() <= kMaxNameBytes && std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
  });
}

bool is_variable_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes || std::isdigit(static_cast<unsigned char>(name[0])) != 0) {
    return false;
  }
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; });
}

// RFC 9110 token characters.
bool is_header_name(std::string_view name) {
  constexpr std::string_view kExtra = "!#$%&'*+-.^_`|~";
  return !name.empty() && name.size() <= kMaxNameBytes && std::all_of(name.begin(), name.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || kExtra.find(c) != std::string_view::npos;
  });
}

bool is_http_url(std::string_view url) {
  const bool scheme = url.starts_with("http://") || url.starts_with("https://");
  const size_t rest = url.find("://") + 3;
  return scheme && url.size() > rest && std::none_of(url.begin(), url.end(), [](char c) {
           return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
         });
}

// browser.attach: an http:// endpoint (whose /json/version names the WebSocket) or a ws:// URL.
bool is_attach_url(std::string_view url) {
  for (std::string_view scheme : {"http://", "https://", "ws://", "wss://"}) {
    if (url.starts_with(scheme)) {
      return url.size() > scheme.size() && std::none_of(url.begin(), url.end(), [](char c) {
               return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
             });
    }
  }
  return false;
}

// browser.window_size: "<width>x<height>", each 100 to 10000 pixels.
std::optional<std::pair<int64_t, int64_t>> parse_window_size(std::string_view text) {
  const size_t x = text.find('x');
  if (x == std::string_view::npos) return std::nullopt;
  auto dimension = [](std::string_view digits) -> std::optional<int64_t> {
    if (digits.empty() || digits.size() > 5) return std::nullopt;
    int64_t value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    if (value < 100 || value > 10'000) return std::nullopt;
    return value;
  };
  const auto width = dimension(text.substr(0, x));
  const auto height = dimension(text.substr(x + 1));
  if (!width || !height) return std::nullopt;
  return std::make_pair(*width, *height);
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// toml++ quotes pieces of the document in some syntax errors; a piece that could be a key is cut out.
std::string scrub_quoted(std::string_view description) {
  std::string out;
  size_t i = 0;
  while (i < description.size()) {
    const size_t open = description.find('\'', i);
    const size_t close = open == std::string_view::npos ? open : description.find('\'', open + 1);
    if (close == std::string_view::npos) {
      out.append(description.substr(i));
      break;
    }
    const std::string_view quoted = description.substr(open + 1, close - open - 1);
    out.append(description.substr(i, open + 1 - i));
    out.append(quoted.size() > 24 || looks_like_secret(quoted) ? "..." : std::string(quoted));
    out += '\'';
    i = close + 1;
  }
  return out;
}

class Applier {
 public:
  Applier(const LayerSource& source, Config& config, std::vector<ConfigProblem>& problems)
      : source_(source),
        config_(config),
        problems_(problems),
        file_(source.layer == Layer::kUserFile || source.layer == Layer::kProjectFile) {}

  void root(const toml::table& table) {
    for (auto&& [k, v] : table) {
      const std::string_view key = k.str();
      const std::string path = key_path({key});
      if (key == "data_dir") {
        if (auto p = path_value(v, path)) config_.data_dir = *p;
      } else if (key == "default_model") {
        if (auto s = string_value(v, path, true)) config_.default_model = *s;
      } else if (key == "task_model") {
        if (auto s = string_value(v, path, true)) config_.task_model = *s;
      } else if (key == "token_budget") {
        if (auto n = integer(v, path, 0, 1'000'000'000'000)) {
          config_.token_budget = *n == 0 ? std::nullopt : std::optional<int64_t>(*n);
        }
      } else if (key == "compaction") {
        if (const toml::table* t = table_value(v, path)) compaction(*t, path);
      } else if (key == "store") {
        if (const toml::table* t = table_value(v, path)) store(*t, path);
      } else if (key == "policy") {
        if (const toml::table* t = table_value(v, path)) policy(*t, path);
      } else if (key == "log") {
        if (const toml::table* t = table_value(v, path)) log(*t, path);
      } else if (key == "credentials") {
        if (const toml::table* t = table_value(v, path)) credentials(*t, path);
      } else if (key == "providers") {
        named_tables(v, path, &Applier::provider);
      } else if (key == "models") {
        named_tables(v, path, &Applier::model);
      } else if (key == "mcp") {
        if (const toml::table* t = table_value(v, path)) mcp(*t, path);
      } else if (key == "browser") {
        if (const toml::table* t = table_value(v, path)) browser(*t, path);
      } else if (key == "skills") {
        if (const toml::table* t = table_value(v, path)) skills(*t, path);
      } else {
        unknown(k, path,
                "data_dir, default_model, task_model, token_budget, compaction, store, policy, log, "
                "credentials, providers, models, mcp, browser, skills");
      }
    }
  }

  void parse_error(const toml::parse_error& error) {
    add(ConfigProblem{codes::kConfigParse, origin_at(error.source()), "",
                      "not valid TOML: " + scrub_quoted(error.description())});
  }

 private:
  // --- origins and problems -------------------------------------------------------------------------

  ValueOrigin origin_at(const toml::source_region& region) const {
    ValueOrigin origin{source_.layer, source_.name, 0, 0};
    if (file_ && region.begin) {
      origin.line = region.begin.line;
      origin.column = region.begin.column;
    }
    return origin;
  }
  void problem(const char* code, const toml::source_region& where, const std::string& path,
               std::string message) {
    add(ConfigProblem{code, origin_at(where), path, std::move(message)});
  }
  void add(ConfigProblem problem) {
    // A bound on memory only; ConfigProblems bounds what is reported.
    if (problems_.size() < 4 * ConfigProblems::kMaxProblems) problems_.push_back(std::move(problem));
  }
  void record(const std::string& path, const toml::node& node) {
    config_.origins[path] = origin_at(node.source());
  }
  void unknown(const toml::key& key, const std::string& path, std::string_view known) {
    problem(codes::kConfigUnknownKey, key.source(), path,
            "unknown key (known here: " + std::string(known) + ")");
  }
  void wrong_type(const toml::node& node, const std::string& path, std::string_view expected) {
    problem(codes::kConfigBadValue, node.source(), path,
            "expected " + std::string(expected) + ", not " + std::string(type_name(node)));
  }

  // --- typed values: each checks, records the origin and returns the value, or reports and returns none --

  std::optional<std::string> string_value(const toml::node& node, const std::string& path,
                                          bool may_be_empty) {
    const auto* s = node.as_string();
    if (s == nullptr) {
      wrong_type(node, path, "a string");
      return std::nullopt;
    }
    if (!may_be_empty && s->get().empty()) {
      problem(codes::kConfigBadValue, node.source(), path, "must not be empty");
      return std::nullopt;
    }
    if (s->get().find('\0') != std::string::npos) {
      problem(codes::kConfigBadValue, node.source(), path, "must not contain a NUL character");
      return std::nullopt;
    }
    record(path, node);
    return s->get();
  }

  std::optional<int64_t> integer(const toml::node& node, const std::string& path, int64_t min, int64_t max) {
    const auto* n = node.as_integer();
    if (n == nullptr) {
      wrong_type(node, path, "an integer");
      return std::nullopt;
    }
    if (n->get() < min || n->get() > max) {
      problem(codes::kConfigBadValue, node.source(), path,
              "must be between " + std::to_string(min) + " and " + std::to_string(max));
      return std::nullopt;
    }
    record(path, node);
    return n->get();
  }

  // A float; integers are accepted. `min_exclusive` makes the lower bound exclusive.
  std::optional<double> number(const toml::node& node, const std::string& path, double min, double max,
                               bool min_exclusive) {
    double value = 0;
    if (const auto* f = node.as_floating_point()) {
      value = f->get();
    } else if (const auto* n = node.as_integer()) {
      value = static_cast<double>(n->get());
    } else {
      wrong_type(node, path, "a number");
      return std::nullopt;
    }
    const bool below = min_exclusive ? !(value > min) : !(value >= min);  // NaN fails both
    if (below || value > max) {
      problem(codes::kConfigBadValue, node.source(), path,
              std::string("must be ") + (min_exclusive ? "above " : "at least ") + trimmed(min) +
                  " and at most " + trimmed(max));
      return std::nullopt;
    }
    record(path, node);
    return value;
  }

  static std::string trimmed(double value) {
    std::string text = std::to_string(value);
    while (text.size() > 1 && text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    return text;
  }

  std::optional<bool> boolean(const toml::node& node, const std::string& path) {
    const auto* b = node.as_boolean();
    if (b == nullptr) {
      wrong_type(node, path, "a boolean");
      return std::nullopt;
    }
    record(path, node);
    return b->get();
  }

  template <typename E, size_t N>
  std::optional<E> choice(const toml::node& node, const std::string& path,
                          const std::array<Choice<E>, N>& choices) {
    std::string allowed;
    for (const Choice<E>& c : choices)
      allowed += (allowed.empty() ? "\"" : ", \"") + std::string(c.name) + "\"";
    const auto* s = node.as_string();
    if (s == nullptr) {
      wrong_type(node, path, "one of " + allowed);
      return std::nullopt;
    }
    for (const Choice<E>& c : choices) {
      if (c.name == s->get()) {
        record(path, node);
        return c.value;
      }
    }
    problem(codes::kConfigBadValue, node.source(), path, "expected one of " + allowed);
    return std::nullopt;
  }

  std::optional<std::filesystem::path> path_value(const toml::node& node, const std::string& path) {
    auto text = string_value(node, path, false);
    if (!text) return std::nullopt;
    std::filesystem::path p(*text);
    if (text->starts_with("~/")) {
      if (!source_.home) {
        problem(codes::kConfigBadValue, node.source(), path, "starts with ~/ but HOME is not set");
        config_.origins.erase(path);
        return std::nullopt;
      }
      p = std::filesystem::path(*source_.home) / text->substr(2);
    } else if (p.is_relative()) {
      p = source_.base_dir / p;
    }
    return p.lexically_normal();
  }

  const toml::table* table_value(const toml::node& node, const std::string& path) {
    const toml::table* t = node.as_table();
    if (t == nullptr) {
      wrong_type(node, path, "a table");
      return nullptr;
    }
    record(path, node);
    return t;
  }

  // A table of names to tables ([providers.NAME], [models.NAME], [mcp.servers.NAME]).
  void named_tables(const toml::node& node, const std::string& path,
                    void (Applier::*apply)(const std::string&, const toml::table&, const std::string&)) {
    const toml::table* all = table_value(node, path);
    if (all == nullptr) return;
    for (auto&& [k, v] : *all) {
      const std::string name(k.str());
      const std::string entry_path = key_path_append(path, name);
      if (name.empty() || name.size() > kMaxNameBytes) {
        problem(codes::kConfigBadValue, k.source(), entry_path, "a name must have 1 to 128 bytes");
        continue;
      }
      if (const toml::table* t = table_value(v, entry_path)) (this->*apply)(name, *t, entry_path);
    }
  }

  // A table of strings to strings (headers, environment). `check` vets each name and value.
  template <typename Check>
  void string_map(const toml::table& table, const std::string& path, std::map<std::string, std::string>& out,
                  Check check) {
    for (auto&& [k, v] : table) {
      const std::string name(k.str());
      const std::string entry_path = key_path_append(path, name);
      auto value = string_value(v, entry_path, true);
      if (!value) continue;
      if (const char* why = check(name, *value)) {
        config_.origins.erase(entry_path);
        problem(codes::kConfigBadValue, k.source(), entry_path, why);
        continue;
      }
      out[name] = std::move(*value);
    }
  }

  // --- sections --------------------------------------------------------------------------------------

  void compaction(const toml::table& table, const std::string& base) {
    for (auto&& [k, v] : table) {
      const std::string path = key_path_append(base, k.str());
      if (k.str() == "enabled") {
        if (auto b = boolean(v, path)) config_.compaction.enabled = *b;
      } else if (k.str() == "threshold") {
        if (auto n = number(v, path, 0.0, 1.0, true)) config_.compaction.threshold = *n;
      } else {
        unknown(k, path, "enabled, threshold");
      }
    }
  }

  void store(const toml::table& table, const std::string& base) {
    for (auto&& [k, v] : table) {
      const std::string path = key_path_append(base, k.str());
      if (k.str() == "path") {
        if (auto p = path_value(v, path)) config_.store_path = *p;
      } else if (k.str() == "durability") {
        if (auto d = choice(v, path, kDurabilities)) config_.durability = *d;
      } else if (k.str() == "quick_check_ms") {
        if (auto n = integer(v, path, 0, 3'600'000)) config_.quick_check_ms = *n;
      } else {
        unknown(k, path, "path, durability, quick_check_ms");
      }
    }
  }

  void policy(const toml::table& table, const std::string& base) {
    for (auto&& [k, v] : table) {
      const std::string path = key_path_append(base, k.str());
      if (k.str() == "mode") {
        if (auto m = choice(v, path, kPolicyModes)) config_.policy_mode = *m;
      } else {
        unknown(k, path, "mode");
      }
    }
  }

  void log(const toml::table& table, const std::string& base) {
    for (auto&& [k, v] : table) {
      const std::string path = key_path_append(base, k.str());
      if (k.str() == "level") {
        if (auto l = choice(v, path, kLogLevels)) config_.log_level = *l;
      } else if (k.str() == "format") {
        if (auto f = choice(v, path, kLogFormats)) config_.log_format = *f;
      } else {
        unknown(k, path, "level, format");
      }
    }
  }

  void credentials(const toml::table& table, const std::string& base) {
    for (auto&& [k, v] : table) {
      const std::string path = key_path_append(base, k.str());
      if (k.str() == "master_key_file") {
        if (auto p = path_value(v, path)) config_.master_key_file = *p;
      } else {
        unknown(k, path, "master_key_file");
      }
    }
  }

  void provider(const std::string& name, const toml::table& table, const std::string& base) {
    ProviderConfig& p = config_.providers[name];
    const bool both = table.contains("credential") && table.contains("api_key_env");
    for (auto&& [k, v] : table) {
      const std::string_view key = k.str();
      const std::string path = key_path_append(base, key);
      if (key == "kind") {
        if (auto kind = choice(v, path, kKinds)) p.kind = *kind;
      } else if (key == "base_url") {
        auto url = string_value(v, path, false);
        if (url && !is_http_url(*url)) {
          config_.origins.erase(path);
          problem(codes::kConfigBadValue, v.source(), path, "must be an http:// or https:// URL");
        } else if (url) {
          p.base_url = *url;
        }
      } else if (key == "credential" || key == "api_key_env") {
        credential_ref(p.credential, key, "api_key_env", v, path, both);
      } else if (key == "headers") {
        if (const toml::table* t = table_value(v, path)) {
          string_map(
              *t, path, p.headers, [](const std::string& header, const std::string& value) -> const char* {
                if (!is_header_name(header)) return "is not an HTTP header name";
                const std::string lower = lowercase(header);
                if (std::find(kCredentialHeaders.begin(), kCredentialHeaders.end(), lower) !=
                    kCredentialHeaders.end()) {
                  return "carries credentials: use the provider's credential or api_key_env instead";
                }
                if (value.size() > kMaxHeaderValueBytes || value.find_first_of("\r\n") != std::string::npos) {
                  return "a header value must be one line of at most 8 KiB";
                }
                return nullptr;
              });
        }
      } else if (key == "connect_timeout_ms") {
        if (auto n = integer(v, path, 1, 600'000)) p.connect_timeout_ms = *n;
      } else if (key == "idle_timeout_ms") {
        if (auto n = integer(v, path, 1, 3'600'000)) p.idle_timeout_ms = *n;
      } else if (key == "max_retries") {
        if (auto n = integer(v, path, 0, 20)) p.max_retries = *n;
      } else if (key == "stop_with_tool_calls") {
        if (auto b = choice(v, path, kStopWithToolCalls)) p.stop_with_tool_calls_is_tool_use = *b;
      } else {
        unknown(k, path,
                "kind, base_url, credential, api_key_env, headers, connect_timeout_ms, idle_timeout_ms, "
                "max_retries, stop_with_tool_calls");
      }
    }
  }

  // `credential = "id"` or `api_key_env = "VAR"` (an MCP server's: `credential_env`); a later layer's choice
  // replaces an earlier one.
  void credential_ref(CredentialRef& out, std::string_view key, std::string_view env_key,
                      const toml::node& node, const std::string& path, bool both) {
    auto name = string_value(node, path, false);
    if (!name) return;
    const bool stored = key == "credential";
    const std::string either = "set either credential or " + std::string(env_key) + ", not both";
    const char* why = nullptr;
    if (both) {
      why = either.c_str();
    } else if (looks_like_secret(*name)) {
      why = stored ? "looks like a key itself: store it with `keel credential add` and name its id here"
                   : "looks like a key itself: name the environment variable that holds it";
    } else if (stored ? !is_credential_id(*name) : !is_variable_name(*name)) {
      why = stored ? "a credential id has 1 to 128 letters, digits, '.', '_' or '-'"
                   : "is not an environment variable name";
    }
    if (why != nullptr) {
      config_.origins.erase(path);
      problem(codes::kConfigBadValue, node.source(), path, why);
      return;
    }
    out = CredentialRef{stored ? CredentialRef::Source::kStored : CredentialRef::Source::kEnvironment, *name};
    // The other way of naming a key no longer applies; its origin would mislead.
    const std::string other =
        path.substr(0, path.rfind('.') + 1) + (stored ? std::string(env_key) : std::string("credential"));
    config_.origins.erase(other);
  }

  void model(const std::string& name, const toml::table& table, const std::string& base) {
    ModelConfig& m = config_.models[name];
    constexpr int64_t kMaxTokens = 100'000'000;
    for (auto&& [k, v] : table) {
      const std::string_view key = k.str();
      const std::string path = key_path_append(base, key);
      if (key == "provider") {
        if (auto s = string_value(v, path, false)) m.provider = *s;
      } else if (key == "id") {
        if (auto s = string_value(v, path, false)) m.model_id = *s;
      } else if (key == "tool_use") {
        if (auto b = boolean(v, path)) m.capabilities.tool_use = *b;
      } else if (key == "vision") {
        if (auto b = boolean(v, path)) m.capabilities.vision = *b;
      } else if (key == "reasoning") {
        if (auto b = boolean(v, path)) m.capabilities.reasoning = *b;
      } else if (key == "context_window") {
        if (auto n = integer(v, path, 1, kMaxTokens)) m.capabilities.context_window_tokens = *n;
      } else if (key == "max_output") {
        if (auto n = integer(v, path, 1, kMaxTokens)) m.capabilities.max_output_tokens = *n;
      } else if (key == "price") {
        if (const toml::table* t = table_value(v, path)) price(m.price, *t, path);
      } else {
        unknown(k, path, "provider, id, tool_use, vision, reasoning, context_window, max_output, price");
      }
    }
  }

  void price(providers::ModelPrice& price, const toml::table& table, const std::string& base) {
    constexpr double kMaxPrice = 1'000'000;
    for (auto&& [k, v] : table) {
      const std::string_view key = k.str();
      const std::string path = key_path_append(base, key);
      std::optional<double> n;
      if (key == "input" || key == "output" || key == "cached_input" || key == "reasoning") {
        n = number(v, path, 0, kMaxPrice, false);
      } else {
        unknown(k, path, "input, output, cached_input, reasoning (US dollars per million tokens)");
        continue;
      }
      if (!n) continue;
      if (key == "input") price.input_per_million = *n;
      if (key == "output") price.output_per_million = *n;
      if (key == "cached_input") price.cached_input_per_million = *n;
      if (key == "reasoning") price.reasoning_output_per_million = *n;
    }
  }

  // [mcp]: only [mcp.servers.NAME] so far.
  void mcp(const toml::table& table, const std::string& base) {
    for (auto&& [k, v] : table) {
      const std::string path = key_path_append(base, k.str());
      if (k.str() == "servers") {
        named_tables(v, path, &Applier::mcp_server);
      } else {
        unknown(k, path, "servers");
      }
    }
  }

  void mcp_server(const std::string& name, const toml::table& table, const std::string& base) {
    McpServerConfig& server = config_.mcp_servers[name];
    const bool both = table.contains("command") && table.contains("url");
    const bool both_credentials = table.contains("credential") && table.contains("credential_env");
    for (auto&& [k, v] : table) {
      const std::string_view key = k.str();
      const std::string path = key_path_append(base, key);
      if ((key == "command" || key == "url") && both) {
        problem(codes::kConfigBadValue, v.source(), path, "set either command or url, not both");
      } else if (key == "command") {
        if (auto s = string_value(v, path, false)) {
          server.command = *s;
          server.url.clear();
          config_.origins.erase(key_path_append(base, "url"));
        }
      } else if (key == "url") {
        auto url = string_value(v, path, false);
        if (url && !is_http_url(*url)) {
          config_.origins.erase(path);
          problem(codes::kConfigBadValue, v.source(), path, "must be an http:// or https:// URL");
        } else if (url) {
          server.url = *url;
          server.command.clear();
          config_.origins.erase(key_path_append(base, "command"));
        }
      } else if (key == "args") {
        string_list(v, path, server.args);
      } else if (key == "env") {
        if (const toml::table* t = table_value(v, path)) {
          string_map(*t, path, server.env,
                     [](const std::string& variable, const std::string& value) -> const char* {
                       if (!is_variable_name(variable)) return "is not an environment variable name";
                       // The file holds no secrets (config.h): a server that needs a key reads it from the
                       // environment keel runs in, which it inherits.
                       if (looks_like_secret(value)) {
                         return "looks like a secret: keel passes its own environment to the server, so set "
                                "the variable "
                                "there instead of in the file";
                       }
                       return nullptr;
                     });
        }
      } else if (key == "cwd") {
        if (auto p = path_value(v, path)) server.cwd = *p;
      } else if (key == "credential" || key == "credential_env") {
        credential_ref(server.credential, key, "credential_env", v, path, both_credentials);
      } else if (key == "oauth") {
        if (auto b = boolean(v, path)) server.oauth = *b;
      } else if (key == "oauth_client_id") {
        if (auto s = string_value(v, path, false)) server.oauth_client_id = *s;
      } else if (key == "trusted") {
        if (auto b = boolean(v, path)) server.trusted = *b;
      } else if (key == "enabled") {
        if (auto b = boolean(v, path)) server.enabled = *b;
      } else if (key == "start") {
        if (auto lazy = choice(v, path, kMcpStarts)) server.lazy = *lazy;
      } else if (key == "connect_timeout_ms") {
        if (auto n = integer(v, path, 100, 600'000)) server.connect_timeout_ms = *n;
      } else if (key == "call_idle_timeout_ms") {
        if (auto n = integer(v, path, 100, 3'600'000)) server.call_idle_timeout_ms = *n;
      } else if (key == "call_max_ms") {
        if (auto n = integer(v, path, 100, 86'400'000)) server.call_max_ms = *n;
      } else {
        unknown(k, path,
                "command, args, env, cwd, url, credential, credential_env, oauth, oauth_client_id, trusted, "
                "enabled, start, connect_timeout_ms, call_idle_timeout_ms, call_max_ms");
      }
    }
  }

  void browser(const toml::table& table, const std::string& base) {
    BrowserConfig& out = config_.browser;
    for (auto&& [k, v] : table) {
      const std::string_view key = k.str();
      const std::string path = key_path_append(base, key);
      if (key == "enabled") {
        if (auto b = boolean(v, path)) out.enabled = *b;
      } else if (key == "executable") {
        browser_executable(v, path);
      } else if (key == "headless") {
        if (auto b = boolean(v, path)) out.headless = *b;
      } else if (key == "profile") {
        browser_profile(v, path);
      } else if (key == "attach") {
        auto url = string_value(v, path, true);
        if (url && !url->empty() && !is_attach_url(*url)) {
          config_.origins.erase(path);
          problem(
              codes::kConfigBadValue, v.source(), path,
              "must be \"\" (launch a browser), an http:// endpoint such as \"http://127.0.0.1:9222\" or a "
              "ws:// URL");
        } else if (url) {
          out.attach = *url;
        }
      } else if (key == "attach_context") {
        if (auto c = choice(v, path, kAttachContexts)) out.attach_context = *c;
      } else if (key == "window_size") {
        auto text = string_value(v, path, false);
        if (!text) continue;
        if (auto size = parse_window_size(*text)) {
          out.window_width = size->first;
          out.window_height = size->second;
        } else {
          config_.origins.erase(path);
          problem(codes::kConfigBadValue, v.source(), path,
                  "expected \"<width>x<height>\" in pixels, each 100 to 10000, such as \"1280x800\"");
        }
      } else if (key == "no_sandbox") {
        browser_no_sandbox(v, path);
      } else if (key == "extra_args") {
        browser_extra_args(v, path);
      } else if (key == "command_timeout_ms") {
        if (auto n = integer(v, path, 100, 600'000)) out.command_timeout_ms = *n;
      } else if (key == "navigation_timeout_ms") {
        if (auto n = integer(v, path, 100, 600'000)) out.navigation_timeout_ms = *n;
      } else if (key == "screenshot_timeout_ms") {
        if (auto n = integer(v, path, 100, 600'000)) out.screenshot_timeout_ms = *n;
      } else if (key == "settle_quiet_ms") {
        if (auto n = integer(v, path, 0, 10'000)) out.settle_quiet_ms = *n;
      } else if (key == "snapshot_max_chars") {
        if (auto n = integer(v, path, 1'000, 1'000'000)) out.snapshot_max_chars = *n;
      } else if (key == "max_message_mb") {
        if (auto n = integer(v, path, 1, 1'024)) out.max_message_mb = *n;
      } else if (key == "downloads_dir") {
        // "" is the default (data_dir/browser/downloads), set again by a later layer.
        if (const auto* s = v.as_string(); s != nullptr && s->get().empty()) {
          record(path, v);
          out.downloads_dir.clear();
        } else if (auto p = path_value(v, path)) {
          out.downloads_dir = *p;
        }
      } else {
        unknown(k, path,
                "enabled, executable, headless, profile, attach, attach_context, window_size, no_sandbox, "
                "extra_args, command_timeout_ms, navigation_timeout_ms, screenshot_timeout_ms, "
                "settle_quiet_ms, snapshot_max_chars, max_message_mb, downloads_dir");
      }
    }
  }

  void skills(const toml::table& table, const std::string& base) {
    SkillsConfig& out = config_.skills;
    for (auto&& [k, v] : table) {
      const std::string_view key = k.str();
      const std::string path = key_path_append(base, key);
      if (key == "enabled") {
        if (auto b = boolean(v, path)) out.enabled = *b;
      } else if (key == "user_dir" || key == "project_dir") {
        std::filesystem::path& dir = key == "user_dir" ? out.user_dir : out.project_dir;
        // "" turns that directory off.
        if (const auto* s = v.as_string(); s != nullptr && s->get().empty()) {
          record(path, v);
          dir.clear();
        } else if (auto p = path_value(v, path)) {
          dir = *p;
        }
      } else {
        unknown(k, path, "enabled, user_dir, project_dir");
      }
    }
  }

  // A bare name is looked up on PATH at launch; anything with a slash is a path (relative to the file).
  void browser_executable(const toml::node& node, const std::string& path) {
    const auto* s = node.as_string();
    if (s != nullptr && !s->get().empty() && s->get().find('/') == std::string::npos) {
      if (auto name = string_value(node, path, false)) config_.browser.executable = *name;
      return;
    }
    if (auto p = path_value(node, path)) config_.browser.executable = p->string();
  }

  // "temporary", "persistent", or the profile's directory (absolute, or ~/...).
  void browser_profile(const toml::node& node, const std::string& path) {
    auto text = string_value(node, path, false);
    if (!text) return;
    BrowserConfig& out = config_.browser;
    if (*text == "temporary" || *text == "persistent") {
      out.profile =
          *text == "temporary" ? BrowserConfig::Profile::kTemporary : BrowserConfig::Profile::kPersistent;
      out.profile_dir.clear();
      return;
    }
    if (!text->starts_with("/") && !text->starts_with("~/")) {
      config_.origins.erase(path);
      problem(codes::kConfigBadValue, node.source(), path,
              "expected \"temporary\", \"persistent\" or the profile directory as an absolute path");
      return;
    }
    if (auto p = path_value(node, path)) {
      out.profile = BrowserConfig::Profile::kPath;
      out.profile_dir = *p;
    }
  }

  // "auto" (only when keel runs as root, where Chromium's sandbox cannot start), or a boolean.
  void browser_no_sandbox(const toml::node& node, const std::string& path) {
    if (const auto* b = node.as_boolean()) {
      record(path, node);
      config_.browser.no_sandbox = b->get() ? BrowserConfig::NoSandbox::kYes : BrowserConfig::NoSandbox::kNo;
    } else if (const auto* s = node.as_string(); s != nullptr && s->get() == "auto") {
      record(path, node);
      config_.browser.no_sandbox = BrowserConfig::NoSandbox::kAuto;
    } else {
      problem(codes::kConfigBadValue, node.source(), path, "expected \"auto\", true or false");
    }
  }

  void browser_extra_args(const toml::node& node, const std::string& path) {
    std::vector<std::string> args;
    const size_t reported = problems_.size();
    string_list(node, path, args);
    if (problems_.size() != reported) return;  // not a list of strings
    for (const std::string& arg : args) {
      const std::string_view name = std::string_view(arg).substr(0, arg.find('='));
      const bool reserved = std::find(kReservedBrowserSwitches.begin(), kReservedBrowserSwitches.end(),
                                      name) != kReservedBrowserSwitches.end();
      if (!arg.starts_with("--") || reserved) {
        config_.origins.erase(path);
        problem(codes::kConfigBadValue, node.source(), path,
                arg.starts_with("--")
                    ? std::string(name) + " is set by keel itself and cannot be changed here"
                    : "each argument must be a --switch");
        return;
      }
    }
    config_.browser.extra_args = std::move(args);
  }

  void string_list(const toml::node& node, const std::string& path, std::vector<std::string>& out) {
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      wrong_type(node, path, "an array of strings");
      return;
    }
    std::vector<std::string> values;
    for (const toml::node& element : *array) {
      const auto* s = element.as_string();
      if (s == nullptr) {
        wrong_type(element, path, "an array of strings");
        return;
      }
      values.push_back(s->get());
    }
    out = std::move(values);
    record(path, node);
  }

  const LayerSource& source_;
  Config& config_;
  std::vector<ConfigProblem>& problems_;
  const bool file_;  // only files have meaningful lines and columns
};

// `text` as a TOML basic string literal.
std::string toml_string(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\u00";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Parses the one-line document `key = value`; nullopt when it is not TOML.
std::optional<toml::table> parse_line(std::string_view key, std::string_view value) {
  try {
    return toml::parse(std::string(key) + " = " + std::string(value));
  } catch (const toml::parse_error&) {
    return std::nullopt;
  }
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Reports a layer's problems in the order of the document (toml++ visits keys in sorted order).
void report(std::vector<ConfigProblem> found, ConfigProblems& problems) {
  std::stable_sort(found.begin(), found.end(), [](const ConfigProblem& a, const ConfigProblem& b) {
    return std::tie(a.origin.line, a.origin.column) < std::tie(b.origin.line, b.origin.column);
  });
  for (ConfigProblem& p : found) problems.add(std::move(p));
}

}  // namespace

void apply_toml_document(std::string_view text, const LayerSource& source, Config& config,
                         ConfigProblems& problems) {
  std::vector<ConfigProblem> found;
  Applier applier(source, config, found);
  try {
    const toml::table document = toml::parse(text, std::string(source.name));
    applier.root(document);
  } catch (const toml::parse_error& error) {
    applier.parse_error(error);
  }
  report(std::move(found), problems);
}

void apply_toml_value(std::string_view key_path, std::string_view value_text, bool as_string,
                      const LayerSource& source, Config& config, ConfigProblems& problems) {
  const ValueOrigin origin{source.layer, source.name, 0, 0};
  if (!as_string && value_text.find_first_of("\r\n") != std::string_view::npos) {
    problems.add(ConfigProblem{codes::kConfigBadValue, origin, std::string(key_path), "must be one line"});
    return;
  }
  std::optional<toml::table> line;
  if (!as_string) line = parse_line(key_path, value_text);
  // Not a TOML value: a string, so the key's own type check says what was expected.
  if (!line) line = parse_line(key_path, toml_string(value_text));
  if (!line) {
    problems.add(ConfigProblem{codes::kConfigParse, origin, std::string(key_path), "is not a TOML key"});
    return;
  }
  std::vector<ConfigProblem> found;
  Applier(source, config, found).root(*line);
  report(std::move(found), problems);
}

void apply_override(std::string_view argument, const LayerSource& source, Config& config,
                    ConfigProblems& problems) {
  const ValueOrigin origin{source.layer, source.name, 0, 0};
  if (argument.find_first_of("\r\n") != std::string_view::npos) {
    problems.add(ConfigProblem{codes::kConfigParse, origin, "", "a --set argument must be one line"});
    return;
  }
  const size_t equals = argument.find('=');
  const std::string_view key = equals == std::string_view::npos ? "" : trim(argument.substr(0, equals));
  if (key.empty()) {
    problems.add(ConfigProblem{codes::kConfigParse, origin, "", "expected --set key.path=value"});
    return;
  }
  const std::string_view value = trim(argument.substr(equals + 1));
  std::optional<toml::table> line = parse_line(key, value);
  if (!line) line = parse_line(key, toml_string(value));
  if (!line) {
    const std::string shown = looks_like_secret(key) ? "(redacted: looks like a key)" : std::string(key);
    problems.add(ConfigProblem{codes::kConfigParse, origin, "", shown + " is not a TOML key path"});
    return;
  }
  std::vector<ConfigProblem> found;
  Applier(source, config, found).root(*line);
  report(std::move(found), problems);
}

}  // namespace keel::config
