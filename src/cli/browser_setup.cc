#include "cli/browser_setup.h"

#include <string>

#include "browser/browser_state_file.h"

namespace keel::cli {

Result<browser::RuntimeOptions> browser_runtime_options(const config::BrowserConfig& config,
                                                        const std::filesystem::path& data_dir) {
  browser::RuntimeOptions options;
  if (!config.attach.empty()) {
    // The person's running browser (docs/browser.md "Attach to a running browser"); config validation has
    // refused a profile with it, and the launch options below stay unused.
    browser::AttachSpec attach;
    attach.endpoint = config.attach;
    attach.own_context = config.attach_context == config::BrowserConfig::AttachContext::kOwn;
    options.attach = std::move(attach);
  }
  options.launch.executable = config.executable;
  options.launch.headless = config.headless;
  switch (config.profile) {
    case config::BrowserConfig::Profile::kTemporary:
      break;
    case config::BrowserConfig::Profile::kPersistent:
    case config::BrowserConfig::Profile::kPath:
      options.launch.profile_dir = config.profile_dir;
      break;
  }
  switch (config.no_sandbox) {
    case config::BrowserConfig::NoSandbox::kAuto:
      break;
    case config::BrowserConfig::NoSandbox::kYes:
      options.launch.no_sandbox = true;
      break;
    case config::BrowserConfig::NoSandbox::kNo:
      options.launch.no_sandbox = false;
      break;
  }
  options.launch.window_size =
      std::to_string(config.window_width) + "," + std::to_string(config.window_height);
  options.launch.extra_args = config.extra_args;
  options.launch.max_message_bytes = static_cast<size_t>(config.max_message_mb) << 20;
  options.command_timeout = std::chrono::milliseconds(config.command_timeout_ms);
  options.navigation_timeout = std::chrono::milliseconds(config.navigation_timeout_ms);
  options.screenshot_timeout = std::chrono::milliseconds(config.screenshot_timeout_ms);
  options.settle_quiet = std::chrono::milliseconds(config.settle_quiet_ms);
  options.snapshot_max_chars = static_cast<size_t>(config.snapshot_max_chars);
  options.download_dir =
      config.downloads_dir.empty() ? data_dir / "browser" / "downloads" : config.downloads_dir;
  // The tabs a restart reopens (with a persistent profile, in the same profile: logins survive).
  options.state_file = browser::browser_state_path(data_dir);
  return options;
}

}  // namespace keel::cli
