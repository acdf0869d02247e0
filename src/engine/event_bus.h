// engine/event_bus.h — fan-out of AgentEvents to subscribers, in order, without letting one stall the engine.
//
// publish() stamps the event with the next seq of its thread and appends it to every subscriber's mailbox;
// seqs of epoch E are E * 2^32 + 1, + 2, ... per thread, so a bus of a later epoch (the engine takes a new
// one, persisted, at every start: store/event_epoch.h) numbers every thread's events above any earlier
// bus's, as long as no thread had 2^32 events in one epoch.
// it never waits for a subscriber. Each subscription has its own delivery thread that calls the callback
// with one event at a time, in mailbox order. Callers publish a thread's events from that thread's actor,
// so each subscriber sees a thread's events in seq order. An event is built once and shared, immutable,
// by every mailbox. publish_all() publishes several events of one thread as consecutive seqs and wakes each
// delivery thread at most once for all of them: events reporting one commit cost one wake-up, not several.
//
// A subscriber that falls behind (more than kCoalesceAfter events waiting) gets consecutive item.delta
// events of the same item merged into one: text and reasoning concatenated, the latest tool progress kept,
// the seq of the last part. Nothing else is ever merged or dropped.
//
// Thread-safe. Destroying the bus cancels every subscription.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "keel/protocol.h"
#include "keel/transport.h"
#include "util/thread_annotations.h"

namespace keel {

class Mailbox;

class EventBus {
 public:
  static constexpr size_t kCoalesceAfter = 64;

  static constexpr int kEpochShift = 32;

  explicit EventBus(uint64_t epoch = 0) : base_(epoch << kEpochShift) {}
  ~EventBus();
  EventBus(const EventBus&) = delete;
  EventBus& operator=(const EventBus&) = delete;

  struct Draft {
    std::string type;
    nlohmann::json payload;
  };

  void publish(std::string type, std::string thread_id, nlohmann::json payload);
  // Publishes `drafts` in order, as consecutive seqs of `thread_id`, with no other event in between.
  void publish_all(const std::string& thread_id, std::vector<Draft> drafts);
  [[nodiscard]] std::unique_ptr<EventSubscription> subscribe(std::function<void(const AgentEvent&)> callback);
  // The seq of the last event published on `thread_id` ("" = engine-wide events), or the epoch's base
  // (below every seq this bus will stamp) when there was none yet.
  uint64_t last_seq(const std::string& thread_id);

 private:
  const uint64_t base_;
  Mutex mu_;
  std::map<std::string, uint64_t> next_seq_ GUARDED_BY(mu_);  // the last seq stamped per thread, less base_
  std::vector<std::weak_ptr<Mailbox>> mailboxes_ GUARDED_BY(mu_);
};

}  // namespace keel
