#include "keel_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>

#include "testing/child_process.h"

namespace keel::e2e {

KeelProcess::KeelProcess(const std::string& binary, const std::vector<std::string>& args,
                         const std::filesystem::path& home) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  auto pid =
      testing::spawn_child_with_environment(binary, args, testing::isolated_environment(home), &actions);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  in_fd_ = in[1];
  out_fd_ = out[0];
  err_fd_ = err[0];
  if (pid) pid_ = *pid;
}

KeelProcess::~KeelProcess() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  for (int fd : {in_fd_, out_fd_, err_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

void KeelProcess::write_stdin(const std::string& text) {
  size_t done = 0;
  while (in_fd_ >= 0 && done < text.size()) {
    const ssize_t n = ::write(in_fd_, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

void KeelProcess::close_stdin() {
  if (in_fd_ >= 0) ::close(in_fd_);
  in_fd_ = -1;
}

void KeelProcess::pump(std::chrono::milliseconds wait) {
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  if (::poll(fds, 2, static_cast<int>(wait.count())) <= 0) return;
  char buffer[8192];
  for (int i = 0; i < 2; ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP)) == 0 || fds[i].fd < 0) continue;
    const ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
    if (n > 0) (i == 0 ? out_ : err_).append(buffer, static_cast<size_t>(n));
    if (n == 0) {
      ::close(fds[i].fd);
      (i == 0 ? out_fd_ : err_fd_) = -1;
    }
  }
}

namespace {

bool wait_for(std::chrono::milliseconds bound, const std::function<bool()>& done,
              const std::function<void()>& step) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    step();
  }
  return true;
}

}  // namespace

bool KeelProcess::wait_stdout(const std::string& text, std::chrono::milliseconds bound) {
  return wait_for(
      bound, [&] { return out_.find(text) != std::string::npos; },
      [&] { pump(std::chrono::milliseconds(50)); });
}

bool KeelProcess::wait_stdout_line(const std::string& text, std::chrono::milliseconds bound) {
  return wait_for(
      bound,
      [&] {
        const size_t at = out_.find(text);
        return at != std::string::npos && out_.find('\n', at) != std::string::npos;
      },
      [&] { pump(std::chrono::milliseconds(50)); });
}

bool KeelProcess::wait_stderr(const std::string& text, std::chrono::milliseconds bound) {
  return wait_for(
      bound, [&] { return err_.find(text) != std::string::npos; },
      [&] { pump(std::chrono::milliseconds(50)); });
}

void KeelProcess::signal(int signal_number) {
  if (pid_ > 0 && !status_) ::kill(pid_, signal_number);
}

std::optional<int> KeelProcess::wait_exit(std::chrono::milliseconds bound) {
  if (status_) return status_;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    pump(std::chrono::milliseconds(20));
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      // Whatever is left in the pipes.
      while (out_fd_ >= 0 || err_fd_ >= 0) {
        const size_t before = out_.size() + err_.size();
        pump(std::chrono::milliseconds(20));
        if (out_.size() + err_.size() == before) break;
      }
      status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return status_;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      status_ = 128 + SIGKILL;
      return std::nullopt;
    }
  }
}

KeelRun run_keel(const std::string& binary, const std::vector<std::string>& args, const std::string& input,
                 std::chrono::milliseconds bound, const std::filesystem::path& home) {
  KeelProcess process(binary, args, home);
  KeelRun run;
  if (!process.started()) return run;
  process.write_stdin(input);
  process.close_stdin();
  run.status = process.wait_exit(bound).value_or(-1);
  run.out = process.out();
  run.err = process.err();
  return run;
}

}  // namespace keel::e2e
