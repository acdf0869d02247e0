// browser/cdp/websocket_transport.h — the CdpTransport of a browser keel attaches to instead of launching
// (one started with --remote-debugging-port): CDP messages as WebSocket text frames.
//
// `endpoint` is the browser's WebSocket URL ("ws://127.0.0.1:9222/devtools/browser/<id>") or its HTTP
// address ("http://127.0.0.1:9222"), from which GET /json/version gives webSocketDebuggerUrl. Only loopback
// hosts are accepted (127.0.0.1, [::1], localhost): a DevTools endpoint grants full control of a browser and
// its logged-in sessions, and keel never drives one over the network. No TLS, no compression.
//
// Errors: browser.attach_failed (a bad or non-loopback endpoint, nothing listening, a refused handshake, no
// answer within `timeout`). Once connected, as the pipe transport: whole messages in order, queued writes,
// browser.disconnected once when the connection ends — including for a message over max_message_bytes, which
// WebSocket cannot skip (the browser's side closes the connection with status 1009).
//
// Threading: `ex` must be a strand or a single-threaded io_context; the transport's members and callbacks
// run there. Boost.Beast stays inside websocket_transport.cc.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "browser/cdp/cdp_transport.h"
#include "keel/error.h"

namespace keel::browser {

// Parameters by value (coroutine).
boost::asio::awaitable<Result<std::unique_ptr<CdpTransport>>> connect_websocket(
    boost::asio::any_io_executor ex, std::string endpoint, size_t max_message_bytes,
    std::chrono::milliseconds timeout);

}  // namespace keel::browser
