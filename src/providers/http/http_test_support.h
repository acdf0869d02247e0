// providers/http/http_test_support.h — test helpers for the HTTP client: a handler that records what it
// is told, and tiny sockets for what a scripted server cannot do (refuse, accept and stay silent).
//
// Waits take a generous limit that only guards against a hung test; they never assert how fast anything is.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "providers/http/http_client.h"
#include "util/thread_annotations.h"

namespace keel::providers::testing {

inline constexpr std::chrono::seconds kHangGuard{30};

class RecordingHandler final : public HttpStreamHandler {
 public:
  // Called inside on_body, on the client's worker thread (for tests that act mid-stream).
  std::function<void(std::string_view)> on_chunk;
  // Called inside on_complete (for tests that start another request from there).
  std::function<void(const Result<void>&)> on_done;

  void on_response_head(int status, const std::vector<HttpHeader>& headers) override {
    MutexLock lock(mu_);
    ++heads_;
    status_ = status;
    headers_ = headers;
  }
  void on_body(std::string_view chunk) override {
    if (on_chunk) on_chunk(chunk);
    MutexLock lock(mu_);
    body_ += chunk;
    ++chunks_;
    changed_.notify_all();
  }
  void on_complete(Result<void> result) override {
    if (on_done) on_done(result);
    MutexLock lock(mu_);
    ++completions_;
    result_ = std::move(result);
    changed_.notify_all();
  }

  // Waits until the body contains `text`; false if the request completed first (or the guard ran out).
  bool wait_for_body(const std::string& text) {
    MutexLock lock(mu_);
    const auto give_up = std::chrono::steady_clock::now() + kHangGuard;
    while (body_.find(text) == std::string::npos && !result_.has_value()) {
      if (lock.wait_until(changed_, give_up) == std::cv_status::timeout) break;
    }
    return body_.find(text) != std::string::npos;
  }
  Result<void> wait_complete() {
    MutexLock lock(mu_);
    const auto give_up = std::chrono::steady_clock::now() + kHangGuard;
    while (!result_.has_value()) {
      if (lock.wait_until(changed_, give_up) == std::cv_status::timeout) break;
    }
    if (!result_.has_value()) return fail("test.hung", "the request did not complete");
    return *result_;
  }
  bool completed() const {
    MutexLock lock(mu_);
    return result_.has_value();
  }
  int status() const {
    MutexLock lock(mu_);
    return status_;
  }
  int heads() const {
    MutexLock lock(mu_);
    return heads_;
  }
  int completions() const {
    MutexLock lock(mu_);
    return completions_;
  }
  size_t chunks() const {
    MutexLock lock(mu_);
    return chunks_;
  }
  std::string body() const {
    MutexLock lock(mu_);
    return body_;
  }
  std::optional<std::string> header(std::string_view name) const {
    MutexLock lock(mu_);
    auto value = find_header(headers_, name);
    if (!value) return std::nullopt;
    return std::string(*value);
  }

 private:
  mutable Mutex mu_;
  std::condition_variable changed_;
  int heads_ GUARDED_BY(mu_) = 0;
  int status_ GUARDED_BY(mu_) = 0;
  std::vector<HttpHeader> headers_ GUARDED_BY(mu_);
  std::string body_ GUARDED_BY(mu_);
  size_t chunks_ GUARDED_BY(mu_) = 0;
  int completions_ GUARDED_BY(mu_) = 0;
  std::optional<Result<void>> result_ GUARDED_BY(mu_);
};

// A TCP socket on 127.0.0.1 with a port the system chose; listening or not. Closed on destruction.
class LocalSocket {
 public:
  explicit LocalSocket(bool listening) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    socklen_t length = sizeof(address);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    if (listening) ::listen(fd_, 16);  // never accepted: the kernel completes handshakes into the backlog
  }
  ~LocalSocket() { ::close(fd_); }
  LocalSocket(const LocalSocket&) = delete;
  LocalSocket& operator=(const LocalSocket&) = delete;
  uint16_t port() const { return port_; }

 private:
  int fd_;
  uint16_t port_ = 0;
};

// A port nothing listens on (bound but not listening, so connecting to it is refused while it lives).
using RefusingPort = LocalSocket;

}  // namespace keel::providers::testing
