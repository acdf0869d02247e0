// browser/cdp/cdp_client.cc — see cdp_client.h.
//
// A call is a Pending entry keyed by its id and a steady_timer used as a one-shot signal: the coroutine waits
// on the timer (its expiry is the call's timeout); a reply, a cancellation, the end of the session or of the
// connection stores the outcome and cancels the timer, which resumes the coroutine.
#include "browser/cdp/cdp_client.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>

#include "browser/browser_errors.h"
#include "browser/cdp/json_repair.h"

namespace keel::browser {

namespace asio = boost::asio;
using nlohmann::json;

struct CdpClient::Pending {
  explicit Pending(const asio::any_io_executor& ex) : signal(ex) {}
  std::string method;
  std::string session_id;
  asio::steady_timer signal;
  std::optional<Result<json>> outcome;
};

CdpClient::Subscription::Subscription(Subscription&& other) noexcept
    : client_(std::move(other.client_)), id_(std::exchange(other.id_, 0)) {}

CdpClient::Subscription& CdpClient::Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    reset();
    client_ = std::move(other.client_);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void CdpClient::Subscription::reset() {
  if (id_ == 0) return;
  if (auto client = client_.lock()) client->unsubscribe(id_);
  id_ = 0;
  client_.reset();
}

std::shared_ptr<CdpClient> CdpClient::create(asio::any_io_executor ex,
                                             std::unique_ptr<CdpTransport> transport) {
  return std::shared_ptr<CdpClient>(new CdpClient(std::move(ex), std::move(transport)));
}

CdpClient::CdpClient(asio::any_io_executor ex, std::unique_ptr<CdpTransport> transport)
    : ex_(std::move(ex)), transport_(std::move(transport)) {}

CdpClient::~CdpClient() { transport_->close(); }

void CdpClient::start() {
  std::weak_ptr<CdpClient> weak = weak_from_this();
  transport_->start(
      [weak](std::string text) {
        if (auto self = weak.lock()) self->on_message(std::move(text));
      },
      [weak](Error why) {
        if (auto self = weak.lock()) self->on_transport_closed(std::move(why));
      });
}

asio::awaitable<Result<json>> CdpClient::call(std::string method, json params, std::string session_id,
                                              CallOptions options) {
  auto self = shared_from_this();  // the pending call keeps the client alive
  if (closed_) co_return fail(*closed_);
  const int64_t id = ++next_call_id_;
  auto pending = std::make_shared<Pending>(ex_);
  pending->method = method;
  pending->session_id = session_id;
  pending_.emplace(id, pending);

  json message = {{"id", id}, {"method", std::move(method)}, {"params", std::move(params)}};
  if (!message["params"].is_object()) message["params"] = json::object();
  if (!session_id.empty()) message["sessionId"] = session_id;
  // Text from pages or models may hold invalid UTF-8; replace it rather than throw.
  transport_->send(message.dump(-1, ' ', false, json::error_handler_t::replace));

  std::weak_ptr<CdpClient> weak = self;
  asio::any_io_executor ex = ex_;
  CancellationRegistration registration = options.cancel.on_cancel([weak, ex, id] {
    asio::post(ex, [weak, id] {
      if (auto client = weak.lock())
        client->complete(id, fail(codes::kCancelled, "the CDP command was cancelled"));
    });
  });

  pending->signal.expires_after(options.timeout);
  boost::system::error_code ec;
  co_await pending->signal.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  pending_.erase(id);
  if (pending->outcome) co_return std::move(*pending->outcome);
  co_return fail(codes::kBrowserCdpTimeout,
                 pending->method + " got no reply within " + std::to_string(options.timeout.count()) + " ms",
                 /*retryable=*/true);
}

void CdpClient::notify(std::string method, json params, std::string session_id) {
  if (closed_) return;
  json message = {{"id", ++next_call_id_}, {"method", std::move(method)}, {"params", std::move(params)}};
  if (!message["params"].is_object()) message["params"] = json::object();
  if (!session_id.empty()) message["sessionId"] = std::move(session_id);
  transport_->send(message.dump(-1, ' ', false, json::error_handler_t::replace));
}

CdpClient::Subscription CdpClient::listen(EventHandler handler) {
  const uint64_t id = ++next_subscription_id_;
  listeners_.emplace(id, std::make_shared<EventHandler>(std::move(handler)));
  return Subscription(weak_from_this(), id);
}

CdpClient::Subscription CdpClient::on_close(CloseHandler handler) {
  if (closed_) {
    handler(*closed_);
    return {};
  }
  const uint64_t id = ++next_subscription_id_;
  close_handlers_.emplace(id, std::make_shared<CloseHandler>(std::move(handler)));
  return Subscription(weak_from_this(), id);
}

void CdpClient::unsubscribe(uint64_t id) {
  listeners_.erase(id);
  close_handlers_.erase(id);
}

void CdpClient::complete(int64_t id, Result<json> outcome) {
  auto found = pending_.find(id);
  if (found == pending_.end()) return;  // already completed, timed out, or a notify()'s reply
  std::shared_ptr<Pending> pending = found->second;
  pending_.erase(found);
  pending->outcome = std::move(outcome);
  pending->signal.cancel();
}

void CdpClient::end_session(const std::string& session_id, Error why) {
  std::vector<int64_t> ids;
  for (const auto& [id, pending] : pending_) {
    if (pending->session_id == session_id) ids.push_back(id);
  }
  for (int64_t id : ids) complete(id, fail(why));
}

void CdpClient::close(Error why) {
  if (closed_) return;
  closed_ = why;
  transport_->close();
  std::vector<int64_t> ids;
  for (const auto& [id, pending] : pending_) ids.push_back(id);
  for (int64_t id : ids) complete(id, fail(why));
  auto handlers = std::move(close_handlers_);
  close_handlers_.clear();
  for (const auto& [id, handler] : handlers) (*handler)(why);
}

void CdpClient::on_transport_closed(Error why) { close(std::move(why)); }

CdpClient::Stats CdpClient::stats() const {
  Stats stats = stats_;
  stats.in_flight = pending_.size();
  stats.oversized = transport_->oversized_messages();
  return stats;
}

void CdpClient::on_message(std::string text) {
  if (closed_) return;
  stats_.largest_message = std::max(stats_.largest_message, text.size());
  json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) {
    SurrogateRepair repaired = repair_lone_surrogates(text);
    if (repaired.replaced > 0) message = json::parse(repaired.text, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded()) {
      ++stats_.unparseable;  // a call it answered times out with its own error
      return;
    }
    ++stats_.repaired;
  }
  if (!message.is_object()) {
    ++stats_.unparseable;
    return;
  }
  auto id = message.find("id");
  if (id != message.end()) {
    if (!id->is_number_integer()) return;
    const int64_t call_id = id->get<int64_t>();
    auto found = pending_.find(call_id);
    if (found == pending_.end()) return;  // late, or a notify()'s
    auto error = message.find("error");
    if (error != message.end()) {
      const std::string text_of_error = error->is_object()
                                            ? error->value("message", std::string("unknown error"))
                                            : std::string("unknown error");
      const int64_t code =
          error->is_object() && error->contains("code") && (*error)["code"].is_number_integer()
              ? (*error)["code"].get<int64_t>()
              : 0;
      complete(call_id, fail(codes::kBrowserCdpError, found->second->method + " failed: " + text_of_error +
                                                          " (CDP error " + std::to_string(code) + ")"));
      return;
    }
    auto result = message.find("result");
    complete(call_id, result != message.end() ? std::move(*result) : json::object());
    return;
  }
  auto method = message.find("method");
  if (method == message.end() || !method->is_string()) {
    ++stats_.unparseable;
    return;
  }
  CdpEvent event;
  event.method = method->get<std::string>();
  auto params = message.find("params");
  event.params = params != message.end() ? std::move(*params) : json::object();
  auto session = message.find("sessionId");
  if (session != message.end() && session->is_string()) event.session_id = session->get<std::string>();
  dispatch(event);
  // After the listeners: they learn of the detach first and may still look up what the session was.
  if (event.method == "Target.detachedFromTarget" && event.params.is_object()) {
    auto detached = event.params.find("sessionId");
    if (detached != event.params.end() && detached->is_string()) {
      end_session(
          detached->get<std::string>(),
          Error(codes::kBrowserTargetClosed, "the target's session ended (its tab or frame went away)"));
    }
  }
}

void CdpClient::dispatch(const CdpEvent& event) {
  // A copy: a handler may subscribe or unsubscribe while we iterate. One removed meanwhile is skipped.
  std::vector<std::pair<uint64_t, std::shared_ptr<EventHandler>>> handlers(listeners_.begin(),
                                                                           listeners_.end());
  for (const auto& [id, handler] : handlers) {
    if (closed_) return;
    if (!listeners_.contains(id)) continue;
    (*handler)(event);
  }
}

}  // namespace keel::browser
