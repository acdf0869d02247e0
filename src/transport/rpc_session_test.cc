// RpcSession on a whole engine, without I/O: routing of answers, subscriptions, and backpressure (a slow
// client's deltas coalesced with every turn.complete kept; a client that cannot keep up disconnected while
// the engine keeps running).
#include "transport/rpc_session.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "engine/engine_harness.h"
#include "keel/provider.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::ScriptedResponse;

std::vector<json> parse_all(const RpcSession::Outgoing& out) {
  std::vector<json> messages;
  for (const std::string& text : out.messages) messages.push_back(json::parse(text));
  return messages;
}

// A reply streamed as `parts` text deltas "p0 p1 ...".
ScriptedResponse chunked_reply(int parts) {
  ScriptedResponse response;
  for (int i = 0; i < parts; ++i) response.add(provider_event::TextDelta{"p" + std::to_string(i) + " "});
  response.add(provider_event::Finish{StopReason::kEnd, "stop"});
  return response;
}

std::string chunked_text(int parts) {
  std::string text;
  for (int i = 0; i < parts; ++i) text += "p" + std::to_string(i) + " ";
  return text;
}

// An engine transport whose send() throws, standing for any bug below the session.
class ThrowingTransport final : public EngineTransport {
 public:
  void send(Op) override { throw std::runtime_error("boom"); }
  std::unique_ptr<EventSubscription> on_event(std::function<void(const AgentEvent&)>) override {
    struct None final : EventSubscription {
      void cancel() override {}
    };
    return std::make_unique<None>();
  }
};

// Issue 14, point 2: nothing a message makes throw may end the process (over WebSocket that was every
// client's session); it is answered with an internal error and the session goes on.
TEST(RpcSessionBoundaryTest, ExceptionBelowTheSessionIsAnsweredAndTheSessionGoesOn) {
  ThrowingTransport transport;
  RpcSession session(transport, {}, nullptr);
  for (int i = 0; i < 2; ++i) {
    session.receive(R"({"jsonrpc":"2.0","id":1,"method":"thread.list"})");
    auto out = parse_all(session.take(false));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0]["error"]["code"], rpc::kInternalError) << out[0].dump();
    EXPECT_EQ(out[0]["error"]["data"]["code"], "internal");
    EXPECT_FALSE(session.closed());
  }
}

class RpcSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h.start();
    thread = h.create_thread();
  }
  std::unique_ptr<RpcSession> open(OutboundQueueOptions queue = {}) {
    RpcSessionOptions options;
    options.connection_id = "c" + std::to_string(++sessions);
    options.queue = queue;
    return std::make_unique<RpcSession>(*h.transport, options, nullptr);
  }
  // Takes from the session until `pred` holds over everything taken so far.
  std::vector<json> take_until(RpcSession& session,
                               const std::function<bool(const std::vector<json>&)>& pred) {
    std::vector<json> all;
    for (int i = 0; i < 3000 && !pred(all); ++i) {
      auto out = parse_all(session.take(false));
      all.insert(all.end(), out.begin(), out.end());
      if (!pred(all)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(pred(all)) << "the session never sent what the test waits for";
    return all;
  }
  static bool has_response(const std::vector<json>& all, const json& id) {
    for (const json& m : all) {
      if (m.is_object() && m.contains("id") && m["id"] == id) return true;
    }
    return false;
  }

  EngineHarness h;
  std::string thread;
  int sessions = 0;
};

TEST_F(RpcSessionTest, RoutesItsOwnAnswersAndNotOtherClients) {
  auto mine = open();
  auto other = open();
  mine->receive(R"({"jsonrpc":"2.0","id":1,"method":"thread.list"})");
  auto all = take_until(*mine, [](const auto& a) { return has_response(a, 1); });
  EXPECT_TRUE(all.back().contains("result") || has_response(all, 1));
  // The other session sees no response for a request it did not make.
  for (const json& m : parse_all(other->take(false))) EXPECT_FALSE(m.contains("id")) << m.dump();
}

TEST_F(RpcSessionTest, SubscriptionLimitsEventsToNamedThreads) {
  auto session = open();
  const std::string other_thread = h.create_thread();
  session->receive(json{
      {"jsonrpc", "2.0"}, {"id", 1}, {"method", "session.subscribe"}, {"params", {{"threadIds", {thread}}}}}
                       .dump());
  take_until(*session, [](const auto& a) { return has_response(a, 1); });
  h.provider.push(ScriptedResponse::text("one"));
  h.provider.push(ScriptedResponse::text("two"));
  h.run_turn(other_thread, "hi");
  h.run_turn(thread, "hi");
  auto all = take_until(*session, [&](const auto& a) {
    for (const json& m : a) {
      if (m.value("method", "") == "event" && m["params"]["type"] == "turn.complete") return true;
    }
    return false;
  });
  for (const json& m : all) {
    if (m.value("method", "") == "event") {
      EXPECT_EQ(m["params"]["threadId"], thread) << m.dump();
    }
  }
}

TEST_F(RpcSessionTest, SlowClientGetsCoalescedDeltasAndEveryTurnComplete) {
  auto session = open({.capacity = 1024, .coalesce_after = 4});
  constexpr int kTurns = 3;
  constexpr int kParts = 200;
  for (int i = 0; i < kTurns; ++i) {
    h.provider.push(chunked_reply(kParts));
    h.run_turn(thread, "go");  // the session takes nothing meanwhile: a client that does not read
  }
  auto all = take_until(*session, [&](const auto& a) {
    size_t n = 0;
    for (const json& m : a) n += m.value("method", "") == "event" && m["params"]["type"] == "turn.complete";
    return n == kTurns;
  });
  EXPECT_GT(session->coalesced(), 0u);
  std::map<std::string, std::string> text_by_item;
  uint64_t last_seq = 0;
  for (const json& m : all) {
    ASSERT_EQ(m.value("method", ""), "event") << m.dump();
    const json& event = m["params"];
    EXPECT_GT(event["seq"].get<uint64_t>(), last_seq);  // coalescing keeps seq order
    last_seq = event["seq"].get<uint64_t>();
    if (event["type"] == "item.delta")
      text_by_item[event["payload"]["itemId"]] += event["payload"].value("text", "");
  }
  // Nothing of the text is lost in the merge.
  ASSERT_EQ(text_by_item.size(), static_cast<size_t>(kTurns));
  for (const auto& [item, text] : text_by_item) EXPECT_EQ(text, chunked_text(kParts)) << item;
}

TEST_F(RpcSessionTest, ClientThatCannotKeepUpIsDisconnectedAndTheEngineKeepsRunning) {
  auto session = open({.capacity = 4, .coalesce_after = 2});
  for (int i = 0; i < 3; ++i) {
    h.provider.push(ScriptedResponse::text("reply"));
    h.run_turn(thread, "go");
  }
  // The session gets events on its own delivery thread, after the log the harness waits on: wait for the
  // overflow to reach it (polled like take_until, bounded), then read what it sends last.
  for (int i = 0; i < 3000 && !session->closed(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(session->closed());
  std::vector<json> messages;
  bool closed = false;
  for (int i = 0; i < 3000 && !closed; ++i) {
    RpcSession::Outgoing out = session->take(false);
    closed = out.closed;
    for (json& m : parse_all(out)) messages.push_back(std::move(m));
    if (!closed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(closed);
  ASSERT_FALSE(messages.empty());
  EXPECT_EQ(messages.back()["method"], "disconnect");
  EXPECT_EQ(messages.back()["params"]["code"], "rpc.client_too_slow");
  // Later input is ignored; the engine runs on for everyone else.
  session->receive(R"({"jsonrpc":"2.0","id":1,"method":"thread.list"})");
  h.provider.push(ScriptedResponse::text("still here"));
  EXPECT_EQ(h.run_turn(thread, "again").payload["stopReason"], "end");
}

TEST_F(RpcSessionTest, NotificationGetsNoResponseButItsOpRuns) {
  auto session = open();
  session->receive(json{{"jsonrpc", "2.0"},
                        {"method", "thread.create"},
                        {"params", {{"submissionId", "n-1"}, {"title", "quiet"}}}}
                       .dump());
  ASSERT_TRUE(h.log.wait_until([](const auto& events) {
    for (const auto& e : events) {
      if (e.type == "command.ack" && e.payload.value("submissionId", "") == "n-1") return true;
    }
    return false;
  }));
  session->receive(R"({"jsonrpc":"2.0","id":2,"method":"thread.list"})");
  auto all = take_until(*session, [](const auto& a) { return has_response(a, 2); });
  for (const json& m : all) {
    if (m.contains("id")) {
      EXPECT_EQ(m["id"], 2) << m.dump();
    }
  }
}

}  // namespace
}  // namespace keel
