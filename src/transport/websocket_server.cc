#include "transport/websocket_server.h"

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "keel/error_codes.h"
#include "transport/transport_errors.h"

namespace keel {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

// Compares without leaking through timing how much of the token matched.
bool same_token(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int hi = hex_value(text[i + 1]);
      const int lo = hex_value(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i] == '+' ? ' ' : text[i]);
  }
  return out;
}

// The token a request presents: the Authorization header's bearer token, else the `token` query parameter.
std::optional<std::string> presented_token(const http::request<http::string_body>& request) {
  if (auto header = request.find(http::field::authorization); header != request.end()) {
    std::string_view value = header->value();
    constexpr std::string_view kBearer = "Bearer ";
    if (value.size() > kBearer.size() && beast::iequals(value.substr(0, kBearer.size()), kBearer))
      return std::string(value.substr(kBearer.size()));
  }
  std::string_view target = request.target();
  const size_t question = target.find('?');
  if (question == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (pair.starts_with("token=")) return percent_decode(pair.substr(6));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

}  // namespace

class Connection;

class WebSocketServer::Impl {
 public:
  Impl(EngineTransport& transport, WebSocketServerOptions options)
      : transport_(transport), options_(std::move(options)), acceptor_(asio::make_strand(io_)) {}

  Result<void> listen();
  void run() {
    thread_ = std::thread([this] { io_.run(); });
  }
  void stop();
  uint16_t port() const { return port_; }
  size_t client_count() const { return clients_.load(); }

  EngineTransport& transport_;
  WebSocketServerOptions options_;
  std::atomic<size_t> clients_{0};

 private:
  void accept();

  asio::io_context io_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  uint64_t next_id_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::weak_ptr<Connection>> connections_;
  bool stopped_ = false;
};

// One client: the HTTP request, the token check, the upgrade, then its RpcSession until either side ends.
// Everything on the connection's strand; the session's on_ready posts there from the engine's thread.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, WebSocketServer::Impl& server, std::string id)
      : ws_(std::move(socket)), server_(server), id_(std::move(id)), grace_(ws_.get_executor()) {}

  ~Connection() {
    if (counted_) --server_.clients_;
  }

  void start() {
    beast::get_lowest_layer(ws_).expires_after(std::chrono::seconds(30));
    http::async_read(ws_.next_layer(), buffer_, request_,
                     [self = shared_from_this()](beast::error_code error, size_t) { self->on_request(error); });
  }

  // From any thread: after it returns no engine event reaches this connection.
  void detach() {
    std::lock_guard<std::mutex> guard(session_mu_);
    if (session_) session_->detach();
  }

  // Ends the connection (server stopping). Only once the I/O thread has stopped: nothing else touches the
  // stream then.
  void shut_after_io_stopped() {
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }

 private:
  void on_request(beast::error_code error) {
    if (error) return;
    const WebSocketServerOptions& options = server_.options_;
    if (!options.token.empty()) {
      auto token = presented_token(request_);
      if (!token || !same_token(*token, options.token)) {
        refuse(http::status::unauthorized, "{\"code\":\"" + std::string(codes::kRpcUnauthorized) +
                                               "\",\"message\":\"a valid token is required\"}");
        return;
      }
    }
    if (!websocket::is_upgrade(request_)) {
      refuse(http::status::upgrade_required, "{\"code\":\"rpc.invalid_request\",\"message\":\"WebSocket only\"}");
      return;
    }
    beast::get_lowest_layer(ws_).expires_never();
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.read_message_max(options.session.limits.max_message_bytes * 4);
    ws_.async_accept(request_, [self = shared_from_this()](beast::error_code accept_error) {
      self->on_accepted(accept_error);
    });
  }

  void refuse(http::status status, std::string body) {
    auto response = std::make_shared<http::response<http::string_body>>(status, request_.version());
    response->set(http::field::content_type, "application/json");
    if (status == http::status::unauthorized) response->set(http::field::www_authenticate, "Bearer");
    response->keep_alive(false);
    response->body() = std::move(body);
    response->prepare_payload();
    http::async_write(ws_.next_layer(), *response,
                      [self = shared_from_this(), response](beast::error_code, size_t) {
                        beast::error_code ignored;
                        beast::get_lowest_layer(self->ws_).socket().shutdown(tcp::socket::shutdown_send, ignored);
                      });
  }

  void on_accepted(beast::error_code error) {
    if (error) return;
    RpcSessionOptions options = server_.options_.session;
    options.connection_id = id_;
    std::weak_ptr<Connection> weak = weak_from_this();
    auto session = std::make_unique<RpcSession>(server_.transport_, std::move(options), [weak] {
      if (auto self = weak.lock()) asio::post(self->ws_.get_executor(), [self] { self->pump(); });
    });
    {
      std::lock_guard<std::mutex> guard(session_mu_);
      session_ = std::move(session);
    }
    ++server_.clients_;
    counted_ = true;
    ws_.text(true);
    read();
    pump();
  }

  void read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code error, size_t) {
      if (error) {
        self->finish();
        return;
      }
      self->session_->receive(beast::buffers_to_string(self->buffer_.data()));
      self->buffer_.consume(self->buffer_.size());
      self->read();
    });
  }

  void pump() {
    if (finished_) return;
    if (writing_) {
      // A client too slow to read may never take the disconnect notice: it gets a grace period, then the
      // socket is closed under the pending write.
      if (session_->closed() && !grace_armed_) {
        grace_armed_ = true;
        grace_.expires_after(kSlowClientGrace);
        grace_.async_wait([self = shared_from_this()](beast::error_code error) {
          if (!error) beast::get_lowest_layer(self->ws_).close();
        });
      }
      return;
    }
    if (outbox_.empty() && !closing_) {
      RpcSession::Outgoing out = session_->take(false);
      for (std::string& message : out.messages) outbox_.push_back(std::move(message));
      closing_ = out.closed;
    }
    if (outbox_.empty()) {
      if (closing_) close_slow_client();
      return;
    }
    writing_ = true;
    ws_.async_write(asio::buffer(outbox_.front()), [self = shared_from_this()](beast::error_code error, size_t) {
      self->writing_ = false;
      self->outbox_.pop_front();
      if (error) {
        self->finish();
        return;
      }
      self->pump();
    });
  }

  void close_slow_client() {
    if (close_sent_) return;
    close_sent_ = true;
    ws_.async_close(websocket::close_reason(websocket::close_code::try_again_later, codes::kRpcClientTooSlow),
                    [self = shared_from_this()](beast::error_code) {});
  }

  // The client is gone: its session stops; nothing else changes.
  void finish() {
    if (finished_) return;
    finished_ = true;
    detach();
  }

  websocket::stream<beast::tcp_stream> ws_;
  WebSocketServer::Impl& server_;
  std::string id_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  std::mutex session_mu_;  // session_ is set on the strand and detached from the stopping thread
  std::unique_ptr<RpcSession> session_;
  std::deque<std::string> outbox_;
  bool writing_ = false;
  bool closing_ = false;
  bool close_sent_ = false;
  bool finished_ = false;
  bool counted_ = false;
  bool grace_armed_ = false;
  asio::steady_timer grace_;
  static constexpr std::chrono::seconds kSlowClientGrace{2};
};

Result<void> WebSocketServer::Impl::listen() {
  beast::error_code error;
  const auto address = asio::ip::make_address(options_.host, error);
  if (error) return fail(codes::kInvalidArgument, "not an IP address: '" + options_.host + "'");
  const tcp::endpoint endpoint(address, options_.port);
  acceptor_.open(endpoint.protocol(), error);
  if (!error) acceptor_.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor_.bind(endpoint, error);
  if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error) {
    return fail(codes::kRpcListenFailed,
                "cannot listen on " + options_.host + ":" + std::to_string(options_.port) + ": " + error.message());
  }
  port_ = acceptor_.local_endpoint().port();
  accept();
  return {};
}

void WebSocketServer::Impl::accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code error, tcp::socket socket) {
    if (error) {
      if (error == asio::error::operation_aborted || !acceptor_.is_open()) return;
      accept();
      return;
    }
    std::shared_ptr<Connection> connection;
    {
      std::lock_guard<std::mutex> guard(mu_);
      if (stopped_) return;
      connection = std::make_shared<Connection>(std::move(socket), *this, "ws-" + std::to_string(++next_id_));
      std::erase_if(connections_, [](const std::weak_ptr<Connection>& weak) { return weak.expired(); });
      connections_.push_back(connection);
    }
    connection->start();
    accept();
  });
}

void WebSocketServer::Impl::stop() {
  std::vector<std::shared_ptr<Connection>> live;
  {
    std::lock_guard<std::mutex> guard(mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& weak : connections_) {
      if (auto connection = weak.lock()) live.push_back(std::move(connection));
    }
  }
  asio::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
  // Detached first, so no engine thread posts into the I/O context once it is gone.
  for (auto& connection : live) connection->detach();
  live.clear();
  io_.stop();
  if (thread_.joinable()) thread_.join();
  // With the I/O thread stopped: every connection (also one upgraded meanwhile) is detached from the engine
  // before the context is destroyed, and its socket closed, so its client sees the end now.
  std::lock_guard<std::mutex> guard(mu_);
  for (auto& weak : connections_) {
    if (auto connection = weak.lock()) {
      connection->detach();
      connection->shut_after_io_stopped();
    }
  }
  connections_.clear();
}

WebSocketServer::WebSocketServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

WebSocketServer::~WebSocketServer() { stop(); }

Result<std::unique_ptr<WebSocketServer>> WebSocketServer::start(EngineTransport& transport,
                                                                 WebSocketServerOptions options) {
  if (options.token.empty() && !options.allow_without_token) {
    return fail(codes::kInvalidArgument, "a WebSocket server needs a token (or allow_without_token)");
  }
  auto impl = std::make_unique<Impl>(transport, std::move(options));
  KEEL_TRY(impl->listen());
  impl->run();
  return std::make_unique<WebSocketServer>(std::move(impl));
}

uint16_t WebSocketServer::port() const { return impl_->port(); }
size_t WebSocketServer::client_count() const { return impl_->client_count(); }
void WebSocketServer::stop() {
  if (impl_) impl_->stop();
}

}  // namespace keel
