// The outbound queue's backpressure: deltas coalesced once it fills, nothing else merged, overflow closes it.
#include "transport/outbound_queue.h"

#include <gtest/gtest.h>

namespace keel {
namespace {

AgentEvent delta(uint64_t seq, const std::string& item, const std::string& text) {
  return AgentEvent{"item.delta", "t", seq, {{"itemId", item}, {"text", text}}};
}

TEST(OutboundQueueTest, MergesConsecutiveDeltasOfOneItemOnlyOnceItFills) {
  OutboundQueue queue({.capacity = 10, .coalesce_after = 2}, nullptr);
  EXPECT_EQ(queue.push_event(delta(1, "a", "x")), OutboundQueue::Push::kQueued);
  EXPECT_EQ(queue.push_event(delta(2, "a", "y")), OutboundQueue::Push::kQueued);  // not full yet
  EXPECT_EQ(queue.push_event(delta(3, "a", "z")), OutboundQueue::Push::kCoalesced);
  EXPECT_EQ(queue.push_event(delta(4, "b", "w")), OutboundQueue::Push::kQueued);  // another item
  auto taken = queue.take(false);
  ASSERT_EQ(taken.items.size(), 3u);
  const auto& merged = std::get<AgentEvent>(taken.items[1]);
  EXPECT_EQ(merged.payload["text"], "yz");
  EXPECT_EQ(merged.seq, 3u);
  EXPECT_EQ(merged.payload["coalesced"], true);
  EXPECT_EQ(queue.coalesced(), 1u);
}

TEST(OutboundQueueTest, NeverMergesOtherEventsAndOverflowsInstead) {
  OutboundQueue queue({.capacity = 2, .coalesce_after = 1}, nullptr);
  EXPECT_EQ(queue.push_event(AgentEvent{"turn.start", "t", 1, {}}), OutboundQueue::Push::kQueued);
  EXPECT_EQ(queue.push_event(AgentEvent{"turn.complete", "t", 2, {}}), OutboundQueue::Push::kQueued);
  EXPECT_EQ(queue.push_event(AgentEvent{"turn.complete", "t", 3, {}}), OutboundQueue::Push::kOverflow);
}

TEST(OutboundQueueTest, CloseLeavesOnlyTheFinalMessageAndRefusesMore) {
  int ready = 0;
  OutboundQueue queue({.capacity = 4, .coalesce_after = 4}, [&] { ++ready; });
  (void)queue.push_event(delta(1, "a", "x"));
  queue.close_with({{"final", true}});
  EXPECT_EQ(queue.push_message({{"late", true}}), OutboundQueue::Push::kClosed);
  auto taken = queue.take(true);
  EXPECT_TRUE(taken.closed);
  ASSERT_EQ(taken.items.size(), 1u);
  EXPECT_EQ(std::get<nlohmann::json>(taken.items[0])["final"], true);
  EXPECT_EQ(ready, 2);
}

}  // namespace
}  // namespace keel
