// browser/browser_process.cc — see browser_process.h.
#include "browser/browser_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <system_error>
#include <utility>

#include "browser/browser_errors.h"
#include "browser/cdp/pipe_transport.h"
#include "browser/profile_lock.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): posix_spawn passes it on

namespace keel::browser {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

constexpr char kTempPrefix[] = "keel-browser-";
constexpr unsigned long long kSmallDevShm = 512ull << 20;  // below this Chromium's shared memory runs out
// How long a launch waits for a killed leftover browser of the same profile to go away.
constexpr std::chrono::seconds kLeftoverExitWait{5};

// Owns a file descriptor until release().
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

Error launch_error(const std::string& what, int err) {
  return Error(codes::kBrowserLaunchFailed, what + ": " + std::strerror(err));
}

// A close-on-exec pipe whose ends are numbered 10 or above, so that the child's dup2 onto 3 and 4 never
// finds a source already sitting there (dup2(3, 3) would keep close-on-exec set).
Result<std::pair<Fd, Fd>> high_pipe() {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return fail(launch_error("pipe2", errno));
  Fd low_read(ends[0]);
  Fd low_write(ends[1]);
  Fd read_end(::fcntl(low_read.get(), F_DUPFD_CLOEXEC, 10));
  Fd write_end(::fcntl(low_write.get(), F_DUPFD_CLOEXEC, 10));
  if (read_end.get() < 0 || write_end.get() < 0) return fail(launch_error("fcntl(F_DUPFD_CLOEXEC)", errno));
  return std::pair<Fd, Fd>(std::move(read_end), std::move(write_end));
}

// Temporary directories of earlier keel processes that are gone (killed before their destructor ran).
void remove_stale_temp_dirs(const fs::path& tmp) {
  std::error_code ec;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(kTempPrefix)) continue;
    const std::string rest = name.substr(std::strlen(kTempPrefix));
    const size_t dash = rest.find('-');
    if (dash == std::string::npos || dash == 0) continue;
    char* parsed_end = nullptr;
    const long owner = std::strtol(rest.c_str(), &parsed_end, 10);
    if (parsed_end != rest.c_str() + dash || owner <= 0) continue;
    if (::kill(static_cast<pid_t>(owner), 0) == -1 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
}

bool dev_shm_is_small() {
  struct statvfs info {};
  if (::statvfs("/dev/shm", &info) != 0) return true;
  return static_cast<unsigned long long>(info.f_frsize) * info.f_blocks < kSmallDevShm;
}

}  // namespace

std::vector<std::string> chromium_args(const LaunchSpec& spec, const fs::path& profile) {
  std::vector<std::string> args;
  if (spec.headless) args.emplace_back("--headless");
  if (spec.no_sandbox.value_or(false)) args.emplace_back("--no-sandbox");
  if (spec.disable_dev_shm) args.emplace_back("--disable-dev-shm-usage");
  for (const char* flag :
       {"--remote-debugging-pipe", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
        // No traffic of its own: keel's tests and people's machines see only what the agent asked for.
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
        "--disable-domain-reliability", "--disable-client-side-phishing-detection", "--disable-default-apps",
        // Deterministic headless behaviour: no throttling of pages keel is not looking at.
        "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
        "--disable-renderer-backgrounding", "--disable-hang-monitor", "--disable-ipc-flooding-protection",
        "--password-store=basic", "--use-mock-keychain", "--mute-audio", "--force-color-profile=srgb"}) {
    args.emplace_back(flag);
  }
  args.push_back("--window-size=" + spec.window_size);
  args.push_back("--user-data-dir=" + profile.string());
  for (const std::string& extra : spec.extra_args) args.push_back(extra);
  args.emplace_back("about:blank");
  return args;
}

fs::path resolve_chromium_executable(const fs::path& executable, const fs::path& real) {
  std::error_code ec;
  if (executable == "/usr/bin/chromium" && fs::is_regular_file(real, ec)) return real;
  return executable;
}

Result<std::unique_ptr<BrowserProcess>> BrowserProcess::launch(asio::any_io_executor ex, LaunchSpec spec) {
  const fs::path executable = resolve_chromium_executable(spec.executable);
  if (::access(executable.c_str(), X_OK) != 0) {
    return fail(launch_error("Chromium executable " + executable.string() + " cannot be run", errno));
  }
  if (!spec.no_sandbox) spec.no_sandbox = ::geteuid() == 0;
  if (dev_shm_is_small()) spec.disable_dev_shm = true;

  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec) return fail(Error(codes::kBrowserLaunchFailed, "no temporary directory: " + ec.message()));
  remove_stale_temp_dirs(tmp);
  std::string pattern = (tmp / (kTempPrefix + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) return fail(launch_error("mkdtemp " + pattern, errno));
  const fs::path temp_dir = pattern;
  // Removes the directory on every early return below; released once the process object owns it.
  struct TempDirGuard {
    fs::path path;
    ~TempDirGuard() {
      std::error_code ignored;
      if (!path.empty()) fs::remove_all(path, ignored);
    }
  } guard{temp_dir};

  fs::path profile = spec.profile_dir;
  if (profile.empty()) profile = temp_dir / "profile";
  fs::create_directories(profile, ec);
  if (ec)
    return fail(Error(codes::kBrowserLaunchFailed,
                      "cannot create profile " + profile.string() + ": " + ec.message()));
  fs::permissions(profile, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (!spec.profile_dir.empty()) {
    // A persistent profile may still be held by a browser an earlier keel left behind (profile_lock.h).
    Result<void> claimed = claim_profile(profile, kLeftoverExitWait);
    if (!claimed) return fail(claimed.error());
  }
  const fs::path stderr_path = temp_dir / "stderr.log";

  auto to_browser = high_pipe();  // the browser reads its fd 3 from .first
  if (!to_browser) return fail(to_browser.error());
  auto from_browser = high_pipe();  // the browser writes its fd 4 into .second
  if (!from_browser) return fail(from_browser.error());

  const std::vector<std::string> args = chromium_args(spec, profile);
  std::vector<char*> argv;
  std::string argv0 = executable.string();
  argv.push_back(argv0.data());
  std::vector<std::string> storage(args);
  for (std::string& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, to_browser->first.get(), 3);
  posix_spawn_file_actions_adddup2(&actions, from_browser->second.get(), 4);
  posix_spawn_file_actions_addclosefrom_np(&actions, 5);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  sigset_t all_signals;
  sigfillset(&all_signals);
  posix_spawnattr_setsigmask(&attr, &no_signals);      // keel's blocked signals are not the browser's
  posix_spawnattr_setsigdefault(&attr, &all_signals);  // nor its ignored ones (SIGPIPE)
  posix_spawnattr_setpgroup(&attr, 0);                 // its own group: terminate() signals the whole tree
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, argv0.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawned != 0) return fail(launch_error("posix_spawn " + argv0, spawned));
  to_browser->first.reset();
  from_browser->second.reset();

  // glibc 2.36's <sys/pidfd.h> lacks extern "C" for C++, so the system call is made directly.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    const int err = errno;
    ::kill(-pid, SIGKILL);
    int ignored = 0;
    ::waitpid(pid, &ignored, 0);
    return fail(launch_error("pidfd_open", err));
  }
  std::unique_ptr<BrowserProcess> process(new BrowserProcess(ex, pid, pidfd));
  process->transport_ = make_pipe_transport(ex, to_browser->second.release(), from_browser->first.release(),
                                            spec.max_message_bytes);
  process->temp_dir_ = std::exchange(guard.path, fs::path());
  process->profile_ = profile;
  process->stderr_path_ = stderr_path;
  return process;
}

BrowserProcess::BrowserProcess(asio::any_io_executor ex, pid_t pid, int pidfd)
    : pid_(pid), exit_watch_(ex, pidfd), kill_timer_(ex), reaped_(std::make_shared<bool>(false)) {}

BrowserProcess::~BrowserProcess() {
  transport_.reset();
  if (!status_) {
    signal_group(SIGKILL);
    reap(/*block=*/true);
  }
  boost::system::error_code ignored;
  kill_timer_.cancel();
  exit_watch_.close(ignored);
  std::error_code removal;
  if (!temp_dir_.empty()) fs::remove_all(temp_dir_, removal);
}

std::unique_ptr<CdpTransport> BrowserProcess::take_transport() { return std::move(transport_); }

void BrowserProcess::signal_group(int signal) {
  // After the reap the group id may in principle belong to someone else: never signal it then.
  if (!status_) ::kill(-pid_, signal);
}

bool BrowserProcess::reap(bool block) {
  if (status_) return true;
  int status = 0;
  pid_t got = -1;
  do {
    got = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (got == -1 && errno == EINTR);
  if (got == pid_) {
    status_ = status;
  } else if (got == -1) {
    status_ = -1;  // not our child any more (reaped elsewhere): nothing left to wait for
  } else {
    return false;
  }
  *reaped_ = true;
  return true;
}

asio::awaitable<int> BrowserProcess::wait_exit() {
  if (!status_) {
    boost::system::error_code ec;
    co_await exit_watch_.async_wait(asio::posix::descriptor_base::wait_read,
                                    asio::redirect_error(asio::use_awaitable, ec));
    reap(/*block=*/!ec);
  }
  co_return status_.value_or(-1);
}

asio::awaitable<int> BrowserProcess::terminate(std::chrono::milliseconds grace) {
  if (!status_) {
    signal_group(SIGTERM);
    kill_timer_.expires_after(grace);
    kill_timer_.async_wait([pgid = pid_, reaped = reaped_](const boost::system::error_code& ec) {
      if (!ec && !*reaped) ::kill(-pgid, SIGKILL);
    });
  }
  const int status = co_await wait_exit();
  kill_timer_.cancel();
  co_return status;
}

std::string BrowserProcess::stderr_tail(size_t max_bytes) const {
  std::ifstream in(stderr_path_, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff start =
      size > static_cast<std::streamoff>(max_bytes) ? size - static_cast<std::streamoff>(max_bytes) : 0;
  in.seekg(start);
  std::string tail(static_cast<size_t>(size - start), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  return tail;
}

std::string BrowserProcess::describe_status(int wait_status) {
  if (wait_status == -1) return "exited (status unknown)";
  if (WIFSIGNALED(wait_status)) return "was killed by signal " + std::to_string(WTERMSIG(wait_status));
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  return "stopped";
}

}  // namespace keel::browser
