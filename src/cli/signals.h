// cli/signals.h — SIGINT/SIGTERM/SIGHUP as ordinary callbacks, on a thread of their own.
//
// block_termination_signals() must run in main() before any thread starts, so that every thread inherits
// the mask and the signals are only ever taken by the watcher's sigwait(): no handler runs on an arbitrary
// thread, and nothing but the watcher needs to be async-signal-safe. It also ignores SIGPIPE, so a client
// that goes away shows up as a write error, not a dead process.
#pragma once

#include <atomic>
#include <functional>
#include <ostream>
#include <string>
#include <thread>

namespace keel::cli {

void block_termination_signals();

class SignalWatcher {
 public:
  // `on_signal` runs on the watcher's thread with the signal number, for each signal taken.
  explicit SignalWatcher(std::function<void(int)> on_signal);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  std::function<void(int)> on_signal_;
  std::thread thread_;
};

// How the line-oriented front ends (keel run, resume, demo) take Ctrl-C: the first signal asks the running
// turn to stop (it ends `interrupted`, with what it did kept; the follower sends turn.interrupt); a second
// one leaves at once with status 130 — the store keeps the run, and `keel resume` picks it up.
class InterruptRequests {
 public:
  // `command` names the front end in the messages written to `err` ("keel", "keel demo").
  InterruptRequests(std::ostream& err, std::string command);
  bool requested() const { return requested_.load(); }

 private:
  std::atomic<bool> requested_{false};
  SignalWatcher watcher_;
};

}  // namespace keel::cli
