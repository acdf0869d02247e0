#include "cli/signals.h"

#include <pthread.h>
#include <signal.h>

#include <cstdlib>

namespace keel::cli {

namespace {

// SIGUSR2 only stops the watcher; it is in the set so that the destructor can wake sigwait().
sigset_t watched_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR2);
  return set;
}

}  // namespace

void block_termination_signals() {
  const sigset_t set = watched_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

SignalWatcher::SignalWatcher(std::function<void(int)> on_signal) : on_signal_(std::move(on_signal)) {
  thread_ = std::thread([this] {
    const sigset_t set = watched_signals();
    for (;;) {
      int signal_number = 0;
      if (sigwait(&set, &signal_number) != 0) continue;
      if (signal_number == SIGUSR2) return;
      on_signal_(signal_number);
    }
  });
}

SignalWatcher::~SignalWatcher() {
  pthread_kill(thread_.native_handle(), SIGUSR2);
  thread_.join();
}

InterruptRequests::InterruptRequests(std::ostream& err, std::string command)
    : watcher_([this, &err, command = std::move(command)](int) {
        if (requested_.exchange(true)) {
          err << "\n" << command << ": leaving without waiting; keel resume continues the turn\n";
          err.flush();
          std::_Exit(130);
        }
        err << "\n" << command << ": interrupting (Ctrl-C again to leave at once)\n";
        err.flush();
      }) {}

}  // namespace keel::cli
