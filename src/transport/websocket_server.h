// transport/websocket_server.h — JSON-RPC 2.0 over WebSocket (one text message = one JSON-RPC message).
//
// Listens on host:port (127.0.0.1 by default; port 0 picks a free one, see port()). Each client is checked
// before the upgrade: it must present the token as `Authorization: Bearer <token>` or as a `token` query
// parameter, else it gets HTTP 401 and no WebSocket. A server without a token refuses to start unless
// `allow_without_token` says so on purpose. Every accepted client has its own RpcSession (transport/
// rpc_session.h): its own clientId ("ws-<n>"), subscriptions and bounded outbound queue; clients watching one
// thread see the same ordered events. A client whose queue overflows gets the `disconnect` notification and
// a close frame (1013, try again later); a message over the session's bound is answered with
// rpc.message_too_large and the connection stays open, but one over four times the bound is not read at all:
// the connection is closed (1009, too big). A client that vanishes mid-stream only ends its own session.
//
// The server runs its own I/O thread. stop() (also the destructor) closes the listener and every
// connection and returns once none of them can touch the transport again. The transport must outlive the
// server. Boost is confined to the .cc file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "keel/error.h"
#include "keel/transport.h"
#include "transport/rpc_session.h"

namespace keel {

struct WebSocketServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string token;                 // what clients must present
  bool allow_without_token = false;  // with an empty token: accept every client (explicit opt-in)
  RpcSessionOptions session;         // connection_id is set per client
};

class WebSocketServer {
 public:
  // invalid_argument for a bad host or a missing token; rpc.listen_failed when the port cannot be bound.
  static Result<std::unique_ptr<WebSocketServer>> start(EngineTransport& transport, WebSocketServerOptions options);
  ~WebSocketServer();
  WebSocketServer(const WebSocketServer&) = delete;
  WebSocketServer& operator=(const WebSocketServer&) = delete;

  uint16_t port() const;
  // Clients connected past the upgrade.
  size_t client_count() const;
  void stop();

  class Impl;
  // Through start(); Impl is private to the .cc file.
  explicit WebSocketServer(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace keel
