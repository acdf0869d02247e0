// HTTPS: the client verifies the server's certificate against the trusted CAs. A real TLS peer on loopback
// (Debian's `openssl s_server`, answering GET with a status page) with a certificate made for this test:
// trusted through HttpClientOptions::ca_file it is reached; against the system CA store, which does not
// hold it, the handshake is refused with provider.tls_failed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "providers/http/http_client.h"
#include "providers/http/http_errors.h"
#include "providers/http/http_test_support.h"
#include "testing/temp_dir.h"

extern char** environ;

namespace keel::providers {
namespace {

using testing::RecordingHandler;

// `openssl s_server` on 127.0.0.1 with a self-signed certificate for 127.0.0.1; killed on destruction.
class TlsPeer {
 public:
  explicit TlsPeer(const keel::testing::TempDir& dir) : dir_(dir) {
    const std::string make_cert =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
        " -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout '" +
        dir.file("key.pem") + "' -out '" + dir.file("cert.pem") + "' 2>/dev/null";
    if (std::system(make_cert.c_str()) != 0) {
      ADD_FAILURE() << "openssl could not make a certificate (scripts/setup.sh installs openssl)";
      return;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = dir.file("s_server.log");
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    std::vector<std::string> args = {"openssl",           "s_server",    "-key",
                                     dir.file("key.pem"), "-cert",       dir.file("cert.pem"),
                                     "-accept",           "127.0.0.1:0", "-www"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawnp(&pid_, "openssl", &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    // It prints "ACCEPT 127.0.0.1:PORT" once it listens.
    const std::regex accept_line("ACCEPT 127\\.0\\.0\\.1:([0-9]+)");
    for (int i = 0; i < 500 && port_ == 0 && pid_ > 0; ++i) {
      std::ifstream in(log);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::smatch match;
      if (std::regex_search(text, match, accept_line)) port_ = std::stoi(match[1]);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_GT(port_, 0) << "openssl s_server did not start";
  }
  ~TlsPeer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_) + "/"; }
  std::string cert() const { return dir_.file("cert.pem"); }

 private:
  const keel::testing::TempDir& dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

HttpRequest get(const std::string& url) {
  HttpRequest request;
  request.method = "GET";
  request.url = url;
  return request;
}

TEST(HttpsTest, AServerTrustedThroughTheCaFileIsReached) {
  keel::testing::TempDir dir;
  TlsPeer peer(dir);
  HttpClientOptions options;
  options.proxy = ProxySettings{};
  options.ca_file = peer.cert();
  CurlHttpClient client(options);
  auto handler = std::make_shared<RecordingHandler>();
  client.start(get(peer.url()), {}, handler);
  auto result = handler->wait_complete();
  EXPECT_TRUE(result) << result.error().to_string();
  EXPECT_EQ(handler->status(), 200);
}

TEST(HttpsTest, AServerTheSystemCasDoNotVouchForIsATlsFailure) {
  keel::testing::TempDir dir;
  TlsPeer peer(dir);
  HttpClientOptions options;
  options.proxy = ProxySettings{};
  CurlHttpClient client(options);
  auto handler = std::make_shared<RecordingHandler>();
  client.start(get(peer.url()), {}, handler);
  auto result = handler->wait_complete();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kHttpTlsFailed) << result.error().to_string();
  EXPECT_FALSE(result.error().retryable());
  EXPECT_EQ(handler->heads(), 0);
}

}  // namespace
}  // namespace keel::providers
