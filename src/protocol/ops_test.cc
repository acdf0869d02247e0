#include "protocol/ops.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace keel::protocol {
namespace {

TEST(OpsTest, EveryOpIsFoundByItsNameAndNamesAreUnique) {
  std::set<std::string_view> names;
  for (const OpSpec& spec : all_ops()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    const OpSpec* found = find_op(spec.name);
    ASSERT_NE(found, nullptr) << spec.name;
    EXPECT_EQ(found->kind, spec.kind);
    EXPECT_EQ(&spec_of(spec.kind), found);
    EXPECT_EQ(to_string(spec.kind), spec.name);
  }
  EXPECT_EQ(find_op("thread.explode"), nullptr);
  EXPECT_EQ(find_op(""), nullptr);
}

TEST(OpsTest, OnlyEnqueueInterruptTheResponsesPolicyTakeoverAndTheModelAndServerChoicesReachAWaitingThread) {
  std::set<std::string_view> allowed;
  for (const OpSpec& spec : all_ops()) {
    // Engine-wide and session ops never meet a thread's wait.
    if (spec.route == OpRoute::kThread || spec.route == OpRoute::kSteerGate) {
      if (spec.allowed_while_waiting) allowed.insert(spec.name);
    }
  }
  EXPECT_EQ(allowed, (std::set<std::string_view>{"turn.enqueue", "turn.input", "turn.interrupt",
                                                 "approval.response", "interaction.response", "queue.update",
                                                 "queue.remove", "takeover.start", "takeover.end",
                                                 "thread.setModel", "thread.setMcpServers"}));
  for (const OpSpec& spec : all_ops()) {
    if (spec.name.starts_with("policy.")) {
      EXPECT_TRUE(spec.allowed_while_waiting) << spec.name;
    }
  }
}

TEST(OpsTest, StoreCommandsAreReceiptedAndSessionOpsAreNot) {
  for (const OpSpec& spec : all_ops()) {
    if (spec.store_command) {
      EXPECT_TRUE(spec.receipted) << spec.name;
    }
    if (spec.route == OpRoute::kSession) {
      EXPECT_FALSE(spec.receipted) << spec.name;
    }
  }
  EXPECT_TRUE(spec_of(OpKind::kTurnSteer).route == OpRoute::kSteerGate);
}

}  // namespace
}  // namespace keel::protocol
