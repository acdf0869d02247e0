#include "transport/outbound_queue.h"

namespace keel {

namespace {

// Merges `next` into `last` when both are deltas of the same item of the same thread.
bool merge_delta(OutboundQueue::Item& last, const AgentEvent& next) {
  auto* previous = std::get_if<AgentEvent>(&last);
  if (previous == nullptr || !previous->is_delta() || previous->thread_id != next.thread_id ||
      previous->payload.value("itemId", "") != next.payload.value("itemId", "")) {
    return false;
  }
  for (const char* key : {"text", "reasoning"}) {
    if (next.payload.contains(key) && next.payload[key].is_string())
      previous->payload[key] = previous->payload.value(key, "") + next.payload[key].get<std::string>();
  }
  if (next.payload.contains("toolProgress")) previous->payload["toolProgress"] = next.payload["toolProgress"];
  previous->seq = next.seq;
  previous->payload["coalesced"] = true;
  return true;
}

}  // namespace

OutboundQueue::OutboundQueue(OutboundQueueOptions options, std::function<void()> on_ready)
    : options_(options), on_ready_(std::move(on_ready)) {}

OutboundQueue::Push OutboundQueue::push_event(const AgentEvent& event) {
  return push(event, event.is_delta());
}

OutboundQueue::Push OutboundQueue::push_message(nlohmann::json message) {
  return push(std::move(message), false);
}

OutboundQueue::Push OutboundQueue::push(Item item, bool delta) {
  bool was_empty = false;
  {
    MutexLock guard(mu_);
    if (closed_) return Push::kClosed;
    if (delta && items_.size() >= options_.coalesce_after && !items_.empty() &&
        merge_delta(items_.back(), std::get<AgentEvent>(item))) {
      ++coalesced_;
      return Push::kCoalesced;
    }
    if (items_.size() >= options_.capacity) return Push::kOverflow;
    was_empty = items_.empty();
    items_.push_back(std::move(item));
  }
  notify(was_empty);
  return Push::kQueued;
}

void OutboundQueue::close_with(nlohmann::json last) {
  {
    MutexLock guard(mu_);
    if (closed_) return;
    items_.clear();
    items_.push_back(std::move(last));
    closed_ = true;
  }
  notify(true);
}

void OutboundQueue::notify(bool was_empty) {
  cv_.notify_all();
  if (was_empty && on_ready_) on_ready_();
}

OutboundQueue::Taken OutboundQueue::take(bool block) {
  MutexLock lock(mu_);
  if (block) {
    while (items_.empty() && !(closed_ && !close_reported_) && !woken_) lock.wait(cv_);
  }
  woken_ = false;
  Taken taken;
  taken.items.reserve(items_.size());
  for (Item& item : items_) taken.items.push_back(std::move(item));
  items_.clear();
  taken.closed = closed_;
  if (closed_) close_reported_ = true;
  return taken;
}

void OutboundQueue::wake() {
  {
    MutexLock guard(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

size_t OutboundQueue::coalesced() const {
  MutexLock guard(mu_);
  return coalesced_;
}

}  // namespace keel
