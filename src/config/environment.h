// config/environment.h — how configuration and credentials read environment variables.
//
// Nothing in config/ calls getenv directly: loaders and resolvers take an EnvLookup, so tests pass a map
// and never change the process environment (which other threads may read at the same time).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace keel::config {

// The value of variable `name`, or nullopt when it is unset. An empty value counts as unset.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// The process environment (getenv). Reads only; safe as long as nobody calls setenv concurrently.
EnvLookup process_environment();

// A fixed environment (tests, or a snapshot of the process environment taken once).
EnvLookup fixed_environment(std::map<std::string, std::string, std::less<>> variables);

}  // namespace keel::config
