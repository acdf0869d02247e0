#include "browser/profile_lock.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <iterator>
#include <system_error>
#include <thread>
#include <vector>

#include "browser/browser_errors.h"

namespace keel::browser {
namespace {

namespace fs = std::filesystem;

constexpr std::chrono::milliseconds kPollInterval{20};

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Alive and not a zombie (a zombie has exited; only its parent's wait is missing).
bool process_lives(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  const std::string stat = read_all("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return !stat.empty();
  const char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

fs::path normal(const fs::path& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) absolute = path;
  fs::path result = absolute.lexically_normal();
  if (!result.has_filename() && result.has_parent_path()) result = result.parent_path();
  return result;
}

Error in_use(const fs::path& profile, const std::string& why) {
  return Error(codes::kBrowserLaunchFailed,
               "the browser profile " + profile.string() + " is in use by " + why +
                   "; keel does not share a profile with another browser. Close that browser, or set "
                   "[browser] profile to another folder (or \"temporary\")");
}

}  // namespace

std::optional<SingletonLockOwner> parse_singleton_lock(std::string_view target) {
  const size_t dash = target.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == target.size()) return std::nullopt;
  const std::string_view digits = target.substr(dash + 1);
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (ec != std::errc() || end != digits.data() + digits.size() || pid <= 0) return std::nullopt;
  return SingletonLockOwner{std::string(target.substr(0, dash)), pid};
}

bool chromium_of_profile(std::string_view cmdline, const fs::path& profile) {
  std::vector<std::string_view> args;
  size_t start = 0;
  while (start < cmdline.size()) {
    size_t end = cmdline.find('\0', start);
    if (end == std::string_view::npos) end = cmdline.size();
    args.push_back(cmdline.substr(start, end - start));
    start = end + 1;
  }
  if (args.empty()) return false;
  const std::string program = fs::path(std::string(args[0])).filename().string();
  if (program.find("chrom") == std::string::npos) return false;
  constexpr std::string_view kFlag = "--user-data-dir=";
  const fs::path wanted = normal(profile);
  for (std::string_view arg : args) {
    if (arg.starts_with(kFlag) && normal(fs::path(std::string(arg.substr(kFlag.size())))) == wanted)
      return true;
  }
  return false;
}

Result<void> claim_profile(const fs::path& profile, std::chrono::milliseconds wait) {
  std::error_code ec;
  const fs::path lock = profile / "SingletonLock";
  const fs::path target = fs::read_symlink(lock, ec);
  if (ec) return {};  // no lock (or not a symlink Chromium would honour)
  const std::optional<SingletonLockOwner> owner = parse_singleton_lock(target.string());
  if (!owner) return {};  // not Chromium's format: Chromium replaces it
  if (owner->host != this_host()) return fail(in_use(profile, "a browser on host " + owner->host));
  if (!process_lives(owner->pid)) return {};
  const std::string cmdline = read_all("/proc/" + std::to_string(owner->pid) + "/cmdline");
  if (!chromium_of_profile(cmdline, profile)) {
    return fail(
        in_use(profile, "process " + std::to_string(owner->pid) + ", which is not a browser keel started"));
  }
  // A leftover of an earlier keel: its whole tree goes (renderers and helpers share its group).
  if (::getpgid(owner->pid) == owner->pid) {
    ::kill(-owner->pid, SIGKILL);
  } else {
    ::kill(owner->pid, SIGKILL);
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (process_lives(owner->pid)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return fail(in_use(profile, "a browser keel left behind (pid " + std::to_string(owner->pid) +
                                      ") that did not exit when killed"));
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  return {};
}

}  // namespace keel::browser
