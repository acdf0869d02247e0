#include "engine/event_bus.h"

#include <condition_variable>
#include <deque>
#include <thread>

namespace keel {

class Mailbox : public std::enable_shared_from_this<Mailbox> {
 public:
  explicit Mailbox(std::function<void(const AgentEvent&)> callback) : callback_(std::move(callback)) {}

  void start() {
    worker_ = std::thread([self = shared_from_this()] { self->run(); });
  }

  void push(const AgentEvent& event) {
    bool wake = false;
    {
      std::lock_guard<std::mutex> guard(mu_);
      if (stopped_) return;
      if (event.is_delta() && pending_.size() >= EventBus::kCoalesceAfter && merge_into_last(event)) return;
      pending_.push_back(event);
      // Only a worker asleep on the condition needs the (syscall-costly) wake-up; a busy one will find the
      // event when it looks again.
      wake = idle_;
    }
    if (wake) cv_.notify_one();
  }

  void stop() {
    {
      std::lock_guard<std::mutex> guard(mu_);
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
  bool merge_into_last(const AgentEvent& event) {
    AgentEvent& last = pending_.back();
    if (!last.is_delta() || last.thread_id != event.thread_id ||
        last.payload.value("itemId", "") != event.payload.value("itemId", "")) {
      return false;
    }
    for (const char* key : {"text", "reasoning"}) {
      if (event.payload.contains(key) && event.payload[key].is_string()) {
        std::string merged = last.payload.value(key, "") + event.payload[key].get<std::string>();
        last.payload[key] = std::move(merged);
      }
    }
    if (event.payload.contains("toolProgress")) last.payload["toolProgress"] = event.payload["toolProgress"];
    last.seq = event.seq;
    last.payload["coalesced"] = true;
    return true;
  }

  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      idle_ = true;
      cv_.wait(lock, [&] { return stopped_ || !pending_.empty(); });
      idle_ = false;
      if (stopped_) return;
      AgentEvent event = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      callback_(event);
      lock.lock();
    }
  }

  std::function<void(const AgentEvent&)> callback_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<AgentEvent> pending_;
  bool stopped_ = false;
  bool idle_ = false;  // the worker is (about to be) waiting on cv_
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
    std::lock_guard<std::mutex> guard(mu_);
    for (auto& weak : mailboxes_) {
      if (auto mailbox = weak.lock()) live.push_back(std::move(mailbox));
    }
    mailboxes_.clear();
  }
  for (auto& mailbox : live) mailbox->stop();
}

AgentEvent EventBus::publish(std::string type, std::string thread_id, nlohmann::json payload) {
  std::lock_guard<std::mutex> guard(mu_);
  AgentEvent event{std::move(type), std::move(thread_id), ++next_seq_[thread_id], std::move(payload)};
  std::erase_if(mailboxes_, [](const std::weak_ptr<Mailbox>& weak) { return weak.expired(); });
  for (auto& weak : mailboxes_) {
    if (auto mailbox = weak.lock()) mailbox->push(event);
  }
  return event;
}

std::unique_ptr<EventSubscription> EventBus::subscribe(std::function<void(const AgentEvent&)> callback) {
  auto mailbox = std::make_shared<Mailbox>(std::move(callback));
  mailbox->start();
  {
    std::lock_guard<std::mutex> guard(mu_);
    mailboxes_.push_back(mailbox);
  }
  return std::make_unique<BusSubscription>(std::move(mailbox));
}

}  // namespace keel
