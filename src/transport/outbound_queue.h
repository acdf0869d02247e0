// transport/outbound_queue.h — one client's bounded queue of outgoing JSON-RPC messages (backpressure).
//
// The engine's delivery thread pushes events and answers; the connection's writer takes them. A push never
// blocks. Once `coalesce_after` items wait, an item.delta is merged into the last waiting item when that is
// a delta of the same item (text and reasoning concatenated, the latest tool progress kept, the later seq,
// `coalesced: true`). No other event is merged or dropped: when `capacity` items wait and one more cannot
// be merged, the push reports an overflow and the queue closes with one final message (the caller's
// reason); everything still waiting is discarded, since the client is being disconnected.
//
// Thread-safe. `on_ready` runs (outside the lock) when items arrive in an empty queue or the queue closes.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <variant>
#include <vector>

#include "keel/protocol.h"
#include "util/thread_annotations.h"

namespace keel {

struct OutboundQueueOptions {
  size_t capacity = 1024;
  size_t coalesce_after = 64;
};

class OutboundQueue {
 public:
  // An event still to be turned into a notification, or a message ready to send.
  using Item = std::variant<AgentEvent, nlohmann::json>;
  enum class Push { kQueued, kCoalesced, kOverflow, kClosed };

  OutboundQueue(OutboundQueueOptions options, std::function<void()> on_ready);

  Push push_event(const AgentEvent& event);
  Push push_message(nlohmann::json message);
  // Discards what waits and leaves `last` as the only item; later pushes report kClosed.
  void close_with(nlohmann::json last);

  struct Taken {
    std::vector<Item> items;
    bool closed = false;  // nothing more will come: after these items the connection ends
  };
  // Everything waiting. With `block`, waits until there is something, the queue closed, or wake() was called.
  Taken take(bool block);
  void wake();

  size_t coalesced() const;

 private:
  Push push(Item item, bool delta);
  void notify(bool was_empty) EXCLUDES(mu_);

  OutboundQueueOptions options_;
  std::function<void()> on_ready_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> items_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
  bool close_reported_ GUARDED_BY(mu_) = false;
  bool woken_ GUARDED_BY(mu_) = false;
  size_t coalesced_ GUARDED_BY(mu_) = 0;
};

}  // namespace keel
