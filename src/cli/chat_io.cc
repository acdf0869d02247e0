#include "cli/chat_io.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <utility>

#include "cli/cli_errors.h"

namespace keel::cli {

Result<termios> enter_raw_mode(int fd) {
  termios saved{};
  if (::tcgetattr(fd, &saved) != 0)
    return fail(codes::kChatNoTerminal, "cannot read the terminal's settings");
  termios raw = saved;
  raw.c_iflag &= ~static_cast<tcflag_t>(BRKINT | ICRNL | INLCR | IGNCR | INPCK | ISTRIP | IXON);
  raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | IEXTEN | ISIG);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  if (::tcsetattr(fd, TCSANOW, &raw) != 0) {
    return fail(codes::kChatNoTerminal, "cannot put the terminal in raw mode");
  }
  return saved;
}

int terminal_columns(int fd) {
  winsize size{};
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

TerminalRestorer::~TerminalRestorer() { ::tcsetattr(fd_, TCSANOW, &saved_); }

WakePipe::WakePipe() {
  if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) fds_[0] = fds_[1] = -1;
}

WakePipe::~WakePipe() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

void WakePipe::notify() {
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(fds_[1], &byte, 1);  // a full pipe is already a wake-up
}

void WakePipe::drain() {
  char buffer[64];
  while (::read(fds_[0], buffer, sizeof buffer) > 0) {
  }
}

void SignalInbox::put(int signal_number) {
  MutexLock guard(mu_);
  signals_.push_back(signal_number);
}

std::vector<int> SignalInbox::take() {
  MutexLock guard(mu_);
  return std::exchange(signals_, {});
}

EventPump::EventPump(EngineClient& client, WakePipe& wake) : client_(client), wake_(wake) {
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      std::optional<AgentEvent> event = client_.next_event(std::chrono::seconds(1));
      if (!event) continue;
      {
        MutexLock guard(mu_);
        events_.push_back(std::move(*event));
      }
      wake_.notify();
    }
  });
}

EventPump::~EventPump() {
  stop_.store(true);
  client_.wake();  // a wake that comes before the wait is kept by the client, so none is lost
  thread_.join();
}

std::deque<AgentEvent> EventPump::take() {
  MutexLock guard(mu_);
  return std::exchange(events_, {});
}

}  // namespace keel::cli
