// takeover.start / takeover.end through the whole engine (keel/takeover.h, docs/protocol.md, Taking over),
// with a fake target that records what the engine asked of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "policy/policy_gatekeeper.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::HarnessOptions;
using testing::ScriptedResponse;

// A takeover target that says which thread it was taken over for, or refuses when told to.
class FakeTakeoverTarget final : public TakeoverTarget {
 public:
  std::string_view name() const override { return "browser"; }
  Result<json> take_over(const std::string& thread_id) override {
    MutexLock guard(mu_);
    if (refusal_) return fail(*refusal_);
    taken_.push_back(thread_id);
    return json{{"tab", 1}, {"forThread", thread_id}};
  }
  Result<json> hand_back(const std::string& thread_id) override {
    MutexLock guard(mu_);
    handed_back_.push_back(thread_id);
    return json{{"refsInvalidated", true}};
  }
  json state() const override { return {{"launched", true}}; }

  void refuse_with(Error error) {
    MutexLock guard(mu_);
    refusal_ = std::move(error);
  }
  std::vector<std::string> taken() const {
    MutexLock guard(mu_);
    return taken_;
  }
  std::vector<std::string> handed_back() const {
    MutexLock guard(mu_);
    return handed_back_;
  }

 private:
  mutable Mutex mu_;
  std::optional<Error> refusal_ GUARDED_BY(mu_);
  std::vector<std::string> taken_ GUARDED_BY(mu_);
  std::vector<std::string> handed_back_ GUARDED_BY(mu_);
};

class TakeoverTest : public ::testing::Test {
 protected:
  TakeoverTest() : h(options_with(&target)) {}
  static HarnessOptions options_with(TakeoverTarget* takeover) {
    HarnessOptions options;
    options.takeover_targets = {takeover};
    return options;
  }
  void SetUp() override {
    h.start();
    thread = h.create_thread();
  }
  AgentEvent start_takeover(const std::string& name = "browser") {
    return h.request("takeover.start", {{"threadId", thread}, {"target", name}});
  }
  AgentEvent end_takeover(const std::string& name = "browser") {
    return h.request("takeover.end", {{"threadId", thread}, {"target", name}});
  }
  // Starts a turn whose model calls the `block` tool, and waits until the tool runs.
  void start_blocked_turn() {
    h.provider.push(ScriptedResponse::tool_calls({{"c1", "block", "{}"}}));
    ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "go"}}).type, "command.ack");
    ASSERT_TRUE(h.log.wait_until([&](const auto& events) {
      for (const AgentEvent& e : events) {
        if (e.type == "item.delta" && e.payload.contains("toolProgress")) return true;
      }
      return false;
    }));
  }
  json latest_run() {
    AgentEvent read = h.request("thread.read", {{"threadId", thread}});
    EXPECT_EQ(read.type, "command.ack") << read.payload.dump();
    return read.payload["result"]["latestRun"];
  }

  FakeTakeoverTarget target;
  EngineHarness h;
  std::string thread;
};

TEST_F(TakeoverTest, TakingOverAnIdleThreadAsksTheTargetAndPublishesThePersonAsHolder) {
  AgentEvent ack = start_takeover();
  ASSERT_EQ(ack.type, "command.ack") << ack.payload.dump();
  EXPECT_EQ(ack.payload["result"],
            (json{{"interrupted", false}, {"target", "browser"}, {"holder", "person"}}));
  EXPECT_EQ(target.taken(), std::vector<std::string>{thread});
  AgentEvent updated = h.wait_event(thread, "takeover.updated");
  EXPECT_EQ(updated.payload, (json{{"threadId", thread},
                                   {"target", "browser"},
                                   {"holder", "person"},
                                   {"details", {{"tab", 1}, {"forThread", thread}}}}));
}

TEST_F(TakeoverTest, TakingOverInterruptsTheRunningTurnAndTheRunStaysInterruptedAfterTheHandBack) {
  start_blocked_turn();
  AgentEvent ack = start_takeover();
  ASSERT_EQ(ack.type, "command.ack") << ack.payload.dump();
  const json& result = ack.payload["result"];
  EXPECT_EQ(result["interrupted"], true);
  EXPECT_EQ(result["state"], "interrupted");
  EXPECT_EQ(result["holder"], "person");
  EXPECT_FALSE(result.value("turnId", "").empty());
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "interrupted");
  // The target stopped acting for the agent before the turn was interrupted.
  const std::vector<std::string> order = h.log.types(/*with_deltas=*/false);
  const auto updated = std::find(order.begin(), order.end(), "takeover.updated");
  const auto complete = std::find(order.begin(), order.end(), "turn.complete");
  ASSERT_NE(updated, order.end());
  EXPECT_LT(updated - order.begin(), complete - order.begin());
  // The interrupted call got its result, as turn.interrupt gives it.
  EXPECT_EQ(h.path(thread)[4].body["interrupted"], true);

  AgentEvent back = end_takeover();
  ASSERT_EQ(back.type, "command.ack") << back.payload.dump();
  EXPECT_EQ(back.payload["result"], (json{{"target", "browser"}, {"holder", "agent"}, {"handedBack", true}}));
  EXPECT_EQ(target.handed_back(), std::vector<std::string>{thread});
  EXPECT_EQ(h.wait_event(thread, "takeover.updated", 2).payload["holder"], "agent");
  EXPECT_EQ(latest_run()["state"], "interrupted") << "the run waits for the person to continue it";
  EXPECT_EQ(h.completes(thread), 1u);
}

TEST_F(TakeoverTest, InitializeListsTheTargetsAndWhatAPersonHolds) {
  AgentEvent before = h.request("initialize", {{"subscribe", false}});
  ASSERT_EQ(before.type, "command.ack");
  EXPECT_EQ(
      before.payload["result"]["takeover"],
      (json{{"targets", {{{"name", "browser"}, {"state", {{"launched", true}}}}}}, {"held", json::array()}}));
  ASSERT_EQ(start_takeover().type, "command.ack");
  AgentEvent during = h.request("initialize", {{"subscribe", false}});
  EXPECT_EQ(during.payload["result"]["takeover"]["held"],
            (json{{{"threadId", thread}, {"target", "browser"}}}));
  ASSERT_EQ(end_takeover().type, "command.ack");
  AgentEvent after = h.request("initialize", {{"subscribe", false}});
  EXPECT_EQ(after.payload["result"]["takeover"]["held"], json::array());
}

TEST_F(TakeoverTest, HandingBackWhatNoPersonHoldsChangesNothing) {
  AgentEvent back = end_takeover();
  ASSERT_EQ(back.type, "command.ack") << back.payload.dump();
  EXPECT_EQ(back.payload["result"]["handedBack"], false);
  EXPECT_TRUE(target.handed_back().empty());
  EXPECT_TRUE(h.log.of_type("takeover.updated").empty());
}

TEST_F(TakeoverTest, TakingOverTwiceAsksTheTargetAgainButPublishesTheHolderOnce) {
  ASSERT_EQ(start_takeover().type, "command.ack");
  ASSERT_EQ(start_takeover().type, "command.ack");
  EXPECT_EQ(target.taken().size(), 2u);
  EXPECT_EQ(h.log.of_type("takeover.updated").size(), 1u);
}

TEST_F(TakeoverTest, AnUnknownTargetOrThreadIsRefusedAndNothingIsTakenOver) {
  AgentEvent unknown = start_takeover("camera");
  ASSERT_EQ(unknown.type, "command.rejected");
  EXPECT_EQ(unknown.payload["error"]["code"], codes::kTakeoverUnknownTarget);
  EXPECT_NE(unknown.payload["error"]["message"].get<std::string>().find("browser"), std::string::npos)
      << "the refusal names what can be taken over";
  EXPECT_EQ(end_takeover("camera").payload["error"]["code"], codes::kTakeoverUnknownTarget);
  AgentEvent no_thread = h.request("takeover.start", {{"threadId", "no-such-thread"}, {"target", "browser"}});
  EXPECT_EQ(no_thread.payload["error"]["code"], codes::kThreadNotFound);
  AgentEvent no_target = h.request("takeover.start", {{"threadId", thread}});
  EXPECT_EQ(no_target.payload["error"]["code"], codes::kInvalidArgument);
  EXPECT_TRUE(target.taken().empty());
  EXPECT_TRUE(h.log.of_type("takeover.updated").empty());
}

TEST_F(TakeoverTest, ATargetThatRefusesIsReportedAndTheTurnGoesOn) {
  target.refuse_with(Error("browser.not_running", "the browser is not running"));
  start_blocked_turn();
  AgentEvent refused = start_takeover();
  ASSERT_EQ(refused.type, "command.rejected");
  EXPECT_EQ(refused.payload["error"]["code"], "browser.not_running");
  EXPECT_TRUE(h.log.of_type("takeover.updated").empty());
  EXPECT_EQ(h.completes(thread), 0u) << "the turn was not interrupted";
  h.request("turn.interrupt", {{"threadId", thread}});
  h.wait_complete(thread, 1);
}

TEST(TakeoverApprovalTest, TakingOverWithdrawsAWaitingApproval) {
  FakeTakeoverTarget target;
  HarnessOptions options;
  options.takeover_targets = {&target};
  EngineHarness h(options);
  auto gate = PolicyGatekeeper::open(h.store(), h.clock, h.ids, PolicyMode::kAskWrites);
  ASSERT_TRUE(gate) << gate.error().to_string();
  h.set_gatekeeper(gate->get());
  h.start();
  const std::string thread = h.create_thread();
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "write_note", R"({"text":"x"})"}}));
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "go"}}).type, "command.ack");
  AgentEvent asked = h.wait_event(thread, "approval.request");

  AgentEvent taken = h.request("takeover.start", {{"threadId", thread}, {"target", "browser"}});
  ASSERT_EQ(taken.type, "command.ack") << taken.payload.dump();
  EXPECT_EQ(taken.payload["result"]["interrupted"], true);
  EXPECT_EQ(taken.payload["result"]["state"], "interrupted");
  AgentEvent late =
      h.request("approval.response",
                {{"threadId", thread}, {"approvalId", asked.payload["approvalId"]}, {"decision", "accept"}});
  EXPECT_EQ(late.payload["error"]["code"], codes::kApprovalExpired) << late.payload.dump();
  h.stop();  // before the gatekeeper it uses
}

TEST(TakeoverWithoutTargetsTest, InitializeSaysNothingAboutTakeoverAndTheOpsAreRefused) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  AgentEvent init = h.request("initialize", {{"subscribe", false}});
  ASSERT_EQ(init.type, "command.ack");
  EXPECT_FALSE(init.payload["result"].contains("takeover"));
  AgentEvent refused = h.request("takeover.start", {{"threadId", thread}, {"target", "browser"}});
  EXPECT_EQ(refused.payload["error"]["code"], codes::kTakeoverUnknownTarget);
}

}  // namespace
}  // namespace keel
