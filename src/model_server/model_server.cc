// model_server/model_server.cc — Boost.Beast on one io_context thread, one coroutine per connection.
//
// Everything a coroutine hands to an asynchronous operation by reference (socket, buffers, parser,
// response, serializer, the rendered bytes) lives in the heap-allocated Connection, never in the coroutine
// frame (g++ 12 coroutine bugs; see the project rules). All state but the request log and the stop reason
// is touched only on the I/O thread.
#include "model_server/model_server.h"

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <thread>

#include "model_server/history_rules.h"
#include "model_server/model_server_errors.h"
#include "model_server/request_log.h"
#include "model_server/response_selector.h"
#include "model_server/wire_encoder.h"
#include "util/thread_annotations.h"

namespace keel::model_server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr size_t kMaxRequestBody = 64 * 1024 * 1024;

struct Connection {
  explicit Connection(tcp::socket s) : socket(std::move(s)), timer(socket.get_executor()) {}
  tcp::socket socket;
  asio::steady_timer timer;
  beast::flat_buffer buffer;
  std::optional<http::request_parser<http::string_body>> parser;
  RenderedResponse rendered;
  std::optional<http::response<http::string_body>> fixed;
  std::optional<http::response<http::empty_body>> head;
  std::optional<http::response_serializer<http::empty_body>> serializer;
  std::array<char, 512> scratch{};
};

std::optional<Api> api_for(std::string_view path) {
  if (path == "/v1/chat/completions") return Api::kChatCompletions;
  if (path == "/v1/responses") return Api::kResponses;
  if (path == "/v1/messages") return Api::kAnthropicMessages;
  return std::nullopt;
}

}  // namespace

class ModelServer::Impl {
 public:
  Impl(ServerOptions options, std::unique_ptr<RequestLog> log)
      : options_(std::move(options)), log_(std::move(log)), selector_(options_.script) {
    if (!options_.api_key) options_.api_key = options_.script.api_key;
  }

  Result<void> listen() {
    error_code ec;
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), options_.port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return fail(codes::kModelServerListenFailed,
                  "cannot listen on 127.0.0.1:" + std::to_string(options_.port) + ": " + ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
    return {};
  }

  void run() {
    asio::co_spawn(ioc_, accept_loop(), asio::detached);
    if (options_.max_duration) {
      deadline_.expires_after(*options_.max_duration);
      deadline_.async_wait([this](error_code ec) {
        if (!ec) shut_down("time limit reached");
      });
    }
    MutexLock lock(join_mu_);
    thread_ = std::thread([this] { ioc_.run(); });
  }

  void stop() {
    asio::post(ioc_, [this] { shut_down("stopped"); });
  }

  std::string wait() {
    {
      MutexLock lock(join_mu_);
      if (thread_.joinable()) thread_.join();
    }
    MutexLock lock(reason_mu_);
    return stop_reason_;
  }

  uint16_t port() const { return port_; }
  std::vector<nlohmann::json> requests() const { return log_->records(); }

 private:
  // On the I/O thread. Closing everything makes every coroutine finish, and then run() returns.
  void shut_down(std::string reason) {
    if (stopping_) return;
    stopping_ = true;
    {
      MutexLock lock(reason_mu_);
      stop_reason_ = std::move(reason);
    }
    error_code ignored;
    acceptor_.close(ignored);
    deadline_.cancel();
    for (auto& [id, weak] : connections_) {
      if (auto connection = weak.lock()) {
        connection->socket.close(ignored);
        connection->timer.cancel();
      }
    }
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      error_code ec;
      tcp::socket socket = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (stopping_) co_return;
      if (ec) continue;
      socket.set_option(tcp::no_delay(true), ec);  // each event leaves at once: latency is what is tested
      auto connection = std::make_shared<Connection>(std::move(socket));
      const uint64_t id = next_connection_++;
      connections_.emplace(id, connection);
      asio::co_spawn(ioc_, serve(connection, id), asio::detached);
    }
  }

  asio::awaitable<void> serve(std::shared_ptr<Connection> connection, uint64_t id) {
    for (;;) {
      error_code ec;
      connection->parser.emplace();
      connection->parser->body_limit(kMaxRequestBody);
      co_await http::async_read(connection->socket, connection->buffer, *connection->parser,
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec || stopping_) break;
      const bool keep_open = co_await respond(connection);
      if (!keep_open || stopping_) break;
    }
    error_code ignored;
    connection->socket.close(ignored);
    connections_.erase(id);
  }

  // Answers the request in connection->parser; returns whether the connection may serve another.
  asio::awaitable<bool> respond(std::shared_ptr<Connection> connection) {
    http::request<http::string_body> request = connection->parser->release();
    const uint64_t number = ++received_;
    HeaderList headers;
    for (const auto& field : request)
      headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    const std::string target(request.target());
    const std::string path = target.substr(0, target.find('?'));
    log_->append(request_record(number, std::string(request.method_string()), path, headers, request.body()));

    connection->rendered = answer(request, path, number);
    const bool keep_alive = request.keep_alive();
    const unsigned version = request.version();
    const bool completed = co_await play(connection, keep_alive, version);
    if (completed && options_.max_requests && ++completed_ >= *options_.max_requests) {
      shut_down("served " + std::to_string(completed_) + " requests");
    }
    co_return completed&& keep_alive;
  }

  RenderedResponse answer(const http::request<http::string_body>& request, const std::string& path,
                          uint64_t number) {
    const std::optional<Api> api = api_for(path);
    if (!api)
      return error_response(Api::kChatCompletions, 404, "not_found_error", "no such endpoint: " + path);
    if (request.method() != http::verb::post) return error_response(*api, 405, "", "use POST");
    if (options_.api_key) {
      const bool anthropic = *api == Api::kAnthropicMessages;
      const auto sent = request[anthropic ? "x-api-key" : "authorization"];
      const std::string expected = anthropic ? *options_.api_key : "Bearer " + *options_.api_key;
      if (sent != expected) {
        return error_response(*api, 401, "", anthropic ? "invalid x-api-key" : "Incorrect API key provided.");
      }
    }
    const nlohmann::json body = nlohmann::json::parse(request.body(), nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object()) {
      return error_response(*api, 400, "", "the request body is not a JSON object");
    }
    if (!body.contains("stream") || body.at("stream") != true) {
      return error_response(*api, 400, "", "the scripted model server only streams: set \"stream\": true");
    }
    // As the real API would: a history it refuses is answered 400, whatever the script says.
    if (auto violation = history_violation(*api, body)) {
      return error_response(*api, 400, "invalid_request_error", *violation);
    }
    const ScriptedResponse* response = selector_.choose(last_input_text(*api, body));
    if (response == nullptr) {
      return error_response(*api, 500, "",
                            "the script has no response left for request " + std::to_string(number));
    }
    RenderContext context;
    context.request_number = number;
    if (body.contains("model") && body.at("model").is_string())
      context.model = body.at("model").get<std::string>();
    if (body.contains("stream_options") && body.at("stream_options").is_object()) {
      context.include_usage = body.at("stream_options").value("include_usage", nlohmann::json(false)) == true;
    }
    RenderedResponse rendered = render_response(*api, *response, context);
    rendered.headers.emplace_back(*api == Api::kAnthropicMessages ? "request-id" : "x-request-id",
                                  "req_scripted_" + std::to_string(number));
    return rendered;
  }

  // Plays connection->rendered; returns whether the response was written completely.
  asio::awaitable<bool> play(std::shared_ptr<Connection> connection, bool keep_alive, unsigned version) {
    for (size_t i = 0; i < connection->rendered.before_head.size(); ++i) {
      const Action::Kind kind = connection->rendered.before_head[i].kind;
      if (kind == Action::Kind::kDelay) {
        const bool slept = co_await sleep(connection, connection->rendered.before_head[i].delay);
        if (!slept) co_return false;
      } else if (kind == Action::Kind::kHang) {
        co_await hang(connection);
        co_return false;
      } else {
        co_return false;  // kDisconnect: serve() closes the socket
      }
    }
    error_code ec;
    if (!connection->rendered.streamed) {
      connection->fixed.emplace(static_cast<http::status>(connection->rendered.status), version);
      for (const auto& [name, value] : connection->rendered.headers) connection->fixed->set(name, value);
      connection->fixed->keep_alive(keep_alive);
      connection->fixed->body() = std::move(connection->rendered.body);
      connection->fixed->prepare_payload();
      co_await http::async_write(connection->socket, *connection->fixed,
                                 asio::redirect_error(asio::use_awaitable, ec));
      co_return !ec;
    }
    connection->head.emplace(static_cast<http::status>(connection->rendered.status), version);
    for (const auto& [name, value] : connection->rendered.headers) connection->head->set(name, value);
    connection->head->keep_alive(keep_alive);
    connection->head->chunked(true);
    connection->serializer.emplace(*connection->head);
    co_await http::async_write_header(connection->socket, *connection->serializer,
                                      asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return false;
    for (size_t i = 0; i < connection->rendered.actions.size(); ++i) {
      const Action::Kind kind = connection->rendered.actions[i].kind;
      if (kind == Action::Kind::kWrite) {
        co_await asio::async_write(connection->socket,
                                   http::make_chunk(asio::buffer(connection->rendered.actions[i].bytes)),
                                   asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return false;
        if (options_.on_stream_write) options_.on_stream_write();
      } else if (kind == Action::Kind::kDelay) {
        const bool slept = co_await sleep(connection, connection->rendered.actions[i].delay);
        if (!slept) co_return false;
      } else if (kind == Action::Kind::kHang) {
        co_await hang(connection);
        co_return false;
      } else {
        co_return false;  // kDisconnect: no last chunk, so the client sees the body end early
      }
    }
    co_await asio::async_write(connection->socket, http::make_chunk_last(),
                               asio::redirect_error(asio::use_awaitable, ec));
    co_return !ec;
  }

  asio::awaitable<bool> sleep(std::shared_ptr<Connection> connection, std::chrono::milliseconds delay) {
    error_code ec;
    connection->timer.expires_after(delay);
    co_await connection->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_return !ec && !stopping_;
  }

  // Silence until the client closes the connection (or the server stops).
  asio::awaitable<void> hang(std::shared_ptr<Connection> connection) {
    for (;;) {
      error_code ec;
      co_await connection->socket.async_wait(tcp::socket::wait_read,
                                             asio::redirect_error(asio::use_awaitable, ec));
      if (ec || stopping_) co_return;
      const size_t read = connection->socket.read_some(asio::buffer(connection->scratch), ec);
      if (ec || read == 0) co_return;  // end of file: the client went away
    }
  }

  ServerOptions options_;
  std::unique_ptr<RequestLog> log_;
  ResponseSelector selector_;
  asio::io_context ioc_{1};
  tcp::acceptor acceptor_{ioc_};
  asio::steady_timer deadline_{ioc_};
  uint16_t port_ = 0;

  // I/O thread only.
  bool stopping_ = false;
  uint64_t received_ = 0;
  uint64_t completed_ = 0;
  uint64_t next_connection_ = 0;
  std::map<uint64_t, std::weak_ptr<Connection>> connections_;

  Mutex reason_mu_;
  std::string stop_reason_ GUARDED_BY(reason_mu_);
  Mutex join_mu_;
  std::thread thread_ GUARDED_BY(join_mu_);
};

Result<std::unique_ptr<ModelServer>> ModelServer::start(ServerOptions options) {
  auto log = KEEL_TRY(RequestLog::open(options.record_path));
  auto impl = std::make_unique<Impl>(std::move(options), std::move(log));
  KEEL_TRY(impl->listen());
  impl->run();
  return std::make_unique<ModelServer>(std::move(impl));
}

ModelServer::ModelServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ModelServer::~ModelServer() {
  stop();
  wait();
}

uint16_t ModelServer::port() const { return impl_->port(); }

std::string ModelServer::base_url() const { return "http://127.0.0.1:" + std::to_string(port()); }

std::vector<nlohmann::json> ModelServer::requests() const { return impl_->requests(); }

void ModelServer::stop() { impl_->stop(); }

std::string ModelServer::wait() { return impl_->wait(); }

}  // namespace keel::model_server
