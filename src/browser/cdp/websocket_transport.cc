// browser/cdp/websocket_transport.cc — see websocket_transport.h. The only Boost.Beast unit of the browser
// layer.
#include "browser/cdp/websocket_transport.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <nlohmann/json.hpp>
#include <utility>

#include "browser/browser_errors.h"
#include "util/origin.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

constexpr size_t kMaxVersionResponse = 64 * 1024;

struct Endpoint {
  std::string scheme;  // "ws" or "http"
  std::string host;    // as written in a Host header ("127.0.0.1", "[::1]", "localhost")
  std::string port;
  std::string target;  // the path of a ws:// URL
};

Error attach_error(const std::string& endpoint, const std::string& why) {
  return Error(codes::kBrowserAttachFailed, "cannot attach to the browser at " + endpoint + ": " + why);
}

Result<Endpoint> parse_endpoint(const std::string& text) {
  auto origin = parse_origin(text);
  if (!origin) return fail(attach_error(text, origin.error().message()));
  if (origin->scheme != "ws" && origin->scheme != "http") {
    return fail(
        attach_error(text, "only ws:// and http:// endpoints are supported (a local browser needs no TLS)"));
  }
  if (origin->host != "127.0.0.1" && origin->host != "[::1]" && origin->host != "localhost") {
    return fail(attach_error(text, "the endpoint must be on this machine (127.0.0.1, [::1] or localhost)"));
  }
  Endpoint endpoint;
  endpoint.scheme = origin->scheme;
  endpoint.host = origin->host;
  endpoint.port = std::to_string(origin->port);
  const size_t authority = text.find("://") + 3;
  const size_t path = text.find('/', authority);
  endpoint.target = path == std::string::npos ? "/" : text.substr(path);
  return endpoint;
}

std::string resolvable(const std::string& host) {
  return host.starts_with('[') ? host.substr(1, host.size() - 2) : host;
}

class WebSocketTransport final : public CdpTransport {
 public:
  explicit WebSocketTransport(websocket::stream<beast::tcp_stream> ws)
      : state_(std::make_shared<State>(std::move(ws))) {}
  ~WebSocketTransport() override { state_->close(); }
  WebSocketTransport(const WebSocketTransport&) = delete;
  WebSocketTransport& operator=(const WebSocketTransport&) = delete;

  void start(std::function<void(std::string)> on_message, std::function<void(Error)> on_closed) override {
    state_->on_message = std::move(on_message);
    state_->on_closed = std::move(on_closed);
    state_->read_next();
  }
  void send(std::string message) override {
    if (state_->closed) return;
    state_->queue.push_back(std::move(message));
    state_->write_next();
  }
  void close() override { state_->close(); }
  size_t oversized_messages() const override { return state_->oversized; }

 private:
  // Shared with the pending reads and writes, so the transport may be destroyed with I/O in flight.
  struct State : std::enable_shared_from_this<State> {
    explicit State(websocket::stream<beast::tcp_stream> stream) : ws(std::move(stream)) {}

    void read_next() {
      ws.async_read(buffer, [self = shared_from_this()](const beast::error_code& ec, size_t) {
        if (self->closed) return;
        if (ec) {
          if (ec == websocket::error::message_too_big) ++self->oversized;
          self->fail(ec == websocket::error::closed ? "the browser closed the WebSocket"
                                                    : "reading the WebSocket failed: " + ec.message());
          return;
        }
        std::string message = beast::buffers_to_string(self->buffer.data());
        self->buffer.consume(self->buffer.size());
        self->on_message(std::move(message));
        if (!self->closed) self->read_next();
      });
    }

    void write_next() {
      if (writing || queue.empty() || closed) return;
      writing = true;
      ws.async_write(asio::buffer(queue.front()),
                     [self = shared_from_this()](const beast::error_code& ec, size_t) {
                       self->writing = false;
                       if (self->closed) return;
                       if (ec) {
                         self->fail("writing the WebSocket failed: " + ec.message());
                         return;
                       }
                       self->queue.pop_front();
                       self->write_next();
                     });
    }

    void fail(std::string why) {
      if (closed) return;
      close();
      if (on_closed) {
        auto callback = std::move(on_closed);
        callback(Error(codes::kBrowserDisconnected, std::move(why)));
      }
    }

    void close() {
      if (closed) return;
      closed = true;
      // A hard close: keel is done with the browser, and a closing handshake could wait on a stuck peer.
      beast::get_lowest_layer(ws).close();
    }

    websocket::stream<beast::tcp_stream> ws;
    beast::flat_buffer buffer;
    std::deque<std::string> queue;  // front() is being written while `writing`
    bool writing = false;
    bool closed = false;
    size_t oversized = 0;
    std::function<void(std::string)> on_message;
    std::function<void(Error)> on_closed;
  };

  std::shared_ptr<State> state_;
};

// GET /json/version on the browser's HTTP endpoint: its webSocketDebuggerUrl.
asio::awaitable<Result<std::string>> debugger_url(asio::any_io_executor ex, Endpoint endpoint,
                                                  std::string text, std::chrono::milliseconds timeout) {
  beast::error_code ec;
  tcp::resolver resolver(ex);
  auto resolved = co_await resolver.async_resolve(resolvable(endpoint.host), endpoint.port,
                                                  asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return fail(attach_error(text, ec.message()));
  beast::tcp_stream stream(ex);
  stream.expires_after(timeout);
  co_await stream.async_connect(resolved, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return fail(attach_error(text, ec.message()));
  http::request<http::empty_body> request(http::verb::get, "/json/version", 11);
  request.set(http::field::host, endpoint.host + ":" + endpoint.port);
  co_await http::async_write(stream, request, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return fail(attach_error(text, ec.message()));
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxVersionResponse);
  co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return fail(attach_error(text, "GET /json/version: " + ec.message()));
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  const auto& response = parser.get();
  if (response.result() != http::status::ok) {
    co_return fail(
        attach_error(text, "GET /json/version answered HTTP " + std::to_string(response.result_int())));
  }
  const nlohmann::json version = nlohmann::json::parse(response.body(), nullptr, /*allow_exceptions=*/false);
  if (!version.is_object() || !version.contains("webSocketDebuggerUrl") ||
      !version["webSocketDebuggerUrl"].is_string()) {
    co_return fail(attach_error(text, "GET /json/version gave no webSocketDebuggerUrl"));
  }
  co_return version["webSocketDebuggerUrl"].get<std::string>();
}

}  // namespace

asio::awaitable<Result<std::unique_ptr<CdpTransport>>> connect_websocket(asio::any_io_executor ex,
                                                                         std::string endpoint,
                                                                         size_t max_message_bytes,
                                                                         std::chrono::milliseconds timeout) {
  Result<Endpoint> parsed = parse_endpoint(endpoint);
  if (!parsed) co_return fail(parsed.error());
  if (parsed->scheme == "http") {
    Result<std::string> url = co_await debugger_url(ex, *parsed, endpoint, timeout);
    if (!url) co_return fail(url.error());
    endpoint = *url;
    parsed = parse_endpoint(endpoint);  // the browser's answer is held to the same rules
    if (!parsed) co_return fail(parsed.error());
    if (parsed->scheme != "ws") co_return fail(attach_error(endpoint, "the debugger URL is not ws://"));
  }

  beast::error_code ec;
  tcp::resolver resolver(ex);
  auto resolved = co_await resolver.async_resolve(resolvable(parsed->host), parsed->port,
                                                  asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return fail(attach_error(endpoint, ec.message()));
  websocket::stream<beast::tcp_stream> ws(ex);
  beast::get_lowest_layer(ws).expires_after(timeout);
  co_await beast::get_lowest_layer(ws).async_connect(resolved, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return fail(attach_error(endpoint, ec.message()));
  ws.read_message_max(max_message_bytes);
  ws.auto_fragment(false);
  ws.text(true);
  const std::string host = parsed->host + ":" + parsed->port;
  co_await ws.async_handshake(host, parsed->target, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return fail(attach_error(endpoint, "WebSocket handshake: " + ec.message()));
  // From here on the WebSocket's own keep-alive and timeouts apply, not the connect deadline.
  beast::get_lowest_layer(ws).expires_never();
  ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::client));
  std::unique_ptr<CdpTransport> transport = std::make_unique<WebSocketTransport>(std::move(ws));
  co_return transport;
}

}  // namespace keel::browser
