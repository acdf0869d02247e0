// mcp/auth/loopback_redirect.cc — the one-shot redirect listener on Boost.Beast (synchronous, on an
// io_context run by wait() alone, with a timer bounding the whole wait).
#include "mcp/auth/loopback_redirect.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "mcp/auth/auth_errors.h"

namespace keel::mcp {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr size_t kMaxRequestBytes = 16 * 1024;
constexpr char kCallbackPath[] = "/callback";
constexpr char kDonePage[] =
    "<!doctype html><title>keel</title><p>keel received the sign-in. You may close this window.</p>";

}  // namespace

struct LoopbackRedirectListener::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  uint16_t port = 0;
};

LoopbackRedirectListener::LoopbackRedirectListener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LoopbackRedirectListener::~LoopbackRedirectListener() = default;

Result<std::unique_ptr<LoopbackRedirectListener>> LoopbackRedirectListener::open() {
  auto impl = std::make_unique<Impl>();
  boost::system::error_code ec;
  const tcp::endpoint endpoint(asio::ip::make_address_v4("127.0.0.1"), 0);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return std::unexpected(
        Error(codes::kMcpAuthDenied, "no loopback port for the sign-in's redirect: " + ec.message()));
  }
  impl->port = impl->acceptor.local_endpoint().port();
  return std::make_unique<LoopbackRedirectListener>(std::move(impl));
}

uint16_t LoopbackRedirectListener::port() const { return impl_->port; }

std::string LoopbackRedirectListener::redirect_uri() const {
  return "http://127.0.0.1:" + std::to_string(impl_->port) + kCallbackPath;
}

Result<std::string> LoopbackRedirectListener::wait(std::chrono::milliseconds timeout,
                                                   CancellationToken cancel) {
  Impl& impl = *impl_;
  impl.io.restart();
  std::optional<Result<std::string>> outcome;
  asio::steady_timer deadline(impl.io, timeout);
  deadline.async_wait([&](const boost::system::error_code& ec) {
    if (ec) return;
    outcome = std::unexpected(Error(codes::kMcpAuthDenied, "nobody finished signing in in time"));
    impl.acceptor.cancel();
  });
  // Cancellation may fire on any thread: it posts onto the io_context, which alone touches the acceptor.
  CancellationRegistration registration = cancel.on_cancel([&] {
    asio::post(impl.io, [&] {
      if (!outcome) outcome = std::unexpected(Error(codes::kMcpAuthDenied, "the sign-in was cancelled"));
      impl.acceptor.cancel();
      deadline.cancel();
    });
  });

  std::function<void()> accept_next;
  accept_next = [&] {
    impl.acceptor.async_accept([&](const boost::system::error_code& ec, tcp::socket socket) {
      if (ec || outcome) return;
      beast::tcp_stream stream(std::move(socket));
      beast::flat_buffer buffer(kMaxRequestBytes);
      http::request_parser<http::empty_body> parser;
      parser.header_limit(kMaxRequestBytes);
      boost::system::error_code read_error;
      stream.expires_after(std::chrono::seconds(10));
      http::read(stream, buffer, parser, read_error);
      if (read_error) {
        accept_next();
        return;
      }
      const auto& request = parser.get();
      const std::string target(request.target());
      const bool is_callback =
          request.method() == http::verb::get &&
          (target == kCallbackPath || target.starts_with(std::string(kCallbackPath) + "?"));
      http::response<http::string_body> response{is_callback ? http::status::ok : http::status::not_found,
                                                 request.version()};
      response.set(http::field::content_type, "text/html; charset=utf-8");
      response.set(http::field::cache_control, "no-store");
      response.body() = is_callback ? kDonePage : "not found";
      response.keep_alive(false);
      response.prepare_payload();
      boost::system::error_code write_error;
      http::write(stream, response, write_error);
      if (!is_callback) {
        accept_next();
        return;
      }
      outcome = "http://127.0.0.1:" + std::to_string(impl.port) + target;
      deadline.cancel();
    });
  };
  accept_next();
  impl.io.run();
  // No cancellation may post onto the io_context any more; then what it did post runs while the locals it
  // refers to are still alive.
  registration = CancellationRegistration();
  impl.io.restart();
  impl.io.poll();
  if (!outcome) return std::unexpected(Error(codes::kMcpAuthDenied, "the sign-in's listener stopped"));
  return std::move(*outcome);
}

Authorizer make_loopback_authorizer(LoopbackRedirectListener& listener,
                                    std::function<void(const std::string&)> show,
                                    std::chrono::milliseconds timeout, CancellationToken cancel) {
  return [&listener, show = std::move(show), timeout, cancel](
             const std::string& authorization_url, const std::string& redirect_uri) -> Result<std::string> {
    (void)redirect_uri;  // the listener's own
    show(authorization_url);
    return listener.wait(timeout, cancel);
  };
}

}  // namespace keel::mcp
