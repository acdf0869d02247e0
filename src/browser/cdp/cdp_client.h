// browser/cdp/cdp_client.h — Chrome DevTools Protocol commands and events over one CdpTransport.
//
// What it guarantees:
//   - call() sends one command (browser-level when session_id is "", else on that flattened session) and
//     completes exactly once: with the reply's `result`, or with an Error —
//       browser.cdp_error      the browser answered with an error (its code and message are in the text),
//       browser.cdp_timeout    no reply within CallOptions::timeout (a reply arriving later is dropped),
//       browser.target_closed  the session ended first (Target.detachedFromTarget, or end_session()),
//       browser.disconnected   the connection ended first (or close()'s own error),
//       cancelled              CallOptions::cancel fired first.
//   - Events reach every listener in arrival order; a listener may unsubscribe (or subscribe) from inside.
//   - No input crashes it: a message that is not JSON is dropped and counted; one with lone UTF-16 surrogates
//     is repaired (json_repair.h) and counted.
//
// Threading: create it with the executor of its transport (a strand or a single-threaded io_context); every
// member, the coroutines and the listeners run there. Cancellation callbacks may fire on any thread: they
// only post to that executor. Keep the client in a shared_ptr (create()); pending calls hold it alive.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "browser/cdp/cdp_transport.h"
#include "keel/cancellation.h"
#include "keel/error.h"

namespace keel::browser {

struct CdpEvent {
  std::string method;
  nlohmann::json params;
  std::string session_id;  // "" = the browser session
};

struct CallOptions {
  std::chrono::milliseconds timeout{30'000};
  CancellationToken cancel{};
};

class CdpClient : public std::enable_shared_from_this<CdpClient> {
 public:
  using EventHandler = std::function<void(const CdpEvent&)>;
  using CloseHandler = std::function<void(const Error&)>;

  // Unsubscribes its handler when destroyed (on the client's executor). Outliving the client is fine.
  class Subscription {
   public:
    Subscription() = default;
    Subscription(std::weak_ptr<CdpClient> client, uint64_t id) : client_(std::move(client)), id_(id) {}
    Subscription(Subscription&& other) noexcept;
    Subscription& operator=(Subscription&& other) noexcept;
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription() { reset(); }
    void reset();

   private:
    std::weak_ptr<CdpClient> client_;
    uint64_t id_ = 0;
  };

  struct Stats {
    size_t in_flight = 0;        // calls waiting for their reply
    size_t largest_message = 0;  // bytes of the largest message received
    size_t repaired = 0;         // messages parsed only after the lone-surrogate repair
    size_t unparseable = 0;      // messages dropped because they were not JSON even after the repair
    size_t oversized = 0;        // messages the transport dropped for their size
  };

  static std::shared_ptr<CdpClient> create(boost::asio::any_io_executor ex,
                                           std::unique_ptr<CdpTransport> transport);
  ~CdpClient();
  CdpClient(const CdpClient&) = delete;
  CdpClient& operator=(const CdpClient&) = delete;

  // Starts the transport. Call once, before anything else.
  void start();

  // Parameters by value (coroutine); see the header comment for how it completes.
  boost::asio::awaitable<Result<nlohmann::json>> call(std::string method, nlohmann::json params,
                                                      std::string session_id, CallOptions options);
  // Sends a command whose reply nobody awaits (the reply is dropped when it comes).
  void notify(std::string method, nlohmann::json params, std::string session_id);

  [[nodiscard]] Subscription listen(EventHandler handler);
  // Called once when the connection ends (at once if it already has).
  [[nodiscard]] Subscription on_close(CloseHandler handler);

  // The session is gone (detached, crashed): its pending calls fail now with `why`. Also done by the client
  // itself on Target.detachedFromTarget.
  void end_session(const std::string& session_id, Error why);
  // Ends the connection: every pending call fails with `why`, later calls fail at once. Idempotent.
  void close(Error why);

  bool closed() const { return closed_.has_value(); }
  Stats stats() const;
  const boost::asio::any_io_executor& executor() const { return ex_; }

 private:
  struct Pending;
  CdpClient(boost::asio::any_io_executor ex, std::unique_ptr<CdpTransport> transport);

  void on_message(std::string text);
  void on_transport_closed(Error why);
  void complete(int64_t id, Result<nlohmann::json> outcome);
  void unsubscribe(uint64_t id);
  void dispatch(const CdpEvent& event);

  boost::asio::any_io_executor ex_;
  std::unique_ptr<CdpTransport> transport_;
  int64_t next_call_id_ = 0;
  uint64_t next_subscription_id_ = 0;
  std::map<int64_t, std::shared_ptr<Pending>> pending_;
  // Shared so that a dispatch in progress keeps a handler alive while it unsubscribes itself.
  std::map<uint64_t, std::shared_ptr<EventHandler>> listeners_;
  std::map<uint64_t, std::shared_ptr<CloseHandler>> close_handlers_;
  std::optional<Error> closed_;
  Stats stats_;
};

}  // namespace keel::browser
