#include "config/config_loader.h"

#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>

#include "config/config_errors.h"
#include "config/toml_layer.h"

namespace keel::config {
namespace {

namespace fs = std::filesystem;
using Layer = ValueOrigin::Layer;

// The byte offset of the first byte that does not belong to well-formed UTF-8 (no overlong forms, no
// surrogates, nothing above U+10FFFF), or npos.
size_t invalid_utf8_at(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (b < 0x80) {
      ++i;
      continue;
    } else if (b >= 0xC2 && b <= 0xDF) {
      length = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      length = 3;
      if (b == 0xE0) low = 0xA0;   // overlong
      if (b == 0xED) high = 0x9F;  // surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      length = 4;
      if (b == 0xF0) low = 0x90;   // overlong
      if (b == 0xF4) high = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if (c < (k == 1 ? low : 0x80) || c > (k == 1 ? high : 0xBF)) return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

// Line and column (both from 1, the column in characters) of byte `offset`, which follows valid UTF-8.
std::pair<uint32_t, uint32_t> position_of(std::string_view text, size_t offset) {
  uint32_t line = 1;
  uint32_t column = 1;
  for (size_t i = 0; i < offset; ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b == '\n') {
      ++line;
      column = 1;
    } else if ((b & 0xC0) != 0x80) {
      ++column;
    }
  }
  return {line, column};
}

std::optional<std::string> read_config_file(const fs::path& path, Layer layer, ConfigProblems& problems) {
  const ValueOrigin origin{layer, path.string(), 0, 0};
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::is_regular_file(status)) {
    problems.add(ConfigProblem{codes::kConfigReadFailed, origin, "",
                               ec ? "cannot be read: " + ec.message() : "is not a regular file"});
    return std::nullopt;
  }
  const uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxConfigFileBytes) {
    problems.add(ConfigProblem{codes::kConfigTooLarge, origin, "",
                               "is " + std::to_string(size) +
                                   " bytes; a configuration file may have at most " +
                                   std::to_string(kMaxConfigFileBytes)});
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::string text;
  if (in) {
    // Bounded read: the file may have grown since file_size().
    text.resize(kMaxConfigFileBytes + 1);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
  }
  if (!in && !in.eof()) {
    problems.add(ConfigProblem{codes::kConfigReadFailed, origin, "", "cannot be read"});
    return std::nullopt;
  }
  if (text.size() > kMaxConfigFileBytes) {
    problems.add(ConfigProblem{codes::kConfigTooLarge, origin, "",
                               "has more than " + std::to_string(kMaxConfigFileBytes) + " bytes"});
    return std::nullopt;
  }
  if (const size_t bad = invalid_utf8_at(text); bad != std::string_view::npos) {
    ValueOrigin at = origin;
    std::tie(at.line, at.column) = position_of(text, bad);
    problems.add(
        ConfigProblem{codes::kConfigNotUtf8, at, "",
                      "is not UTF-8 text (byte " + std::to_string(bad) + " is not part of a character)"});
    return std::nullopt;
  }
  return text;
}

}  // namespace

const std::vector<EnvironmentKey>& environment_keys() {
  static const std::vector<EnvironmentKey> kKeys = {
      {"KEEL_DATA_DIR", "data_dir", true},
      {"KEEL_STORE_PATH", "store.path", true},
      {"KEEL_DURABILITY", "store.durability", true},
      {"KEEL_MODEL", "default_model", true},
      {"KEEL_TASK_MODEL", "task_model", true},
      {"KEEL_TOKEN_BUDGET", "token_budget", false},
      {"KEEL_POLICY_MODE", "policy.mode", true},
      {"KEEL_LOG_LEVEL", "log.level", true},
      {"KEEL_LOG_FORMAT", "log.format", true},
      {"KEEL_MASTER_KEY_FILE", "credentials.master_key_file", true},
  };
  return kKeys;
}

ConfigSources discover_sources(EnvLookup env, fs::path working_dir, std::vector<std::string> overrides) {
  ConfigSources sources;
  std::error_code ec;
  // Walking up needs an absolute path ("." has no parent to search).
  if (fs::path absolute = fs::absolute(working_dir, ec); !ec) working_dir = std::move(absolute);
  working_dir = working_dir.lexically_normal();
  const std::optional<std::string> xdg = env ? env("XDG_CONFIG_HOME") : std::nullopt;
  const std::optional<std::string> home = env ? env("HOME") : std::nullopt;
  std::optional<fs::path> user;
  // The XDG base directory spec ignores a relative XDG_CONFIG_HOME.
  if (xdg && fs::path(*xdg).is_absolute()) {
    user = fs::path(*xdg) / "keel" / "config.toml";
  } else if (home) {
    user = fs::path(*home) / ".config" / "keel" / "config.toml";
  }
  if (user && fs::exists(*user, ec)) sources.user_file = user->lexically_normal();
  for (fs::path dir = working_dir;; dir = dir.parent_path()) {
    const fs::path candidate = dir / ".keel" / "config.toml";
    if (fs::exists(candidate, ec)) {
      sources.project_file = candidate;
      break;
    }
    if (dir == dir.parent_path() || dir.empty()) break;
  }
  sources.env = std::move(env);
  sources.working_dir = std::move(working_dir);
  sources.overrides = std::move(overrides);
  return sources;
}

ConfigLoad load_config_with_problems(const ConfigSources& sources) {
  ConfigLoad load{default_config(sources.env, sources.working_dir), {}};
  const std::optional<std::string> home = sources.env ? sources.env("HOME") : std::nullopt;

  const std::pair<const std::optional<fs::path>*, Layer> files[] = {
      {&sources.user_file, Layer::kUserFile}, {&sources.project_file, Layer::kProjectFile}};
  for (const auto& [file, layer] : files) {
    if (!file->has_value()) continue;
    const fs::path& path = **file;
    std::optional<std::string> text = read_config_file(path, layer, load.problems);
    if (!text) continue;
    // Relative paths in a file mean "next to this file", wherever keel was started.
    const LayerSource source{layer, path.string(), path.parent_path(), home};
    apply_toml_document(*text, source, load.config, load.problems);
  }

  if (sources.env) {
    for (const EnvironmentKey& key : environment_keys()) {
      const std::optional<std::string> value = sources.env(key.variable);
      if (!value) continue;
      const LayerSource source{Layer::kEnvironment, key.variable, sources.working_dir, home};
      if (invalid_utf8_at(*value) != std::string_view::npos) {
        load.problems.add(ConfigProblem{codes::kConfigNotUtf8,
                                        ValueOrigin{Layer::kEnvironment, key.variable, 0, 0}, key.key_path,
                                        "is not UTF-8 text"});
        continue;
      }
      apply_toml_value(key.key_path, *value, key.is_string, source, load.config, load.problems);
    }
  }

  for (size_t i = 0; i < sources.overrides.size(); ++i) {
    const LayerSource source{Layer::kCommandLine, "--set #" + std::to_string(i + 1), sources.working_dir,
                             home};
    if (invalid_utf8_at(sources.overrides[i]) != std::string_view::npos) {
      load.problems.add(ConfigProblem{codes::kConfigNotUtf8,
                                      ValueOrigin{Layer::kCommandLine, source.name, 0, 0}, "",
                                      "is not UTF-8 text"});
      continue;
    }
    apply_override(sources.overrides[i], source, load.config, load.problems);
  }

  finalize_config(load.config, load.problems);
  return load;
}

Result<Config> load_config(const ConfigSources& sources) {
  ConfigLoad load = load_config_with_problems(sources);
  if (!load.problems.empty()) return std::unexpected(load.problems.to_error());
  return std::move(load.config);
}

}  // namespace keel::config
