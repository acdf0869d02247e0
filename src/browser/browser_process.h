// browser/browser_process.h — starting a Chromium for keel, watching it, and making sure it goes away.
//
// launch() spawns Chromium with --remote-debugging-pipe (posix_spawn, never fork, since keel is threaded):
// the child's fd 3 reads keel's commands and its fd 4 writes replies and events; every other descriptor is
// closed in the child. The child leads its own process group, so the whole tree (renderers, GPU, zygotes)
// is signalled at once. It gets a fresh temporary profile ($TMPDIR/keel-browser-<keel pid>-XXXXXX/profile)
// unless LaunchSpec::profile_dir names one; its stderr goes to a file beside it (stderr_tail()). A persistent
// profile still held by a browser an earlier keel left behind is taken back from it, one held by anything
// else is refused (profile_lock.h).
//
// Guarantees: the destructor kills the group if the browser is still running, reaps it, and removes the
// temporary directory; a launch removes the temporary directories of keel processes that no longer exist.
// If keel dies without running the destructor, its end of the pipe closes and Chromium exits by itself.
//
// Threading: one owner; wait_exit() and terminate() run on the executor given to launch().
#pragma once

#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "browser/cdp/cdp_transport.h"
#include "keel/error.h"

namespace keel::browser {

struct LaunchSpec {
  std::filesystem::path executable = "/usr/bin/chromium";
  bool headless = true;
  std::filesystem::path profile_dir;  // empty = a temporary profile, removed with the process object
  std::optional<bool> no_sandbox;  // unset = only when running as root (Chromium refuses its sandbox there)
  bool disable_dev_shm = false;    // set by launch() when /dev/shm is too small for Chromium
  std::string window_size = "1280,800";
  std::vector<std::string> extra_args;
  size_t max_message_bytes = size_t{256} << 20;
};

// Chromium's arguments (without argv[0]) for `spec`, with `profile` as its user data directory. Pure.
std::vector<std::string> chromium_args(const LaunchSpec& spec, const std::filesystem::path& profile);

// Debian's /usr/bin/chromium is a shell script that reads /etc/chromium.d/ and execs the real binary; keel
// starts the real binary directly when `real` exists (same flags, no shell, no environment side effects).
std::filesystem::path resolve_chromium_executable(
    const std::filesystem::path& executable,
    const std::filesystem::path& real = "/usr/lib/chromium/chromium");

class BrowserProcess {
 public:
  // browser.launch_failed when the executable is missing or cannot be spawned, or a pipe, the profile or the
  // exit watch cannot be set up. Success means the process started, not that it will answer: the first CDP
  // reply (Browser.getVersion) tells.
  static Result<std::unique_ptr<BrowserProcess>> launch(boost::asio::any_io_executor ex, LaunchSpec spec);

  ~BrowserProcess();
  BrowserProcess(const BrowserProcess&) = delete;
  BrowserProcess& operator=(const BrowserProcess&) = delete;

  // The pipe to the browser, once (later calls return null).
  std::unique_ptr<CdpTransport> take_transport();

  pid_t pid() const { return pid_; }
  const std::filesystem::path& profile_dir() const { return profile_; }
  // The wait status (as waitpid gives it) once the process has exited and was reaped.
  std::optional<int> exit_status() const { return status_; }
  // Sends `signal` to the browser's whole process group, unless it was already reaped.
  void signal_group(int signal);
  // Completes when the browser process exits; returns its wait status. Not concurrently with terminate().
  boost::asio::awaitable<int> wait_exit();
  // SIGTERM to the group, SIGKILL after `grace`, then waits for the exit (send Browser.close first for a
  // clean shutdown). Returns the wait status.
  boost::asio::awaitable<int> terminate(std::chrono::milliseconds grace);
  // The last `max_bytes` of what the browser wrote to stderr (for error messages).
  std::string stderr_tail(size_t max_bytes) const;

  // "exited with status 0", "was killed by signal 9".
  static std::string describe_status(int wait_status);

 private:
  BrowserProcess(boost::asio::any_io_executor ex, pid_t pid, int pidfd);
  bool reap(bool block);

  pid_t pid_;
  boost::asio::posix::stream_descriptor exit_watch_;  // a pidfd: readable once the process has exited
  boost::asio::steady_timer kill_timer_;
  std::optional<int> status_;
  std::shared_ptr<bool> reaped_;  // read by a kill timer that may fire after this object is gone
  std::unique_ptr<CdpTransport> transport_;
  std::filesystem::path temp_dir_;  // removed in the destructor when set
  std::filesystem::path profile_;
  std::filesystem::path stderr_path_;
};

}  // namespace keel::browser
