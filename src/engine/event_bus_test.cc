#include "engine/event_bus.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace keel {
namespace {

// Collects what one subscriber was given, and lets a test wait for a count.
class Collected {
 public:
  void add(const AgentEvent& event) {
    std::lock_guard<std::mutex> guard(mu_);
    events_.push_back(event);
    cv_.notify_all();
  }
  std::vector<AgentEvent> wait_for(size_t count) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return events_.size() >= count; });
    return events_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<AgentEvent> events_;
};

TEST(EventBusTest, PublishAllGivesConsecutiveSeqsOfTheThreadInOrder) {
  EventBus bus;
  Collected got;
  auto subscription = bus.subscribe([&](const AgentEvent& e) { got.add(e); });
  bus.publish("turn.start", "t1", {{"n", 0}});
  bus.publish_all("t1",
                  {{"item.complete", {{"n", 1}}}, {"token.usage", {{"n", 2}}}, {"run.updated", {{"n", 3}}}});
  bus.publish("thread.updated", "t2", {{"n", 0}});
  bus.publish_all("t1", {});
  bus.publish("turn.complete", "t1", {{"n", 4}});
  auto events = got.wait_for(6);
  ASSERT_EQ(events.size(), 6u);
  std::vector<std::string> t1_types;
  uint64_t expected_seq = 0;
  for (const AgentEvent& e : events) {
    if (e.thread_id != "t1") {
      EXPECT_EQ(e.seq, 1u) << "seqs are per thread";
      continue;
    }
    EXPECT_EQ(e.seq, ++expected_seq);
    EXPECT_EQ(e.payload["n"], e.seq - 1);
    t1_types.push_back(e.type);
  }
  EXPECT_EQ(t1_types, (std::vector<std::string>{"turn.start", "item.complete", "token.usage", "run.updated",
                                                "turn.complete"}));
}

TEST(EventBusTest, EverySubscriberGetsEveryEventInOrderFromConcurrentPublishers) {
  EventBus bus;
  Collected first, second;
  auto a = bus.subscribe([&](const AgentEvent& e) { first.add(e); });
  auto b = bus.subscribe([&](const AgentEvent& e) { second.add(e); });
  constexpr int kThreads = 4;
  constexpr int kBatches = 200;
  std::vector<std::thread> publishers;
  for (int t = 0; t < kThreads; ++t) {
    publishers.emplace_back([&, t] {
      const std::string thread = "t" + std::to_string(t);
      for (int i = 0; i < kBatches; ++i) {
        if (i % 2 == 0) {
          bus.publish("run.updated", thread, {{"i", i}});
        } else {
          bus.publish_all(thread, {{"item.complete", {{"i", i}}}, {"item.start", {{"i", i}}}});
        }
      }
    });
  }
  for (auto& p : publishers) p.join();
  const size_t per_thread = kBatches / 2 + kBatches;  // singles + pairs
  for (Collected* got : {&first, &second}) {
    auto events = got->wait_for(per_thread * kThreads);
    ASSERT_EQ(events.size(), per_thread * kThreads);
    std::vector<uint64_t> last(kThreads, 0);
    for (const AgentEvent& e : events) {
      const int t = std::stoi(e.thread_id.substr(1));
      EXPECT_EQ(e.seq, last[static_cast<size_t>(t)] + 1) << e.thread_id;
      last[static_cast<size_t>(t)] = e.seq;
    }
  }
}

TEST(EventBusTest, ASlowSubscriberGetsBackloggedDeltasMergedAndEverythingElseWhole) {
  EventBus bus;
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool open = false;
  bool holding = false;
  Collected got;
  auto subscription = bus.subscribe([&](const AgentEvent& e) {
    std::unique_lock<std::mutex> lock(gate_mu);
    holding = true;
    gate_cv.notify_all();
    gate_cv.wait(lock, [&] { return open; });
    got.add(e);
  });
  bus.publish("item.start", "t", {{"itemId", "a"}});
  // Wait until the subscriber holds that first event, so everything after it queues in the mailbox.
  {
    std::unique_lock<std::mutex> lock(gate_mu);
    ASSERT_TRUE(gate_cv.wait_for(lock, std::chrono::seconds(30), [&] { return holding; }));
  }
  constexpr size_t kDeltas = EventBus::kCoalesceAfter * 3;
  for (size_t i = 0; i < kDeltas; ++i) bus.publish("item.delta", "t", {{"itemId", "a"}, {"text", "x"}});
  bus.publish("item.complete", "t", {{"itemId", "a"}});
  {
    std::lock_guard<std::mutex> guard(gate_mu);
    open = true;
  }
  gate_cv.notify_all();
  std::vector<AgentEvent> events;
  for (size_t n = 2;; ++n) {
    events = got.wait_for(n);
    if (events.empty() || events.back().type == "item.complete" || events.size() < n) break;
  }
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().type, "item.start");
  EXPECT_EQ(events.back().type, "item.complete");
  EXPECT_EQ(events.back().seq, kDeltas + 2);
  std::string text;
  size_t deltas = 0;
  for (const AgentEvent& e : events) {
    if (e.type != "item.delta") continue;
    ++deltas;
    text += e.payload["text"].get<std::string>();
  }
  EXPECT_EQ(text, std::string(kDeltas, 'x')) << "merging loses no text";
  EXPECT_LT(deltas, kDeltas) << "a backlog of deltas is merged";
}

TEST(EventBusTest, CancellingFromInsideTheCallbackStopsDelivery) {
  EventBus bus;
  std::atomic<int> calls{0};
  std::unique_ptr<EventSubscription> subscription;
  std::mutex mu;
  std::condition_variable cv;
  bool cancelled = false;
  subscription = bus.subscribe([&](const AgentEvent&) {
    ++calls;
    std::lock_guard<std::mutex> guard(mu);
    if (!cancelled) {
      subscription->cancel();
      cancelled = true;
      cv.notify_all();
    }
  });
  bus.publish_all("t", {{"a", {}}, {"b", {}}, {"c", {}}});
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return cancelled; }));
  }
  bus.publish("d", "t", {});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(calls.load(), 1) << "no event after the cancel, not even the rest of its batch";
}

TEST(EventBusTest, ABusOfALaterEpochNumbersEveryThreadAboveAnEarlierOne) {
  uint64_t earlier_last = 0;
  {
    EventBus bus(1);
    EXPECT_EQ(bus.last_seq("t1"), uint64_t{1} << EventBus::kEpochShift) << "nothing published yet";
    Collected got;
    auto subscription = bus.subscribe([&](const AgentEvent& e) { got.add(e); });
    for (int i = 0; i < 5; ++i) bus.publish("item.delta", "t1", {{"n", i}});
    auto events = got.wait_for(5);
    ASSERT_EQ(events.size(), 5u);
    EXPECT_EQ(events.front().seq, (uint64_t{1} << EventBus::kEpochShift) + 1);
    earlier_last = events.back().seq;
    EXPECT_EQ(bus.last_seq("t1"), earlier_last);
    EXPECT_EQ(bus.last_seq("t2"), uint64_t{1} << EventBus::kEpochShift);
  }
  EventBus later(2);
  Collected got;
  auto subscription = later.subscribe([&](const AgentEvent& e) { got.add(e); });
  later.publish("turn.start", "t1", {});
  auto events = got.wait_for(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_GT(events[0].seq, earlier_last);
  EXPECT_GT(later.last_seq("t2"), earlier_last);
}

}  // namespace
}  // namespace keel
