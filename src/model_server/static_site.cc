// model_server/static_site.cc — Boost.Beast on one io_context thread, one coroutine per connection.
//
// As in model_server.cc, everything an asynchronous operation holds by reference (socket, buffer, parser,
// response) lives in the heap-allocated Connection, never in a coroutine frame (g++ 12 coroutine bugs; see
// docs/architecture.md). All state but the request list is touched only on the I/O thread.
#include "model_server/static_site.h"

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <condition_variable>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "model_server/model_server_errors.h"
#include "util/thread_annotations.h"

namespace keel::model_server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace fs = std::filesystem;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr size_t kMaxListeners = 8;
constexpr size_t kMaxRequestBody = 1024 * 1024;
constexpr int64_t kMaxSlowMs = 600'000;

struct Connection {
  explicit Connection(tcp::socket s) : socket(std::move(s)), timer(socket.get_executor()) {}
  tcp::socket socket;
  asio::steady_timer timer;
  beast::flat_buffer buffer;
  std::optional<http::request_parser<http::string_body>> parser;
  std::optional<http::response<http::string_body>> response;
  std::array<char, 512> scratch{};
};

// What a request asks for, decided before anything is written.
struct Plan {
  enum class Kind { kAnswer, kSlow, kHang };
  Kind kind = Kind::kAnswer;
  std::chrono::milliseconds delay{0};
  http::status status = http::status::ok;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
  std::string location;  // kAnswer with a redirect status
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes `text` (and `+` as a space when `plus_is_space`); nullopt on a malformed escape.
std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int high = hex_value(text[i + 1]);
      const int low = hex_value(text[i + 2]);
      if (high < 0 || low < 0) return std::nullopt;
      out.push_back(static_cast<char>(high * 16 + low));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// The value of `name` in a query string, decoded; nullopt when absent or malformed.
std::optional<std::string> query_param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) != name) continue;
    if (eq == std::string_view::npos) return std::string();
    return percent_decode(pair.substr(eq + 1), /*plus_is_space=*/true);
  }
  return std::nullopt;
}

std::optional<int64_t> parse_int(const std::optional<std::string>& text) {
  if (!text || text->empty()) return std::nullopt;
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc{} || end != text->data() + text->size()) return std::nullopt;
  return value;
}

std::string content_type_for(const fs::path& file) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 20> kTypes{{
      {".html", "text/html; charset=utf-8"},
      {".htm", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
      {".csv", "text/csv; charset=utf-8"},
      {".xml", "application/xml"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".webp", "image/webp"},
      {".ico", "image/x-icon"},
      {".pdf", "application/pdf"},
      {".wasm", "application/wasm"},
      {".woff2", "font/woff2"},
      {".zip", "application/zip"},
  }};
  const std::string extension = file.extension().string();
  for (const auto& [ext, type] : kTypes) {
    if (ext == extension) return std::string(type);
  }
  return "application/octet-stream";
}

std::string small_page(std::string_view title, std::string_view text) {
  return "<!doctype html><html><head><meta charset=\"utf-8\"><title>" + std::string(title) +
         "</title></head><body><p>" + std::string(text) + "</p></body></html>\n";
}

Plan error_plan(http::status status, std::string_view why) {
  Plan plan;
  plan.status = status;
  plan.body = small_page(std::to_string(static_cast<unsigned>(status)), why);
  return plan;
}

// The regular file a decoded request path names under `root` (canonical), or nullopt.
std::optional<fs::path> resolve_file(const fs::path& root, std::string_view decoded_path) {
  if (decoded_path.empty() || decoded_path.front() != '/') return std::nullopt;
  fs::path relative;
  std::string_view rest = decoded_path.substr(1);
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    if (segment.empty() || segment == ".") continue;
    if (segment == ".." || segment.find('\\') != std::string_view::npos ||
        segment.find('\0') != std::string_view::npos) {
      return std::nullopt;
    }
    relative /= std::string(segment);
  }
  std::error_code ec;
  fs::path candidate = fs::weakly_canonical(root / relative, ec);
  if (ec) return std::nullopt;
  if (fs::is_directory(candidate, ec)) candidate /= "index.html";
  candidate = fs::weakly_canonical(candidate, ec);
  if (ec) return std::nullopt;
  // A symbolic link may point out of the root: compare the resolved path, not the requested one.
  const fs::path inside = candidate.lexically_relative(root);
  if (inside.empty() || *inside.begin() == "..") return std::nullopt;
  if (!fs::is_regular_file(candidate, ec)) return std::nullopt;
  return candidate;
}

}  // namespace

class StaticSite::Impl {
 public:
  Impl(fs::path root, size_t listeners) : root_(std::move(root)) {
    for (size_t i = 0; i < listeners; ++i) acceptors_.emplace_back(ioc_);
  }

  Result<void> listen() {
    for (tcp::acceptor& acceptor : acceptors_) {
      error_code ec;
      const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
      acceptor.open(endpoint.protocol(), ec);
      if (!ec) acceptor.bind(endpoint, ec);
      if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
      if (ec) return fail(codes::kModelServerListenFailed, "cannot listen on 127.0.0.1: " + ec.message());
      ports_.push_back(acceptor.local_endpoint().port());
    }
    return {};
  }

  void run() {
    for (size_t i = 0; i < acceptors_.size(); ++i) asio::co_spawn(ioc_, accept_loop(i), asio::detached);
    MutexLock lock(join_mu_);
    thread_ = std::thread([this] { ioc_.run(); });
  }

  void stop() {
    asio::post(ioc_, [this] { shut_down(); });
    MutexLock lock(join_mu_);
    if (thread_.joinable()) thread_.join();
  }

  uint16_t port(size_t index) const { return index < ports_.size() ? ports_[index] : 0; }

  std::vector<std::string> requests() const {
    MutexLock lock(requests_mu_);
    return requests_;
  }

  bool wait_for_request(std::string_view path, std::chrono::milliseconds timeout) const {
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    MutexLock lock(requests_mu_);
    for (;;) {
      for (const std::string& target : requests_) {
        if (std::string_view(target).substr(0, target.find('?')) == path) return true;
      }
      if (lock.wait_until(requests_cv_, give_up) == std::cv_status::timeout) return false;
    }
  }

 private:
  // On the I/O thread. Closing everything makes every coroutine finish, and then run() returns.
  void shut_down() {
    if (stopping_) return;
    stopping_ = true;
    error_code ignored;
    for (tcp::acceptor& acceptor : acceptors_) acceptor.close(ignored);
    for (auto& [id, weak] : connections_) {
      if (auto connection = weak.lock()) {
        connection->socket.close(ignored);
        connection->timer.cancel();
      }
    }
  }

  asio::awaitable<void> accept_loop(size_t index) {
    for (;;) {
      error_code ec;
      tcp::socket socket =
          co_await acceptors_[index].async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (stopping_) co_return;
      if (ec) continue;
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
    const http::request<http::string_body> request = connection->parser->release();
    const std::string target(request.target());
    record(target);
    Plan plan = decide(request.method(), target);
    if (plan.kind == Plan::Kind::kHang) {
      co_await hang(connection);
      co_return false;
    }
    if (plan.kind == Plan::Kind::kSlow) {
      error_code ec;
      connection->timer.expires_after(plan.delay);
      co_await connection->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (ec || stopping_) co_return false;
    }
    const bool keep_alive = request.keep_alive();
    connection->response.emplace(plan.status, request.version());
    http::response<http::string_body>& response = *connection->response;
    response.set(http::field::cache_control, "no-store");
    if (!plan.location.empty()) response.set(http::field::location, plan.location);
    response.keep_alive(keep_alive);
    const bool bodiless =
        plan.status == http::status::no_content || plan.status == http::status::not_modified;
    if (!bodiless) {
      response.set(http::field::content_type, plan.content_type);
      response.content_length(plan.body.size());
      if (request.method() != http::verb::head) response.body() = std::move(plan.body);
    }
    error_code ec;
    co_await http::async_write(connection->socket, response, asio::redirect_error(asio::use_awaitable, ec));
    co_return !ec && keep_alive;
  }

  void record(std::string target) {
    {
      MutexLock lock(requests_mu_);
      requests_.push_back(std::move(target));
    }
    requests_cv_.notify_all();
  }

  Plan decide(http::verb method, const std::string& target) const {
    const size_t question = target.find('?');
    const std::string_view raw_path = std::string_view(target).substr(0, question);
    const std::string_view query =
        question == std::string::npos ? std::string_view{} : std::string_view(target).substr(question + 1);
    if (method != http::verb::get && method != http::verb::head && method != http::verb::post) {
      return error_plan(http::status::method_not_allowed, "use GET, HEAD or POST");
    }
    if (raw_path == "/hang") {
      Plan plan;
      plan.kind = Plan::Kind::kHang;
      return plan;
    }
    if (raw_path == "/slow") {
      const std::optional<int64_t> ms = parse_int(query_param(query, "ms"));
      if (!ms || *ms < 0 || *ms > kMaxSlowMs) return error_plan(http::status::bad_request, "ms=0..600000");
      Plan plan;
      plan.kind = Plan::Kind::kSlow;
      plan.delay = std::chrono::milliseconds(*ms);
      plan.body = small_page("slow", "Answered after " + std::to_string(*ms) + " ms.");
      return plan;
    }
    if (raw_path == "/redirect") {
      const std::optional<std::string> to = query_param(query, "to");
      if (!to || to->empty() || to->find_first_of("\r\n") != std::string::npos) {
        return error_plan(http::status::bad_request, "to=URL");
      }
      Plan plan;
      plan.status = http::status::found;
      plan.location = *to;
      plan.body = small_page("redirect", "Redirecting.");
      return plan;
    }
    if (raw_path == "/status") {
      const std::optional<int64_t> code = parse_int(query_param(query, "code"));
      if (!code || *code < 200 || *code > 599) return error_plan(http::status::bad_request, "code=200..599");
      Plan plan;
      plan.status = static_cast<http::status>(*code);
      plan.body = small_page("status " + std::to_string(*code), "Status " + std::to_string(*code) + ".");
      return plan;
    }
    const std::optional<std::string> decoded = percent_decode(raw_path, /*plus_is_space=*/false);
    const std::optional<fs::path> file = decoded ? resolve_file(root_, *decoded) : std::nullopt;
    if (!file) return error_plan(http::status::not_found, "Not found.");
    std::ifstream in(*file, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in.good() && !in.eof()) return error_plan(http::status::internal_server_error, "Unreadable.");
    Plan plan;
    plan.content_type = content_type_for(*file);
    plan.body = std::move(bytes).str();
    return plan;
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

  const fs::path root_;  // canonical
  asio::io_context ioc_{1};
  std::vector<tcp::acceptor> acceptors_;
  std::vector<uint16_t> ports_;  // written before the I/O thread starts, read-only after

  // I/O thread only.
  bool stopping_ = false;
  uint64_t next_connection_ = 0;
  std::map<uint64_t, std::weak_ptr<Connection>> connections_;

  mutable Mutex requests_mu_;
  mutable std::condition_variable requests_cv_;
  std::vector<std::string> requests_ GUARDED_BY(requests_mu_);
  Mutex join_mu_;
  std::thread thread_ GUARDED_BY(join_mu_);
};

Result<std::unique_ptr<StaticSite>> StaticSite::start(StaticSiteOptions options) {
  std::error_code ec;
  if (!fs::is_directory(options.root, ec)) {
    return fail(codes::kInvalidArgument, "the static site root is not a directory: " + options.root.string());
  }
  if (options.listeners == 0 || options.listeners > kMaxListeners) {
    return fail(codes::kInvalidArgument, "a static site has 1 to 8 listeners");
  }
  fs::path root = fs::canonical(options.root, ec);
  if (ec)
    return fail(codes::kInvalidArgument, "cannot resolve " + options.root.string() + ": " + ec.message());
  auto impl = std::make_unique<Impl>(std::move(root), options.listeners);
  KEEL_TRY(impl->listen());
  impl->run();
  return std::make_unique<StaticSite>(std::move(impl));
}

StaticSite::StaticSite(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StaticSite::~StaticSite() { stop(); }

uint16_t StaticSite::port(size_t index) const { return impl_->port(index); }

std::string StaticSite::origin(size_t index, std::string_view host) const {
  return "http://" + std::string(host) + ":" + std::to_string(port(index));
}

std::vector<std::string> StaticSite::requests() const { return impl_->requests(); }

bool StaticSite::wait_for_request(std::string_view path, std::chrono::milliseconds timeout) const {
  return impl_->wait_for_request(path, timeout);
}

void StaticSite::stop() { impl_->stop(); }

}  // namespace keel::model_server
