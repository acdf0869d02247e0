// mcp/client/stdio_transport.cc — see stdio_transport.h.
//
// Threads: one reader per stream of the server (stdout, stderr). Everything they touch lives in `Shared`,
// which they co-own, so a transport destroyed from inside one of its own handlers (the session dropped in
// on_closed) detaches that thread instead of joining itself, and the thread ends without touching the
// transport. Handlers are serialised by Shared::handler_mu; send() and close() never take it, so both may
// be called from inside a handler.
#include "mcp/client/stdio_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

#include "keel/error_codes.h"
#include "mcp/mcp_errors.h"
#include "util/canonical_json.h"
#include "util/private_file.h"
#include "util/thread_annotations.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): posix_spawn passes it on

namespace keel::mcp {

using nlohmann::json;

namespace {

constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxStderrLine = 8 * 1024;  // longer stderr lines are cut: they are logs
constexpr size_t kShownBytes = 200;          // how much of a bad line a problem report quotes
constexpr int kSendTimeoutMs = 30'000;       // a server that reads nothing for this long fails the send

Error errno_error(const std::string& code, const std::string& what, int err) {
  return Error(code, what + ": " + std::strerror(err));
}

// A close-on-exec pipe whose ends are numbered 3 or above, so the child's dup2 onto 0..2 never finds its
// source already there (a dup2 onto itself would keep close-on-exec set) even when keel runs with a
// standard descriptor closed.
Result<std::pair<UniqueFd, UniqueFd>> high_pipe() {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return fail(errno_error(codes::kMcpSpawnFailed, "pipe2", errno));
  UniqueFd low_read(ends[0]);
  UniqueFd low_write(ends[1]);
  UniqueFd read_end(::fcntl(low_read.get(), F_DUPFD_CLOEXEC, 3));
  UniqueFd write_end(::fcntl(low_write.get(), F_DUPFD_CLOEXEC, 3));
  if (!read_end.valid() || !write_end.valid())
    return fail(errno_error(codes::kMcpSpawnFailed, "fcntl(F_DUPFD_CLOEXEC)", errno));
  return std::pair<UniqueFd, UniqueFd>(std::move(read_end), std::move(write_end));
}

std::string shown(std::string_view line) {
  std::string text(line.substr(0, kShownBytes));
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return line.size() > kShownBytes ? text + "..." : text;
}

// Waits for the pidfd to become readable (the process exited) for at most `timeout`.
bool wait_exit(int pidfd, std::chrono::milliseconds timeout) {
  pollfd fds{pidfd, POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int got = ::poll(&fds, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (got > 0) return true;
    if (got == 0) return false;
    if (errno != EINTR) return false;
  }
}

struct Shared {
  Mutex handler_mu;  // one handler at a time
  McpTransport::Handlers handlers;
  size_t max_line_bytes = 0;
  pid_t pid = -1;
  std::atomic<bool> closing{false};
  std::atomic<bool> closed_reported{false};
  UniqueFd stop_readers_read, stop_readers_write;  // written once the process is reaped
  UniqueFd stop_writers_read, stop_writers_write;  // written when close() begins
  Mutex write_mu;
  UniqueFd to_server GUARDED_BY(write_mu);

  void problem(const Error& error, bool is_log) {
    if (closing.load()) return;
    MutexLock lock(handler_mu);
    if (handlers.on_problem) handlers.on_problem(error, is_log);
  }
  void message(json value) {
    if (closing.load()) return;
    MutexLock lock(handler_mu);
    handlers.on_message(std::move(value));
  }
  void closed(const Error& reason) {
    if (closing.load() || closed_reported.exchange(true)) return;
    MutexLock lock(handler_mu);
    if (handlers.on_closed) handlers.on_closed(reason);
  }
};

// Reads `fd` to its end (or until the stop pipe is written), calling `on_line` for every line. Lines over
// `max_line` are cut: `on_line` sees their first bytes with `too_long` set, and the rest is dropped.
template <typename OnLine>
void read_lines(int fd, int stop_fd, size_t max_line, OnLine on_line) {
  std::string line;
  bool too_long = false;
  std::string chunk(kReadChunk, '\0');
  pollfd fds[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
  while (true) {
    const int ready = ::poll(fds, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const ssize_t got = ::read(fd, chunk.data(), chunk.size());
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return;
    }
    if (got == 0) {
      if (!line.empty() || too_long) on_line(line, too_long);
      return;
    }
    std::string_view data(chunk.data(), static_cast<size_t>(got));
    while (!data.empty()) {
      const size_t newline = data.find('\n');
      const std::string_view piece = data.substr(0, newline);
      if (!too_long) {
        if (line.size() + piece.size() > max_line) {
          line.append(piece.substr(0, max_line - line.size()));
          too_long = true;
        } else {
          line.append(piece);
        }
      }
      if (newline == std::string_view::npos) break;
      on_line(line, too_long);
      line.clear();
      too_long = false;
      data.remove_prefix(newline + 1);
    }
  }
}

void read_stdout(std::shared_ptr<Shared> shared, UniqueFd fd) {
  read_lines(
      fd.get(), shared->stop_readers_read.get(), shared->max_line_bytes,
      [&](std::string& line, bool too_long) {
        if (too_long) {
          shared->problem(Error(codes::kMcpMessageTooLarge, "the server sent a line over " +
                                                                std::to_string(shared->max_line_bytes) +
                                                                " bytes; it was dropped"),
                          false);
          return;
        }
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) return;
        Result<json> parsed = parse_json(line);
        if (!parsed || !parsed->is_object()) {
          shared->problem(Error(codes::kMcpStrayOutput,
                                "the server wrote a line that is not a JSON-RPC message: " + shown(line)),
                          false);
          return;
        }
        shared->message(std::move(*parsed));
      });
  if (shared->closing.load()) return;
  // The stream ended before close(): the server exited or closed its stdout. Look at its status without
  // reaping it (close() reaps).
  std::string how = "closed its stdout";
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(shared->pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      info.si_pid == shared->pid) {
    how = info.si_code == CLD_EXITED ? "exited with status " + std::to_string(info.si_status)
                                     : "was killed by signal " + std::to_string(info.si_status);
  }
  shared->closed(Error(codes::kMcpServerExited, "the MCP server " + how));
}

void read_stderr(std::shared_ptr<Shared> shared, UniqueFd fd) {
  read_lines(fd.get(), shared->stop_readers_read.get(), kMaxStderrLine,
             [&](std::string& line, bool too_long) {
               if (!line.empty() && line.back() == '\r') line.pop_back();
               if (too_long) line += "...";
               shared->problem(Error(codes::kMcpServerLog, line), /*is_log=*/true);
             });
}

class StdioTransport final : public McpTransport {
 public:
  explicit StdioTransport(StdioServerSpec spec)
      : spec_(std::move(spec)), shared_(std::make_shared<Shared>()) {}
  ~StdioTransport() override {
    close();
    for (std::thread* thread : {&stdout_reader_, &stderr_reader_}) {
      if (!thread->joinable()) continue;
      if (thread->get_id() == std::this_thread::get_id()) {
        thread->detach();  // destroyed from its own handler: it ends on its own, holding only `shared_`
      } else {
        thread->join();
      }
    }
  }
  StdioTransport(const StdioTransport&) = delete;
  StdioTransport& operator=(const StdioTransport&) = delete;

  Result<void> start(Handlers handlers) override;
  Result<void> send(const json& message) override;
  void close() override;
  std::string endpoint() const override {
    std::string text = spec_.command;
    for (const std::string& arg : spec_.args) text += " " + arg;
    return text;
  }

 private:
  Result<void> spawn(UniqueFd& server_stdin, UniqueFd& server_stdout, UniqueFd& server_stderr);

  const StdioServerSpec spec_;
  const std::shared_ptr<Shared> shared_;
  bool started_ = false;
  std::atomic<bool> close_started_{false};
  UniqueFd pidfd_;
  std::thread stdout_reader_;
  std::thread stderr_reader_;
};

Result<void> StdioTransport::spawn(UniqueFd& server_stdin, UniqueFd& server_stdout, UniqueFd& server_stderr) {
  std::vector<std::string> args;
  args.push_back(spec_.command);
  args.insert(args.end(), spec_.args.begin(), spec_.args.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_storage;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string name(text.substr(0, text.find('=')));
    if (!spec_.env.contains(name)) env_storage.emplace_back(text);
  }
  for (const auto& [name, value] : spec_.env) env_storage.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& entry : env_storage) envp.push_back(entry.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, server_stdin.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, server_stdout.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, server_stderr.get(), STDERR_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&actions,
                                           3);  // keel's descriptors are close-on-exec; belt and braces
  const std::string cwd = spec_.cwd.string();
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  sigset_t all_signals;
  sigfillset(&all_signals);
  posix_spawnattr_setsigmask(&attr, &no_signals);      // keel's blocked signals are not the server's
  posix_spawnattr_setsigdefault(&attr, &all_signals);  // nor its ignored ones (SIGPIPE)
  posix_spawnattr_setpgroup(&attr, 0);                 // its own group: close() signals the whole tree
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const bool on_path = spec_.command.find('/') == std::string::npos;
  const int spawned =
      on_path ? ::posix_spawnp(&pid, spec_.command.c_str(), &actions, &attr, argv.data(), envp.data())
              : ::posix_spawn(&pid, spec_.command.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawned != 0) return fail(errno_error(codes::kMcpSpawnFailed, "starting " + spec_.command, spawned));
  // glibc 2.36's <sys/pidfd.h> lacks extern "C" for C++, so the system call is made directly.
  pidfd_ = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd_.valid()) {
    const int err = errno;
    ::kill(-pid, SIGKILL);
    int ignored = 0;
    ::waitpid(pid, &ignored, 0);
    return fail(errno_error(codes::kMcpSpawnFailed, "pidfd_open", err));
  }
  shared_->pid = pid;
  return {};
}

Result<void> StdioTransport::start(Handlers handlers) {
  if (started_) return fail(codes::kInvalidArgument, "the stdio transport was started already");
  if (!handlers.on_message) return fail(codes::kInvalidArgument, "on_message is required");
  started_ = true;
  shared_->handlers = std::move(handlers);
  shared_->max_line_bytes = spec_.max_line_bytes;
  auto to_server = KEEL_TRY(high_pipe());
  auto from_server = KEEL_TRY(high_pipe());
  auto errors = KEEL_TRY(high_pipe());
  auto stop_readers = KEEL_TRY(high_pipe());
  auto stop_writers = KEEL_TRY(high_pipe());
  KEEL_TRY(spawn(to_server.first, from_server.second, errors.second));
  // keel writes without blocking forever: a server that stops reading fails the send after a while.
  ::fcntl(to_server.second.get(), F_SETFL, ::fcntl(to_server.second.get(), F_GETFL) | O_NONBLOCK);
  {
    MutexLock lock(shared_->write_mu);
    shared_->to_server = std::move(to_server.second);
  }
  shared_->stop_readers_read = std::move(stop_readers.first);
  shared_->stop_readers_write = std::move(stop_readers.second);
  shared_->stop_writers_read = std::move(stop_writers.first);
  shared_->stop_writers_write = std::move(stop_writers.second);
  stdout_reader_ = std::thread(read_stdout, shared_, std::move(from_server.first));
  stderr_reader_ = std::thread(read_stderr, shared_, std::move(errors.first));
  return {};
}

Result<void> StdioTransport::send(const json& message) {
  if (shared_->closing.load()) return fail(codes::kMcpTransportClosed, "the MCP server's channel is closed");
  if (shared_->closed_reported.load()) return fail(codes::kMcpServerExited, "the MCP server has exited");
  std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace);
  if (line.size() > spec_.max_line_bytes)
    return fail(codes::kMcpMessageTooLarge, "a message of " + std::to_string(line.size()) +
                                                " bytes is over the bound of " +
                                                std::to_string(spec_.max_line_bytes));
  line += '\n';
  MutexLock lock(shared_->write_mu);
  if (!shared_->to_server.valid())
    return fail(codes::kMcpTransportClosed, "the MCP server's stdin is closed");
  // SIGPIPE is blocked on this thread while it writes, so a server that went away is an EPIPE here, not a
  // signal that ends keel. A SIGPIPE raised meanwhile is taken off the thread before unblocking.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  sigset_t old_mask;
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &old_mask);
  std::optional<Error> failure;
  size_t written = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kSendTimeoutMs);
  while (written < line.size()) {
    const ssize_t got = ::write(shared_->to_server.get(), line.data() + written, line.size() - written);
    if (got > 0) {
      written += static_cast<size_t>(got);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno != EAGAIN) {
      failure = errno == EPIPE ? Error(codes::kMcpServerExited, "the MCP server closed its stdin")
                               : errno_error(codes::kMcpTransportClosed, "writing to the MCP server", errno);
      break;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) {
      failure = Error(codes::kMcpTransportClosed, "the MCP server has not read its stdin for " +
                                                      std::to_string(kSendTimeoutMs / 1000) + " s");
      break;
    }
    pollfd fds[2] = {{shared_->to_server.get(), POLLOUT, 0}, {shared_->stop_writers_read.get(), POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left)) > 0 && fds[1].revents != 0) {
      failure = Error(codes::kMcpTransportClosed, "the MCP server's channel is closing");
      break;
    }
  }
  sigset_t pending;
  sigpending(&pending);
  if (sigismember(&pending, SIGPIPE) == 1) {
    timespec zero{};
    while (sigtimedwait(&pipe_signal, nullptr, &zero) == -1 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (failure) return fail(*failure);
  return {};
}

void StdioTransport::close() {
  if (!started_ || close_started_.exchange(true)) return;
  shared_->closing.store(true);
  // A start() that failed before the process existed: nothing to stop (and a pid of -1 must never reach
  // kill() or waitpid()).
  if (shared_->pid <= 0) return;
  const char byte = 0;
  (void)!::write(shared_->stop_writers_write.get(), &byte, 1);  // a pipe that was just made: cannot be full
  {
    MutexLock lock(shared_->write_mu);
    shared_->to_server = UniqueFd();  // end of input: a well-behaved server exits now
  }
  const pid_t pid = shared_->pid;
  if (!wait_exit(pidfd_.get(), spec_.shutdown_grace)) {
    ::kill(-pid, SIGTERM);
    if (!wait_exit(pidfd_.get(), spec_.shutdown_grace)) ::kill(-pid, SIGKILL);
  }
  // The group's leader is not reaped yet, so its group id is still ours: take down anything it left behind.
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) == -1 && errno == EINTR) {
  }
  (void)!::write(shared_->stop_readers_write.get(), &byte, 1);
  for (std::thread* thread : {&stdout_reader_, &stderr_reader_}) {
    if (thread->joinable() && thread->get_id() != std::this_thread::get_id()) thread->join();
  }
}

}  // namespace

Result<std::unique_ptr<McpTransport>> make_stdio_transport(StdioServerSpec spec) {
  if (spec.command.empty()) return fail(codes::kInvalidArgument, "an MCP stdio server needs a command");
  if (spec.max_line_bytes == 0) return fail(codes::kInvalidArgument, "max_line_bytes must be positive");
  return std::unique_ptr<McpTransport>(std::make_unique<StdioTransport>(std::move(spec)));
}

}  // namespace keel::mcp
