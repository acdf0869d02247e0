// CdpClient over an in-memory transport: ids, sessions, errors, timeouts, cancellation, session and
// connection ends, event order, and messages that are not clean JSON.
#include "browser/cdp/cdp_client.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "browser/browser_errors.h"
#include "browser/cdp/fake_cdp_transport.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using testing::FakeCdpTransport;
using testing::FakeWire;

using Outcome = std::shared_ptr<std::optional<Result<json>>>;

class CdpClientTest : public ::testing::Test {
 protected:
  CdpClientTest() {
    client_ = CdpClient::create(io_.get_executor(), std::make_unique<FakeCdpTransport>(wire_));
    client_->start();
  }

  // Starts a call and runs until it has been sent (or completed).
  Outcome start_call(std::string method, std::string session = "", CallOptions options = {}) {
    auto outcome = std::make_shared<std::optional<Result<json>>>();
    json params = json::object();
    asio::co_spawn(
        io_, client_->call(std::move(method), std::move(params), std::move(session), std::move(options)),
        [outcome](const std::exception_ptr& error, Result<json> result) {
          if (error) std::rethrow_exception(error);
          *outcome = std::move(result);
        });
    poll();
    return outcome;
  }

  json sent(size_t index) const { return json::parse(wire_->sent.at(index)); }

  void reply(int64_t id, const json& result) {
    wire_->deliver(json{{"id", id}, {"result", result}}.dump());
    poll();
  }

  // Runs what is ready. restart(): an io_context that ran out of work stays stopped until restarted.
  void poll() {
    io_.restart();
    io_.poll();
  }

  asio::io_context io_;
  std::shared_ptr<FakeWire> wire_ = std::make_shared<FakeWire>();
  std::shared_ptr<CdpClient> client_;
};

TEST_F(CdpClientTest, RepliesAreMatchedToTheirCallsByIdInAnyOrder) {
  Outcome first = start_call("A.one");
  Outcome second = start_call("B.two");
  ASSERT_EQ(wire_->sent.size(), 2u);
  const int64_t first_id = sent(0)["id"];
  const int64_t second_id = sent(1)["id"];
  EXPECT_NE(first_id, second_id);
  EXPECT_EQ(sent(0)["method"], "A.one");
  EXPECT_FALSE(sent(0).contains("sessionId"));
  EXPECT_EQ(client_->stats().in_flight, 2u);

  reply(second_id, {{"which", "second"}});
  ASSERT_TRUE(second->has_value());
  EXPECT_FALSE(first->has_value());
  reply(first_id, {{"which", "first"}});
  ASSERT_TRUE(first->has_value() && **first);
  EXPECT_EQ((***first)["which"], "first");
  EXPECT_EQ((***second)["which"], "second");
  EXPECT_EQ(client_->stats().in_flight, 0u);
}

TEST_F(CdpClientTest, ACallOnASessionCarriesItsSessionId) {
  Outcome outcome = start_call("Page.enable", "S1");
  EXPECT_EQ(sent(0)["sessionId"], "S1");
  EXPECT_TRUE(sent(0)["params"].is_object());
  reply(sent(0)["id"], json::object());
  ASSERT_TRUE(outcome->has_value() && **outcome);
}

TEST_F(CdpClientTest, AnErrorReplyBecomesCdpErrorWithTheBrowsersMessage) {
  Outcome outcome = start_call("Nope.nothing");
  wire_->deliver(
      json{{"id", sent(0)["id"]}, {"error", {{"code", -32601}, {"message", "'Nope.nothing' wasn't found"}}}}
          .dump());
  poll();
  ASSERT_TRUE(outcome->has_value());
  ASSERT_FALSE(**outcome);
  EXPECT_EQ((*outcome)->error().code(), codes::kBrowserCdpError);
  EXPECT_NE((*outcome)->error().message().find("wasn't found"), std::string::npos);
  EXPECT_NE((*outcome)->error().message().find("-32601"), std::string::npos);
}

TEST_F(CdpClientTest, NoReplyWithinTheTimeoutIsCdpTimeoutAndTheLateReplyIsDropped) {
  CallOptions options;
  options.timeout = std::chrono::milliseconds(1);
  Outcome outcome = start_call("Page.navigate", "S1", std::move(options));
  io_.run();  // only the call's timer is left to wait for
  ASSERT_TRUE(outcome->has_value());
  ASSERT_FALSE(**outcome);
  EXPECT_EQ((*outcome)->error().code(), codes::kBrowserCdpTimeout);
  EXPECT_NE((*outcome)->error().message().find("Page.navigate"), std::string::npos);
  io_.restart();
  reply(sent(0)["id"], json::object());  // nothing is waiting for it any more
  EXPECT_EQ(client_->stats().in_flight, 0u);
}

TEST_F(CdpClientTest, CancellingBeforeTheReplyCompletesTheCallCancelled) {
  CancellationSource source;
  CallOptions options;
  options.cancel = source.token();
  Outcome outcome = start_call("Runtime.evaluate", "S1", std::move(options));
  source.cancel();
  poll();
  ASSERT_TRUE(outcome->has_value());
  ASSERT_FALSE(**outcome);
  EXPECT_EQ((*outcome)->error().code(), codes::kCancelled);
  reply(sent(0)["id"], json::object());
  EXPECT_EQ(client_->stats().in_flight, 0u);
}

TEST_F(CdpClientTest, CancellingAfterTheReplyKeepsTheResult) {
  CancellationSource source;
  CallOptions options;
  options.cancel = source.token();
  Outcome outcome = start_call("Runtime.evaluate", "S1", std::move(options));
  reply(sent(0)["id"], {{"ok", true}});
  source.cancel();
  poll();
  ASSERT_TRUE(outcome->has_value() && **outcome);
  EXPECT_EQ((***outcome)["ok"], true);
}

TEST_F(CdpClientTest, AnAlreadyCancelledTokenCancelsTheCall) {
  CancellationSource source;
  source.cancel();
  CallOptions options;
  options.cancel = source.token();
  Outcome outcome = start_call("Page.enable", "", std::move(options));
  poll();
  ASSERT_TRUE(outcome->has_value());
  ASSERT_FALSE(**outcome);
  EXPECT_EQ((*outcome)->error().code(), codes::kCancelled);
}

TEST_F(CdpClientTest, EndSessionFailsOnlyThatSessionsCalls) {
  Outcome on_s1 = start_call("Page.enable", "S1");
  Outcome on_s2 = start_call("Page.enable", "S2");
  client_->end_session("S1", Error(codes::kBrowserTargetClosed, "tab closed"));
  poll();
  ASSERT_TRUE(on_s1->has_value());
  EXPECT_EQ((*on_s1)->error().code(), codes::kBrowserTargetClosed);
  EXPECT_FALSE(on_s2->has_value());
  reply(sent(1)["id"], json::object());
  ASSERT_TRUE(on_s2->has_value() && **on_s2);
}

TEST_F(CdpClientTest, DetachedFromTargetEndsThatSessionAfterTheListenersSawIt) {
  Outcome outcome = start_call("Runtime.evaluate", "S9");
  bool pending_when_seen = false;
  auto subscription = client_->listen([&](const CdpEvent& event) {
    if (event.method == "Target.detachedFromTarget") pending_when_seen = client_->stats().in_flight == 1;
  });
  wire_->deliver(R"({"method":"Target.detachedFromTarget","params":{"sessionId":"S9","targetId":"T"}})");
  poll();
  EXPECT_TRUE(pending_when_seen);
  ASSERT_TRUE(outcome->has_value());
  EXPECT_EQ((*outcome)->error().code(), codes::kBrowserTargetClosed);
}

TEST_F(CdpClientTest, TheConnectionEndingFailsEveryPendingCallAndLaterOnes) {
  Outcome first = start_call("A.a", "S1");
  Outcome second = start_call("B.b");
  Error seen("", "");
  auto subscription = client_->on_close([&](const Error& why) { seen = why; });
  wire_->end(Error(codes::kBrowserDisconnected, "the browser closed its end of the CDP pipe"));
  poll();
  for (const Outcome& outcome : {first, second}) {
    ASSERT_TRUE(outcome->has_value());
    EXPECT_EQ((*outcome)->error().code(), codes::kBrowserDisconnected);
  }
  EXPECT_EQ(seen.code(), codes::kBrowserDisconnected);
  EXPECT_TRUE(client_->closed());
  Outcome later = start_call("C.c");
  ASSERT_TRUE(later->has_value());
  EXPECT_EQ((*later)->error().code(), codes::kBrowserDisconnected);
  EXPECT_EQ(wire_->sent.size(), 2u);
}

TEST_F(CdpClientTest, EventsReachListenersInOrderAndAListenerMayUnsubscribeItself) {
  std::vector<std::string> first_seen;
  std::vector<std::string> second_seen;
  CdpClient::Subscription first;
  first = client_->listen([&](const CdpEvent& event) {
    first_seen.push_back(event.method + "@" + event.session_id);
    if (event.method == "E.two") first.reset();
  });
  auto second = client_->listen([&](const CdpEvent& event) { second_seen.push_back(event.method); });
  wire_->deliver(R"({"method":"E.one","params":{}})");
  wire_->deliver(R"({"method":"E.two","params":{},"sessionId":"S1"})");
  wire_->deliver(R"({"method":"E.three"})");
  EXPECT_EQ(first_seen, (std::vector<std::string>{"E.one@", "E.two@S1"}));
  EXPECT_EQ(second_seen, (std::vector<std::string>{"E.one", "E.two", "E.three"}));
}

TEST_F(CdpClientTest, AReplyWithALoneSurrogateIsRepairedNotLost) {
  Outcome outcome = start_call("Runtime.evaluate", "S1");
  const std::string id = std::to_string(sent(0)["id"].get<int64_t>());
  wire_->deliver(R"({"id":)" + id + R"(,"result":{"result":{"type":"string","value":"a\ud800b"}}})");
  poll();
  ASSERT_TRUE(outcome->has_value() && **outcome);
  EXPECT_EQ((***outcome)["result"]["value"],
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(client_->stats().repaired, 1u);
}

TEST_F(CdpClientTest, MessagesThatAreNotCdpAreCountedAndIgnored) {
  std::vector<std::string> seen;
  auto subscription = client_->listen([&](const CdpEvent& event) { seen.push_back(event.method); });
  for (const char* garbage : {"", "not json", "[1,2]", R"({"id":"x"})", R"({"no":"method"})",
                              "{\"a\":\"\xff\"}", R"({"method":17})", R"({"id":99999,"result":{}})"}) {
    wire_->deliver(garbage);
  }
  wire_->deliver(R"({"method":"Still.alive","params":{}})");
  EXPECT_EQ(seen, std::vector<std::string>{"Still.alive"});
  EXPECT_EQ(client_->stats().unparseable, 6u);
  EXPECT_FALSE(client_->closed());
}

TEST_F(CdpClientTest, InvalidUtf8InParamsIsSentReplacedInsteadOfThrowing) {
  auto outcome = std::make_shared<std::optional<Result<json>>>();
  json params = {{"text", "bad \xff byte"}};
  CallOptions options;
  asio::co_spawn(io_, client_->call("Input.insertText", std::move(params), "S1", std::move(options)),
                 [outcome](const std::exception_ptr& error, Result<json> result) {
                   if (error) std::rethrow_exception(error);
                   *outcome = std::move(result);
                 });
  poll();
  ASSERT_EQ(wire_->sent.size(), 1u);
  EXPECT_EQ(sent(0)["params"]["text"], "bad \xEF\xBF\xBD byte");
}

TEST_F(CdpClientTest, NotifySendsACommandWhoseReplyIsDropped) {
  json params = {{"a", 1}};
  client_->notify("Runtime.runIfWaitingForDebugger", std::move(params), "S1");
  ASSERT_EQ(wire_->sent.size(), 1u);
  EXPECT_EQ(sent(0)["sessionId"], "S1");
  reply(sent(0)["id"], json::object());
  EXPECT_EQ(client_->stats().in_flight, 0u);
  EXPECT_EQ(client_->stats().unparseable, 0u);
}

}  // namespace
}  // namespace keel::browser
