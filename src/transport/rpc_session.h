// transport/rpc_session.h — one JSON-RPC client connection on top of an engine.
//
// The connection's reader hands each incoming message to receive(); the session checks it (transport/
// json_rpc.h), submits the ops, and answers bad input at once with a JSON-RPC error — the connection stays
// usable and the engine never sees the bad message, so nothing persisted changes. The session subscribes to
// the engine's events: an op's answer (command.ack / command.rejected for one of this session's pending
// submissions) becomes the response to its request id (a batch is answered by one array once each of its
// requests has its answer); other clients' answers are not forwarded; every other event becomes an `event`
// notification, for all threads or only the ones named with session.subscribe.
//
// Outgoing messages wait in a bounded OutboundQueue (backpressure: deltas coalesced, nothing else lost).
// When it overflows the session stops: it sends one final `disconnect` {code: rpc.client_too_slow, message}
// notification and take() reports `closed`; the connection should then close. The engine keeps running.
//
// Every op the session submits carries the connection's principal as its clientId (a clientId in the
// params only names a client inside that principal): a client cannot act as another principal, replay its
// receipts or take its submission ids.
//
// Thread-safe: receive() from the reader, take() from the writer, events from the engine's delivery thread.
// `on_ready` runs from any of them, outside the session's locks. The transport must outlive the session.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "keel/transport.h"
#include "transport/json_rpc.h"
#include "transport/outbound_queue.h"
#include "util/thread_annotations.h"

namespace keel {

struct RpcSessionOptions {
  std::string connection_id = "client";  // names the connection (logs, server-made submission ids)
  // Who the client is, as the transport established it (the WebSocket token's principal): every op is
  // bound to it (rpc::bound_client_id), so receipts are per principal. Empty: the connection_id (a stdio
  // connection, whose principal is whoever started keel). Never contains '/'.
  std::string principal;
  rpc::Limits limits;
  OutboundQueueOptions queue;
};

class RpcSession {
 public:
  RpcSession(EngineTransport& transport, RpcSessionOptions options, std::function<void()> on_ready);
  ~RpcSession();
  RpcSession(const RpcSession&) = delete;
  RpcSession& operator=(const RpcSession&) = delete;

  // One incoming message (a line, a WebSocket text message).
  void receive(std::string_view text);
  // A message the connection dropped unread because it was over the size bound: answered with an error.
  void refuse_too_large(size_t bytes);
  const rpc::Limits& limits() const { return options_.limits; }

  struct Outgoing {
    std::vector<std::string> messages;  // serialized JSON-RPC messages, in order
    bool closed = false;                // the session ended: close the connection after sending these
  };
  // With `block`, waits for something to send (or wake()).
  Outgoing take(bool block);
  void wake() { queue_.wake(); }

  // Blocks until the engine has answered every op this session submitted (each answer is then queued for
  // take()), the session closed, or stop_waiting() was called. At the end of a client's input: what it sent
  // before the end is answered before the connection goes.
  void wait_answered();
  void stop_waiting();

  // Ends the session from the server's side (shutdown): a final disconnect notification with `code`.
  void close(const std::string& code, const std::string& message);
  // Stops the engine subscription: no event reaches the session after this returns.
  void detach();

  size_t coalesced() const { return queue_.coalesced(); }
  // The session ended (too slow, or close()): only its final notification is left to send.
  bool closed() const { return closed_; }
  const std::string& connection_id() const { return options_.connection_id; }
  const std::string& principal() const {
    return options_.principal.empty() ? options_.connection_id : options_.principal;
  }

 private:
  struct Batch;
  struct Pending {
    nlohmann::json id;
    bool notification = false;
    std::shared_ptr<Batch> batch;
    size_t slot = 0;
  };

  void dispatch(std::string_view text);
  void on_event(const AgentEvent& event);
  void route_answer(const AgentEvent& event);
  void call(rpc::Call call, const std::shared_ptr<Batch>& batch, size_t slot);
  void answer_session_method(const rpc::Call& call, const std::shared_ptr<Batch>& batch, size_t slot);
  // Sends `response` alone or as its batch's slot.
  void respond(nlohmann::json response, const std::shared_ptr<Batch>& batch, size_t slot);
  void enqueue(nlohmann::json message);
  void overflowed();

  EngineTransport& transport_;
  RpcSessionOptions options_;
  OutboundQueue queue_;
  Mutex mu_;
  std::condition_variable answered_;  // pending_ became empty, or stop_waiting_
  bool stop_waiting_ GUARDED_BY(mu_) = false;
  std::map<std::pair<std::string, std::string>, std::vector<Pending>> pending_ GUARDED_BY(mu_);
  std::optional<std::set<std::string>> threads_ GUARDED_BY(mu_);  // nullopt: every thread
  uint64_t next_submission_ GUARDED_BY(mu_) = 0;
  std::atomic<bool> closed_{false};
  std::unique_ptr<EventSubscription> subscription_ GUARDED_BY(mu_);
};

}  // namespace keel
