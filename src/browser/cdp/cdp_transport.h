// browser/cdp/cdp_transport.h — one connection to a browser's DevTools protocol endpoint, as whole messages.
//
// A transport moves complete CDP messages (one JSON text each, framing removed) in both directions. It knows
// nothing of ids, sessions or JSON: CdpClient does. Implementations: the pipe of a launched Chromium
// (pipe_transport.h), and a WebSocket to a browser keel attaches to (websocket_transport.h).
//
// Threading: every member is called on the executor the transport was made with (a strand or a
// single-threaded io_context), and the callbacks run there too, in order.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "keel/error.h"

namespace keel::browser {

class CdpTransport {
 public:
  virtual ~CdpTransport() = default;

  // Starts reading. Delivers each complete message in arrival order; calls on_closed exactly once when the
  // connection ends on its own (end of stream, an I/O error), never after close(). Call once.
  virtual void start(std::function<void(std::string)> on_message, std::function<void(Error)> on_closed) = 0;
  // Queues one message; never blocks. Messages go out in the order given. Dropped after the connection ended.
  virtual void send(std::string message) = 0;
  // Ends the connection; no callback runs afterwards. Idempotent.
  virtual void close() = 0;
  // Messages dropped because they were longer than the transport's bound (they are never delivered cut).
  virtual size_t oversized_messages() const = 0;
};

}  // namespace keel::browser
