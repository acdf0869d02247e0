#include "engine/event_bus.h"

#include <condition_variable>
#include <deque>
#include <span>
#include <thread>

namespace keel {

class Mailbox : public std::enable_shared_from_this<Mailbox> {
 public:
  using EventPtr = std::shared_ptr<const AgentEvent>;

  explicit Mailbox(std::function<void(const AgentEvent&)> callback) : callback_(std::move(callback)) {}

  void start() {
    worker_ = std::thread([self = shared_from_this()] { self->run(); });
  }

  void push(std::span<const EventPtr> events) {
    bool wake = false;
    {
      MutexLock guard(mu_);
      if (stopped_) return;
      for (const EventPtr& event : events) {
        if (event->is_delta() && pending_.size() >= EventBus::kCoalesceAfter && merge_into_last(*event))
          continue;
        pending_.push_back(event);
      }
      // Only a worker asleep on the condition needs the (syscall-costly) wake-up; a busy one will find the
      // events when it looks again.
      wake = idle_;
    }
    if (wake) cv_.notify_one();
  }

  void stop() {
    {
      MutexLock guard(mu_);
      stopped_ = true;
    }
    cv_.notify_one();
    if (!worker_.joinable()) return;
    if (worker_.get_id() == std::this_thread::get_id()) {
      // Cancelled from inside its own callback: the thread ends when the callback returns.
      worker_.detach();
    } else {
      worker_.join();
    }
  }

 private:
  // Events are shared and immutable, so a merge replaces the last pending event with a merged copy.
  bool merge_into_last(const AgentEvent& event) REQUIRES(mu_) {
    const AgentEvent& last = *pending_.back();
    if (!last.is_delta() || last.thread_id != event.thread_id ||
        last.payload.value("itemId", "") != event.payload.value("itemId", "")) {
      return false;
    }
    auto merged = std::make_shared<AgentEvent>(last);
    for (const char* key : {"text", "reasoning"}) {
      if (event.payload.contains(key) && event.payload[key].is_string()) {
        std::string text = merged->payload.value(key, "") + event.payload[key].get<std::string>();
        merged->payload[key] = std::move(text);
      }
    }
    if (event.payload.contains("toolProgress"))
      merged->payload["toolProgress"] = event.payload["toolProgress"];
    merged->seq = event.seq;
    merged->payload["coalesced"] = true;
    pending_.back() = std::move(merged);
    return true;
  }

  void run() EXCLUDES(mu_) {
    std::deque<EventPtr> batch;
    MutexLock lock(mu_);
    while (true) {
      idle_ = true;
      while (!stopped_ && pending_.empty()) lock.wait(cv_);
      idle_ = false;
      if (stopped_) return;
      // Takes everything waiting at once: one lock round per batch, not per event. While the callback runs
      // new events queue up in pending_, where a slow subscriber's deltas can still be coalesced.
      batch.swap(pending_);
      lock.unlock();
      for (const EventPtr& event : batch) {
        callback_(*event);
        if (stop_requested()) return;
      }
      batch.clear();
      lock.lock();
    }
  }

  bool stop_requested() EXCLUDES(mu_) {
    MutexLock guard(mu_);
    return stopped_;
  }

  std::function<void(const AgentEvent&)> callback_;
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<EventPtr> pending_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = false;
  bool idle_ GUARDED_BY(mu_) = false;  // the worker is (about to be) waiting on cv_
  std::thread worker_;
};

namespace {

class BusSubscription final : public EventSubscription {
 public:
  explicit BusSubscription(std::shared_ptr<Mailbox> mailbox) : mailbox_(std::move(mailbox)) {}
  ~BusSubscription() override { cancel(); }
  void cancel() override {
    if (mailbox_) {
      mailbox_->stop();
      mailbox_.reset();
    }
  }

 private:
  std::shared_ptr<Mailbox> mailbox_;
};

}  // namespace

EventBus::~EventBus() {
  std::vector<std::shared_ptr<Mailbox>> live;
  {
    MutexLock guard(mu_);
    for (auto& weak : mailboxes_) {
      if (auto mailbox = weak.lock()) live.push_back(std::move(mailbox));
    }
    mailboxes_.clear();
  }
  for (auto& mailbox : live) mailbox->stop();
}

void EventBus::publish(std::string type, std::string thread_id, nlohmann::json payload) {
  std::vector<Draft> drafts;
  drafts.push_back(Draft{std::move(type), std::move(payload)});
  publish_all(thread_id, std::move(drafts));
}

void EventBus::publish_all(const std::string& thread_id, std::vector<Draft> drafts) {
  if (drafts.empty()) return;
  std::vector<Mailbox::EventPtr> events;
  events.reserve(drafts.size());
  MutexLock guard(mu_);
  uint64_t& seq = next_seq_[thread_id];
  for (Draft& draft : drafts) {
    events.push_back(std::make_shared<const AgentEvent>(
        AgentEvent{std::move(draft.type), thread_id, base_ + ++seq, std::move(draft.payload)}));
  }
  std::erase_if(mailboxes_, [](const std::weak_ptr<Mailbox>& weak) { return weak.expired(); });
  for (auto& weak : mailboxes_) {
    if (auto mailbox = weak.lock()) mailbox->push(events);
  }
}

uint64_t EventBus::last_seq(const std::string& thread_id) {
  MutexLock guard(mu_);
  auto found = next_seq_.find(thread_id);
  return base_ + (found == next_seq_.end() ? 0 : found->second);
}

std::unique_ptr<EventSubscription> EventBus::subscribe(std::function<void(const AgentEvent&)> callback) {
  auto mailbox = std::make_shared<Mailbox>(std::move(callback));
  mailbox->start();
  {
    MutexLock guard(mu_);
    mailboxes_.push_back(mailbox);
  }
  return std::make_unique<BusSubscription>(std::move(mailbox));
}

}  // namespace keel
