// keel_process.h — the keel binary as a child process for the end-to-end tests: its stdin, stdout and stderr
// as pipes, waits for text on them with a bound, signals, and the exit status.
//
// The child runs in testing::isolated_environment(home) (no KEEL_* variables, proxies or user configuration)
// and inherits no descriptor but its stdio: Asio opens sockets without close-on-exec, and a model server's
// listener kept open in the child would hold its port.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace keel::e2e {

class KeelProcess {
 public:
  // Where the child's XDG folders point when a test names none: nothing there, so no user file is read.
  static inline const std::filesystem::path kNoHome = "/nonexistent/keel-e2e-home";

  // Starts `binary` with `args`; whether it started is started().
  KeelProcess(const std::string& binary, const std::vector<std::string>& args,
              const std::filesystem::path& home = kNoHome);
  ~KeelProcess();  // SIGKILLs the child if it still runs
  KeelProcess(const KeelProcess&) = delete;
  KeelProcess& operator=(const KeelProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  void write_stdin(const std::string& text);
  void close_stdin();
  // Waits until stdout (or stderr) holds `text`; false after `bound`.
  bool wait_stdout(const std::string& text, std::chrono::milliseconds bound = std::chrono::seconds(30));
  // Waits until stdout holds `text` and the line it is on has ended (a whole JSON line has arrived).
  bool wait_stdout_line(const std::string& text, std::chrono::milliseconds bound = std::chrono::seconds(30));
  bool wait_stderr(const std::string& text, std::chrono::milliseconds bound = std::chrono::seconds(30));
  void signal(int signal_number);
  // The exit status (128 + signal for a signalled child); nullopt if it did not end within `bound` (then it
  // is SIGKILLed).
  std::optional<int> wait_exit(std::chrono::milliseconds bound = std::chrono::seconds(60));

  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  // Reads what is available on both pipes, waiting at most `wait`.
  void pump(std::chrono::milliseconds wait);

  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
  std::optional<int> status_;
};

// Runs keel to its end: {status, stdout, stderr}. `input` is written to its stdin, which is then closed.
struct KeelRun {
  int status = -1;
  std::string out;
  std::string err;
};
KeelRun run_keel(const std::string& binary, const std::vector<std::string>& args,
                 const std::string& input = "", std::chrono::milliseconds bound = std::chrono::seconds(60),
                 const std::filesystem::path& home = KeelProcess::kNoHome);

}  // namespace keel::e2e
