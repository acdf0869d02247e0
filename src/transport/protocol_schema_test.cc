// The protocol schema itself: it loads, it covers every method the server accepts, and it refuses what the
// server must never send (so the end-to-end checks against it can fail).
#include "transport/protocol_schema.h"

#include <gtest/gtest.h>

#include <set>

#include "protocol/ops.h"
#include "transport/json_rpc.h"
#include "transport/rpc_params.h"

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

TEST_F(ProtocolSchemaTest, IsVersioned) {
  EXPECT_EQ(schema->document()["x-keel-protocol-version"], kProtocolVersion);
}

// The op table (protocol/ops.h) and the schema describe the same methods: every op has its params in the
// schema, every params.* and result.* definition is an op's, and an op is receipted exactly when its schema
// requires a submissionId.
TEST_F(ProtocolSchemaTest, DefinesTheParamsOfEveryOpInTheTableAndNoOther) {
  std::set<std::string> ops;
  for (const protocol::OpSpec& op : protocol::all_ops()) {
    const std::string name(op.name);
    ops.insert(name);
    ASSERT_TRUE(schema->has("params." + name)) << name;
    EXPECT_NE(rpc::find_method(name), nullptr) << name;
    EXPECT_EQ(rpc::is_session_method(name), op.route == protocol::OpRoute::kSession) << name;
    EXPECT_EQ(rpc::is_op_method(name), op.route != protocol::OpRoute::kSession) << name;
  }
  for (const auto& [definition, body] : schema->document()["definitions"].items()) {
    for (const std::string prefix : {"params.", "result."}) {
      if (definition.starts_with(prefix)) {
        EXPECT_TRUE(ops.contains(definition.substr(prefix.size()))) << definition << " is no op of the table";
      }
    }
  }
  EXPECT_EQ(rpc::method_names(), std::vector<std::string>(ops.begin(), ops.end()));
}

TEST_F(ProtocolSchemaTest, AnOpIsReceiptedExactlyWhenItsSchemaRequiresASubmissionId) {
  for (const protocol::OpSpec& op : protocol::all_ops()) {
    const std::string name(op.name);
    const json& required = schema->document()["definitions"]["params." + name]["required"];
    const bool needs_submission =
        std::find(required.begin(), required.end(), "submissionId") != required.end();
    EXPECT_EQ(needs_submission, op.receipted) << name;
    EXPECT_EQ(rpc::is_receipted(name), op.receipted) << name;
  }
}

TEST_F(ProtocolSchemaTest, ThreadRoutedOpsRequireAThreadId) {
  for (const protocol::OpSpec& op : protocol::all_ops()) {
    if (op.route != protocol::OpRoute::kThread && op.route != protocol::OpRoute::kSteerGate) continue;
    const json& required = schema->document()["definitions"]["params." + std::string(op.name)]["required"];
    EXPECT_NE(std::find(required.begin(), required.end(), "threadId"), required.end()) << op.name;
  }
}

TEST_F(ProtocolSchemaTest, AcceptsWhatTheServerSendsAndRefusesMalformedMessages) {
  const json event = rpc::event_notification(
      AgentEvent{"turn.complete", "t", 5, {{"turnId", "u"}, {"runId", "r"}, {"stopReason", "end"}}});
  EXPECT_TRUE(schema->check(event, "serverMessage"));
  EXPECT_TRUE(schema->check(rpc::error_response(nullptr, rpc::kParseError, "bad", "rpc.parse_error"),
                            "serverMessage"));

  json unknown_type = event;
  unknown_type["params"]["type"] = "turn.exploded";
  EXPECT_FALSE(schema->check(unknown_type, "serverMessage"));
  json bad_reason = event;
  bad_reason["params"]["payload"]["stopReason"] = "tired";
  EXPECT_FALSE(schema->check(bad_reason, "serverMessage"));
  json no_version = event;
  no_version.erase("jsonrpc");
  EXPECT_FALSE(schema->check(no_version, "serverMessage"));
  EXPECT_FALSE(
      schema->check(json{{"threadId", 3}, {"input", "x"}, {"submissionId", "s"}}, "params.turn.submit"));
  EXPECT_TRUE(
      schema->check(json{{"threadId", "t"}, {"input", "x"}, {"submissionId", "s"}}, "params.turn.submit"));
}

}  // namespace
}  // namespace keel::testing
