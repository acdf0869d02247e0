// mcp/client/jsonrpc_client.h — the JSON-RPC 2.0 client core under keel's MCP session: ids, the table of
// pending requests, timeouts, progress, cancellation, and what the server sends unasked.
//
// It sends through a `send` function (the transport's) and is fed every inbound message by handle_message()
// (from the transport's thread). It guarantees:
//   - request ids are unique integers, never reused;
//   - every request's `done` runs exactly once, never under the core's lock: with the result, the server's
//     error (mcp.rpc_error), mcp.call_timed_out, `cancelled`, or the reason given to close();
//   - a response whose id matches no pending request (unknown, or a second answer) is reported through
//     on_problem (mcp.unexpected_response) and ignored; a late answer to a request that was cancelled or
//     timed out is ignored silently once;
//   - the server's requests are answered: `ping` with an empty result, every other method with -32601;
//   - notifications/progress for a pending request restarts its idle deadline and reaches its on_progress;
//     every other notification goes to on_notification;
//   - nothing inbound is queued: each message is handled on the thread that delivered it, so a server that
//     floods notifications costs time, never unbounded memory. The only per-message state kept is a bounded
//     list of recently finished ids (for telling a duplicate answer from an unknown one).
//
// Deadlines are measured on the injected Clock; a timer thread fires them (check_deadlines() does the same
// at once, for tests with a manual clock). A request's `done` and on_progress may thus run on the transport's
// thread, the timer thread, or the thread that called cancel() or close().
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "keel/clock.h"
#include "keel/error.h"
#include "mcp/client/mcp_session.h"
#include "util/thread_annotations.h"

namespace keel::mcp {

struct RpcRequestOptions {
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(60);
  std::chrono::milliseconds max_total = std::chrono::minutes(10);
  // Adds params._meta.progressToken (the request's id) and routes notifications/progress to on_progress.
  bool with_progress = false;
  std::function<void(McpProgress)> on_progress;
  // On a timeout, tell the server with notifications/cancelled (false for a probe the server may not know).
  bool cancel_on_timeout = true;
  // A JSON-RPC error answer completes `done` with the value {"error": <the error object>} instead of
  // mcp.rpc_error, for a caller that decides by the error's code (the version probe).
  bool errors_as_values = false;
};

class JsonRpcClient : public std::enable_shared_from_this<JsonRpcClient> {
 public:
  struct Handlers {
    std::function<Result<void>(const nlohmann::json& message)> send;  // required
    std::function<void(const std::string& method, const nlohmann::json& params)> on_notification;
    std::function<void(const Error& problem)> on_problem;
  };
  using Done = std::function<void(Result<nlohmann::json>)>;

  // Starts the timer thread. `clock` may be null (the system clock).
  static std::shared_ptr<JsonRpcClient> create(Handlers handlers, std::shared_ptr<const Clock> clock);
  ~JsonRpcClient();
  JsonRpcClient(const JsonRpcClient&) = delete;
  JsonRpcClient& operator=(const JsonRpcClient&) = delete;

  // Sends a request and returns its id. A send that fails completes `done` with its error at once (on this
  // thread), as does a request made after close().
  int64_t request(const std::string& method, nlohmann::json params, RpcRequestOptions options, Done done);
  // Abandons a pending request: sends notifications/cancelled {requestId, reason} and completes it with
  // `cancelled`. Nothing when it already completed.
  void cancel(int64_t id, const std::string& reason);
  Result<void> notify(const std::string& method, nlohmann::json params);
  // One inbound message (any JSON value; only objects are JSON-RPC).
  void handle_message(const nlohmann::json& message);
  // Completes every pending request with `reason`, refuses later ones with it, stops the timer thread.
  // Idempotent (the first reason stays).
  void close(const Error& reason);
  // Fires every deadline that has passed on the clock.
  void check_deadlines();
  size_t pending_count() const;

 private:
  struct Pending {
    std::string method;
    Done done;
    std::shared_ptr<std::function<void(McpProgress)>> on_progress;
    std::chrono::milliseconds idle_timeout{};
    std::chrono::steady_clock::time_point idle_deadline;
    std::chrono::steady_clock::time_point total_deadline;
    bool cancel_on_timeout = true;
    bool errors_as_values = false;
  };
  // What the timer thread shares with the client without keeping it alive: it waits here, and locks the
  // client (a weak_ptr) only to fire deadlines.
  struct TimerState {
    Mutex mu;
    std::condition_variable wake;
    bool stop GUARDED_BY(mu) = false;
    bool rearm GUARDED_BY(mu) = false;  // an earlier deadline was added: recompute the wait
  };
  JsonRpcClient(Handlers handlers, std::shared_ptr<const Clock> clock);
  static void timer_loop(std::weak_ptr<JsonRpcClient> weak, std::shared_ptr<TimerState> state,
                         std::shared_ptr<const Clock> clock);
  // The earliest deadline of any pending request (nullopt: none).
  std::optional<std::chrono::steady_clock::time_point> next_deadline() const EXCLUDES(mu_);
  void rearm_timer();
  void handle_response(const nlohmann::json& message);
  void handle_request(const nlohmann::json& message);
  void handle_progress(const nlohmann::json& params);
  void remember_finished(int64_t id, bool abandoned) REQUIRES(mu_);
  void report(const std::string& code, const std::string& message) const;
  // Removes a pending request (abandoned: cancelled or timed out) and returns it; nullopt when it is gone.
  std::optional<Pending> take(int64_t id, bool abandoned) EXCLUDES(mu_);

  const Handlers handlers_;
  const std::shared_ptr<const Clock> clock_;
  mutable Mutex mu_;
  int64_t next_id_ GUARDED_BY(mu_) = 1;
  std::map<int64_t, Pending> pending_ GUARDED_BY(mu_);
  // Recently finished ids, oldest first, and whether the server may still answer once (abandoned ones).
  std::deque<int64_t> finished_order_ GUARDED_BY(mu_);
  std::map<int64_t, bool> finished_ GUARDED_BY(mu_);
  std::optional<Error> closed_ GUARDED_BY(mu_);
  const std::shared_ptr<TimerState> timer_state_ = std::make_shared<TimerState>();
  std::thread timer_;
};

}  // namespace keel::mcp
