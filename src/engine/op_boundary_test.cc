// The engine's op boundary (EngineCore::submit): a null parameter is an absent one, a mistyped one is refused
// by the op's params decoder, and an op whose handler throws — a bug, whatever the bug is — is answered with
// an `internal` rejection while the engine goes on serving; the process never ends for it. Driven through the
// in-process transport, which checks nothing before the engine (the JSON-RPC transports check params against
// the schema first: json_rpc_test.cc).
#include <gtest/gtest.h>

#include <stdexcept>

#include "engine/engine_harness.h"
#include "keel/error_codes.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;

// Allows every call; its policy.read answer throws: a bug in a handler, whatever the bug is.
class ThrowingDescribeGatekeeper final : public Gatekeeper {
 public:
  GateVerdict check(const GateRequest& /*request*/) override { return {}; }
  json describe() const override { throw std::runtime_error("describe broke"); }
};

class OpBoundaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h.start();
    thread = h.create_thread();
  }
  static testing::HarnessOptions with(Gatekeeper* gatekeeper) {
    testing::HarnessOptions options;
    options.gatekeeper = gatekeeper;
    return options;
  }
  ThrowingDescribeGatekeeper gatekeeper;
  EngineHarness h{with(&gatekeeper)};
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

TEST_F(OpBoundaryTest, MistypedParametersAreRefusedByTheirDecoder) {
  // Nothing checks them in-process before the engine; each op's params decoder (protocol/op_params.h) does.
  AgentEvent interrupt = h.request("turn.interrupt", {{"threadId", thread}, {"turnId", 5}});
  ASSERT_EQ(interrupt.type, "command.rejected") << interrupt.payload.dump();
  EXPECT_EQ(interrupt.payload["error"]["code"], codes::kInvalidArgument);
  AgentEvent init = h.request("initialize", {{"subscribe", "yes"}});
  ASSERT_EQ(init.type, "command.rejected") << init.payload.dump();
  EXPECT_EQ(init.payload["error"]["code"], codes::kInvalidArgument);
  AgentEvent resume = h.request("run.resume", {{"threadId", thread}, {"runId", 5}});
  ASSERT_EQ(resume.type, "command.rejected") << resume.payload.dump();
  EXPECT_EQ(resume.payload["error"]["code"], codes::kInvalidArgument);
}

TEST_F(OpBoundaryTest, HandlerThatThrowsIsAnsweredInternalAndTheEngineGoesOn) {
  // On the thread's strand.
  AgentEvent thrown = h.request("policy.read", {{"threadId", thread}});
  ASSERT_EQ(thrown.type, "command.rejected") << thrown.payload.dump();
  EXPECT_EQ(thrown.payload["error"]["code"], codes::kInternal);
  EXPECT_EQ(thrown.payload["method"], "policy.read");
  // The same on the engine-wide strand.
  AgentEvent engine_wide = h.request("policy.read", json::object());
  ASSERT_EQ(engine_wide.type, "command.rejected") << engine_wide.payload.dump();
  EXPECT_EQ(engine_wide.payload["error"]["code"], codes::kInternal);
  // The engine still serves, on that thread and elsewhere.
  h.provider.push(testing::ScriptedResponse::text("still here"));
  EXPECT_EQ(h.run_turn(thread, "hello").payload["stopReason"], "end");
  EXPECT_EQ(h.request("thread.list", json::object()).type, "command.ack");
}

}  // namespace
}  // namespace keel
