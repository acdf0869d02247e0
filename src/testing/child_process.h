// testing/child_process.h — starting a child process for the crash tests: this process's environment with
// KEEL_FAILPOINTS set to what the test arms (or removed), so the child dies where the test wants it to.
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "keel/error.h"

namespace keel::testing {

// Starts `program` with `args` (after argv[0], which is `program`) and `actions` applied (may be null).
// Errors: internal, naming the program and posix_spawn's reason.
Result<pid_t> spawn_child(const std::string& program, const std::vector<std::string>& args,
                          const std::optional<std::string>& failpoints,
                          const posix_spawn_file_actions_t* actions);

// The same with exactly the environment `env` ("NAME=value" entries), for tests that control what the child
// inherits.
Result<pid_t> spawn_child_with_environment(const std::string& program, const std::vector<std::string>& args,
                                           std::vector<std::string> env,
                                           const posix_spawn_file_actions_t* actions);

// This process's environment for a keel child under test: without KEEL_* variables and proxy settings, and
// with XDG_CONFIG_HOME and XDG_DATA_HOME under `home`, so only the test's own files configure the child and
// its requests to 127.0.0.1 never go to a proxy.
std::vector<std::string> isolated_environment(const std::filesystem::path& home);

}  // namespace keel::testing
