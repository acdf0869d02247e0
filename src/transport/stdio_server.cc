#include "transport/stdio_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "transport/transport_errors.h"

namespace keel {

StdioServer::StdioServer(EngineTransport& transport, int in_fd, int out_fd, RpcSessionOptions options)
    : in_fd_(in_fd), out_fd_(out_fd), session_(transport, std::move(options), nullptr) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  // Without it the server could not be stopped; the process is out of descriptors: a bug to report loudly.
  if (wake_fd_ < 0) throw std::runtime_error("stdio server: eventfd failed");
}

StdioServer::~StdioServer() {
  session_.detach();
  ::close(wake_fd_);
}

void StdioServer::signal_stop() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
  session_.wake();
}

void StdioServer::stop() {
  stopping_ = true;
  signal_stop();
  session_.stop_waiting();
}

namespace {

// The status flags of the descriptors, put back when run() returns. O_NONBLOCK belongs to the open file
// description, which the process shares with whoever gave it its stdin and stdout (a shell, a terminal, a
// parent's pipe): left set, it would make their next blocking read or write fail with EAGAIN.
class FlagsRestorer {
 public:
  explicit FlagsRestorer(std::initializer_list<int> fds) {
    for (const int fd : fds) saved_.emplace_back(fd, ::fcntl(fd, F_GETFL));
  }
  ~FlagsRestorer() {
    for (const auto& [fd, flags] : saved_) {
      if (flags >= 0) ::fcntl(fd, F_SETFL, flags);
    }
  }
  FlagsRestorer(const FlagsRestorer&) = delete;
  FlagsRestorer& operator=(const FlagsRestorer&) = delete;

 private:
  std::vector<std::pair<int, int>> saved_;
};

}  // namespace

std::string StdioServer::run() {
  const FlagsRestorer restore_flags{in_fd_, out_fd_};
  const int flags = ::fcntl(out_fd_, F_GETFL);
  if (flags >= 0) ::fcntl(out_fd_, F_SETFL, flags | O_NONBLOCK);
  std::thread writer([this] { write_loop(); });

  const size_t bound = session_.limits().max_message_bytes;
  std::string reason = "eof";
  std::string line;
  bool discarding = false;  // inside a line over the bound: dropped up to its newline
  size_t discarded = 0;
  std::string chunk(64 * 1024, '\0');
  while (true) {
    if (stopping_) {
      reason = "stopped";
      break;
    }
    if (session_closed_) {
      reason = codes::kRpcClientTooSlow;
      break;
    }
    if (write_failed_) {
      reason = "io_error";
      break;
    }
    pollfd fds[2] = {{in_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      reason = "io_error";
      break;
    }
    if (fds[1].revents != 0) continue;  // re-check the flags above
    const ssize_t n = ::read(in_fd_, chunk.data(), chunk.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      reason = "io_error";
      break;
    }
    if (n == 0) break;
    std::string_view data(chunk.data(), static_cast<size_t>(n));
    while (!data.empty()) {
      const size_t newline = data.find('\n');
      const std::string_view part = data.substr(0, newline);
      if (discarding) {
        discarded += part.size();
      } else {
        line.append(part);
        if (line.size() > bound) {
          discarding = true;
          discarded = line.size();
          std::string().swap(line);
        }
      }
      if (newline == std::string_view::npos) break;
      data.remove_prefix(newline + 1);
      if (discarding) {
        session_.refuse_too_large(discarded);
        discarding = false;
        discarded = 0;
        continue;
      }
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) session_.receive(line);
      line.clear();
    }
  }
  if (reason == "eof") {
    // Everything read before the end is answered before the process goes: wait for the engine's answers,
    // then let the writer send all that is queued (a stop() meanwhile still gives up at once).
    session_.wait_answered();
    draining_ = true;
    session_.wake();
  } else {
    stopping_ = true;
    signal_stop();
  }
  writer.join();
  session_.detach();
  if (session_closed_) reason = codes::kRpcClientTooSlow;
  return reason;
}

void StdioServer::write_loop() {
  while (true) {
    RpcSession::Outgoing out = session_.take(!stopping_ && !draining_);
    for (const std::string& message : out.messages) {
      if (!write_all(message + "\n")) {
        write_failed_ = true;
        signal_stop();
        session_.stop_waiting();  // nobody is left to read the answers
        return;
      }
    }
    if (out.closed) {
      session_closed_ = true;
      signal_stop();
      return;
    }
    if ((stopping_ || draining_) && out.messages.empty()) return;
  }
}

bool StdioServer::write_all(const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    // A socket gets MSG_NOSIGNAL (a vanished client is an error, not SIGPIPE); a pipe needs plain write.
    ssize_t n = ::send(out_fd_, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(out_fd_, line.data() + done, line.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd fds[2] = {{out_fd_, POLLOUT, 0}, {wake_fd_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) return false;
      // A stop gives up on a client that does not read.
      if (fds[1].revents != 0 && stopping_) return false;
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace keel
