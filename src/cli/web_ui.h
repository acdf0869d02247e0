// cli/web_ui.h — what `keel serve --listen` and `keel ui` need of the web interface around the server
// (docs/web.md): where the built app is, the URL a person opens, and opening it in their browser.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "keel/error.h"

namespace spdlog {
class logger;
}

namespace keel::cli {

// Where keel looks for the built app when --ui-dir is not given, in order: `<exe dir>/../share/keel/web`
// (installed: <prefix>/bin/keel), `<exe dir>/../web/dist` (the source tree's build/keel), and the source tree
// this binary was built from.
std::vector<std::filesystem::path> ui_dir_candidates();

// The directory to serve: `flag` when given (invalid_argument when it holds no index.html), else the first
// candidate holding an index.html, else an empty path (the server then says how to build the app).
Result<std::filesystem::path> find_ui_dir(const std::optional<std::filesystem::path>& flag,
                                          const std::vector<std::filesystem::path>& candidates);

// http://HOST:PORT/ with `#token=<one_time_token>` when given: a fragment, so neither sent to the server
// nor in a Referer.
std::string web_ui_url(const std::string& host, uint16_t port, const std::string& one_time_token);

// Whether a graphical display is there to open a page on ($DISPLAY or $WAYLAND_DISPLAY).
bool display_available();

// Starts `xdg-open url` without waiting for it (through a shell that puts it in the background and exits at
// once, so no child is left to reap); a failure is logged, never fatal.
void open_web_page(const std::string& url, spdlog::logger& log);

}  // namespace keel::cli
