// mcp/client/http_test_server.h — a scripted HTTP/1.1 server on 127.0.0.1 (a port the system picks) for the
// Streamable HTTP transport's tests: each request is read whole (head and Content-Length body), recorded, and
// handed with its connection to the test's handler, which writes whatever bytes it likes (a JSON answer, an
// SSE stream cut anywhere, a bad status) and returns; the connection is closed after it (answers are
// close-delimited, so a stream "ends" when the handler returns). A thread per connection; stop() (and the
// destructor) shuts every connection down, also one whose handler waits for the peer.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "util/thread_annotations.h"

namespace keel::mcp::testing {

struct TestRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // names lower case
  std::string body;
  std::optional<std::string> header(const std::string& lower_name) const {
    const auto it = headers.find(lower_name);
    if (it == headers.end()) return std::nullopt;
    return it->second;
  }
};

class TestConnection {
 public:
  explicit TestConnection(int fd) : fd_(fd) {}
  void write(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }
  // A head with Connection: close and no length: the body ends when the handler returns.
  void head(int status, const std::string& content_type, const std::vector<std::string>& extra = {}) {
    std::string text = "HTTP/1.1 " + std::to_string(status) + " X\r\nConnection: close\r\n";
    if (!content_type.empty()) text += "Content-Type: " + content_type + "\r\n";
    for (const auto& line : extra) text += line + "\r\n";
    write(text + "\r\n");
  }
  void json(int status, const std::string& body, const std::vector<std::string>& extra = {}) {
    head(status, "application/json", extra);
    write(body);
  }
  // Blocks until the client closes the connection (or the server stops).
  void wait_closed() {
    char buffer[256];
    while (::recv(fd_, buffer, sizeof(buffer), 0) > 0) {
    }
  }

 private:
  int fd_;
};

class TestHttpServer {
 public:
  using Handler = std::function<void(const TestRequest&, TestConnection&)>;

  explicit TestHttpServer(Handler handler)
      : handler_(std::move(handler)), listen_fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    socklen_t length = sizeof(address);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    ::listen(listen_fd_, 64);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~TestHttpServer() { stop(); }
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }

  void stop() {
    {
      MutexLock lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      for (const int fd : open_) ::shutdown(fd, SHUT_RDWR);
    }
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    acceptor_.join();
    std::vector<std::thread> threads;
    {
      MutexLock lock(mu_);
      threads.swap(threads_);
    }
    for (auto& thread : threads) thread.join();
  }

  std::vector<TestRequest> requests() const {
    MutexLock lock(mu_);
    return requests_;
  }
  // Waits until `count` requests have been received; false if the hang guard ran out.
  bool wait_requests(size_t count) {
    MutexLock lock(mu_);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (requests_.size() < count) {
      if (lock.wait_until(changed_, give_up) == std::cv_status::timeout) return false;
    }
    return true;
  }

 private:
  void accept_loop() {
    while (true) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      MutexLock lock(mu_);
      if (stopped_) {
        ::close(fd);
        return;
      }
      open_.push_back(fd);
      threads_.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    std::string data;
    char buffer[4096];
    size_t head_end = std::string::npos;
    while ((head_end = data.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) return finish(fd);
      data.append(buffer, static_cast<size_t>(n));
    }
    TestRequest request;
    const std::string head = data.substr(0, head_end);
    size_t line_end = head.find("\r\n");
    const std::string first = head.substr(0, line_end);
    request.method = first.substr(0, first.find(' '));
    request.target = first.substr(first.find(' ') + 1, first.rfind(' ') - first.find(' ') - 1);
    while (line_end != std::string::npos && line_end < head.size()) {
      const size_t next = head.find("\r\n", line_end + 2);
      const std::string line =
          head.substr(line_end + 2, next == std::string::npos ? std::string::npos : next - line_end - 2);
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(value.begin());
        request.headers[name] = value;
      }
      line_end = next;
    }
    const size_t length =
        request.header("content-length") ? std::stoul(*request.header("content-length")) : 0;
    std::string body = data.substr(head_end + 4);
    while (body.size() < length) {
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) return finish(fd);
      body.append(buffer, static_cast<size_t>(n));
    }
    request.body = body;
    {
      MutexLock lock(mu_);
      requests_.push_back(request);
      changed_.notify_all();
    }
    TestConnection connection(fd);
    handler_(request, connection);
    finish(fd);
  }

  void finish(int fd) {
    MutexLock lock(mu_);
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
    std::erase(open_, fd);
  }

  const Handler handler_;
  const int listen_fd_;
  uint16_t port_ = 0;
  std::thread acceptor_;
  mutable Mutex mu_;
  std::condition_variable changed_;
  bool stopped_ GUARDED_BY(mu_) = false;
  std::vector<int> open_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
  std::vector<TestRequest> requests_ GUARDED_BY(mu_);
};

}  // namespace keel::mcp::testing
