// testing/child_process.cc — see child_process.h.
#include "testing/child_process.h"

#include <cctype>
#include <cstring>
#include <string_view>

#include "keel/error_codes.h"

extern char** environ;

namespace keel::testing {

Result<pid_t> spawn_child(const std::string& program, const std::vector<std::string>& args,
                          const std::optional<std::string>& failpoints,
                          const posix_spawn_file_actions_t* actions) {
  constexpr std::string_view kFailPoints = "KEEL_FAILPOINTS=";
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!std::string_view(*e).starts_with(kFailPoints)) env.emplace_back(*e);
  }
  if (failpoints) env.push_back(std::string(kFailPoints) + *failpoints);
  return spawn_child_with_environment(program, args, std::move(env), actions);
}

Result<pid_t> spawn_child_with_environment(const std::string& program, const std::vector<std::string>& args,
                                           std::vector<std::string> env,
                                           const posix_spawn_file_actions_t* actions) {
  std::vector<std::string> all_args = {program};
  all_args.insert(all_args.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all_args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, program.c_str(), actions, nullptr, argv.data(), envp.data());
  if (spawned != 0) return fail(codes::kInternal, "posix_spawn " + program + ": " + std::strerror(spawned));
  return pid;
}

std::vector<std::string> isolated_environment(const std::filesystem::path& home) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    if (name.starts_with("KEEL_") || name == "XDG_CONFIG_HOME" || name == "XDG_DATA_HOME") continue;
    std::string lower(name);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.ends_with("_proxy")) continue;
    env.emplace_back(entry);
  }
  env.push_back("XDG_CONFIG_HOME=" + (home / "config").string());
  env.push_back("XDG_DATA_HOME=" + (home / "data").string());
  return env;
}

}  // namespace keel::testing
