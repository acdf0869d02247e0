// BrowserConnection and call_script over an in-memory CDP wire: session setup before resume, tabs from page
// targets, crash and exit as coded errors, and the page-script call's shape, errors and timeout.
#include "browser/browser_connection.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <map>
#include <optional>
#include <set>

#include "browser/browser_errors.h"
#include "browser/call_script.h"
#include "browser/cdp/fake_cdp_transport.h"
#include "browser/page_scripts.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

class BrowserConnectionTest : public ::testing::Test {
 protected:
  BrowserConnectionTest() {
    client_ = CdpClient::create(io_.get_executor(), std::make_unique<testing::FakeCdpTransport>(wire_));
    client_->start();
  }

  // Runs `work` until it completes, answering every command on the way (see answer()).
  template <typename T>
  T run(asio::awaitable<T> work) {
    std::optional<T> outcome;
    asio::co_spawn(io_, std::move(work), [&outcome](const std::exception_ptr& thrown, T value) {
      if (thrown) std::rethrow_exception(thrown);
      outcome = std::move(value);
    });
    pump_until([&] { return outcome.has_value(); });
    EXPECT_TRUE(outcome.has_value()) << "the work did not complete";
    if (!outcome) return T{};
    return std::move(*outcome);
  }

  // Starts `work` and returns the slot its outcome lands in.
  template <typename T>
  std::shared_ptr<std::optional<T>> spawn(asio::awaitable<T> work) {
    auto outcome = std::make_shared<std::optional<T>>();
    asio::co_spawn(io_, std::move(work), [outcome](const std::exception_ptr& thrown, T value) {
      if (thrown) std::rethrow_exception(thrown);
      *outcome = std::move(value);
    });
    pump();
    return outcome;
  }

  // Processes everything ready and answers the commands sent meanwhile, until nothing moves.
  void pump() {
    for (;;) {
      io_.restart();  // poll() leaves the context stopped whenever it ran out of work
      const size_t handlers = io_.poll();
      const bool answered = answer_new_commands();
      if (handlers == 0 && !answered) return;
    }
  }

  // Like pump(), and when nothing is ready waits (up to 10 s per step) for a timer, until `done`.
  template <typename Done>
  void pump_until(Done done) {
    pump();
    while (!done()) {
      io_.restart();
      if (io_.run_one_for(std::chrono::seconds(10)) == 0) return;
      pump();
    }
  }

  bool answer_new_commands() {
    bool any = false;
    while (answered_ < wire_->sent.size()) {
      json command = json::parse(wire_->sent[answered_++]);
      any = true;
      commands_.push_back(command);
      const std::string method = command.value("method", "");
      if (held_.contains(method)) continue;
      json reply = {{"id", command["id"]}, {"result", result_for(command)}};
      if (command.contains("sessionId")) reply["sessionId"] = command["sessionId"];
      wire_->deliver(reply.dump());
    }
    return any;
  }

  json result_for(const json& command) {
    const std::string method = command.value("method", "");
    const std::string session = command.value("sessionId", "");
    if (method == "Page.getFrameTree") {
      return {
          {"frameTree",
           {{"frame", {{"id", targets_[session]}, {"loaderId", "L-" + session}, {"url", "about:blank"}}}}}};
    }
    if (method == "Target.createTarget") return {{"targetId", "T-created"}};
    if (method == "Runtime.callFunctionOn" && script_reply_) return script_reply_(command);
    return json::object();
  }

  void deliver_event(const std::string& method, json params, const std::string& session = "") {
    json event = {{"method", method}, {"params", std::move(params)}};
    if (!session.empty()) event["sessionId"] = session;
    wire_->deliver(event.dump());
    pump();
  }

  void attach(const std::string& session, const std::string& target, const std::string& type,
              const std::string& parent_session = "") {
    targets_[session] = target;
    json params = {{"sessionId", session},
                   {"targetInfo", {{"targetId", target}, {"type", type}, {"url", "about:blank"}}},
                   {"waitingForDebugger", true}};
    deliver_event("Target.attachedToTarget", std::move(params), parent_session);
  }

  std::shared_ptr<BrowserConnection> start_connection() {
    ConnectionOptions options;
    auto started = run(BrowserConnection::start(client_, options));
    EXPECT_TRUE(started) << started.error().to_string();
    return started ? *started : nullptr;
  }

  // Index of the first command with this method (and session, if given); -1 when none.
  int index_of(const std::string& method, const std::string& session = "") const {
    for (size_t i = 0; i < commands_.size(); ++i) {
      if (commands_[i].value("method", "") == method &&
          (session.empty() || commands_[i].value("sessionId", "") == session)) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  asio::io_context io_;
  std::shared_ptr<testing::FakeWire> wire_ = std::make_shared<testing::FakeWire>();
  std::shared_ptr<CdpClient> client_;
  size_t answered_ = 0;
  std::vector<json> commands_;
  std::set<std::string> held_;  // methods left unanswered
  std::map<std::string, std::string> targets_;
  std::function<json(const json&)> script_reply_;
};

TEST_F(BrowserConnectionTest, StartDiscoversTargetsAndAutoAttachesPausedAndFlattened) {
  auto connection = start_connection();
  ASSERT_NE(connection, nullptr);
  const int auto_attach = index_of("Target.setAutoAttach");
  ASSERT_GE(auto_attach, 0);
  EXPECT_GE(index_of("Target.setDiscoverTargets"), 0);
  const json& params = commands_[auto_attach]["params"];
  EXPECT_EQ(params["autoAttach"], true);
  EXPECT_EQ(params["waitForDebuggerOnStart"], true);
  EXPECT_EQ(params["flatten"], true);
}

TEST_F(BrowserConnectionTest, APageIsSetUpWithKeelsWorldBeforeItResumesAndBecomesATab) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  const int resume = index_of("Runtime.runIfWaitingForDebugger", "S1");
  ASSERT_GE(resume, 0);
  for (const char* method :
       {"Page.enable", "Page.setLifecycleEventsEnabled", "Runtime.enable", "Network.enable",
        "Page.getFrameTree", "Page.addScriptToEvaluateOnNewDocument"}) {
    const int at = index_of(method, "S1");
    EXPECT_GE(at, 0) << method;
    EXPECT_LT(at, resume) << method << " must come before the page resumes";
  }
  const json& script = commands_[index_of("Page.addScriptToEvaluateOnNewDocument", "S1")]["params"];
  EXPECT_EQ(script["worldName"], "keel");
  EXPECT_EQ(script["runImmediately"], true);
  EXPECT_EQ(script["source"], std::string(page_script_bundle()));
  const int nested = index_of("Target.setAutoAttach", "S1");
  ASSERT_GE(nested, 0);
  EXPECT_EQ(commands_[nested]["params"]["waitForDebuggerOnStart"], true);
  ASSERT_NE(connection->tab(1), nullptr);
  ASSERT_NE(connection->tab(1)->main_frame(), nullptr);
  EXPECT_EQ(connection->tab(1)->main_frame()->frame_id, "T1");
}

TEST_F(BrowserConnectionTest, AWorkerIsResumedAndLeftAlone) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  attach("W1", "TW", "worker", "S1");
  EXPECT_GE(index_of("Runtime.runIfWaitingForDebugger", "W1"), 0);
  const int detach = index_of("Target.detachFromTarget", "S1");
  ASSERT_GE(detach, 0);
  EXPECT_EQ(commands_[detach]["params"]["sessionId"], "W1");
  EXPECT_EQ(index_of("Page.enable", "W1"), -1);
  EXPECT_EQ(connection->tab_ids(), std::vector<int64_t>{1});
}

TEST_F(BrowserConnectionTest, AnIframeTargetJoinsItsParentsTab) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  attach("S2", "F1", "iframe", "S1");
  EXPECT_GE(index_of("Page.enable", "S2"), 0);
  EXPECT_EQ(index_of("Network.enable", "S2"), -1);
  const FrameState* frame = connection->tab(1)->frame("F1");
  ASSERT_NE(frame, nullptr);
  EXPECT_TRUE(frame->oopif);
  EXPECT_EQ(frame->session_id, "S2");
  EXPECT_EQ(connection->tab_ids(), std::vector<int64_t>{1});
}

asio::awaitable<Result<json>> evaluate(std::shared_ptr<BrowserConnection> connection, std::string session) {
  CallOptions options;
  options.timeout = std::chrono::minutes(5);
  json params = {{"expression", "1"}};
  co_return co_await connection->call("Runtime.evaluate", std::move(params), std::move(session),
                                      std::move(options));
}

TEST_F(BrowserConnectionTest, ACrashedTabFailsItsPendingAndLaterCallsAndTheOtherTabsWork) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  attach("S2", "T2", "page");
  held_.insert("Runtime.evaluate");
  auto pending = spawn(evaluate(connection, "S1"));
  ASSERT_FALSE(pending->has_value());
  deliver_event("Target.targetCrashed", json{{"targetId", "T1"}, {"status", "crashed"}, {"errorCode", 139}});
  ASSERT_TRUE(pending->has_value());
  ASSERT_FALSE(**pending);
  EXPECT_EQ((*pending)->error().code(), codes::kBrowserTabCrashed);
  EXPECT_TRUE(connection->tab(1)->crashed);
  Result<json> later = run(evaluate(connection, "S1"));
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().code(), codes::kBrowserTabCrashed);
  held_.clear();
  Result<json> other = run(evaluate(connection, "S2"));
  EXPECT_TRUE(other) << other.error().to_string();
}

TEST_F(BrowserConnectionTest, TheBrowsersExitFailsPendingAndLaterCallsWithCrashed) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  held_.insert("Runtime.evaluate");
  auto pending = spawn(evaluate(connection, "S1"));
  ASSERT_FALSE(pending->has_value());
  wire_->end(Error(codes::kBrowserDisconnected, "the pipe closed"));
  pump();
  ASSERT_TRUE(pending->has_value());
  ASSERT_FALSE(**pending);
  EXPECT_EQ((*pending)->error().code(), codes::kBrowserCrashed);
  ASSERT_TRUE(connection->exited().has_value());
  Result<json> later = run(evaluate(connection, "S1"));
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().code(), codes::kBrowserCrashed);
  Result<int64_t> tab = run(connection->create_tab(std::chrono::seconds(5)));
  ASSERT_FALSE(tab);
  EXPECT_EQ(tab.error().code(), codes::kBrowserCrashed);
}

TEST_F(BrowserConnectionTest, CreateTabReturnsOnceTheNewPageIsSetUp) {
  auto connection = start_connection();
  auto created = spawn(connection->create_tab(std::chrono::seconds(30)));
  ASSERT_GE(index_of("Target.createTarget"), 0);
  EXPECT_FALSE(created->has_value());
  attach("S9", "T-created", "page");
  ASSERT_TRUE(created->has_value());
  ASSERT_TRUE(**created) << (*created)->error().to_string();
  EXPECT_EQ(***created, 1);
}

TEST_F(BrowserConnectionTest, CallScriptRunsTheFunctionInKeelsWorldAndReturnsItsValue) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  json context = {{"context", {{"id", 17}, {"name", "keel"}, {"auxData", {{"frameId", "T1"}}}}}};
  deliver_event("Runtime.executionContextCreated", std::move(context), "S1");
  script_reply_ = [](const json&) {
    return json{{"result", {{"type", "object"}, {"value", {{"ok", true}}}}}};
  };
  ScriptOptions options;
  options.user_gesture = true;
  json args = {{"index", 3}};
  Result<json> out = run(call_script(connection, 1, "T1", "click", std::move(args), std::move(options)));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(*out, (json{{"ok", true}}));
  const json& params = commands_[index_of("Runtime.callFunctionOn", "S1")]["params"];
  EXPECT_EQ(params["executionContextId"], 17);
  EXPECT_EQ(params["arguments"], (json::array({{{"value", "click"}}, {{"value", {{"index", 3}}}}})));
  EXPECT_EQ(params["returnByValue"], true);
  EXPECT_EQ(params["awaitPromise"], true);
  EXPECT_EQ(params["userGesture"], true);
  EXPECT_EQ(index_of("Page.createIsolatedWorld"), -1);
}

TEST_F(BrowserConnectionTest, CallScriptCreatesTheWorldWhenTheDocumentHasNone) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  held_.clear();
  json no_args = json::object();
  ScriptOptions options;
  Result<json> out =
      run(call_script(connection, 1, "T1", "snapshot", std::move(no_args), std::move(options)));
  // The fake answers createIsolatedWorld without a context id: a coded error, not a crash.
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code(), codes::kBrowserCdpError);
  const int create = index_of("Page.createIsolatedWorld", "S1");
  ASSERT_GE(create, 0);
  EXPECT_EQ(commands_[create]["params"]["worldName"], "keel");
  EXPECT_EQ(commands_[create]["params"]["frameId"], "T1");
}

TEST_F(BrowserConnectionTest, AScriptExceptionIsBadScriptResultWithItsText) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  json context = {{"context", {{"id", 5}, {"name", "keel"}, {"auxData", {{"frameId", "T1"}}}}}};
  deliver_event("Runtime.executionContextCreated", std::move(context), "S1");
  script_reply_ = [](const json&) {
    return json{
        {"result", {{"type", "object"}}},
        {"exceptionDetails", {{"text", "Uncaught"}, {"exception", {{"description", "TypeError: boom"}}}}}};
  };
  json no_args = json::object();
  ScriptOptions options;
  Result<json> out =
      run(call_script(connection, 1, "T1", "snapshot", std::move(no_args), std::move(options)));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code(), codes::kBrowserBadScriptResult);
  EXPECT_NE(out.error().message().find("TypeError: boom"), std::string::npos) << out.error().message();
}

TEST_F(BrowserConnectionTest, AScriptThatDoesNotAnswerInTimeIsTerminated) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  json context = {{"context", {{"id", 5}, {"name", "keel"}, {"auxData", {{"frameId", "T1"}}}}}};
  deliver_event("Runtime.executionContextCreated", std::move(context), "S1");
  held_.insert("Runtime.callFunctionOn");
  ScriptOptions options;
  options.timeout = std::chrono::milliseconds(20);
  json no_args = json::object();
  Result<json> out =
      run(call_script(connection, 1, "T1", "waitForText", std::move(no_args), std::move(options)));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code(), codes::kBrowserCdpTimeout);
  EXPECT_GE(index_of("Runtime.terminateExecution", "S1"), 0);
}

TEST_F(BrowserConnectionTest, CallScriptNamesAMissingTabOrFrame) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  json no_args = json::object();
  ScriptOptions options;
  Result<json> no_tab = run(call_script(connection, 7, "T1", "snapshot", no_args, options));
  ASSERT_FALSE(no_tab);
  EXPECT_EQ(no_tab.error().code(), codes::kInvalidArgument);
  Result<json> no_frame = run(call_script(connection, 1, "gone", "snapshot", no_args, options));
  ASSERT_FALSE(no_frame);
  EXPECT_EQ(no_frame.error().code(), codes::kBrowserTargetClosed);
}

}  // namespace
}  // namespace keel::browser
