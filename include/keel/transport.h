// keel/transport.h — EngineTransport (spec §7): how a client talks to an engine.
//
// The engine and the front ends depend only on this interface, so the agent loop can be driven in-process
// (DirectTransport, for tests and embedding) or over JSON-RPC (stdio, WebSocket).
//
// Guarantees of every transport:
//   - send() never blocks on the engine's work; the op's answer arrives as a command.ack / command.rejected
//     event with the op's submissionId.
//   - A subscriber receives the events of each thread in `seq` order. A subscriber that falls behind may get
//     consecutive item.delta events merged into one (their text concatenated), but never loses any other
//     event; it cannot stall the engine.
//   - Destroying (or cancelling) the subscription stops delivery; after cancel() returns the callback is not
//     running and will not run again.
#pragma once

#include <functional>
#include <memory>

#include "keel/protocol.h"

namespace keel {

class EventSubscription {
 public:
  virtual ~EventSubscription() = default;
  virtual void cancel() = 0;
};

class EngineTransport {
 public:
  virtual ~EngineTransport() = default;
  virtual void send(Op op) = 0;
  [[nodiscard]] virtual std::unique_ptr<EventSubscription> on_event(
      std::function<void(const AgentEvent&)> callback) = 0;
};

}  // namespace keel
