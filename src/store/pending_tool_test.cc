#include "store/pending_tool.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "keel/error_codes.h"

namespace keel {
namespace {

using nlohmann::json;

PendingTool decoded(const json& stored) {
  auto pending = decode_pending_tool(stored, "pending_tool of run r1");
  EXPECT_TRUE(pending) << stored << ": " << (pending ? "" : pending.error().to_string());
  return pending.value_or(PendingTool{});
}

json encoded(const PendingTool& pending) {
  auto stored = encode_pending_tool(pending);
  EXPECT_TRUE(stored) << (stored ? "" : stored.error().to_string());
  return stored.value_or(json());
}

// Every shape keel has written to runs.pending_tool, as it is stored.
std::vector<json> stored_shapes() {
  return {
      // a dispatch record (turn_journal, turn_runner)
      {{"toolCallId", "c1"}, {"name", "write_file"}, {"nodeId", "n1"}},
      // recovery running a retry-safe call again
      {{"toolCallId", "c1"}, {"name", "search"}, {"nodeId", "n1"}, {"recoveryAttempts", 1}},
      // run.resolveUncertain{retry}, with and without a recovery count
      {{"toolCallId", "c1"}, {"name", "write_file"}, {"nodeId", "n1"}, {"resolution", "retry"}},
      {{"toolCallId", "c1"},
       {"name", "search"},
       {"nodeId", "n1"},
       {"recoveryAttempts", 2},
       {"resolution", "retry"}},
      // durable waits, with and without the breaker's held notices
      {{"toolCallId", "c2"}, {"name", "write_file"}, {"nodeId", "n2"}, {"approvalId", "a1"}},
      {{"toolCallId", "c3"}, {"name", "ask_user"}, {"nodeId", "n3"}, {"interactionId", "i1"}},
      {{"toolCallId", "c3"},
       {"name", "set_timer"},
       {"nodeId", "n3"},
       {"interactionId", "i2"},
       {"heldNotices", json::array({"3 tool calls in a row failed", "5 tool calls in a row failed"})}},
  };
}

TEST(PendingToolTest, DecodesEveryStoredShape) {
  const PendingTool dispatch = decoded(stored_shapes()[0]);
  EXPECT_TRUE(dispatch.is_dispatch());
  EXPECT_EQ(dispatch.tool_call_id, "c1");
  EXPECT_EQ(dispatch.name, "write_file");
  EXPECT_EQ(dispatch.node_id, "n1");
  EXPECT_FALSE(dispatch.recovery_attempts);
  EXPECT_FALSE(dispatch.retry_chosen);

  EXPECT_EQ(decoded(stored_shapes()[1]).recovery_attempts, 1);
  EXPECT_TRUE(decoded(stored_shapes()[2]).retry_chosen);
  const PendingTool counted_retry = decoded(stored_shapes()[3]);
  EXPECT_TRUE(counted_retry.retry_chosen);
  EXPECT_EQ(counted_retry.recovery_attempts, 2);

  const PendingTool approval = decoded(stored_shapes()[4]);
  EXPECT_FALSE(approval.is_dispatch());
  EXPECT_TRUE(approval.waits_for(WaitKind::kApproval));
  EXPECT_EQ(approval.wait->id, "a1");
  EXPECT_TRUE(approval.wait->held_notices.empty());

  const PendingTool question = decoded(stored_shapes()[5]);
  EXPECT_TRUE(question.waits_for(WaitKind::kInteraction));
  EXPECT_FALSE(question.waits_for(WaitKind::kApproval));
  EXPECT_EQ(question.wait->id, "i1");

  const PendingTool held = decoded(stored_shapes()[6]);
  EXPECT_EQ(held.wait->held_notices,
            (std::vector<std::string>{"3 tool calls in a row failed", "5 tool calls in a row failed"}));
}

TEST(PendingToolTest, EveryStoredShapeEncodesBackToTheSameJson) {
  for (const json& stored : stored_shapes()) EXPECT_EQ(encoded(decoded(stored)), stored);
}

TEST(PendingToolTest, ATypedValueRoundTrips) {
  PendingTool wait = dispatch_record("c9", "edit_file", "n9");
  wait.wait = PendingTool::Wait{.kind = WaitKind::kApproval, .id = "a9", .held_notices = {"off"}};
  EXPECT_EQ(decoded(encoded(wait)), wait);

  PendingTool retried = dispatch_record("c8", "search", "n8");
  retried.recovery_attempts = 0;
  retried.retry_chosen = true;
  EXPECT_EQ(decoded(encoded(retried)), retried);
  EXPECT_EQ(encoded(retried)["recoveryAttempts"], 0) << "a count of 0 is kept, not dropped";
}

TEST(PendingToolTest, ADamagedOrUnknownValueIsADecodeFailure) {
  const json base = {{"toolCallId", "c1"}, {"name", "write_file"}, {"nodeId", "n1"}};
  // `base` with `extra`'s keys set.
  auto with = [&](json extra) {
    json out = base;
    out.update(extra);
    return out;
  };
  auto without = [&](const char* key) {
    json out = base;
    out.erase(key);
    return out;
  };
  const std::vector<json> damaged = {
      json(nullptr),
      json::array({"c1"}),
      json("c1"),
      json::object(),
      without("toolCallId"),
      without("name"),
      without("nodeId"),
      with({{"toolCallId", 7}}),
      with({{"nodeId", nullptr}}),
      with({{"shape", "new"}}),  // a key no keel writes
      with({{"approvalId", 1}}),
      with({{"approvalId", ""}}),
      with({{"interactionId", json::object()}}),
      with({{"approvalId", "a1"}, {"interactionId", "i1"}}),
      with({{"approvalId", "a1"}, {"recoveryAttempts", 1}}),
      with({{"interactionId", "i1"}, {"resolution", "retry"}}),
      with({{"approvalId", "a1"}, {"heldNotices", "not a list"}}),
      with({{"approvalId", "a1"}, {"heldNotices", json::array()}}),
      with({{"approvalId", "a1"}, {"heldNotices", json::array({"ok", 3})}}),
      with({{"heldNotices", json::array({"without a wait"})}}),
      with({{"recoveryAttempts", -1}}),
      with({{"recoveryAttempts", 1.5}}),
      with({{"recoveryAttempts", "1"}}),
      with({{"recoveryAttempts", 1e12}}),
      with({{"recoveryAttempts", json(uint64_t{1} << 40)}}),
      with({{"resolution", "mark_done"}}),
      with({{"resolution", true}}),
  };
  for (const json& value : damaged) {
    auto pending = decode_pending_tool(value, "pending_tool of run r1");
    ASSERT_FALSE(pending) << value;
    EXPECT_EQ(pending.error().code(), codes::kStoreDecode) << value;
    EXPECT_NE(pending.error().message().find("pending_tool of run r1"), std::string::npos)
        << pending.error().message();
  }
}

TEST(PendingToolTest, EncodingRefusesAValueNoStoredShapeDescribes) {
  PendingTool wait = dispatch_record("c1", "write_file", "n1");
  wait.wait = PendingTool::Wait{.kind = WaitKind::kInteraction, .id = "i1"};
  PendingTool counted_wait = wait;
  counted_wait.recovery_attempts = 1;
  PendingTool retried_wait = wait;
  retried_wait.retry_chosen = true;
  PendingTool nameless_wait = wait;
  nameless_wait.wait->id.clear();
  PendingTool negative = dispatch_record("c1", "write_file", "n1");
  negative.recovery_attempts = -1;
  for (const PendingTool& bad : {counted_wait, retried_wait, nameless_wait, negative}) {
    auto stored = encode_pending_tool(bad);
    ASSERT_FALSE(stored) << stored->dump();
    EXPECT_EQ(stored.error().code(), codes::kInvalidArgument);
  }
}

TEST(PendingToolTest, WaitKindsHaveTheirNames) {
  EXPECT_EQ(to_string(WaitKind::kApproval), "approval");
  EXPECT_EQ(to_string(WaitKind::kInteraction), "interaction");
}

}  // namespace
}  // namespace keel
