// cli/chat_io.h — the plumbing of `keel chat` between the terminal, the engine's events and signals.
//
// `keel chat` runs on its main thread, which owns the terminal and makes every call to the engine; it
// waits in poll() on the terminal and on a WakePipe. Two helper threads only hand things over and wake it:
// the EventPump moves the EngineClient's events into a queue, and the SignalWatcher's callback puts each
// signal into a SignalInbox. No helper thread ever touches the terminal, so the main thread restores the
// terminal's settings (TerminalRestorer) on every way out, signals included.
#pragma once

#include <termios.h>

#include <atomic>
#include <deque>
#include <thread>
#include <vector>

#include "cli/engine_client.h"
#include "keel/error.h"
#include "util/thread_annotations.h"

namespace keel::cli {

// Puts the terminal `fd` in raw mode — keys arrive one by one, unechoed, Ctrl-C and Ctrl-Z as bytes — and
// returns the settings to restore. Output processing stays on, so "\n" still starts a new line.
// Errors: chat.no_terminal.
Result<termios> enter_raw_mode(int fd);

// The terminal's width in columns (80 when it cannot be read).
int terminal_columns(int fd);

// Restores a terminal's settings when it goes out of scope.
class TerminalRestorer {
 public:
  TerminalRestorer(int fd, termios saved) : fd_(fd), saved_(saved) {}
  ~TerminalRestorer();
  TerminalRestorer(const TerminalRestorer&) = delete;
  TerminalRestorer& operator=(const TerminalRestorer&) = delete;

 private:
  int fd_;
  termios saved_;
};

// A self-pipe: any thread may notify(); the owner polls read_fd() and drains it. Thread-safe.
class WakePipe {
 public:
  WakePipe();
  ~WakePipe();
  WakePipe(const WakePipe&) = delete;
  WakePipe& operator=(const WakePipe&) = delete;

  bool ok() const { return fds_[0] >= 0; }
  int read_fd() const { return fds_[0]; }
  void notify();
  void drain();

 private:
  int fds_[2] = {-1, -1};
};

// Signals, in the order they were taken, from the SignalWatcher's thread to the main thread. Thread-safe.
class SignalInbox {
 public:
  void put(int signal_number);
  std::vector<int> take();

 private:
  Mutex mu_;
  std::vector<int> signals_ GUARDED_BY(mu_);
};

// A thread that moves `client`'s events into a queue and notifies `wake` for each. The client and the pipe
// must outlive the pump; the destructor stops and joins the thread. take() is thread-safe.
class EventPump {
 public:
  EventPump(EngineClient& client, WakePipe& wake);
  ~EventPump();
  EventPump(const EventPump&) = delete;
  EventPump& operator=(const EventPump&) = delete;

  std::deque<AgentEvent> take();

 private:
  EngineClient& client_;
  WakePipe& wake_;
  std::atomic<bool> stop_{false};
  Mutex mu_;
  std::deque<AgentEvent> events_ GUARDED_BY(mu_);
  std::thread thread_;  // last: started once everything it uses exists
};

}  // namespace keel::cli
