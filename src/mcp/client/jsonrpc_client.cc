// mcp/client/jsonrpc_client.cc — see jsonrpc_client.h.
#include "mcp/client/jsonrpc_client.h"

#include <utility>
#include <vector>

#include "keel/error_codes.h"
#include "mcp/mcp_errors.h"

namespace keel::mcp {

using nlohmann::json;

namespace {

// How many finished ids are remembered for telling a duplicate answer from an unknown one.
constexpr size_t kFinishedMemory = 256;
// JSON-RPC's "method not found".
constexpr int kMethodNotFound = -32601;

// An id keel could have sent: a JSON integer (keel never sends string ids).
std::optional<int64_t> our_id(const json& id) {
  if (id.is_number_integer()) return id.get<int64_t>();
  return std::nullopt;
}

std::string describe_rpc_error(const json& error) {
  std::string text = "the server answered with an error";
  if (!error.is_object()) return text + " that is not an object";
  if (const auto code = error.find("code"); code != error.end() && code->is_number_integer())
    text += " " + std::to_string(code->get<int64_t>());
  if (const auto message = error.find("message"); message != error.end() && message->is_string())
    text += ": " + message->get<std::string>();
  return text;
}

}  // namespace

std::shared_ptr<JsonRpcClient> JsonRpcClient::create(Handlers handlers, std::shared_ptr<const Clock> clock) {
  if (!clock) clock = std::make_shared<SystemClock>();
  std::shared_ptr<JsonRpcClient> client(new JsonRpcClient(std::move(handlers), clock));
  client->timer_ = std::thread(&JsonRpcClient::timer_loop, std::weak_ptr<JsonRpcClient>(client),
                               client->timer_state_, std::move(clock));
  return client;
}

JsonRpcClient::JsonRpcClient(Handlers handlers, std::shared_ptr<const Clock> clock)
    : handlers_(std::move(handlers)), clock_(std::move(clock)) {}

JsonRpcClient::~JsonRpcClient() {
  {
    MutexLock lock(timer_state_->mu);
    timer_state_->stop = true;
  }
  timer_state_->wake.notify_all();
  if (!timer_.joinable()) return;
  // The last reference may be dropped by a callback the timer thread runs: it must not join itself. It
  // touches nothing of this object after that (timer_loop).
  if (timer_.get_id() == std::this_thread::get_id()) {
    timer_.detach();
  } else {
    timer_.join();
  }
}

void JsonRpcClient::timer_loop(std::weak_ptr<JsonRpcClient> weak, std::shared_ptr<TimerState> state,
                               std::shared_ptr<const Clock> clock) {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  while (true) {
    {
      MutexLock lock(state->mu);
      if (deadline) {
        // The clock may be a test's manual clock: the real wait is only a bound, and the loop looks again.
        const auto wait = *deadline - clock->steady_now();
        if (!state->stop && !state->rearm && wait > std::chrono::steady_clock::duration::zero())
          (void)lock.wait_for(state->wake, wait);  // the loop re-evaluates whatever woke it
      } else {
        while (!state->stop && !state->rearm) lock.wait(state->wake);
      }
      if (state->stop) return;
      state->rearm = false;
    }
    std::shared_ptr<JsonRpcClient> self = weak.lock();
    if (!self) return;
    self->check_deadlines();
    deadline = self->next_deadline();
    // Dropping `self` may destroy the client on this thread; nothing of it is touched afterwards, and its
    // destructor set state->stop, which ends the loop.
    self.reset();
  }
}

std::optional<std::chrono::steady_clock::time_point> JsonRpcClient::next_deadline() const {
  MutexLock lock(mu_);
  std::optional<std::chrono::steady_clock::time_point> earliest;
  for (const auto& [id, pending] : pending_) {
    const auto due = std::min(pending.idle_deadline, pending.total_deadline);
    if (!earliest || due < *earliest) earliest = due;
  }
  return earliest;
}

void JsonRpcClient::rearm_timer() {
  {
    MutexLock lock(timer_state_->mu);
    timer_state_->rearm = true;
  }
  timer_state_->wake.notify_all();
}

void JsonRpcClient::report(const std::string& code, const std::string& message) const {
  if (handlers_.on_problem) handlers_.on_problem(Error(code, message));
}

int64_t JsonRpcClient::request(const std::string& method, json params, RpcRequestOptions options, Done done) {
  int64_t id = 0;
  std::optional<Error> refused;
  Done refused_done;  // called outside the lock, like every completion
  {
    MutexLock lock(mu_);
    id = next_id_++;
    if (closed_) {
      refused = *closed_;
      refused_done = std::move(done);
    } else {
      if (!params.is_object()) params = json::object();
      if (options.with_progress) {
        json& meta = params["_meta"];
        if (!meta.is_object()) meta = json::object();
        meta["progressToken"] = id;
      }
      const auto now = clock_->steady_now();
      Pending pending;
      pending.method = method;
      pending.done = std::move(done);
      if (options.with_progress && options.on_progress)
        pending.on_progress =
            std::make_shared<std::function<void(McpProgress)>>(std::move(options.on_progress));
      pending.idle_timeout = options.idle_timeout;
      pending.idle_deadline = now + options.idle_timeout;
      pending.total_deadline = now + options.max_total;
      pending.cancel_on_timeout = options.cancel_on_timeout;
      pending.errors_as_values = options.errors_as_values;
      pending_.emplace(id, std::move(pending));
    }
  }
  if (refused) {
    refused_done(fail(*refused));
    return id;
  }
  rearm_timer();
  const json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
  if (Result<void> sent = handlers_.send(message); !sent) {
    if (std::optional<Pending> pending = take(id, /*abandoned=*/false)) pending->done(fail(sent.error()));
  }
  return id;
}

std::optional<JsonRpcClient::Pending> JsonRpcClient::take(int64_t id, bool abandoned) {
  MutexLock lock(mu_);
  const auto it = pending_.find(id);
  if (it == pending_.end()) return std::nullopt;
  Pending pending = std::move(it->second);
  pending_.erase(it);
  remember_finished(id, abandoned);
  return pending;
}

void JsonRpcClient::remember_finished(int64_t id, bool abandoned) {
  finished_[id] = abandoned;
  finished_order_.push_back(id);
  while (finished_order_.size() > kFinishedMemory) {
    finished_.erase(finished_order_.front());
    finished_order_.pop_front();
  }
}

void JsonRpcClient::cancel(int64_t id, const std::string& reason) {
  std::optional<Pending> pending = take(id, /*abandoned=*/true);
  if (!pending) return;
  // A failed send changes nothing: the call is over for keel either way.
  (void)notify("notifications/cancelled", json{{"requestId", id}, {"reason", reason}});
  pending->done(fail(codes::kCancelled, pending->method + " was cancelled: " + reason));
}

Result<void> JsonRpcClient::notify(const std::string& method, json params) {
  json message = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) message["params"] = std::move(params);
  return handlers_.send(message);
}

void JsonRpcClient::handle_message(const json& message) {
  if (!message.is_object()) {
    report(codes::kMcpBadResponse, "a message that is not a JSON object");
    return;
  }
  const auto method = message.find("method");
  if (method != message.end()) {
    if (!method->is_string()) {
      report(codes::kMcpBadResponse, "a message whose method is not a string");
      return;
    }
    const auto id = message.find("id");
    if (id != message.end() && !id->is_null()) {
      handle_request(message);
      return;
    }
    const std::string name = method->get<std::string>();
    const auto params = message.find("params");
    const json& args = params != message.end() ? *params : json::object();
    if (name == "notifications/progress") {
      handle_progress(args);
    } else if (handlers_.on_notification) {
      handlers_.on_notification(name, args);
    }
    return;
  }
  if (message.contains("id") && (message.contains("result") || message.contains("error"))) {
    handle_response(message);
    return;
  }
  report(codes::kMcpBadResponse, "a message that is neither a request, a notification nor a response");
}

void JsonRpcClient::handle_request(const json& message) {
  const json& id = message["id"];
  if (!id.is_string() && !id.is_number_integer()) {
    report(codes::kMcpBadResponse, "a request whose id is neither a string nor an integer");
    return;
  }
  json reply = {{"jsonrpc", "2.0"}, {"id", id}};
  if (message["method"] == "ping") {
    reply["result"] = json::object();
  } else {
    // keel declares no client capability yet (no sampling, elicitation or roots): nothing else is served.
    reply["error"] = {{"code", kMethodNotFound},
                      {"message", "keel does not serve " + message["method"].get<std::string>()}};
  }
  if (Result<void> sent = handlers_.send(reply); !sent) report(sent.error().code(), sent.error().message());
}

void JsonRpcClient::handle_progress(const json& params) {
  if (!params.is_object()) {
    report(codes::kMcpBadResponse, "notifications/progress without params");
    return;
  }
  const auto token = params.find("progressToken");
  const auto progress = params.find("progress");
  if (token == params.end() || progress == params.end() || !progress->is_number()) {
    report(codes::kMcpBadResponse, "notifications/progress without a progressToken or a numeric progress");
    return;
  }
  const std::optional<int64_t> id = our_id(*token);
  std::shared_ptr<std::function<void(McpProgress)>> callback;
  {
    MutexLock lock(mu_);
    const auto it = id ? pending_.find(*id) : pending_.end();
    if (it == pending_.end()) return;  // progress for a call that is over, or never was: harmless
    it->second.idle_deadline = clock_->steady_now() + it->second.idle_timeout;
    callback = it->second.on_progress;
  }
  rearm_timer();
  if (!callback) return;
  McpProgress update;
  update.progress = progress->get<double>();
  if (const auto total = params.find("total"); total != params.end() && total->is_number())
    update.total = total->get<double>();
  if (const auto text = params.find("message"); text != params.end() && text->is_string())
    update.message = text->get<std::string>();
  (*callback)(std::move(update));
}

void JsonRpcClient::handle_response(const json& message) {
  const json& raw_id = message["id"];
  const std::optional<int64_t> id = our_id(raw_id);
  std::optional<Pending> pending;
  std::string unexpected;
  {
    MutexLock lock(mu_);
    const auto it = id ? pending_.find(*id) : pending_.end();
    if (it != pending_.end()) {
      pending = std::move(it->second);
      pending_.erase(it);
      remember_finished(*id, /*abandoned=*/false);
    } else if (const auto finished = id ? finished_.find(*id) : finished_.end();
               finished != finished_.end()) {
      if (finished->second) {
        finished->second = false;  // the one late answer to a cancelled or timed-out request: expected
      } else {
        unexpected = "a second response to request " + raw_id.dump();
      }
    } else if (raw_id.is_null() && message.contains("error")) {
      unexpected = "an error about no request (" + describe_rpc_error(message["error"]) + ")";
    } else {
      unexpected = "a response to request " + raw_id.dump().substr(0, 64) + ", which keel never sent";
    }
  }
  if (!pending) {
    if (!unexpected.empty()) report(codes::kMcpUnexpectedResponse, unexpected);
    return;
  }
  if (const auto error = message.find("error"); error != message.end()) {
    if (pending->errors_as_values) {
      pending->done(json{{"error", *error}});
      return;
    }
    pending->done(fail(codes::kMcpRpcError, pending->method + ": " + describe_rpc_error(*error)));
  } else {
    pending->done(message["result"]);
  }
}

void JsonRpcClient::close(const Error& reason) {
  std::map<int64_t, Pending> pending;
  {
    MutexLock lock(mu_);
    if (!closed_) closed_ = reason;
    pending.swap(pending_);
    for (const auto& [id, entry] : pending) remember_finished(id, /*abandoned=*/true);
  }
  {
    MutexLock lock(timer_state_->mu);
    timer_state_->stop = true;
  }
  timer_state_->wake.notify_all();
  for (auto& [id, entry] : pending) entry.done(fail(reason));
}

void JsonRpcClient::check_deadlines() {
  struct Expired {
    int64_t id;
    Pending pending;
    bool total;
  };
  std::vector<Expired> expired;
  {
    MutexLock lock(mu_);
    const auto now = clock_->steady_now();
    for (auto it = pending_.begin(); it != pending_.end();) {
      const bool total = now >= it->second.total_deadline;
      if (total || now >= it->second.idle_deadline) {
        remember_finished(it->first, /*abandoned=*/true);
        expired.push_back({it->first, std::move(it->second), total});
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Expired& entry : expired) {
    if (entry.pending.cancel_on_timeout)
      (void)notify("notifications/cancelled",
                   json{{"requestId", entry.id}, {"reason", "timed out"}});  // best effort
    entry.pending.done(fail(codes::kMcpCallTimedOut,
                            entry.pending.method + (entry.total ? " ran longer than its time limit"
                                                                : " got no answer or progress in time")));
  }
}

size_t JsonRpcClient::pending_count() const {
  MutexLock lock(mu_);
  return pending_.size();
}

}  // namespace keel::mcp
