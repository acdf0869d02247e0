// tests/e2e/serve/serve_process.h — `keel serve` as a child process for the end-to-end tests: stdin and
// stdout as pipes handed to a JSON-RPC client (transport/rpc_test_client.h), stderr collected by a thread so
// tests can wait for a line on it, signals, and the exit status through a pidfd (no polling loop).
//
// The child's environment is this process's without KEEL_* variables and proxy settings, with
// XDG_CONFIG_HOME/XDG_DATA_HOME pointed at `home`, so only the test's --config file configures it and its
// model requests to 127.0.0.1 never go to a proxy. The child gets no descriptor but its stdin, stdout and
// stderr (the test's sockets and pipes, close-on-exec or not, stay here).
//
// The destructor SIGKILLs a child that still runs and reaps it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace keel::e2e {

class ServeProcess {
 public:
  // Starts `binary args...`. With `stdio_pipes` the child's stdin and stdout are pipes (take them with
  // take_stdin_fd / take_stdout_fd); otherwise both are /dev/null. Fails the current test (and returns a
  // process whose pid() is -1) when it cannot start. `extra_environment` ("NAME=value") is added to the
  // isolated environment (a test arms KEEL_FAILPOINTS so).
  ServeProcess(const std::string& binary, const std::vector<std::string>& args, bool stdio_pipes,
               const std::filesystem::path& home, const std::vector<std::string>& extra_environment = {});
  ~ServeProcess();
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The pipe ends, once each; the caller owns them.
  int take_stdin_fd();
  int take_stdout_fd();

  // Waits until stderr holds `text`; false after `bound` or when stderr ended without it.
  bool wait_stderr(const std::string& text, std::chrono::milliseconds bound = std::chrono::seconds(60));
  // Waits until `pred` holds for stderr (the child writes a line in pieces); false after `bound` or at its
  // end.
  bool wait_stderr(const std::function<bool(const std::string&)>& pred,
                   std::chrono::milliseconds bound = std::chrono::seconds(60));
  std::string err() const;

  void signal(int signal_number);
  // The exit code (128 + the signal for a killed child), or nullopt while it still runs after `bound`. Once
  // it has returned a code, err() holds everything the child wrote.
  std::optional<int> wait_exit(std::chrono::milliseconds bound = std::chrono::seconds(60));
  bool running() { return !wait_exit(std::chrono::milliseconds(0)).has_value(); }

 private:
  void drain_stderr(int fd);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::optional<int> status_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string err_;
  bool err_ended_ = false;
  std::thread err_reader_;
};

}  // namespace keel::e2e
