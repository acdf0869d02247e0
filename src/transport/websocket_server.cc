#include "transport/websocket_server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <deque>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "keel/error_codes.h"
#include "transport/static_files.h"
#include "transport/transport_errors.h"
#include "util/thread_annotations.h"
#include "util/thread_scheduler.h"

namespace keel {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

constexpr std::chrono::milliseconds kFirstAcceptBackoff{50};
constexpr std::chrono::milliseconds kMaxAcceptBackoff{1000};

std::string refusal_body(std::string_view code, std::string_view message) {
  return nlohmann::json{{"code", code}, {"message", message}}.dump();
}

// Every answer of keel's port: the security headers (static_files.h), and the connection ends after it.
template <typename Fields>
void finish_header(Fields& header, std::string_view self_host) {
  for (const auto& [name, value] : security_headers(self_host)) header.set(name, value);
  header.set(http::field::connection, "close");
}

}  // namespace

class Connection;

class WebSocketServer::Impl {
 public:
  Impl(EngineTransport& transport, WebSocketServerOptions options)
      : transport_(transport),
        options_(std::move(options)),
        sessions_(options_.ui_one_time_token),
        own_timers_(options_.timers == nullptr ? std::make_unique<ThreadScheduler>() : nullptr),
        timers_(options_.timers != nullptr ? *options_.timers : *own_timers_),
        acceptor_(asio::make_strand(io_)) {}

  Result<void> listen();
  void run() {
    thread_ = std::thread([this] { io_.run(); });
  }
  void stop();
  uint16_t port() const { return port_; }
  size_t client_count() const { return clients_.load(); }
  size_t unauthenticated_count() const { return unauthenticated_.load(); }

  // Arms a timer whose expiry runs `handler` on `executor`, unless the server stopped first.
  template <typename Executor>
  std::unique_ptr<ScheduledTask> after(std::chrono::milliseconds delay, Executor executor,
                                       std::function<void()> handler) {
    return timers_.schedule_after(delay, [this, executor, handler = std::move(handler)] {
      MutexLock guard(timer_mu_);
      if (!timers_stopped_) asio::post(executor, handler);
    });
  }

  EngineTransport& transport_;
  WebSocketServerOptions options_;
  UiSessions sessions_;  // the web interface's; the policy points at it
  HandshakePolicy policy_;
  std::atomic<size_t> clients_{0};
  std::atomic<size_t> unauthenticated_{0};

 private:
  void accept();
  void on_accept_failed(beast::error_code error);

  // Declared before io_: a connection's timer handle is destroyed with the connection, which may be when the
  // io_context is destroyed.
  std::unique_ptr<ThreadScheduler> own_timers_;
  Scheduler& timers_;
  Mutex timer_mu_;
  bool timers_stopped_ GUARDED_BY(timer_mu_) = false;  // no timer posts into the io_context any more
  asio::io_context io_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  uint64_t next_id_ GUARDED_BY(mu_) = 0;
  std::chrono::milliseconds accept_backoff_{0};
  std::unique_ptr<ScheduledTask> accept_retry_;  // on the acceptor's strand; reset by stop() after the join
  std::thread thread_;
  Mutex mu_;
  std::vector<std::weak_ptr<Connection>> connections_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = false;
};

// One client: the request header, the handshake checks, the upgrade, then its RpcSession until either side
// ends. Everything on the connection's strand; the session's on_ready posts there from the engine's thread.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, WebSocketServer::Impl& server, std::string id)
      : ws_(std::move(socket)), server_(server), id_(std::move(id)), grace_(ws_.get_executor()) {
    ++server_.unauthenticated_;
  }

  ~Connection() {
    leave_handshake();
    if (counted_) --server_.clients_;
  }

  void start() {
    std::weak_ptr<Connection> weak = weak_from_this();
    deadline_ = server_.after(server_.options_.handshake_timeout, ws_.get_executor(), [weak] {
      if (auto self = weak.lock()) self->on_handshake_timeout();
    });
    // The header only, bounded: nothing of a body is read before the token is checked (the read may take a
    // few bytes past the header; they are refused below).
    asio::async_read_until(
        beast::get_lowest_layer(ws_), asio::dynamic_buffer(header_, kMaxHandshakeHeaderBytes), "\r\n\r\n",
        [self = shared_from_this()](beast::error_code error, size_t size) { self->on_header(error, size); });
  }

  // From any thread: after it returns no engine event reaches this connection.
  void detach() {
    MutexLock guard(session_mu_);
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
  void leave_handshake() {
    if (handshaking_) {
      handshaking_ = false;
      --server_.unauthenticated_;
    }
  }

  void on_handshake_timeout() {
    if (!handshaking_) return;
    // Counted out before the socket closes, so a client that sees the end can count on the free slot.
    leave_handshake();
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }

  void on_header(beast::error_code error, size_t size) {
    if (error == asio::error::not_found) {
      refuse(http::status::request_header_fields_too_large, codes::kRpcHeaderTooLarge,
             "the request header is over " + std::to_string(kMaxHandshakeHeaderBytes) + " bytes");
      return;
    }
    if (error || !handshaking_) return;
    auto request = parse_handshake_header(std::string_view(header_).substr(0, size));
    if (!request) {
      refuse(http::status::bad_request, codes::kRpcInvalidRequest, "not an HTTP request");
      return;
    }
    if (header_.size() > size) {
      // A WebSocket client sends nothing before the server's 101, a browser nothing before its answer;
      // refused before the checks, so that a refused request never spends the one-time token.
      refuse(http::status::bad_request, codes::kRpcBodyRefused, "data after the request header");
      return;
    }
    const HandshakeVerdict verdict = check_handshake(*request, server_.policy_);
    switch (verdict.action) {
      case HandshakeAction::kRefuse:
        refuse(static_cast<http::status>(verdict.status), verdict.code, verdict.message);
        return;
      case HandshakeAction::kServeFile:
        serve_file(*request, verdict.self_host);
        return;
      case HandshakeAction::kOpenSession:
      case HandshakeAction::kKeepSession:
        answer_session(verdict);
        return;
      case HandshakeAction::kUpgrade:
        break;
    }
    principal_ = "ws:" + verdict.principal;
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.read_message_max(server_.options_.session.limits.max_message_bytes * 4);
    // The upgrade reads the very bytes that were checked.
    ws_.async_accept(
        asio::buffer(header_.data(), size),
        [self = shared_from_this()](beast::error_code accept_error) { self->on_accepted(accept_error); });
  }

  void refuse(http::status status, std::string_view code, std::string_view message) {
    auto response = std::make_shared<http::response<http::string_body>>(status, 11);
    response->set(http::field::content_type, "application/json");
    if (status == http::status::unauthorized) response->set(http::field::www_authenticate, "Bearer");
    if (status == http::status::method_not_allowed) response->set(http::field::allow, "GET, HEAD, POST");
    finish_header(*response, {});
    response->body() = refusal_body(code, message);
    response->prepare_payload();
    answer(std::move(response));
  }

  // A file of the web interface (or the page saying it is not built), streamed from disk: the connection
  // holds a small buffer, never the file.
  void serve_file(const HandshakeRequest& request, const std::string& self_host) {
    StaticAnswer found = resolve_static_file(server_.options_.ui_dir, request.target);
    const bool head = request.method == "HEAD";
    http::file_body::value_type file;
    if (!found.file.empty()) {
      beast::error_code error;
      file.open(found.file.c_str(), beast::file_mode::scan, error);
      if (error) found = resolve_static_file({}, "/missing");  // vanished since it was resolved: 404
    }
    const auto status = static_cast<http::status>(found.status);
    const auto fill = [&](auto& response) {
      response.set(http::field::content_type, found.content_type);
      response.set(http::field::cache_control, found.cache_control);
      finish_header(response, self_host);
    };
    if (file.is_open() && !head) {
      auto response = std::make_shared<http::response<http::file_body>>(status, 11);
      fill(*response);
      response->body() = std::move(file);
      response->prepare_payload();
      answer(std::move(response));
    } else if (head) {
      auto response = std::make_shared<http::response<http::empty_body>>(status, 11);
      fill(*response);
      response->content_length(file.is_open() ? file.size() : found.body.size());
      answer(std::move(response));
    } else {
      auto response = std::make_shared<http::response<http::string_body>>(status, 11);
      fill(*response);
      response->body() = std::move(found.body);
      response->prepare_payload();
      answer(std::move(response));
    }
  }

  // POST /session passed: a new session's cookie (HttpOnly, SameSite=Strict: no script and no other site's
  // request carries it), or nothing new for a page that already has one.
  void answer_session(const HandshakeVerdict& verdict) {
    auto response = std::make_shared<http::response<http::empty_body>>(http::status::no_content, 11);
    if (verdict.action == HandshakeAction::kOpenSession) {
      response->set(http::field::set_cookie, session_cookie_name(server_.policy_.port) + "=" +
                                                 server_.sessions_.open() +
                                                 "; HttpOnly; SameSite=Strict; Path=/");
    }
    response->set(http::field::cache_control, "no-store");
    finish_header(*response, verdict.self_host);
    response->prepare_payload();
    answer(std::move(response));
  }

  // Writes the answer, then ends the sending side; nothing more is read: the socket closes with the
  // connection. It counts as unauthenticated until the answer is written (a client that stops reading a file
  // holds its slot), and is counted out before its client sees the end, so that it can count on the slot.
  template <typename Body>
  void answer(std::shared_ptr<http::response<Body>> response) {
    auto& message = *response;
    http::async_write(ws_.next_layer(), message,
                      [self = shared_from_this(), response = std::move(response)](beast::error_code, size_t) {
                        self->leave_handshake();
                        beast::error_code ignored;
                        beast::get_lowest_layer(self->ws_).socket().shutdown(tcp::socket::shutdown_send,
                                                                             ignored);
                      });
  }

  void on_accepted(beast::error_code error) {
    if (error || !handshaking_) return;
    leave_handshake();
    deadline_.reset();
    header_ = std::string();
    RpcSessionOptions options = server_.options_.session;
    options.connection_id = id_;
    options.principal = principal_;
    std::weak_ptr<Connection> weak = weak_from_this();
    auto session = std::make_unique<RpcSession>(server_.transport_, std::move(options), [weak] {
      if (auto self = weak.lock()) asio::post(self->ws_.get_executor(), [self] { self->pump(); });
    });
    {
      MutexLock guard(session_mu_);
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
    ws_.async_write(asio::buffer(outbox_.front()),
                    [self = shared_from_this()](beast::error_code error, size_t) {
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
  std::string header_;       // the request header as read, before the upgrade
  std::string principal_;    // who the client is, once its handshake passed
  bool handshaking_ = true;  // counted in the server's unauthenticated_
  std::unique_ptr<ScheduledTask> deadline_;
  // session_ is set on the strand and detached from the stopping thread: the strand writes it under the
  // mutex and reads it without (nothing else writes it), the stopping thread reads it under the mutex. Not
  // annotated: GUARDED_BY cannot say "the writing thread may read without the lock".
  Mutex session_mu_;
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
  if (!is_loopback_address(options_.host) && !options_.allow_remote) {
    return fail(codes::kRpcListenNotLoopback,
                options_.host +
                    " is not a loopback address: clients on the network could connect, and plain ws:// "
                    "shows the token to anyone on the path (allow it on purpose with --allow-remote)");
  }
  const tcp::endpoint endpoint(address, options_.port);
  acceptor_.open(endpoint.protocol(), error);
  if (!error) acceptor_.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor_.bind(endpoint, error);
  if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error) {
    return fail(codes::kRpcListenFailed, "cannot listen on " + options_.host + ":" +
                                             std::to_string(options_.port) + ": " + error.message());
  }
  port_ = acceptor_.local_endpoint().port();
  policy_.listen_host = options_.host;
  policy_.port = port_;
  policy_.allowed_origins = options_.allowed_origins;
  policy_.allowed_hosts = options_.allowed_hosts;
  policy_.any_ip_host = options_.allow_remote;
  policy_.sessions = &sessions_;
  if (!options_.token.empty()) policy_.credentials.push_back({"owner", options_.token});
  for (const HandshakeCredential& credential : options_.credentials)
    policy_.credentials.push_back(credential);
  accept();
  return {};
}

void WebSocketServer::Impl::accept() {
  if (options_.accept_fault) {
    if (const int fault = options_.accept_fault(); fault != 0) {
      asio::post(acceptor_.get_executor(), [this, fault] {
        on_accept_failed(beast::error_code(fault, boost::system::system_category()));
      });
      return;
    }
  }
  acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code error, tcp::socket socket) {
    if (error) {
      on_accept_failed(error);
      return;
    }
    accept_backoff_ = std::chrono::milliseconds{0};
    if (unauthenticated_.load() >= options_.max_unauthenticated) {
      // Refused before anything is read or allocated for it; the short answer fits any socket buffer.
      static const std::string kBusy = [] {
        const std::string body =
            refusal_body(codes::kRpcTooManyUnauthenticated,
                         "too many connections are waiting for their handshake; try again");
        std::string security;
        for (const auto& [name, value] : security_headers({})) security += name + ": " + value + "\r\n";
        return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n" +
               security + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      }();
      beast::error_code ignored;
      socket.non_blocking(true, ignored);
      socket.write_some(asio::buffer(kBusy), ignored);
      socket.shutdown(tcp::socket::shutdown_both, ignored);
      socket.close(ignored);
      accept();
      return;
    }
    std::shared_ptr<Connection> connection;
    {
      MutexLock guard(mu_);
      if (stopped_) return;
      connection = std::make_shared<Connection>(std::move(socket), *this, "ws-" + std::to_string(++next_id_));
      std::erase_if(connections_, [](const std::weak_ptr<Connection>& weak) { return weak.expired(); });
      connections_.push_back(connection);
    }
    connection->start();
    accept();
  });
}

// On the acceptor's strand. Out of descriptors (EMFILE, ENFILE) or memory, accepting again at once fails
// again at once: the acceptor would spin. It waits instead, longer each time, and the I/O thread serves the
// connected clients meanwhile.
void WebSocketServer::Impl::on_accept_failed(beast::error_code error) {
  if (error == asio::error::operation_aborted || !acceptor_.is_open()) return;
  {
    MutexLock guard(mu_);
    if (stopped_) return;
  }
  accept_backoff_ =
      accept_backoff_.count() == 0 ? kFirstAcceptBackoff : std::min(accept_backoff_ * 2, kMaxAcceptBackoff);
  accept_retry_ = after(accept_backoff_, acceptor_.get_executor(), [this] {
    if (acceptor_.is_open()) accept();
  });
}

void WebSocketServer::Impl::stop() {
  std::vector<std::shared_ptr<Connection>> live;
  {
    MutexLock guard(mu_);
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
  {
    MutexLock guard(timer_mu_);
    timers_stopped_ = true;
  }
  io_.stop();
  if (thread_.joinable()) thread_.join();
  accept_retry_.reset();
  // With the I/O thread stopped: every connection (also one upgraded meanwhile) is detached from the engine
  // before the context is destroyed, and its socket closed, so its client sees the end now.
  MutexLock guard(mu_);
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
  if (options.token.empty() && options.credentials.empty() && !options.allow_without_token) {
    return fail(codes::kInvalidArgument, "a WebSocket server needs a token (or allow_without_token)");
  }
  std::set<std::string> principals = {"owner", "anonymous"};
  std::set<std::string> tokens = {options.token};
  for (const HandshakeCredential& credential : options.credentials) {
    if (credential.token.empty() || !tokens.insert(credential.token).second) {
      return fail(codes::kInvalidArgument, "every credential needs a token of its own");
    }
    const bool named = !credential.principal.empty() && credential.principal.size() <= 64 &&
                       std::all_of(credential.principal.begin(), credential.principal.end(), [](char c) {
                         return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                                c == '-' || c == '_' || c == '.';
                       });
    if (!named || !principals.insert(credential.principal).second) {
      return fail(codes::kInvalidArgument, "principal '" + credential.principal +
                                               "' is taken or not a name (1 to 64 of A-Z a-z 0-9 - _ .)");
    }
  }
  auto impl = std::make_unique<Impl>(transport, std::move(options));
  KEEL_TRY(impl->listen());
  impl->run();
  return std::make_unique<WebSocketServer>(std::move(impl));
}

uint16_t WebSocketServer::port() const { return impl_->port(); }
size_t WebSocketServer::client_count() const { return impl_->client_count(); }
size_t WebSocketServer::unauthenticated_count() const { return impl_->unauthenticated_count(); }
const std::string& WebSocketServer::one_time_token() const { return impl_->sessions_.one_time_token(); }
size_t WebSocketServer::web_session_count() const { return impl_->sessions_.size(); }
void WebSocketServer::stop() {
  if (impl_) impl_->stop();
}

}  // namespace keel
