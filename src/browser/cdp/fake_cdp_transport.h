// browser/cdp/fake_cdp_transport.h — an in-memory CdpTransport for unit tests: records what is sent, and
// lets the test deliver messages and end the connection.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "browser/cdp/cdp_transport.h"

namespace keel::browser::testing {

struct FakeWire {
  std::vector<std::string> sent;
  std::function<void(std::string)> on_message;
  std::function<void(Error)> on_closed;
  bool closed = false;
  size_t oversized = 0;

  void deliver(std::string message) {
    if (!closed && on_message) on_message(std::move(message));
  }
  void end(Error why) {
    if (closed) return;
    closed = true;
    if (on_closed) on_closed(std::move(why));
  }
};

class FakeCdpTransport final : public CdpTransport {
 public:
  explicit FakeCdpTransport(std::shared_ptr<FakeWire> wire) : wire_(std::move(wire)) {}
  void start(std::function<void(std::string)> on_message, std::function<void(Error)> on_closed) override {
    wire_->on_message = std::move(on_message);
    wire_->on_closed = std::move(on_closed);
  }
  void send(std::string message) override {
    if (!wire_->closed) wire_->sent.push_back(std::move(message));
  }
  void close() override { wire_->closed = true; }
  size_t oversized_messages() const override { return wire_->oversized; }

 private:
  std::shared_ptr<FakeWire> wire_;
};

}  // namespace keel::browser::testing
