// transport/direct_transport.h — EngineTransport in-process (spec §7): talks to an EngineCore directly,
// with no serialization and no I/O. Used by tests, benchmarks and embedders; the JSON-RPC transports give
// the same guarantees over stdio and WebSocket.
#pragma once

#include <memory>

#include "engine/engine_core.h"
#include "keel/transport.h"

namespace keel {

class DirectTransport final : public EngineTransport {
 public:
  // `engine` must outlive the transport and every subscription made through it.
  explicit DirectTransport(EngineCore& engine) : engine_(engine) {}
  void send(Op op) override { engine_.submit(std::move(op)); }
  std::unique_ptr<EventSubscription> on_event(std::function<void(const AgentEvent&)> callback) override {
    return engine_.subscribe(std::move(callback));
  }

 private:
  EngineCore& engine_;
};

}  // namespace keel
