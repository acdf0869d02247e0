// The model picker's ops over JSON-RPC, on each transport (issue 18): model.list (a read, no credential),
// thread.setModel (receipted; model.unknown for a name keel does not list) and the thread's model in
// thread.read, thread.list and thread.updated. Every message is checked against docs/protocol/ by the
// fixture.
#include <gtest/gtest.h>

#include "transport/rpc_transport_fixture.h"

namespace keel::testing {
namespace {

using nlohmann::json;

using RpcModelChoiceTest = RpcTransportFixture;

TEST_P(RpcModelChoiceTest, ModelListNamesTheConfiguredModelAndItsDefault) {
  RpcTestClient& client = connect();
  auto listed = client.request("model.list");
  ASSERT_TRUE(listed.contains("result")) << listed.dump();
  const json& result = listed["result"];
  ASSERT_EQ(result["models"].size(), 1u);
  EXPECT_EQ(result["models"][0]["name"], h.engine_options().model.model);
  EXPECT_EQ(result["defaultModel"], h.engine_options().model.model);
}

TEST_P(RpcModelChoiceTest, SetModelIsReceiptedReportedAndRefusedForAnUnknownName) {
  RpcTestClient& client = connect();
  const std::string thread = create_thread(client);
  const std::string name = h.engine_options().model.model;
  auto unknown = client.command("thread.setModel", {{"threadId", thread}, {"model", "gpt-9"}});
  ASSERT_TRUE(unknown.contains("error")) << unknown.dump();
  EXPECT_EQ(unknown["error"]["data"]["code"], "model.unknown");
  auto missing = client.command("thread.setModel", {{"threadId", thread}});
  ASSERT_TRUE(missing.contains("error")) << missing.dump();
  EXPECT_EQ(missing["error"]["data"]["code"], "rpc.invalid_params");  // the schema requires `model`

  const json params = {{"threadId", thread}, {"model", name}, {"submissionId", "set-1"}};
  auto set = client.request("thread.setModel", params);
  ASSERT_TRUE(set.contains("result")) << set.dump();
  EXPECT_EQ(set["result"]["model"], name);
  auto updated = client.wait_event(thread, "thread.updated", 2);  // after thread.create's
  EXPECT_EQ(updated["payload"]["model"], name);
  auto again = client.request("thread.setModel", params);  // the same submission: its first answer
  ASSERT_TRUE(again.contains("result")) << again.dump();
  EXPECT_EQ(again["result"]["revision"], set["result"]["revision"]);

  auto read = client.request("thread.read", {{"threadId", thread}});
  EXPECT_EQ(read["result"]["model"], name);
  auto list = client.request("thread.list");
  ASSERT_EQ(list["result"]["threads"].size(), 1u);
  EXPECT_EQ(list["result"]["threads"][0]["model"], name);
}

INSTANTIATE_TEST_SUITE_P(Transports, RpcModelChoiceTest,
                         ::testing::Values(TransportKind::kStdioSocket, TransportKind::kStdioPipes,
                                           TransportKind::kWebSocket),
                         transport_name);

}  // namespace
}  // namespace keel::testing
