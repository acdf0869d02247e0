#include "transport/rpc_session.h"

#include <exception>

#include "keel/error_codes.h"
#include "transport/transport_errors.h"

namespace keel {

using nlohmann::json;

// A batch is answered by one array, in request order, once every request that expects an answer has it.
// Guarded by the session's mu_ (not annotated: the analysis names a mutex only through the object that holds
// it).
struct RpcSession::Batch {
  std::vector<json> slots;
  std::vector<bool> filled;
  size_t remaining = 0;
};

RpcSession::RpcSession(EngineTransport& transport, RpcSessionOptions options, std::function<void()> on_ready)
    : transport_(transport), options_(std::move(options)), queue_(options_.queue, std::move(on_ready)) {
  subscription_ = transport_.on_event([this](const AgentEvent& event) { on_event(event); });
}

RpcSession::~RpcSession() { detach(); }

void RpcSession::detach() {
  std::unique_ptr<EventSubscription> subscription;
  {
    MutexLock guard(mu_);
    subscription = std::move(subscription_);
  }
  if (subscription) subscription->cancel();
}

void RpcSession::receive(std::string_view text) {
  if (closed_) return;
  // The transport's boundary: whatever a message makes throw (a bug) is answered, never the end of the
  // process, which would take every other client's session and every running turn with it.
  try {
    dispatch(text);
  } catch (const std::exception& e) {
    enqueue(rpc::error_response(
        nullptr, rpc::kInternalError,
        std::string("keel failed on this message (a bug, please report it): ") + e.what(), codes::kInternal));
  }
}

void RpcSession::dispatch(std::string_view text) {
  rpc::Incoming incoming = rpc::parse_message(text, options_.limits);
  std::shared_ptr<Batch> batch;
  if (incoming.batch) {
    batch = std::make_shared<Batch>();
    for (const auto& entry : incoming.entries) {
      const auto* call = std::get_if<rpc::Call>(&entry);
      if (call == nullptr || !call->notification) ++batch->remaining;
    }
    batch->slots.resize(batch->remaining);
    batch->filled.resize(batch->remaining, false);
    if (batch->remaining == 0) batch.reset();  // only notifications: nothing is sent back
  }
  size_t slot = 0;
  for (auto& entry : incoming.entries) {
    if (auto* error = std::get_if<json>(&entry)) {
      respond(std::move(*error), batch, slot++);
      continue;
    }
    auto& request = std::get<rpc::Call>(entry);
    const bool answered = !request.notification;
    call(std::move(request), batch, slot);
    if (answered) ++slot;
  }
}

void RpcSession::refuse_too_large(size_t bytes) {
  if (closed_) return;
  enqueue(rpc::error_response(nullptr, rpc::kInvalidRequest,
                              "message of at least " + std::to_string(bytes) +
                                  " bytes is over the bound of " +
                                  std::to_string(options_.limits.max_message_bytes),
                              codes::kRpcMessageTooLarge, {{"maxBytes", options_.limits.max_message_bytes}}));
}

void RpcSession::call(rpc::Call call, const std::shared_ptr<Batch>& batch, size_t slot) {
  if (rpc::is_session_method(call.method)) {
    answer_session_method(call, batch, slot);
    return;
  }
  Pending pending{call.id, call.notification, batch, slot};
  Op op;
  {
    MutexLock guard(mu_);
    op = rpc::to_op(std::move(call), principal(),
                    "rpc:" + options_.connection_id + ":" + std::to_string(++next_submission_));
    // Registered before the op goes out, so its answer cannot arrive unrouted.
    pending_[{op.client_id, op.submission_id}].push_back(std::move(pending));
  }
  const std::pair<std::string, std::string> key{op.client_id, op.submission_id};
  try {
    transport_.send(std::move(op));
  } catch (...) {
    // No answer will come: forget the request, so nothing waits for it (wait_answered), then let the
    // boundary in receive() answer it.
    MutexLock guard(mu_);
    if (auto found = pending_.find(key); found != pending_.end()) {
      found->second.pop_back();
      if (found->second.empty()) pending_.erase(found);
    }
    throw;
  }
}

void RpcSession::answer_session_method(const rpc::Call& call, const std::shared_ptr<Batch>& batch,
                                       size_t slot) {
  json result;
  {
    MutexLock guard(mu_);
    const json ids = call.params.value("threadIds", json(nullptr));
    if (call.kind == protocol::OpKind::kSessionSubscribe) {
      if (ids.is_null()) {
        threads_.reset();
      } else {
        if (!threads_) threads_.emplace();
        for (const json& id : ids) {
          if (id.is_string()) threads_->insert(id.get<std::string>());
        }
      }
    } else {
      if (!threads_) threads_.emplace();
      for (const json& id : ids) {
        if (id.is_string()) threads_->erase(id.get<std::string>());
      }
    }
    result = threads_ ? json{{"threadIds", *threads_}} : json{{"threadIds", "all"}};
  }
  if (!call.notification) respond(rpc::result_response(call.id, std::move(result)), batch, slot);
}

void RpcSession::on_event(const AgentEvent& event) {
  if (closed_) return;
  if (rpc::is_answer(event)) {
    route_answer(event);
    return;
  }
  {
    MutexLock guard(mu_);
    if (threads_ && !event.thread_id.empty() && !threads_->contains(event.thread_id)) return;
  }
  if (queue_.push_event(event) == OutboundQueue::Push::kOverflow) overflowed();
}

void RpcSession::route_answer(const AgentEvent& event) {
  Pending pending;
  {
    MutexLock guard(mu_);
    auto found =
        pending_.find({event.payload.value("clientId", ""), event.payload.value("submissionId", "")});
    if (found == pending_.end()) return;  // another client's answer
    pending = std::move(found->second.front());
    found->second.erase(found->second.begin());
    if (found->second.empty()) pending_.erase(found);
  }
  // Queued before a waiter can see the op answered, so what it takes afterwards holds the answer.
  if (!pending.notification) respond(rpc::answer_response(event, pending.id), pending.batch, pending.slot);
  MutexLock guard(mu_);
  if (pending_.empty()) answered_.notify_all();
}

void RpcSession::wait_answered() {
  MutexLock lock(mu_);
  while (!pending_.empty() && !stop_waiting_ && !closed_) lock.wait(answered_);
}

void RpcSession::stop_waiting() {
  MutexLock guard(mu_);
  stop_waiting_ = true;
  answered_.notify_all();
}

void RpcSession::respond(json response, const std::shared_ptr<Batch>& batch, size_t slot) {
  if (!batch) {
    enqueue(std::move(response));
    return;
  }
  json complete;
  {
    MutexLock guard(mu_);
    if (slot >= batch->slots.size() || batch->filled[slot]) return;
    batch->slots[slot] = std::move(response);
    batch->filled[slot] = true;
    if (--batch->remaining > 0) return;
    complete = json(std::move(batch->slots));
  }
  enqueue(std::move(complete));
}

void RpcSession::enqueue(json message) {
  if (queue_.push_message(std::move(message)) == OutboundQueue::Push::kOverflow) overflowed();
}

void RpcSession::overflowed() {
  close(codes::kRpcClientTooSlow,
        "the client did not read its messages fast enough; its outbound queue overflowed");
}

void RpcSession::close(const std::string& code, const std::string& message) {
  if (closed_.exchange(true)) return;
  queue_.close_with(rpc::notification(rpc::kDisconnectMethod, {{"code", code}, {"message", message}}));
  MutexLock guard(mu_);
  answered_.notify_all();
}

RpcSession::Outgoing RpcSession::take(bool block) {
  OutboundQueue::Taken taken = queue_.take(block);
  Outgoing out;
  out.closed = taken.closed;
  out.messages.reserve(taken.items.size());
  for (const OutboundQueue::Item& item : taken.items) {
    if (const auto* event = std::get_if<AgentEvent>(&item)) {
      out.messages.push_back(rpc::dump(rpc::event_notification(*event)));
    } else {
      out.messages.push_back(rpc::dump(std::get<json>(item)));
    }
  }
  return out;
}

}  // namespace keel
