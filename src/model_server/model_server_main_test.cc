// keel-model-server as a program: arguments, the listening line and port file, exit codes, limits.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "providers/http/http_client.h"
#include "providers/http/http_test_support.h"
#include "testing/temp_dir.h"

extern char** environ;

namespace keel::model_server {
namespace {

using nlohmann::json;

// A child process running keel-model-server, with its stdout and stderr captured through pipes.
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> args, std::vector<std::string> extra_env = {}) {
    args.insert(args.begin(), KEEL_MODEL_SERVER_BINARY);
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
    for (std::string& e : extra_env) env_strings.push_back(std::move(e));
    std::vector<char*> envp;
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);

    int out[2];
    int err[2];
    EXPECT_EQ(::pipe(out), 0);
    EXPECT_EQ(::pipe(err), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    posix_spawn_file_actions_addclose(&actions, err[0]);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    ::close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }

  ~ServerProcess() {
    if (!exit_code_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(out_);
    ::close(err_);
  }

  // The first line of stdout (waits for it; "" if the process ends first).
  std::string first_line() {
    while (stdout_.find('\n') == std::string::npos && read_some(out_, stdout_)) {
    }
    return stdout_.substr(0, stdout_.find('\n'));
  }

  // Waits for the exit code (the guard only keeps a broken build from hanging the test run).
  std::optional<int> wait_exit(std::chrono::seconds guard = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + guard;
    while (!exit_code_ && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    while (read_some(out_, stdout_)) {
    }
    while (read_some(err_, stderr_)) {
    }
    return exit_code_;
  }

  const std::string& out() const { return stdout_; }
  const std::string& err() const { return stderr_; }

 private:
  static bool read_some(int fd, std::string& into) {
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n <= 0) return false;
    into.append(buffer, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = 0;
  int out_ = -1;
  int err_ = -1;
  std::optional<int> exit_code_;
  std::string stdout_;
  std::string stderr_;
};

std::string write_file(const keel::testing::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

const char kScript[] = R"({"responses": [{"match": "", "steps": [{"type": "text", "text": "hi"}]}]})";

TEST(ModelServerMainTest, BadScriptExitsWithTwoAndNamesTheProblem) {
  keel::testing::TempDir dir;
  const std::string script = write_file(dir, "bad.json", R"({"responses": [{"steps": [{"type": "txet"}]}]})");
  ServerProcess process({"--script", script});
  EXPECT_EQ(process.wait_exit(), 2);
  EXPECT_NE(process.err().find("bad.json: responses[0].steps[0].type: unknown step type 'txet'"),
            std::string::npos)
      << process.err();
}

TEST(ModelServerMainTest, UnparsableScriptExitsWithTwo) {
  keel::testing::TempDir dir;
  ServerProcess process({"--script", write_file(dir, "broken.json", "{\"responses\": [")});
  EXPECT_EQ(process.wait_exit(), 2);
  EXPECT_NE(process.err().find("not valid JSON"), std::string::npos) << process.err();
}

TEST(ModelServerMainTest, MissingArgumentsExitWithTwo) {
  ServerProcess process({});
  EXPECT_EQ(process.wait_exit(), 2);
  EXPECT_NE(process.err().find("--script"), std::string::npos) << process.err();
}

TEST(ModelServerMainTest, AnnouncesItsPortAndExitsAfterMaxSeconds) {
  keel::testing::TempDir dir;
  const std::string port_file = dir.file("port");
  ServerProcess process(
      {"--script", write_file(dir, "s.json", kScript), "--port-file", port_file, "--max-seconds", "1"});
  const std::string line = process.first_line();
  ASSERT_TRUE(line.starts_with("listening on 127.0.0.1:")) << line << process.err();
  std::ifstream in(port_file);
  std::string port;
  in >> port;
  EXPECT_EQ(line, "listening on 127.0.0.1:" + port);
  EXPECT_EQ(process.wait_exit(), 0);
  EXPECT_NE(process.out().find("stopped: time limit reached"), std::string::npos) << process.out();
}

TEST(ModelServerMainTest, ReadsTheKeyFromTheEnvironmentRecordsAndExitsAfterMaxRequests) {
  keel::testing::TempDir dir;
  const std::string record = dir.file("requests.jsonl");
  ServerProcess process({"--script", write_file(dir, "s.json", kScript), "--record", record, "--api-key-env",
                         "KEEL_TEST_SERVER_KEY", "--max-requests", "1"},
                        {"KEEL_TEST_SERVER_KEY=sk-from-env"});
  const std::string line = process.first_line();
  ASSERT_TRUE(line.starts_with("listening on 127.0.0.1:")) << line << process.err();
  const std::string port = line.substr(line.rfind(':') + 1);

  providers::HttpClientOptions options;
  options.proxy = providers::ProxySettings{};
  providers::CurlHttpClient client(std::move(options));
  providers::HttpRequest request;
  request.url = "http://127.0.0.1:" + port + "/v1/messages";
  request.headers = {{"x-api-key", "sk-from-env"}, {"anthropic-version", "2023-06-01"}};
  request.body = R"({"model": "claude", "stream": true, "messages": [{"role": "user", "content": "hi"}]})";
  auto handler = std::make_shared<providers::testing::RecordingHandler>();
  client.start(std::move(request), {}, handler);
  ASSERT_TRUE(handler->wait_complete());
  EXPECT_EQ(handler->status(), 200);

  EXPECT_EQ(process.wait_exit(), 0);
  EXPECT_NE(process.out().find("stopped: served 1 requests"), std::string::npos) << process.out();
  std::ifstream in(record);
  std::string recorded;
  std::getline(in, recorded);
  const json entry = json::parse(recorded);
  EXPECT_EQ(entry["headers"]["x-api-key"], "[redacted]");
  EXPECT_EQ(entry["headers"]["anthropic-version"], "2023-06-01");
}

TEST(ModelServerMainTest, MissingKeyVariableExitsWithTwo) {
  keel::testing::TempDir dir;
  ServerProcess process(
      {"--script", write_file(dir, "s.json", kScript), "--api-key-env", "KEEL_TEST_UNSET_VARIABLE_X"});
  EXPECT_EQ(process.wait_exit(), 2);
  EXPECT_NE(process.err().find("KEEL_TEST_UNSET_VARIABLE_X"), std::string::npos);
}

}  // namespace
}  // namespace keel::model_server
