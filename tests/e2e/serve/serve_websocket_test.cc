// keel serve --listen through the binary: WebSocket clients on the port it reports drive submit, steer and
// an approval; a wrong token gets HTTP 401; two clients see the same ordered events and race to answer one
// approval; a client that stops reading during a long stream is coalesced or cut off while the others and
// the engine go on; SIGTERM ends the process with status 0.
#include <signal.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <fstream>
#include <future>
#include <sstream>

#include "serve_fixture.h"

namespace keel::e2e {
namespace {

namespace beast = boost::beast;
using boost::asio::ip::tcp;
using nlohmann::json;
using testing::RpcTestClient;
using testing::WsTestClient;

// The HTTP status of an upgrade attempt presenting `bearer` (none when empty) on `target`.
unsigned upgrade_status(uint16_t port, const std::string& bearer, const std::string& target) {
  boost::asio::io_context io;
  beast::websocket::stream<tcp::socket> ws(io);
  tcp::resolver resolver(io);
  boost::asio::connect(ws.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port)));
  ws.set_option(beast::websocket::stream_base::decorator([bearer](beast::websocket::request_type& r) {
    if (!bearer.empty()) r.set(beast::http::field::authorization, "Bearer " + bearer);
  }));
  beast::websocket::response_type answer;
  beast::error_code error;
  ws.handshake(answer, "127.0.0.1", target, error);
  return answer.result_int();
}

// A WebSocket client that reads nothing until resume(): its receive buffer is made small, so a long stream
// soon fills it and then the server's send buffer, and the server's session has to hold messages back.
class StalledWsClient final : public RpcTestClient {
 public:
  StalledWsClient(uint16_t port, const std::string& token) : work_(io_.get_executor()), ws_(io_) {
    tcp::socket& socket = ws_.next_layer();
    socket.open(tcp::v4());
    socket.set_option(
        boost::asio::socket_base::receive_buffer_size(4096));  // before connect: sets the window
    socket.connect(tcp::endpoint(boost::asio::ip::address_v4::loopback(), port));
    ws_.set_option(beast::websocket::stream_base::decorator([token](beast::websocket::request_type& r) {
      r.set(beast::http::field::authorization, "Bearer " + token);
    }));
    ws_.handshake("127.0.0.1:" + std::to_string(port), "/");
    ws_.read_message_max(256u << 20);
    ws_.text(true);
  }
  ~StalledWsClient() override {
    disconnect();
    work_.reset();
    if (!thread_.joinable()) io_.run();  // never resumed: run the close here
    if (thread_.joinable()) thread_.join();
  }

  // One request answered synchronously, before the stall: the session exists and watches every thread.
  json prime() {
    ws_.write(
        boost::asio::buffer(json{{"jsonrpc", "2.0"}, {"id", "prime"}, {"method", "thread.list"}}.dump()));
    while (true) {
      ws_.read(buffer_);
      const std::string text = beast::buffers_to_string(buffer_.data());
      buffer_.consume(buffer_.size());
      on_message(text);
      const json message = json::parse(text, nullptr, false);
      if (message.is_object() && message.value("id", json()) == "prime") return message;
    }
  }
  void resume() {
    read();
    thread_ = std::thread([this] { io_.run(); });
  }
  void send_raw(const std::string& text) override {
    std::promise<void> done;
    boost::asio::post(io_, [&] {
      beast::error_code ignored;
      ws_.write(boost::asio::buffer(text), ignored);
      done.set_value();
    });
    done.get_future().wait();
  }
  void disconnect() override {
    boost::asio::post(io_, [this] {
      beast::error_code ignored;
      ws_.next_layer().shutdown(tcp::socket::shutdown_both, ignored);
      ws_.next_layer().close(ignored);
    });
  }

 private:
  void read() {
    ws_.async_read(buffer_, [this](beast::error_code error, size_t) {
      if (error) {
        on_closed();
        return;
      }
      on_message(beast::buffers_to_string(buffer_.data()));
      buffer_.consume(buffer_.size());
      read();
    });
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  beast::websocket::stream<tcp::socket> ws_;
  beast::flat_buffer buffer_;
  std::thread thread_;
};

std::string streamed_text(const std::vector<json>& events) {
  std::string text;
  for (const json& e : events) {
    if (e["type"] == "item.delta") text += e["payload"].value("text", "");
  }
  return text;
}

using ServeWebSocketTest = ServeFixture;

TEST_F(ServeWebSocketTest, ClientDrivesSubmitSteerAndAnApproval) {
  std::string slow_reply;
  for (int i = 0; i < 40; ++i) slow_reply += "step" + std::to_string(i) + " ";
  const std::string content = "from the websocket client\n";
  start_model(
      {{"responses",
        json::array({response("[slow]", json::array({text_step(slow_reply, 8)}), 60),
                     response("[steer]", json::array({text_step("Steered.")})),
                     response("[write]", json::array({write_file_call("call_ws", "ws.txt", content)})),
                     response(std::nullopt, json::array({text_step("Written.")}))})}});
  auto [process, port] = serve_listen();
  ASSERT_NE(port, 0);
  WsTestClient& client = connect(port);
  auto init = client.request("initialize", {{"subscribe", true}});
  ASSERT_TRUE(init.contains("result")) << init.dump();
  const std::string thread = create_thread(client);

  const std::string turn = submit(client, thread, "[slow] stream for a while");
  ASSERT_FALSE(turn.empty());
  client.wait_event(thread, "item.delta");
  auto steered = client.command(
      "turn.steer", {{"threadId", thread}, {"expectedTurnId", turn}, {"input", "[steer] and this"}});
  ASSERT_TRUE(steered.contains("result")) << steered.dump();
  auto first = client.wait_event(thread, "turn.complete");
  EXPECT_EQ(first["payload"]["stopReason"], "end");
  auto requests = model().requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(last_user_text(requests[1]), "[steer] and this");

  ASSERT_FALSE(submit(client, thread, "[write] write it").empty());
  auto request = client.wait_event(thread, "approval.request");
  auto accepted = client.command(
      "approval.response",
      {{"threadId", thread}, {"approvalId", request["payload"]["approvalId"]}, {"decision", "accept"}});
  ASSERT_TRUE(accepted.contains("result")) << accepted.dump();
  EXPECT_EQ(client.wait_event(thread, "turn.complete", 2)["payload"]["stopReason"], "end");
  std::ifstream written(workspace_ / "ws.txt");
  std::stringstream text;
  text << written.rdbuf();
  EXPECT_EQ(text.str(), content);
}

TEST_F(ServeWebSocketTest, WrongOrMissingTokenGetsHttp401AndTheServerGoesOn) {
  start_model(unused_script());
  auto [process, port] = serve_listen();
  ASSERT_NE(port, 0);
  EXPECT_EQ(upgrade_status(port, "not-the-token-at-all", "/"), 401u);
  EXPECT_EQ(upgrade_status(port, "", "/"), 401u);
  EXPECT_EQ(upgrade_status(port, "", "/?token=not-the-token"), 401u);
  EXPECT_EQ(upgrade_status(port, kToken, "/"), 101u);
  EXPECT_TRUE(process->running());
  WsTestClient& client = connect(port);
  EXPECT_TRUE(client.request("thread.list").contains("result"));
}

// Issue 15, point 3, through the binary: --listen on a non-loopback address is refused unless --allow-remote
// says so, and then keel warns that plain ws:// exposes the token.
TEST_F(ServeWebSocketTest, NonLoopbackListenIsRefusedWithoutAllowRemote) {
  start_model(unused_script());
  ServeProcess& refused = spawn({"--listen", "0.0.0.0:0", "--no-token"});
  EXPECT_EQ(refused.wait_exit(), 2);
  EXPECT_NE(refused.err().find("rpc.listen_not_loopback"), std::string::npos) << refused.err();
  ServeProcess& opened = spawn({"--listen", "0.0.0.0:0", "--allow-remote"});
  EXPECT_TRUE(opened.wait_stderr("warning: listening on a non-loopback address over plain ws://"))
      << opened.err();
  EXPECT_TRUE(opened.running());
}

TEST_F(ServeWebSocketTest, BadMessagesGetCodedErrorsAndTheConnectionStaysUsable) {
  start_model({{"responses", json::array({response("[ok]", json::array({text_step("fine")}))})}});
  auto [process, port] = serve_listen();
  ASSERT_NE(port, 0);
  WsTestClient& client = connect(port);
  const std::string thread = create_thread(client);
  const json before = client.request("thread.list")["result"];
  auto answered_with = [&](const std::string& code) {
    return client.wait_until([&](const std::vector<json>& all) {
      for (const json& m : all) {
        if (m.is_object() && m.contains("error") && m["error"]["data"].value("code", "") == code) return true;
      }
      return false;
    });
  };
  client.send_raw("[{\"jsonrpc\": ");
  EXPECT_TRUE(answered_with("rpc.parse_error"));
  EXPECT_EQ(client.request("thread.forget", {})["error"]["code"], -32601);
  EXPECT_EQ(
      client.command("turn.steer",
                     {{"threadId", thread}, {"expectedTurnId", false}, {"input", "x"}})["error"]["code"],
      -32602);
  // Over the 4 MiB bound but under four times it: answered, and the connection stays open.
  client.send_raw(json{{"jsonrpc", "2.0"},
                       {"id", 9},
                       {"method", "thread.list"},
                       {"params", {{"pad", std::string((4u << 20) + 100, 'x')}}}}
                      .dump());
  EXPECT_TRUE(answered_with("rpc.message_too_large"));

  EXPECT_EQ(client.request("thread.list")["result"], before);
  ASSERT_FALSE(submit(client, thread, "[ok] and now?").empty());
  EXPECT_EQ(client.wait_event(thread, "turn.complete")["payload"]["stopReason"], "end");
  EXPECT_TRUE(process->running());
}

TEST_F(ServeWebSocketTest, TwoClientsSeeTheSameOrderedEventsOfOneThread) {
  start_model({{"responses",
                json::array({response("[one]", json::array({text_step("first reply, streamed", 4)})),
                             response("[two]", json::array({text_step("second reply, streamed", 4)}))})}});
  auto [process, port] = serve_listen();
  ASSERT_NE(port, 0);
  WsTestClient& a = connect(port);
  WsTestClient& b = connect(port);
  ASSERT_TRUE(a.request("initialize", {{"subscribe", true}}).contains("result"));
  ASSERT_TRUE(b.request("initialize", {{"subscribe", true}}).contains("result"));
  const std::string thread = create_thread(a);
  ASSERT_FALSE(submit(b, thread, "[one] go").empty());
  a.wait_event(thread, "turn.complete");
  b.wait_event(thread, "turn.complete");
  ASSERT_FALSE(submit(a, thread, "[two] again").empty());
  a.wait_event(thread, "turn.complete", 2);
  b.wait_event(thread, "turn.complete", 2);

  const auto seen_by_a = a.events(thread);
  ASSERT_FALSE(seen_by_a.empty());
  EXPECT_EQ(seen_by_a, b.events(thread));
  EXPECT_EQ(streamed_text(seen_by_a), "first reply, streamedsecond reply, streamed");
}

TEST_F(ServeWebSocketTest, TwoClientsAnsweringOneApprovalOnlyOneSettlesIt) {
  start_model(
      {{"responses",
        json::array({response("[write]", json::array({write_file_call("call_2", "once.txt", "once\n")})),
                     response(std::nullopt, json::array({text_step("Done.")}))})}});
  auto [process, port] = serve_listen();
  ASSERT_NE(port, 0);
  WsTestClient& a = connect(port);
  WsTestClient& b = connect(port);
  ASSERT_TRUE(b.request("thread.list").contains("result"));  // b's session watches before the turn starts
  const std::string thread = create_thread(a);
  ASSERT_FALSE(submit(a, thread, "[write] write once").empty());
  auto request_a = a.wait_event(thread, "approval.request");
  auto request_b = b.wait_event(thread, "approval.request");
  const json approval = request_a["payload"]["approvalId"];
  EXPECT_EQ(request_b["payload"]["approvalId"], approval);

  json answer = {{"threadId", thread}, {"approvalId", approval}, {"decision", "accept"}};
  json from_a = answer;
  from_a["submissionId"] = "a-accept";
  json from_b = answer;
  from_b["submissionId"] = "b-accept";
  a.send({{"jsonrpc", "2.0"}, {"id", 100}, {"method", "approval.response"}, {"params", from_a}});
  b.send({{"jsonrpc", "2.0"}, {"id", 200}, {"method", "approval.response"}, {"params", from_b}});
  const json answer_a = a.wait_response(100);
  const json answer_b = b.wait_response(200);
  int settled = 0;
  for (const json& got : {answer_a, answer_b}) {
    if (got.contains("result") && !got["result"].value("alreadySettled", false)) {
      ++settled;
    } else if (got.contains("result")) {
      EXPECT_EQ(got["result"]["alreadySettled"], true);
    } else {
      EXPECT_TRUE(got["error"]["data"]["code"].is_string()) << got.dump();
    }
  }
  EXPECT_EQ(settled, 1) << answer_a.dump() << "\n" << answer_b.dump();
  EXPECT_EQ(a.wait_event(thread, "turn.complete")["payload"]["stopReason"], "end");
  b.wait_event(thread, "turn.complete");
  EXPECT_EQ(a.events(thread), b.events(thread));

  // One decision, one execution, one result on the thread.
  auto read = a.request("thread.read", {{"threadId", thread}});
  ASSERT_TRUE(read.contains("result")) << read.dump();
  size_t decisions = 0;
  size_t results = 0;
  for (const json& node : read["result"]["nodes"]) {
    decisions += node["kind"] == "approval_decision";
    results += node["kind"] == "tool_result";
  }
  EXPECT_EQ(decisions, 1u);
  EXPECT_EQ(results, 1u);
  EXPECT_EQ(model().requests().size(), 2u);
  // A late third answer changes nothing either.
  auto late = b.command("approval.response", answer);
  ASSERT_TRUE(late.contains("result") || late.contains("error")) << late.dump();
  if (late.contains("result")) {
    EXPECT_EQ(late["result"]["alreadySettled"], true) << late.dump();
  }
  EXPECT_EQ(a.request("thread.read", {{"threadId", thread}})["result"]["nodes"], read["result"]["nodes"]);
}

TEST_F(ServeWebSocketTest, ClientThatStopsReadingIsCoalescedOrCutOffWhileTheOthersGoOn) {
  // About 20,000 text deltas: far more than the stalled client's socket and the session's queue hold.
  std::string long_reply;
  for (int i = 0; long_reply.size() < 160'000; ++i) long_reply += "w" + std::to_string(i) + " ";
  start_model({{"responses", json::array({response("[long]", json::array({text_step(long_reply, 8)})),
                                          response("[after]", json::array({text_step("still here")}))})}});
  auto [process, port] = serve_listen();
  ASSERT_NE(port, 0);
  auto& stalled = adopt(std::make_unique<StalledWsClient>(port, kToken));
  ASSERT_TRUE(stalled.prime().contains("result"));
  WsTestClient& reader = connect(port);
  const std::string thread = create_thread(reader);
  ASSERT_FALSE(submit(reader, thread, "[long] talk a lot").empty());
  auto complete = reader.wait_event(thread, "turn.complete");
  EXPECT_EQ(complete["payload"]["stopReason"], "end");
  EXPECT_EQ(streamed_text(reader.events(thread)), long_reply);

  // The stalled client reads again: what it gets is either the whole turn with deltas merged (no text lost,
  // turn.complete there) or the disconnect notice.
  stalled.resume();
  auto finished = [&](const std::vector<json>& all) {
    for (const json& m : all) {
      if (m.value("method", "") == "disconnect") return true;
      if (m.value("method", "") == "event" && m["params"]["type"] == "turn.complete") return true;
    }
    return false;
  };
  const bool ended = stalled.wait_until(finished, std::chrono::seconds(60));
  json disconnect;
  for (const json& m : stalled.received()) {
    if (m.value("method", "") == "disconnect") disconnect = m;
  }
  if (!disconnect.is_null()) {
    EXPECT_EQ(disconnect["params"]["code"], "rpc.client_too_slow") << disconnect.dump();
    EXPECT_TRUE(stalled.wait_closed()) << "the server kept the connection of a client it gave up on";
    std::cout << "[ stalled  ] disconnected: " << disconnect.dump() << "\n";
  } else {
    ASSERT_TRUE(ended) << "the stalled client got neither the end of the turn nor a disconnect notice";
    const auto events = stalled.events(thread);
    size_t deltas = 0;
    size_t coalesced = 0;
    for (const json& e : events) {
      if (e["type"] != "item.delta") continue;
      ++deltas;
      coalesced += e["payload"].value("coalesced", false);
    }
    EXPECT_GT(coalesced, 0u) << "no delta was merged: the stall did not hold anything back";
    EXPECT_EQ(streamed_text(events), long_reply) << "text was lost in merging";
    EXPECT_EQ(events.back()["type"], "turn.complete");
    std::cout << "[ stalled  ] " << deltas << " deltas (" << coalesced << " coalesced) against "
              << streamed_text(reader.events(thread)).size() / 8 << "+ sent to the reading client\n";
  }
  // The engine and the other client go on.
  ASSERT_FALSE(submit(reader, thread, "[after] more").empty());
  EXPECT_EQ(reader.wait_event(thread, "turn.complete", 2)["payload"]["stopReason"], "end");
  EXPECT_TRUE(process->running());
}

TEST_F(ServeWebSocketTest, SigtermEndsListeningServeWithStatusZeroEvenMidTurn) {
  start_model({{"responses",
                json::array({response("[hang]", json::array({text_step("partial "), {{"type", "hang"}}})),
                             response("[after]", json::array({text_step("back")}))})}});
  auto [process, port] = serve_listen();
  ASSERT_NE(port, 0);
  WsTestClient& client = connect(port);
  const std::string thread = create_thread(client);
  ASSERT_FALSE(submit(client, thread, "[hang] wait").empty());
  client.wait_event(thread, "item.delta");
  process->signal(SIGTERM);
  EXPECT_EQ(process->wait_exit(std::chrono::seconds(20)), 0) << process->err();
  EXPECT_TRUE(client.wait_closed());
  // The running turn was ended on the way out: after a restart it is an interrupted run, not a running one.
  auto [restarted, new_port] = serve_listen();
  ASSERT_NE(new_port, 0);
  WsTestClient& again = connect(new_port);
  auto init = again.request("initialize", {{"subscribe", true}});
  ASSERT_TRUE(init.contains("result")) << init.dump();
  ASSERT_EQ(init["result"]["unfinished"].size(), 1u) << init.dump();
  EXPECT_EQ(init["result"]["unfinished"][0]["state"], "interrupted");
  EXPECT_EQ(init["result"]["unfinished"][0]["canContinue"], true);
  EXPECT_EQ(model().requests().size(), 1u) << "the interrupted turn was taken up again by itself";
}

}  // namespace
}  // namespace keel::e2e
