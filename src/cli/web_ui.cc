#include "cli/web_ui.h"

#include <fcntl.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "keel/error_codes.h"

extern char** environ;

namespace keel::cli {

namespace fs = std::filesystem;

std::vector<fs::path> ui_dir_candidates() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path().parent_path() / "share" / "keel" / "web");
    candidates.push_back(exe.parent_path().parent_path() / "web" / "dist");
  }
#ifdef KEEL_SOURCE_DIR
  candidates.push_back(fs::path(KEEL_SOURCE_DIR) / "web" / "dist");
#endif
  return candidates;
}

Result<fs::path> find_ui_dir(const std::optional<fs::path>& flag, const std::vector<fs::path>& candidates) {
  std::error_code ec;
  if (flag) {
    if (!fs::is_regular_file(*flag / "index.html", ec)) {
      return fail(codes::kInvalidArgument, "--ui-dir " + flag->string() +
                                               " holds no index.html (build the web app: cd web && npm ci && "
                                               "npm run build)");
    }
    return *flag;
  }
  for (const fs::path& dir : candidates) {
    if (fs::is_regular_file(dir / "index.html", ec)) return dir;
  }
  return fs::path();
}

std::string web_ui_url(const std::string& host, uint16_t port, const std::string& one_time_token) {
  const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  std::string url = "http://" + shown + ":" + std::to_string(port) + "/";
  if (!one_time_token.empty()) url += "#token=" + one_time_token;
  return url;
}

bool display_available() {
  for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return true;
  }
  return false;
}

void open_web_page(const std::string& url, spdlog::logger& log) {
  // The URL is an argument ($1), never part of the script.
  const char* script = "command -v xdg-open >/dev/null 2>&1 || exit 127; xdg-open \"$1\" >/dev/null 2>&1 &";
  std::string sh = "/bin/sh";
  std::string dash_c = "-c";
  std::string script_text = script;
  std::string name = "keel-open";
  std::string argument = url;
  char* argv[] = {sh.data(), dash_c.data(), script_text.data(), name.data(), argument.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, "/bin/sh", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    log.warn("cannot open the web interface in a browser: {}", std::strerror(spawned));
    return;
  }
  // The shell exits as soon as xdg-open is in the background.
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    log.warn("cannot open the web interface in a browser: xdg-open is not installed; open {} yourself", url);
  }
}

}  // namespace keel::cli
