// keel serve --stdio through the binary: a client on the process's stdin/stdout drives submit, steer,
// enqueue, interrupt and an approval against the scripted model server; bad input; logs kept off stdout; the
// end of the input ends the process. Every message the server sent is checked against the protocol's JSON
// Schema when each test ends (serve_fixture.h).
#include <fstream>
#include <sstream>

#include "serve_fixture.h"

namespace keel::e2e {
namespace {

using nlohmann::json;
using testing::RpcTestClient;

std::string streamed_text(const std::vector<json>& events) {
  std::string text;
  for (const json& e : events) {
    if (e["type"] == "item.delta") text += e["payload"].value("text", "");
  }
  return text;
}

// Index of the first event matching `type` (and `turn`, when given) in `events`; events.size() when none.
size_t position(const std::vector<json>& events, const std::string& type, const std::string& turn = "") {
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i]["type"] == type && (turn.empty() || events[i]["payload"].value("turnId", "") == turn))
      return i;
  }
  return events.size();
}

using ServeStdioTest = ServeFixture;

TEST_F(ServeStdioTest, SubmitIsAckedThenItsEventsStreamInOrderUntilTurnComplete) {
  const std::string reply = "Hello from the scripted model, in pieces.";
  start_model({{"responses", json::array({response("[greet]", json::array({text_step(reply, 6)}))})}});
  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);

  auto init = client->request("initialize", {{"subscribe", true}});
  ASSERT_TRUE(init.contains("result")) << init.dump();
  EXPECT_EQ(init["result"]["protocolVersion"], 1);
  EXPECT_EQ(init["result"]["unfinished"], json::array());
  const std::string thread = create_thread(*client);
  const std::string turn = submit(*client, thread, "[greet] say hello");
  ASSERT_FALSE(turn.empty());
  auto complete = client->wait_event(thread, "turn.complete");
  EXPECT_EQ(complete["payload"]["stopReason"], "end");
  EXPECT_EQ(complete["payload"]["turnId"], turn);

  const auto events = client->events(thread);
  uint64_t last_seq = 0;
  for (const json& e : events) {
    EXPECT_GT(e["seq"].get<uint64_t>(), last_seq) << e.dump();
    last_seq = e["seq"];
  }
  EXPECT_LT(position(events, "turn.start", turn), position(events, "item.delta"));
  EXPECT_LT(position(events, "item.delta"), position(events, "turn.complete", turn));
  EXPECT_EQ(events.back()["type"], "turn.complete");
  EXPECT_EQ(streamed_text(events), reply);
  // The answer to turn.submit came before the turn's first event.
  const auto all = client->received();
  size_t ack = all.size();
  size_t start = all.size();
  for (size_t i = 0; i < all.size(); ++i) {
    if (ack == all.size() && all[i].contains("result") && all[i]["result"].contains("userNodeId")) ack = i;
    if (start == all.size() && all[i].value("method", "") == "event" &&
        all[i]["params"]["type"] == "turn.start")
      start = i;
  }
  EXPECT_LT(ack, start);
  EXPECT_TRUE(process->running());
}

TEST_F(ServeStdioTest, SteerReachesTheNextModelRequestAndTheQueuedTurnStartsAfterTheFirst) {
  // The first reply streams for a few seconds so that the steer and the enqueue arrive while it runs.
  std::string slow_reply;
  for (int i = 0; i < 40; ++i) slow_reply += "step" + std::to_string(i) + " ";
  start_model(
      {{"responses", json::array({response("[slow]", json::array({text_step(slow_reply, 8)}), 60),
                                  response("[steer]", json::array({text_step("Steered reply.")})),
                                  response("[queued]", json::array({text_step("Queued reply.")}))})}});
  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);
  const std::string thread = create_thread(*client);
  const std::string turn = submit(*client, thread, "[slow] a long task");
  ASSERT_FALSE(turn.empty());
  client->wait_event(thread, "item.delta");

  auto steered = client->command(
      "turn.steer",
      {{"threadId", thread}, {"expectedTurnId", turn}, {"input", "[steer] mention the steer too"}});
  ASSERT_TRUE(steered.contains("result")) << steered.dump();
  EXPECT_EQ(steered["result"]["turnId"], turn);
  auto enqueued = client->command("turn.enqueue", {{"threadId", thread}, {"input", "[queued] then this"}});
  ASSERT_TRUE(enqueued.contains("result")) << enqueued.dump();
  EXPECT_EQ(enqueued["result"]["queueLength"], 1);

  auto first = client->wait_event(thread, "turn.complete", 1);
  EXPECT_EQ(first["payload"]["turnId"], turn);
  EXPECT_EQ(first["payload"]["stopReason"], "end");
  auto second = client->wait_event(thread, "turn.complete", 2);
  EXPECT_EQ(second["payload"]["stopReason"], "end");
  const std::string queued_turn = second["payload"].value("turnId", "");
  EXPECT_NE(queued_turn, turn);

  // The queued input became a turn of its own, started only after the first turn completed.
  const auto events = client->events(thread);
  EXPECT_LT(position(events, "turn.complete", turn), position(events, "turn.start", queued_turn));
  EXPECT_LT(position(events, "queue.updated"), position(events, "turn.complete", turn));
  // The model was asked three times: the first request, the steer's (in the same turn), the queued input's.
  std::vector<std::string> asked;
  for (const json& request : model().requests()) asked.push_back(last_user_text(request));
  ASSERT_EQ(asked.size(), 3u);
  EXPECT_EQ(asked[0], "[slow] a long task");
  EXPECT_EQ(asked[1], "[steer] mention the steer too");
  EXPECT_EQ(asked[2], "[queued] then this");
  // The steered request carried the first reply too: the steer continued the same conversation.
  EXPECT_NE(model().requests()[1]["body"].dump().find("step39"), std::string::npos);
  auto read = client->request("thread.read", {{"threadId", thread}});
  ASSERT_TRUE(read.contains("result")) << read.dump();
  size_t steered_nodes = 0;
  for (const json& node : read["result"]["nodes"]) steered_nodes += node["body"].value("steered", false);
  EXPECT_EQ(steered_nodes, 1u);
}

TEST_F(ServeStdioTest, InterruptEndsAHangingTurnWithStopReasonInterrupted) {
  start_model({{"responses", json::array({response(
                                 "[hang]", json::array({text_step("partial "), {{"type", "hang"}}}))})}});
  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);
  const std::string thread = create_thread(*client);
  const std::string turn = submit(*client, thread, "[hang] never finishes");
  ASSERT_FALSE(turn.empty());
  client->wait_event(thread, "item.delta");

  auto interrupted = client->request("turn.interrupt", {{"threadId", thread}});
  ASSERT_TRUE(interrupted.contains("result")) << interrupted.dump();
  EXPECT_EQ(interrupted["result"]["interrupted"], true);
  auto complete = client->wait_event(thread, "turn.complete");
  EXPECT_EQ(complete["payload"]["turnId"], turn);
  EXPECT_EQ(complete["payload"]["stopReason"], "interrupted");
  auto again = client->request("turn.interrupt", {{"threadId", thread}});
  EXPECT_EQ(again["result"]["interrupted"], false) << again.dump();
  EXPECT_TRUE(process->running());
}

TEST_F(ServeStdioTest, WriteFileAsksForApprovalAndAcceptingWritesTheFile) {
  const std::string content = "written through keel serve\n";
  start_model({{"responses",
                json::array({response("[write]",
                                      json::array({write_file_call("call_w", "notes/hello.txt", content)})),
                             response(std::nullopt, json::array({text_step("The note is written.")}))})}});
  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);
  const std::string thread = create_thread(*client);
  ASSERT_FALSE(submit(*client, thread, "[write] please write the note").empty());
  auto request = client->wait_event(thread, "approval.request");
  EXPECT_EQ(request["payload"]["tool"]["name"], "write_file");
  EXPECT_EQ(request["payload"]["arguments"]["path"], "notes/hello.txt");
  const auto target = workspace_ / "notes" / "hello.txt";
  EXPECT_FALSE(std::filesystem::exists(target)) << "written before the approval";

  auto accepted = client->command(
      "approval.response",
      {{"threadId", thread}, {"approvalId", request["payload"]["approvalId"]}, {"decision", "accept"}});
  ASSERT_TRUE(accepted.contains("result")) << accepted.dump();
  EXPECT_EQ(accepted["result"]["decision"], "accept");
  auto complete = client->wait_event(thread, "turn.complete");
  EXPECT_EQ(complete["payload"]["stopReason"], "end");
  std::ifstream written(target);
  std::stringstream text;
  text << written.rdbuf();
  EXPECT_EQ(text.str(), content);
  client->wait_event(thread, "approval.resolved");
}

TEST_F(ServeStdioTest, BadInputGetsCodedErrorsTheConnectionStaysUsableAndNothingChanges) {
  start_model({{"responses", json::array({response("[ok]", json::array({text_step("fine")}))})}});
  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);
  const std::string thread = create_thread(*client);
  const json before = client->request("thread.list")["result"];

  auto count_code = [](const std::vector<json>& all, const std::string& code) {
    size_t n = 0;
    for (const json& m : all) {
      if (m.is_object() && m.contains("error") && m["error"]["data"].value("code", "") == code) ++n;
    }
    return n;
  };
  auto expect_code = [&](const std::string& code, size_t n) {
    EXPECT_TRUE(client->wait_until([&](const auto& all) { return count_code(all, code) >= n; })) << code;
  };
  client->send_raw("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
  expect_code("rpc.parse_error", 1);
  client->send_raw(
      std::string("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"thread.list\",\"params\":{\"x\":\"") +
      "\xff\xfe" + "\"}}");
  expect_code("rpc.parse_error", 2);
  client->send_raw(R"({"jsonrpc":"1.0","id":3,"method":"thread.list"})");
  expect_code("rpc.invalid_request", 1);
  auto unknown = client->request("turn.explode", {{"threadId", thread}});
  EXPECT_EQ(unknown["error"]["code"], -32601) << unknown.dump();
  EXPECT_EQ(unknown["error"]["data"]["code"], "rpc.method_not_found");
  auto wrong_type = client->command("turn.submit", {{"threadId", 42}, {"input", "x"}});
  EXPECT_EQ(wrong_type["error"]["code"], -32602) << wrong_type.dump();
  auto wrong_input = client->command("turn.submit", {{"threadId", thread}, {"input", 7}});
  EXPECT_EQ(wrong_input["error"]["code"], -32602) << wrong_input.dump();
  auto no_submission = client->request("thread.create", {{"title", "x"}});
  EXPECT_EQ(no_submission["error"]["code"], -32602) << no_submission.dump();
  // A line over the 4 MiB bound is skipped to its end and answered; the next line is read as usual.
  client->send_raw(json{{"jsonrpc", "2.0"},
                        {"id", 9},
                        {"method", "thread.list"},
                        {"params", {{"pad", std::string((4u << 20) + 100, 'x')}}}}
                       .dump());
  expect_code("rpc.message_too_large", 1);

  EXPECT_EQ(client->request("thread.list")["result"], before);
  EXPECT_TRUE(process->running());
  ASSERT_FALSE(submit(*client, thread, "[ok] still there?").empty());
  EXPECT_EQ(client->wait_event(thread, "turn.complete")["payload"]["stopReason"], "end");
  EXPECT_EQ(model().requests().size(), 1u) << "bad input reached the model";
}

TEST_F(ServeStdioTest, StdoutCarriesOnlyJsonRpcEvenAtDebugLevelAndTheLogGoesToStderr) {
  start_model({{"responses", json::array({response("[log]", json::array({text_step("logged turn", 3)}))})}});
  auto [process, client] = serve_stdio({}, {"--log-level", "debug"});
  ASSERT_NE(client, nullptr);
  const std::string thread = create_thread(*client);
  ASSERT_FALSE(submit(*client, thread, "[log] go").empty());
  client->wait_event(thread, "turn.complete");
  client->send_raw("not json at all");
  client->disconnect();
  EXPECT_EQ(process->wait_exit(), 0) << process->err();
  ASSERT_TRUE(client->wait_closed());

  EXPECT_TRUE(client->unparsable().empty()) << client->unparsable().front();
  for (const json& message : client->received())
    EXPECT_EQ(message.value("jsonrpc", ""), "2.0") << message.dump();
  // The log was written, to stderr.
  EXPECT_NE(process->err().find("serving JSON-RPC on stdio"), std::string::npos) << process->err();
  EXPECT_NE(process->err().find("debug"), std::string::npos) << process->err();
}

TEST_F(ServeStdioTest, LogFileWithJsonHoldsOneJsonObjectPerLine) {
  start_model({{"responses", json::array({response("[log]", json::array({text_step("logged turn")}))})}});
  const auto log_file = dir_.path() / "keel.log";
  auto [process, client] =
      serve_stdio({}, {"--log-level", "debug", "--log-file", log_file.string(), "--log-json"});
  ASSERT_NE(client, nullptr);
  const std::string thread = create_thread(*client);
  ASSERT_FALSE(submit(*client, thread, "[log] go").empty());
  client->wait_event(thread, "turn.complete");
  client->disconnect();
  ASSERT_EQ(process->wait_exit(), 0) << process->err();

  std::ifstream log(log_file);
  std::string line;
  size_t lines = 0;
  bool serving = false;
  while (std::getline(log, line)) {
    ++lines;
    ASSERT_TRUE(json::accept(line)) << "not JSON: " << line;
    const json entry = json::parse(line);
    EXPECT_TRUE(entry.contains("ts") && entry["ts"].is_string()) << line;
    EXPECT_TRUE(entry.contains("level") && entry["level"].is_string()) << line;
    EXPECT_TRUE(entry.contains("msg") && entry["msg"].is_string()) << line;
    serving = serving || entry.value("msg", "").find("serving JSON-RPC on stdio") != std::string::npos;
  }
  EXPECT_GT(lines, 2u);
  EXPECT_TRUE(serving);
  EXPECT_TRUE(client->unparsable().empty());
  EXPECT_EQ(process->err().find("serving JSON-RPC"), std::string::npos) << "the log went to stderr too";
}

TEST_F(ServeStdioTest, EndOfInputEndsServeWithStatusZero) {
  start_model(unused_script());
  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->request("thread.list").contains("result"));
  client->disconnect();
  EXPECT_EQ(process->wait_exit(), 0) << process->err();
  EXPECT_TRUE(client->wait_closed());
}

}  // namespace
}  // namespace keel::e2e
