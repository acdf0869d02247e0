// The engine's op boundary (EngineCore::submit): a null parameter is an absent one, and an op whose handler
// throws — a bug, whatever the bug is — is answered with an `internal` rejection while the engine goes on
// serving; the process never ends for it. Driven through the in-process transport, which checks nothing
// before the engine (the JSON-RPC transports check params against the schema first: json_rpc_test.cc).
#include <gtest/gtest.h>

#include "engine/engine_harness.h"
#include "keel/error_codes.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;

class OpBoundaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h.start();
    thread = h.create_thread();
  }
  EngineHarness h;
  std::string thread;
};

TEST_F(OpBoundaryTest, NullOptionalParametersAreAbsent) {
  // Each of these threw nlohmann's type_error out of the handler and aborted the process (issue 14, point 2).
  AgentEvent init = h.request("initialize", {{"subscribe", nullptr}});
  EXPECT_EQ(init.type, "command.ack") << init.payload.dump();
  AgentEvent interrupt = h.request("turn.interrupt", {{"threadId", thread}, {"turnId", nullptr}});
  EXPECT_EQ(interrupt.type, "command.ack") << interrupt.payload.dump();
  EXPECT_EQ(interrupt.payload["result"]["interrupted"], false);
  AgentEvent resume = h.request("run.resume", {{"threadId", thread}, {"runId", nullptr}});
  ASSERT_EQ(resume.type, "command.rejected") << resume.payload.dump();
  EXPECT_EQ(resume.payload["error"]["code"], codes::kRunNotFound);  // the thread has no run: a coded answer
}

TEST_F(OpBoundaryTest, HandlerThatThrowsIsAnsweredInternalAndTheEngineGoesOn) {
  // A turnId of the wrong type makes the interrupt handler's json access throw (nothing checks it
  // in-process).
  AgentEvent thrown = h.request("turn.interrupt", {{"threadId", thread}, {"turnId", 5}});
  ASSERT_EQ(thrown.type, "command.rejected") << thrown.payload.dump();
  EXPECT_EQ(thrown.payload["error"]["code"], codes::kInternal);
  EXPECT_EQ(thrown.payload["method"], "turn.interrupt");
  // The same on the engine-wide strand: initialize answers first, then reads `subscribe` and throws, so its
  // internal rejection follows its ack.
  h.transport->send(Op{"initialize", "test-client", "bad-initialize", {{"subscribe", "yes"}}});
  EXPECT_TRUE(h.log.wait_until([](const std::vector<AgentEvent>& events) {
    for (const AgentEvent& event : events) {
      if (event.type == "command.rejected" && event.payload.value("submissionId", "") == "bad-initialize" &&
          event.payload["error"].value("code", "") == codes::kInternal) {
        return true;
      }
    }
    return false;
  }));
  // The engine still serves, on that thread and elsewhere.
  h.provider.push(testing::ScriptedResponse::text("still here"));
  EXPECT_EQ(h.run_turn(thread, "hello").payload["stopReason"], "end");
  EXPECT_EQ(h.request("thread.list", json::object()).type, "command.ack");
}

}  // namespace
}  // namespace keel
