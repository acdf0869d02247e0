// The JSON-RPC transports end to end (stdio over a socketpair and over pipes, WebSocket over loopback): a
// real engine with an asking gatekeeper and a scripted model, driven by clients; every message the clients
// receive is checked against docs/protocol/ (the fixture's TearDown).
#include <gtest/gtest.h>

#include "transport/rpc_transport_fixture.h"

namespace keel::testing {
namespace {

using nlohmann::json;

std::vector<std::string> types_of(const std::vector<json>& events, bool with_deltas = false) {
  std::vector<std::string> out;
  for (const json& e : events) {
    if (with_deltas || e["type"] != "item.delta") out.push_back(e["type"]);
  }
  return out;
}

size_t index_of(const std::vector<json>& all, const std::function<bool(const json&)>& pred) {
  for (size_t i = 0; i < all.size(); ++i) {
    if (pred(all[i])) return i;
  }
  return all.size();
}

using RpcTransportTest = RpcTransportFixture;

TEST_P(RpcTransportTest, SubmitIsAnsweredWithItsAckAndEventsFollowInOrder) {
  RpcTestClient& client = connect();
  auto init = client.request("initialize", {{"subscribe", true}});
  ASSERT_TRUE(init.contains("result")) << init.dump();
  EXPECT_EQ(init["result"]["protocolVersion"], 1);
  const std::string thread = create_thread(client);
  h.provider.push(ScriptedResponse::text("hello there"));
  auto submitted = client.command("turn.submit", {{"threadId", thread}, {"input", "hi"}});
  ASSERT_TRUE(submitted.contains("result")) << submitted.dump();
  const std::string turn = submitted["result"]["turnId"];
  auto complete = client.wait_event(thread, "turn.complete");
  EXPECT_EQ(complete["payload"]["stopReason"], "end");
  EXPECT_EQ(complete["payload"]["turnId"], turn);

  const auto events = client.events(thread);
  uint64_t last = 0;
  for (const json& e : events) {
    EXPECT_GT(e["seq"].get<uint64_t>(), last) << e.dump();
    last = e["seq"];
  }
  const auto types = types_of(events);
  const auto start = std::find(types.begin(), types.end(), "turn.start");
  ASSERT_NE(start, types.end());
  EXPECT_EQ(types.back(), "turn.complete");
  // The reply's text arrives in deltas, then as the persisted node.
  std::string text;
  for (const json& e : events) {
    if (e["type"] == "item.delta") text += e["payload"].value("text", "");
  }
  EXPECT_EQ(text, "hello there");
  // The ack (the response) comes before the turn's first event.
  const auto all = client.received();
  EXPECT_LT(
      index_of(all,
               [&](const json& m) { return m.contains("result") && m["result"].contains("userNodeId"); }),
      index_of(all, [](const json& m) {
        return m.value("method", "") == "event" && m["params"]["type"] == "turn.start";
      }));
}

TEST_P(RpcTransportTest, SteerEnqueueAndInterruptAreAckedAndTheTurnEndsInterrupted) {
  RpcTestClient& client = connect();
  const std::string thread = create_thread(client);
  h.provider.push(ScriptedResponse::stall());
  auto submitted = client.command("turn.submit", {{"threadId", thread}, {"input", "long task"}});
  ASSERT_TRUE(submitted.contains("result")) << submitted.dump();
  const std::string turn = submitted["result"]["turnId"];
  client.wait_event(thread, "turn.start");

  auto steered =
      client.command("turn.steer", {{"threadId", thread}, {"expectedTurnId", turn}, {"input", "also this"}});
  ASSERT_TRUE(steered.contains("result")) << steered.dump();
  EXPECT_EQ(steered["result"]["turnId"], turn);
  auto mismatch = client.command("turn.steer",
                                 {{"threadId", thread}, {"expectedTurnId", "no-such-turn"}, {"input", "x"}});
  ASSERT_TRUE(mismatch.contains("error")) << mismatch.dump();
  EXPECT_EQ(mismatch["error"]["data"]["code"], "steer.turn_mismatch");
  EXPECT_EQ(mismatch["error"]["code"], -32000);

  auto enqueued = client.command("turn.enqueue", {{"threadId", thread}, {"input", "next"}});
  ASSERT_TRUE(enqueued.contains("result")) << enqueued.dump();
  EXPECT_EQ(enqueued["result"]["queueLength"], 1);

  auto interrupted = client.request("turn.interrupt", {{"threadId", thread}});
  ASSERT_TRUE(interrupted.contains("result")) << interrupted.dump();
  EXPECT_EQ(interrupted["result"]["interrupted"], true);
  auto complete = client.wait_event(thread, "turn.complete");
  EXPECT_EQ(complete["payload"]["stopReason"], "interrupted");
  // The acked steer was kept (appended before the end), and the queue holds after an interrupt.
  size_t steers = 0;
  for (const NodeRecord& node : h.path(thread)) steers += node.body.value("steered", false);
  EXPECT_EQ(steers, 1u);
  // The harness's own subscriber gets its events on its own delivery thread: wait for it, then check that
  // the interrupted turn completed once and the held queue started nothing.
  h.wait_complete(thread, 1);
  EXPECT_EQ(h.completes(thread), 1u);
}

TEST_P(RpcTransportTest, TwoClientsAnswerOneApprovalOnlyOneSettlesAndBothSeeTheSameEvents) {
  RpcTestClient& a = connect();
  RpcTestClient& b = connect();
  const std::string thread = create_thread(a);
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "write_note", json{{"text", "x"}}.dump()}}));
  h.provider.push(ScriptedResponse::text("noted"));
  auto submitted = a.command("turn.submit", {{"threadId", thread}, {"input", "write it"}});
  ASSERT_TRUE(submitted.contains("result")) << submitted.dump();
  auto request_a = a.wait_event(thread, "approval.request");
  auto request_b = b.wait_event(thread, "approval.request");
  const std::string approval = request_a["payload"]["approvalId"];
  EXPECT_EQ(request_b["payload"]["approvalId"], approval);

  json params = {{"threadId", thread}, {"approvalId", approval}, {"decision", "accept"}};
  json pa = params;
  pa["submissionId"] = "a-1";
  json pb = params;
  pb["submissionId"] = "b-1";
  a.send({{"jsonrpc", "2.0"}, {"id", 100}, {"method", "approval.response"}, {"params", pa}});
  b.send({{"jsonrpc", "2.0"}, {"id", 200}, {"method", "approval.response"}, {"params", pb}});
  auto answer_a = a.wait_response(100);
  auto answer_b = b.wait_response(200);
  int settled = 0;
  for (const json& answer : {answer_a, answer_b}) {
    if (answer.contains("result") && !answer["result"].value("alreadySettled", false)) {
      ++settled;
    } else if (answer.contains("result")) {
      EXPECT_EQ(answer["result"]["alreadySettled"], true);
    } else {
      EXPECT_TRUE(answer["error"]["data"]["code"].is_string()) << answer.dump();
    }
  }
  EXPECT_EQ(settled, 1) << answer_a.dump() << answer_b.dump();
  auto complete = a.wait_event(thread, "turn.complete");
  EXPECT_EQ(complete["payload"]["stopReason"], "end");
  b.wait_event(thread, "turn.complete");
  EXPECT_EQ(a.events(thread), b.events(thread));
  size_t results = 0;
  for (const NodeRecord& node : h.path(thread)) results += to_string(node.kind) == std::string("tool_result");
  EXPECT_EQ(results, 1u);
}

TEST_P(RpcTransportTest, BadInputGetsCodedErrorsAndChangesNothing) {
  RpcTestClient& client = connect();
  const std::string thread = create_thread(client);
  h.provider.push(ScriptedResponse::text("first"));
  ASSERT_TRUE(client.command("turn.submit", {{"threadId", thread}, {"input", "hi"}}).contains("result"));
  client.wait_event(thread, "turn.complete");
  const json before_list = client.request("thread.list")["result"];
  const size_t before_nodes = h.path(thread).size();

  auto count_code = [](const std::vector<json>& all, const std::string& code) {
    size_t n = 0;
    for (const json& m : all) {
      if (m.is_object() && m.contains("error") && m["error"]["data"].value("code", "") == code) ++n;
    }
    return n;
  };
  auto wait_code = [&](const std::string& code, size_t n) {
    EXPECT_TRUE(client.wait_until([&](const auto& all) { return count_code(all, code) >= n; })) << code;
  };
  client.send_raw("{not json");
  wait_code("rpc.parse_error", 1);
  // A WebSocket text frame cannot carry invalid UTF-8 at all (the protocol closes the connection, 1007), so
  // this reaches the JSON layer only over stdio.
  if (GetParam() != TransportKind::kWebSocket) {
    client.send_raw(
        std::string("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"thread.list\",\"params\":{\"x\":\"") +
        "\xc3\x28" + "\"}}");
    wait_code("rpc.parse_error", 2);
  }
  client.send_raw(R"({"jsonrpc":"2.0","id":{"no":1},"method":"thread.list"})");
  wait_code("rpc.invalid_request", 1);
  auto unknown = client.request("turn.explode", {});
  EXPECT_EQ(unknown["error"]["code"], -32601);
  auto wrong_type = client.command("turn.submit", {{"threadId", 42}, {"input", "x"}});
  EXPECT_EQ(wrong_type["error"]["code"], -32602);
  auto wrong_decision =
      client.command("approval.response", {{"threadId", thread}, {"approvalId", 7}, {"decision", "accept"}});
  EXPECT_EQ(wrong_decision["error"]["code"], -32602);
  client.send_raw(json{{"jsonrpc", "2.0"},
                       {"id", 9},
                       {"method", "thread.list"},
                       {"params", {{"pad", std::string(kTestMaxMessage + 10, 'x')}}}}
                      .dump());
  wait_code("rpc.message_too_large", 1);
  json batch = json::array();
  for (int i = 0; i < 65; ++i) batch.push_back({{"jsonrpc", "2.0"}, {"id", i}, {"method", "thread.list"}});
  client.send(batch);
  wait_code("rpc.batch_too_large", 1);
  auto unknown_thread = client.command("turn.submit", {{"threadId", "no-such-thread"}, {"input", "x"}});
  ASSERT_TRUE(unknown_thread.contains("error")) << unknown_thread.dump();

  // The connection is still usable, nothing persisted changed, and the engine runs on.
  EXPECT_EQ(client.request("thread.list")["result"], before_list);
  EXPECT_EQ(h.path(thread).size(), before_nodes);
  h.provider.push(ScriptedResponse::text("second"));
  ASSERT_TRUE(client.command("turn.submit", {{"threadId", thread}, {"input", "again"}}).contains("result"));
  EXPECT_EQ(client.wait_event(thread, "turn.complete", 2)["payload"]["stopReason"], "end");
}

TEST_P(RpcTransportTest, BatchIsAnsweredByOneArrayInRequestOrder) {
  RpcTestClient& client = connect();
  const std::string thread = create_thread(client);
  client.send(json::array(
      {{{"jsonrpc", "2.0"}, {"id", "x1"}, {"method", "thread.read"}, {"params", {{"threadId", thread}}}},
       {{"jsonrpc", "2.0"}, {"method", "thread.list"}},
       {{"jsonrpc", "2.0"}, {"id", "x2"}, {"method", "no.such"}},
       {{"jsonrpc", "2.0"}, {"id", "x3"}, {"method", "thread.list"}}}));
  json batch;
  ASSERT_TRUE(client.wait_until([&](const auto& all) {
    for (const json& m : all) {
      if (m.is_array()) {
        batch = m;
        return true;
      }
    }
    return false;
  }));
  ASSERT_EQ(batch.size(), 3u) << batch.dump();
  EXPECT_EQ(batch[0]["id"], "x1");
  EXPECT_EQ(batch[0]["result"]["threadId"], thread);
  EXPECT_EQ(batch[1]["id"], "x2");
  EXPECT_EQ(batch[1]["error"]["code"], -32601);
  EXPECT_EQ(batch[2]["id"], "x3");
  EXPECT_TRUE(batch[2]["result"].contains("threads"));
}

TEST_P(RpcTransportTest, ClientThatDisconnectsMidStreamLeavesTheEngineRunning) {
  RpcTestClient& leaving = connect();
  const std::string thread = create_thread(leaving);
  h.provider.push(ScriptedResponse::stall());
  ASSERT_TRUE(leaving.command("turn.submit", {{"threadId", thread}, {"input", "go"}}).contains("result"));
  leaving.wait_event(thread, "turn.start");
  leaving.disconnect();

  RpcTestClient& staying = connect();
  auto interrupted = staying.request("turn.interrupt", {{"threadId", thread}});
  ASSERT_TRUE(interrupted.contains("result")) << interrupted.dump();
  EXPECT_EQ(staying.wait_event(thread, "turn.complete")["payload"]["stopReason"], "interrupted");
  h.provider.push(ScriptedResponse::text("back"));
  ASSERT_TRUE(staying.command("turn.submit", {{"threadId", thread}, {"input", "again"}}).contains("result"));
  EXPECT_EQ(staying.wait_event(thread, "turn.complete", 2)["payload"]["stopReason"], "end");
}

INSTANTIATE_TEST_SUITE_P(Transports, RpcTransportTest,
                         ::testing::Values(TransportKind::kStdioSocket, TransportKind::kStdioPipes,
                                           TransportKind::kWebSocket),
                         transport_name);

}  // namespace
}  // namespace keel::testing
