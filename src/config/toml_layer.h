// config/toml_layer.h — applies one configuration layer written in TOML to a Config.
//
// This is the only unit that includes toml++ (slow to compile; keep it out of headers). It knows every key
// keel accepts, checks each value's type and range, records the origin of every value it sets, and reports
// each unknown key, wrong type, bad enum value and out-of-range number as a ConfigProblem naming the
// layer's file, line, column and key path. A problem with one value does not stop the rest of the layer.
//
// Values are never repeated in problem messages (they might be keys pasted into the wrong place); names
// of providers, models and keys are, unless they look like keys themselves.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"

namespace keel::config {

struct LayerSource {
  ValueOrigin::Layer layer = ValueOrigin::Layer::kUserFile;
  std::string name;                 // the file's path, the variable's name, or "--set #N"
  std::filesystem::path base_dir;   // relative paths in this layer resolve against it
  std::optional<std::string> home;  // expands a leading "~/" in paths
};

// Applies a whole TOML document (already checked for size and UTF-8). Syntax errors: config.parse at the
// line and column toml++ reports (toml++ stops at the first one).
void apply_toml_document(std::string_view text, const LayerSource& source, Config& config,
                         ConfigProblems& problems);

// Sets one key: `value_text` is parsed as a TOML value, or taken verbatim when `as_string`. A KEEL_*
// variable arrives here. `key_path` must be a dotted key keel defines (the caller's table guarantees it).
void apply_toml_value(std::string_view key_path, std::string_view value_text, bool as_string,
                      const LayerSource& source, Config& config, ConfigProblems& problems);

// One `--set key.path=value` argument. The value is parsed as a TOML value; text that is not valid TOML
// is taken as a string (so `--set default_model=sonnet` works unquoted). A missing '=', a key that is not
// a TOML key, or a line break is config.parse.
void apply_override(std::string_view argument, const LayerSource& source, Config& config,
                    ConfigProblems& problems);

}  // namespace keel::config
