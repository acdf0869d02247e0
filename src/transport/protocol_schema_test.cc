// The protocol schema itself: it loads, it covers every method the server accepts, and it refuses what the
// server must never send (so the end-to-end checks against it can fail).
#include "transport/protocol_schema.h"

#include <gtest/gtest.h>

#include "transport/json_rpc.h"

namespace keel::testing {
namespace {

using nlohmann::json;

class ProtocolSchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = ProtocolSchema::load();
    ASSERT_TRUE(loaded) << loaded.error().to_string();
    schema.emplace(std::move(loaded).value());
  }
  std::optional<ProtocolSchema> schema;
};

TEST_F(ProtocolSchemaTest, IsVersionedAndCoversEveryMethod) {
  EXPECT_EQ(schema->document()["x-keel-protocol-version"], kProtocolVersion);
  for (const char* method :
       {"initialize", "thread.create", "thread.delete", "thread.fork", "thread.selectBranch", "thread.list",
        "thread.read", "turn.submit", "turn.interrupt", "turn.steer", "turn.input", "turn.enqueue", "queue.start",
        "queue.update", "queue.remove", "queue.list", "run.resume", "run.resolveUncertain", "approval.response",
        "interaction.response", "policy.read", "policy.setMode", "policy.addRule", "policy.removeRule",
        "policy.setHostPermissions", "session.subscribe", "session.unsubscribe"}) {
    EXPECT_TRUE(schema->has(std::string("params.") + method)) << method;
    EXPECT_TRUE(rpc::is_op_method(method) || rpc::is_session_method(method)) << method;
    // Receipted in the server exactly when the schema requires a submissionId.
    const json& required = schema->document()["definitions"][std::string("params.") + method]["required"];
    const bool needs_submission = std::find(required.begin(), required.end(), "submissionId") != required.end();
    EXPECT_EQ(needs_submission, rpc::is_receipted(method)) << method;
  }
}

TEST_F(ProtocolSchemaTest, AcceptsWhatTheServerSendsAndRefusesMalformedMessages) {
  const json event = rpc::event_notification(
      AgentEvent{"turn.complete", "t", 5, {{"turnId", "u"}, {"runId", "r"}, {"stopReason", "end"}}});
  EXPECT_TRUE(schema->check(event, "serverMessage"));
  EXPECT_TRUE(schema->check(rpc::error_response(nullptr, rpc::kParseError, "bad", "rpc.parse_error"), "serverMessage"));

  json unknown_type = event;
  unknown_type["params"]["type"] = "turn.exploded";
  EXPECT_FALSE(schema->check(unknown_type, "serverMessage"));
  json bad_reason = event;
  bad_reason["params"]["payload"]["stopReason"] = "tired";
  EXPECT_FALSE(schema->check(bad_reason, "serverMessage"));
  json no_version = event;
  no_version.erase("jsonrpc");
  EXPECT_FALSE(schema->check(no_version, "serverMessage"));
  EXPECT_FALSE(schema->check(json{{"threadId", 3}, {"input", "x"}, {"submissionId", "s"}}, "params.turn.submit"));
  EXPECT_TRUE(schema->check(json{{"threadId", "t"}, {"input", "x"}, {"submissionId", "s"}}, "params.turn.submit"));
}

}  // namespace
}  // namespace keel::testing
