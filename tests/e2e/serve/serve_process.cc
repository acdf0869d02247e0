// tests/e2e/serve/serve_process.cc — see serve_process.h.
#include "serve_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <string_view>

#include "testing/child_process.h"

namespace keel::e2e {
ServeProcess::ServeProcess(const std::string& binary, const std::vector<std::string>& args, bool stdio_pipes,
                           const std::filesystem::path& home,
                           const std::vector<std::string>& extra_environment) {
  int in[2] = {-1, -1};
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  if (::pipe2(err, O_CLOEXEC) != 0 ||
      (stdio_pipes && (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0))) {
    ADD_FAILURE() << "pipe2: " << std::strerror(errno);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdio_pipes) {
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  }
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  // Asio opens its sockets without close-on-exec: the model server's listener and the clients' sockets must
  // not live on in the child (a listener kept there holds the port; a client socket kept there hides its
  // close from the server).
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);

  std::vector<std::string> environment = testing::isolated_environment(home);
  environment.insert(environment.end(), extra_environment.begin(), extra_environment.end());
  auto spawned = testing::spawn_child_with_environment(binary, args, environment, &actions);
  posix_spawn_file_actions_destroy(&actions);
  for (int fd : {in[0], out[1], err[1]}) {
    if (fd >= 0) ::close(fd);
  }
  if (!spawned) {
    ADD_FAILURE() << spawned.error().to_string();
    for (int fd : {in[1], out[0], err[0]}) {
      if (fd >= 0) ::close(fd);
    }
    return;
  }
  pid_ = *spawned;
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  pidfd_ =
      static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));  // glibc 2.36 declares but does not export it
  if (pidfd_ < 0) ADD_FAILURE() << "pidfd_open: " << std::strerror(errno);
  err_reader_ = std::thread([this, fd = err[0]] { drain_stderr(fd); });
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0 && !status_) {
    signal(SIGKILL);
    (void)wait_exit(std::chrono::seconds(60));
  }
  if (err_reader_.joinable()) err_reader_.join();
  for (int fd : {stdin_fd_, stdout_fd_, pidfd_}) {
    if (fd >= 0) ::close(fd);
  }
}

int ServeProcess::take_stdin_fd() { return std::exchange(stdin_fd_, -1); }
int ServeProcess::take_stdout_fd() { return std::exchange(stdout_fd_, -1); }

void ServeProcess::drain_stderr(int fd) {
  char chunk[4096];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    {
      std::lock_guard<std::mutex> guard(mu_);
      err_.append(chunk, static_cast<size_t>(n));
    }
    cv_.notify_all();
  }
  ::close(fd);
  {
    std::lock_guard<std::mutex> guard(mu_);
    err_ended_ = true;
  }
  cv_.notify_all();
}

bool ServeProcess::wait_stderr(const std::string& text, std::chrono::milliseconds bound) {
  return wait_stderr([&](const std::string& err) { return err.find(text) != std::string::npos; }, bound);
}

bool ServeProcess::wait_stderr(const std::function<bool(const std::string&)>& pred,
                               std::chrono::milliseconds bound) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, bound, [&] { return pred(err_) || err_ended_; });
  return pred(err_);
}

std::string ServeProcess::err() const {
  std::lock_guard<std::mutex> guard(mu_);
  return err_;
}

void ServeProcess::signal(int signal_number) {
  if (pid_ > 0 && !status_) ::kill(pid_, signal_number);
}

std::optional<int> ServeProcess::wait_exit(std::chrono::milliseconds bound) {
  if (status_ || pid_ <= 0) return status_;
  pollfd ready{.fd = pidfd_, .events = POLLIN, .revents = 0};
  int polled;
  do {
    polled = ::poll(&ready, 1, static_cast<int>(bound.count()));
  } while (polled < 0 && errno == EINTR);
  if (polled <= 0) return std::nullopt;
  int raw = 0;
  if (::waitpid(pid_, &raw, 0) != pid_) return std::nullopt;
  status_ = WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : WEXITSTATUS(raw);
  // The child's end of the stderr pipe closed with it: once the reader has seen that, err() is complete.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::seconds(10), [&] { return err_ended_; });
  return status_;
}

}  // namespace keel::e2e
