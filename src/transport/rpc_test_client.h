// transport/rpc_test_client.h — JSON-RPC clients for the transport tests and benchmarks: one over a file
// descriptor pair (the stdio transport), one over a real loopback WebSocket (Boost.Beast). Each keeps every
// message it receives; tests wait on them with a hang guard (not a timing assertion).
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "util/thread_annotations.h"

namespace keel::testing {

class RpcTestClient {
 public:
  virtual ~RpcTestClient() = default;
  virtual void send_raw(const std::string& text) = 0;
  // Closes the client's end abruptly.
  virtual void disconnect() = 0;

  void send(const nlohmann::json& message) { send_raw(message.dump()); }

  // Sends a request and waits for its response.
  nlohmann::json request(const std::string& method, nlohmann::json params = nlohmann::json::object()) {
    const int id = next_id();
    {
      MutexLock guard(mu_);
      methods_[id] = method;
    }
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
    return wait_response(id);
  }
  // A receipted op: a fresh submissionId is added. Submission ids are per principal, and clients holding
  // one token are one principal: each client's ids carry a random prefix of its own (no test depends on it).
  nlohmann::json command(const std::string& method, nlohmann::json params) {
    params["submissionId"] = "s-" + submission_prefix_ + "-" + std::to_string(next_id());
    return request(method, std::move(params));
  }

  nlohmann::json wait_response(const nlohmann::json& id) {
    nlohmann::json found;
    EXPECT_TRUE(wait_until([&](const std::vector<nlohmann::json>& all) {
      for (const auto& message : all) {
        if (message.is_object() && message.contains("id") && message["id"] == id &&
            (message.contains("result") || message.contains("error"))) {
          found = message;
          return true;
        }
      }
      return false;
    })) << "no response to id "
        << id.dump();
    return found;
  }

  // The params of event notifications (in arrival order), optionally of one thread.
  std::vector<nlohmann::json> events(const std::string& thread_id = "") const {
    std::vector<nlohmann::json> out;
    MutexLock guard(mu_);
    for (const auto& message : received_) {
      if (message.is_object() && message.value("method", "") == "event" &&
          (thread_id.empty() || message["params"].value("threadId", "") == thread_id)) {
        out.push_back(message["params"]);
      }
    }
    return out;
  }
  // Waits for the nth event of `type` on the thread; returns its params.
  nlohmann::json wait_event(const std::string& thread_id, const std::string& type, size_t nth = 1) {
    nlohmann::json found;
    EXPECT_TRUE(wait_until([&](const std::vector<nlohmann::json>& all) {
      size_t n = 0;
      for (const auto& message : all) {
        if (message.is_object() && message.value("method", "") == "event" &&
            message["params"].value("type", "") == type &&
            message["params"].value("threadId", "") == thread_id && ++n == nth) {
          found = message["params"];
          return true;
        }
      }
      return false;
    })) << "no "
        << type << " #" << nth << " on " << thread_id;
    return found;
  }

  bool wait_until(const std::function<bool(const std::vector<nlohmann::json>&)>& pred,
                  std::chrono::seconds bound = std::chrono::seconds(30)) {
    MutexLock lock(mu_);
    const auto give_up = std::chrono::steady_clock::now() + bound;
    while (!pred(received_)) {
      if (lock.wait_until(cv_, give_up) == std::cv_status::timeout) return pred(received_);
    }
    return true;
  }
  bool wait_closed(std::chrono::seconds bound = std::chrono::seconds(30)) {
    MutexLock lock(mu_);
    const auto give_up = std::chrono::steady_clock::now() + bound;
    while (!closed_) {
      if (lock.wait_until(cv_, give_up) == std::cv_status::timeout) return closed_;
    }
    return true;
  }

  std::vector<nlohmann::json> received() const {
    MutexLock guard(mu_);
    return received_;
  }
  std::vector<std::string> unparsable() const {
    MutexLock guard(mu_);
    return unparsable_;
  }
  // The method each request id was sent with (schema checks of results).
  std::map<int, std::string> methods() const {
    MutexLock guard(mu_);
    return methods_;
  }

 protected:
  void on_message(const std::string& text) {
    {
      MutexLock guard(mu_);
      if (nlohmann::json::accept(text)) {
        received_.push_back(nlohmann::json::parse(text));
      } else {
        unparsable_.push_back(text);
      }
    }
    cv_.notify_all();
  }
  void on_closed() {
    {
      MutexLock guard(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  int next_id() {
    MutexLock guard(mu_);
    return ++ids_;
  }

 private:
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::vector<nlohmann::json> received_ GUARDED_BY(mu_);
  std::vector<std::string> unparsable_ GUARDED_BY(mu_);
  std::map<int, std::string> methods_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
  int ids_ GUARDED_BY(mu_) = 0;
  const std::string submission_prefix_ = [] {
    std::random_device random;
    return std::to_string((uint64_t{random()} << 32) | random());
  }();
};

// Newline-delimited JSON over a descriptor pair (a socketpair end, or two pipe ends). Owns the descriptors.
class FdTestClient final : public RpcTestClient {
 public:
  FdTestClient(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {
    reader_ = std::thread([this] { read_loop(); });
  }
  ~FdTestClient() override {
    disconnect();
    if (reader_.joinable()) reader_.join();
    // Closed only once the reader is done, so it can never read a descriptor number reused meanwhile.
    if (read_fd_ >= 0) ::close(read_fd_);
    if (write_fd_ >= 0 && write_fd_ != read_fd_) ::close(write_fd_);
  }
  void send_raw(const std::string& text) override {
    MutexLock guard(write_mu_);
    if (disconnected_) return;
    const std::string line = text + "\n";
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(write_fd_, line.data() + done, line.size() - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }
  void disconnect() override {
    MutexLock guard(write_mu_);
    if (disconnected_) return;
    disconnected_ = true;
    if (write_fd_ == read_fd_) {
      ::shutdown(write_fd_, SHUT_RDWR);  // the server sees the end; the reader wakes with it
    } else {
      ::close(write_fd_);  // a pipe: the server's input ends
      write_fd_ = -1;
    }
  }

 private:
  void read_loop() {
    std::string buffer;
    char chunk[65536];
    while (true) {
      const ssize_t n = ::read(read_fd_, chunk, sizeof chunk);
      if (n <= 0) break;
      buffer.append(chunk, static_cast<size_t>(n));
      size_t newline;
      while ((newline = buffer.find('\n')) != std::string::npos) {
        on_message(buffer.substr(0, newline));
        buffer.erase(0, newline + 1);
      }
    }
    on_closed();
  }

  Mutex write_mu_;
  const int read_fd_;
  int write_fd_ GUARDED_BY(write_mu_);
  bool disconnected_ GUARDED_BY(write_mu_) = false;
  std::thread reader_;
};

// A WebSocket client on its own I/O thread.
class WsTestClient final : public RpcTestClient {
 public:
  // Connects and upgrades on `target`; `token` goes into the Authorization header when not empty, and
  // `headers` (name, value) are added (a browser's Origin and Cookie). Throws when the upgrade is refused.
  WsTestClient(uint16_t port, const std::string& token,
               std::vector<std::pair<std::string, std::string>> headers = {}, const std::string& target = "/")
      : work_(io_.get_executor()), ws_(io_) {
    namespace beast = boost::beast;
    boost::asio::ip::tcp::resolver resolver(io_);
    auto endpoints = resolver.resolve("127.0.0.1", std::to_string(port));
    boost::asio::connect(ws_.next_layer(), endpoints);
    ws_.set_option(beast::websocket::stream_base::decorator(
        [token, headers = std::move(headers)](beast::websocket::request_type& request) {
          if (!token.empty()) request.set(beast::http::field::authorization, "Bearer " + token);
          for (const auto& [name, value] : headers) request.set(name, value);
        }));
    ws_.handshake("127.0.0.1:" + std::to_string(port), target);
    ws_.read_message_max(64u << 20);
    ws_.text(true);
    read();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~WsTestClient() override {
    disconnect();
    work_.reset();
    if (thread_.joinable()) thread_.join();
  }
  void send_raw(const std::string& text) override {
    std::promise<void> done;
    boost::asio::post(io_, [&] {
      boost::beast::error_code ignored;
      ws_.write(boost::asio::buffer(text), ignored);
      done.set_value();
    });
    done.get_future().wait();
  }
  void disconnect() override {
    boost::asio::post(io_, [this] {
      boost::beast::error_code ignored;
      ws_.next_layer().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
      ws_.next_layer().close(ignored);
    });
  }

 private:
  void read() {
    ws_.async_read(buffer_, [this](boost::beast::error_code error, size_t) {
      if (error) {
        on_closed();
        return;
      }
      on_message(boost::beast::buffers_to_string(buffer_.data()));
      buffer_.consume(buffer_.size());
      read();
    });
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws_;
  boost::beast::flat_buffer buffer_;
  std::thread thread_;
};

}  // namespace keel::testing
