// config/config_loader.h — builds a Config from its layers, in precedence order (docs/configuration.md):
//
//   built-in defaults < user file < project file < KEEL_* variables < --set overrides
//
// A later layer overrides single values (a project file that sets providers.anthropic.base_url keeps the
// rest of the user's anthropic provider). Every value records its origin. Loading never stops at the first
// problem: every file, variable and override is read and checked, and all problems are reported together
// (bounded by ConfigProblems::kMaxProblems), each naming file, line, column and key path.
//
// Errors (one Error whose code is the first problem's): config.parse, config.unknown_key, config.bad_value,
// config.missing_value, config.missing_reference, config.not_utf8, config.too_large, config.read_failed.
// Messages never repeat configuration values except names (config_errors.h).
//
// Reads files only; writes nothing. Thread-compatible (no shared state).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/environment.h"
#include "keel/error.h"

namespace keel::config {

// Larger configuration files are refused (config.too_large) before they are parsed.
inline constexpr size_t kMaxConfigFileBytes = 1024 * 1024;

struct ConfigSources {
  std::optional<std::filesystem::path> user_file;     // read when set; a missing file is config.read_failed
  std::optional<std::filesystem::path> project_file;  // likewise
  EnvLookup env;                       // KEEL_* variables, HOME and XDG_* for defaults; empty = none
  std::filesystem::path working_dir;   // relative paths from variables and --set resolve against it
  std::vector<std::string> overrides;  // --set arguments, "key.path=value", applied in order
};

// The documented KEEL_* variables and the key each sets. Values are taken as strings, except the
// variables of non-string keys (KEEL_TOKEN_BUDGET), which are parsed as TOML values.
struct EnvironmentKey {
  const char* variable;
  const char* key_path;
  bool is_string;
};
const std::vector<EnvironmentKey>& environment_keys();

// The standard sources: the user file $XDG_CONFIG_HOME/keel/config.toml (or ~/.config/keel/config.toml)
// and the nearest .keel/config.toml in `working_dir` (made absolute) or one of its parents, each only if it
// exists.
ConfigSources discover_sources(EnvLookup env, std::filesystem::path working_dir,
                               std::vector<std::string> overrides);

// Everything one load found: the config as far as it could be built, and its problems.
struct ConfigLoad {
  Config config;
  ConfigProblems problems;
};
ConfigLoad load_config_with_problems(const ConfigSources& sources);

// The config, or one Error listing every problem.
Result<Config> load_config(const ConfigSources& sources);

}  // namespace keel::config
