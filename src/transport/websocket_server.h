// transport/websocket_server.h — JSON-RPC 2.0 over WebSocket (one text message = one JSON-RPC message).
//
// Listens on host:port (127.0.0.1 by default; port 0 picks a free one, see port()). A non-loopback address
// is refused (rpc.listen_not_loopback) unless `allow_remote` says so on purpose: plain ws:// carries the
// token in clear.
//
// Before the upgrade a client is a stranger, and it gets little (docs/security.md, "The WebSocket"): the
// server reads its request header only, at most kMaxHandshakeHeaderBytes, never a body, and decides with
// transport/ws_handshake.h — Host (DNS rebinding, 403), Origin (web pages, 403), a body (400), the token
// (`Authorization: Bearer <token>` or a `token` query parameter, 401), all before any JSON-RPC. At most
// `max_unauthenticated` connections may wait for that decision; one more is answered 503
// (rpc.too_many_unauthenticated) and closed without a byte read. Each has `handshake_timeout` to complete
// its upgrade, then is closed.
//
// The token a client presents names its principal ("ws:owner" for `token`, "ws:<name>" for a credential,
// "ws:anonymous" without a token). Every op of the connection is bound to it (rpc_session.h): receipts are
// per principal, so a client that reconnects with the same token finds them and one with another token
// neither sees them nor blocks them.
//
// Every accepted client has its own RpcSession (transport/rpc_session.h): its subscriptions and bounded
// outbound queue; clients watching one thread see the same ordered events. A client whose queue overflows
// gets the `disconnect` notification and a close frame (1013, try again later); a message over the session's
// bound is answered with rpc.message_too_large and the connection stays open, but one over four times the
// bound is not read at all: the connection is closed (1009, too big). A client that vanishes mid-stream only
// ends its own session. When accept fails (EMFILE at the descriptor limit, ENFILE, ...) the acceptor waits
// before it tries again (50 ms doubling to 1 s) instead of spinning; the clients already connected are served
// meanwhile.
//
// The same port serves the web interface (docs/web.md): GET and HEAD of its files from `ui_dir`
// (transport/static_files.h; without a token: they are no secret) and `POST /session`, which trades the
// one-time token (one_time_token(), printed in the URL's fragment) or the server token for a session cookie
// that then upgrades as "ws:owner" from keel's own Origin. Every such request passes the same Host and
// Origin checks, header bound, cap and deadline as an upgrade, and its connection closes after the answer.
//
// The server runs its own I/O thread. stop() (also the destructor) closes the listener and every
// connection and returns once none of them can touch the transport again. The transport (and `timers`, when
// given) must outlive the server. Boost is confined to the .cc files.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "keel/error.h"
#include "keel/scheduler.h"
#include "keel/transport.h"
#include "transport/rpc_session.h"
#include "transport/ws_handshake.h"

namespace keel {

struct WebSocketServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string token;  // what clients must present; its principal is "owner"
  // More tokens, each naming its own principal (a name other than "owner" and "anonymous").
  std::vector<HandshakeCredential> credentials;
  bool allow_without_token = false;          // with no token at all: accept every client (explicit opt-in)
  bool allow_remote = false;                 // listen on a non-loopback address (explicit opt-in)
  std::vector<std::string> allowed_origins;  // browser origins besides keel's own ("http://host:port")
  std::vector<std::string> allowed_hosts;    // Host names besides loopback ones and the listen address
  size_t max_unauthenticated = 64;           // connections waiting for their handshake at once
  std::chrono::milliseconds handshake_timeout{10'000};
  // Handshake deadlines and the accept back-off run on it; null: a timer thread of the server's own.
  Scheduler* timers = nullptr;
  // Tests: called before every accept attempt; a non-zero errno fails the attempt as accept(2) would.
  std::function<int()> accept_fault;
  RpcSessionOptions session;  // connection_id and principal are set per client
  // The built web app (index.html and assets/); empty or without index.html: `GET /` says how to build it.
  std::filesystem::path ui_dir;
  std::string ui_one_time_token;  // empty: a random one
};

class WebSocketServer {
 public:
  // invalid_argument for a bad host, a missing token or a bad credential; rpc.listen_not_loopback for a
  // non-loopback host without allow_remote; rpc.listen_failed when the port cannot be bound.
  static Result<std::unique_ptr<WebSocketServer>> start(EngineTransport& transport,
                                                        WebSocketServerOptions options);
  ~WebSocketServer();
  WebSocketServer(const WebSocketServer&) = delete;
  WebSocketServer& operator=(const WebSocketServer&) = delete;

  uint16_t port() const;
  // Clients connected past the upgrade.
  size_t client_count() const;
  // Connections accepted and still before their upgrade.
  size_t unauthenticated_count() const;
  // What the web interface's URL carries (`#token=`): opens one web session, once.
  const std::string& one_time_token() const;
  size_t web_session_count() const;
  void stop();

  class Impl;
  // Through start(); Impl is private to the .cc file.
  explicit WebSocketServer(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace keel
