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
      const std::string url = frame_urls_.contains(session) ? frame_urls_[session] : "about:blank";
      return {{"frameTree",
               {{"frame", {{"id", targets_[session]}, {"loaderId", "L-" + session}, {"url", url}}}}}};
    }
    if (method == "Target.createTarget") return {{"targetId", created_target_}};
    if (method == "Target.createBrowserContext") return {{"browserContextId", "CTX"}};
    if (method == "Target.getTargetInfo") {
      return {{"targetInfo",
               {{"targetId", command["params"].value("targetId", "")},
                {"title", "Titled"},
                {"url", "http://t/"}}}};
    }
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

  std::shared_ptr<BrowserConnection> start_connection(ConnectionOptions options = {}) {
    auto started = run(BrowserConnection::start(client_, options));
    EXPECT_TRUE(started) << started.error().to_string();
    return started ? *started : nullptr;
  }

  // Every command with this method, in order.
  std::vector<json> all_of(const std::string& method) const {
    std::vector<json> out;
    for (const json& command : commands_) {
      if (command.value("method", "") == method) out.push_back(command);
    }
    return out;
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
  std::map<std::string, std::string> frame_urls_;  // session -> its main frame's URL (default about:blank)
  std::function<json(const json&)> script_reply_;
  std::string created_target_ = "T-created";  // the target id Target.createTarget answers
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

TEST_F(BrowserConnectionTest, ANewTabTakesTheIdItWasGivenWhenItAttachesAfterTheReply) {
  auto connection = start_connection();
  std::optional<int64_t> chosen = 5;
  auto created = spawn(connection->create_tab(std::chrono::seconds(30), chosen));
  EXPECT_FALSE(created->has_value());
  attach("S9", "T-created", "page");
  ASSERT_TRUE(created->has_value());
  ASSERT_TRUE(**created) << (*created)->error().to_string();
  EXPECT_EQ(***created, 5);
  ASSERT_NE(connection->tab(5), nullptr);
  EXPECT_EQ(connection->tab(5)->session_id, "S9");
  EXPECT_EQ(connection->tab_ids(), std::vector<int64_t>{5});
  // The ids the connection gives itself stay above it.
  attach("S10", "T10", "page");
  EXPECT_EQ(connection->tab_ids(), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(connection->highest_tab_id(), 6);
}

TEST_F(BrowserConnectionTest, ANewTabThatAttachesBeforeTheReplyIsRenumberedToTheIdItWasGiven) {
  auto connection = start_connection();
  held_.insert("Target.createTarget");
  std::optional<int64_t> chosen = 9;
  auto created = spawn(connection->create_tab(std::chrono::seconds(30), chosen));
  attach("S2", "T2", "page");
  // Attached first under the next id (above the chosen one).
  ASSERT_EQ(connection->tab_ids(), std::vector<int64_t>{10});
  const std::vector<json> creates = all_of("Target.createTarget");
  ASSERT_EQ(creates.size(), 1u);
  wire_->deliver(json{{"id", creates[0]["id"]}, {"result", {{"targetId", "T2"}}}}.dump());
  pump();
  ASSERT_TRUE(created->has_value());
  ASSERT_TRUE(**created) << (*created)->error().to_string();
  EXPECT_EQ(***created, 9);
  EXPECT_EQ(connection->tab_ids(), std::vector<int64_t>{9});
  ASSERT_NE(connection->tab(9), nullptr);
  EXPECT_EQ(connection->tab(9)->target_id, "T2");
  // Its session's events reach it under the new id, and its end removes it.
  deliver_event("Target.detachedFromTarget", json{{"sessionId", "S2"}});
  EXPECT_EQ(connection->tab(9), nullptr);
  // The id it had for that moment was nobody's: the next tab gets it; the chosen one is never given again.
  attach("S3", "T3", "page");
  EXPECT_EQ(connection->tab_ids(), std::vector<int64_t>{10});
  std::optional<int64_t> nine = 9;
  Result<int64_t> again = run(connection->create_tab(std::chrono::seconds(5), nine));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), codes::kInvalidArgument);
}

TEST_F(BrowserConnectionTest, AChosenIdInUseClosedOrBeingGivenIsRefused) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  std::optional<int64_t> one = 1;
  Result<int64_t> taken = run(connection->create_tab(std::chrono::seconds(5), one));
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code(), codes::kInvalidArgument);
  EXPECT_NE(taken.error().message().find("tab id 1 is in use"), std::string::npos) << taken.error().message();
  std::optional<int64_t> zero = 0;
  Result<int64_t> not_positive = run(connection->create_tab(std::chrono::seconds(5), zero));
  ASSERT_FALSE(not_positive);
  EXPECT_EQ(not_positive.error().code(), codes::kInvalidArgument);
  EXPECT_EQ(all_of("Target.createTarget").size(), 0u) << "nothing was opened for a refused id";

  // Closed: the id never comes back to mean another page.
  deliver_event("Target.detachedFromTarget", json{{"sessionId", "S1"}});
  ASSERT_EQ(connection->tab(1), nullptr);
  Result<int64_t> closed = run(connection->create_tab(std::chrono::seconds(5), one));
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().code(), codes::kInvalidArgument);
  EXPECT_NE(closed.error().message().find("belonged to a tab that was closed"), std::string::npos)
      << closed.error().message();
  attach("S2", "T2", "page");
  EXPECT_EQ(connection->tab_ids(), std::vector<int64_t>{2});

  // Being given by another create_tab still waiting for its page.
  held_.insert("Target.createTarget");
  std::optional<int64_t> seven = 7;
  auto first = spawn(connection->create_tab(std::chrono::seconds(30), seven));
  Result<int64_t> second = run(connection->create_tab(std::chrono::seconds(5), seven));
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message().find("is being given to another new tab"), std::string::npos)
      << second.error().message();
  EXPECT_FALSE(first->has_value());
}

TEST_F(BrowserConnectionTest, TabIdsStartAboveTheEarlierBrowsersAndPopupsGetFreshOnes) {
  ConnectionOptions options;
  options.tab_ids_above = 12;
  auto connection = start_connection(options);
  EXPECT_EQ(connection->highest_tab_id(), 12);
  attach("S1", "T1", "page");  // the new browser's first page
  EXPECT_EQ(connection->tab_ids(), std::vector<int64_t>{13});
  // An earlier browser's tab reopened under its id.
  std::optional<int64_t> old_id = 3;
  auto reopened = spawn(connection->create_tab(std::chrono::seconds(30), old_id));
  attach("S9", "T-created", "page");
  ASSERT_TRUE(reopened->has_value());
  ASSERT_TRUE(**reopened) << (*reopened)->error().to_string();
  EXPECT_EQ(***reopened, 3);
  // A popup the reopened page opens gets an id above every one.
  targets_["S4"] = "T4";
  json popup = {{"sessionId", "S4"},
                {"targetInfo",
                 {{"targetId", "T4"}, {"type", "page"}, {"url", "about:blank"}, {"openerId", "T-created"}}},
                {"waitingForDebugger", true}};
  deliver_event("Target.attachedToTarget", std::move(popup));
  ASSERT_NE(connection->tab(14), nullptr);
  EXPECT_EQ(connection->tab(14)->opener_tab, 3);
  EXPECT_EQ(connection->highest_tab_id(), 14);
}

TEST_F(BrowserConnectionTest, TheReplacementOfACrashedTabTakesItsId) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  deliver_event("Target.targetCrashed", json{{"targetId", "T1"}, {"status", "crashed"}});
  ASSERT_TRUE(connection->tab(1)->crashed);
  created_target_ = "T-new";
  std::optional<int64_t> same = 1;
  auto replaced = spawn(connection->create_tab(std::chrono::seconds(30), same));
  attach("S2", "T-new", "page");
  ASSERT_TRUE(replaced->has_value());
  ASSERT_TRUE(**replaced) << (*replaced)->error().to_string();
  EXPECT_EQ(***replaced, 1);
  ASSERT_NE(connection->tab(1), nullptr);
  EXPECT_EQ(connection->tab(1)->target_id, "T-new");
  EXPECT_FALSE(connection->tab(1)->crashed);
  // The crashed page's session ending late does not close its replacement.
  deliver_event("Target.detachedFromTarget", json{{"sessionId", "S1"}});
  ASSERT_NE(connection->tab(1), nullptr);
  EXPECT_FALSE(connection->tab(1)->closed);
  Result<json> works = run(evaluate(connection, "S2"));
  EXPECT_TRUE(works) << works.error().to_string();
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

// ---- Tab events: dialogs, file choosers, logs, popups, downloads and the navigation guard ----

json alert_event(std::string message, std::string frame = "T1") {
  return {{"url", "http://127.0.0.1:1/a.html"},
          {"frameId", std::move(frame)},
          {"message", std::move(message)},
          {"type", "alert"},
          {"hasBrowserHandler", true}};
}

asio::awaitable<Result<json>> send(std::shared_ptr<BrowserConnection> connection, std::string method,
                                   std::string session) {
  CallOptions options;
  options.timeout = std::chrono::minutes(5);
  json params = json::object();
  co_return co_await connection->call(std::move(method), std::move(params), std::move(session),
                                      std::move(options));
}

TEST_F(BrowserConnectionTest, StartDeniesDownloadsAndSetsNoGuardByDefault) {
  auto connection = start_connection();
  const int downloads = index_of("Browser.setDownloadBehavior");
  ASSERT_GE(downloads, 0);
  EXPECT_EQ(commands_[downloads]["params"]["behavior"], "deny");
  EXPECT_EQ(commands_[downloads]["params"]["eventsEnabled"], true);
  EXPECT_EQ(index_of("Fetch.enable"), -1);
  attach("S1", "T1", "page");
  const int chooser = index_of("Page.setInterceptFileChooserDialog", "S1");
  ASSERT_GE(chooser, 0);
  EXPECT_EQ(commands_[chooser]["params"]["enabled"], true);
  EXPECT_LT(chooser, index_of("Runtime.runIfWaitingForDebugger", "S1"));
}

TEST_F(BrowserConnectionTest, StartEnablesTheGuardAndDownloadsBeforeAttachingTargets) {
  ConnectionOptions options;
  options.navigation_guard = [](int64_t, const PausedDocumentRequest&) { return GuardDecision{}; };
  options.download_dir = "/tmp/keel-downloads";
  auto connection = start_connection(options);
  const int fetch = index_of("Fetch.enable");
  ASSERT_GE(fetch, 0);
  EXPECT_EQ(commands_[fetch].value("sessionId", ""), "");
  EXPECT_EQ(
      commands_[fetch]["params"]["patterns"],
      (json::array({{{"urlPattern", "*"}, {"resourceType", "Document"}, {"requestStage", "Request"}}})));
  const int downloads = index_of("Browser.setDownloadBehavior");
  ASSERT_GE(downloads, 0);
  EXPECT_EQ(commands_[downloads]["params"]["behavior"], "allowAndName");
  EXPECT_EQ(commands_[downloads]["params"]["downloadPath"], "/tmp/keel-downloads");
  EXPECT_LT(fetch, index_of("Target.setAutoAttach"));
  EXPECT_LT(downloads, index_of("Target.setAutoAttach"));
}

TEST_F(BrowserConnectionTest, ADialogFailsThePendingCallsOfItsTabAtOnceExceptTheOnesThatWorkDuringIt) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  attach("S2", "T2", "page");
  attach("S3", "F1", "iframe", "S1");
  held_ = {"Runtime.evaluate", "Page.navigate", "DOM.describeNode"};
  auto page_call = spawn(evaluate(connection, "S1"));
  auto frame_call = spawn(send(connection, "DOM.describeNode", "S3"));
  auto navigation = spawn(send(connection, "Page.navigate", "S1"));
  auto other_tab = spawn(evaluate(connection, "S2"));
  ASSERT_FALSE(page_call->has_value());
  deliver_event("Page.javascriptDialogOpening", alert_event("Hello"), "S1");
  ASSERT_TRUE(page_call->has_value());
  ASSERT_FALSE(**page_call);
  EXPECT_EQ((*page_call)->error().code(), codes::kBrowserModalOpen);
  EXPECT_NE((*page_call)->error().message().find("An alert dialog is open on tab 1 (\"Hello\")"),
            std::string::npos)
      << (*page_call)->error().message();
  EXPECT_NE((*page_call)->error().message().find("browser_handle_dialog{accept} clears it"),
            std::string::npos);
  ASSERT_TRUE(frame_call->has_value()) << "an out-of-process frame of the tab is blocked too";
  EXPECT_EQ((*frame_call)->error().code(), codes::kBrowserModalOpen);
  EXPECT_FALSE(navigation->has_value()) << "Page.navigate works while a dialog is open";
  EXPECT_FALSE(other_tab->has_value()) << "another tab is not blocked";
  // Later calls on the tab fail at once too; call_script surfaces the code as it is.
  Result<json> later = run(send(connection, "DOM.getDocument", "S1"));
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().code(), codes::kBrowserModalOpen);
  json context = {{"context", {{"id", 5}, {"name", "keel"}, {"auxData", {{"frameId", "T1"}}}}}};
  deliver_event("Runtime.executionContextCreated", std::move(context), "S1");
  json no_args = json::object();
  ScriptOptions script_options;
  Result<json> script = run(call_script(connection, 1, "T1", "snapshot", std::move(no_args), script_options));
  ASSERT_FALSE(script);
  EXPECT_EQ(script.error().code(), codes::kBrowserModalOpen);
  // The late reply of the failed call is dropped without harm.
  wire_->deliver(json{
      {"id", commands_[index_of("Runtime.evaluate", "S1")]["id"]},
      {"result", json::object()},
      {"sessionId",
       "S1"}}.dump());
  pump();
  held_.clear();
  Result<void> handled = run(connection->handle_dialog(1, true, "", std::chrono::seconds(5)));
  ASSERT_TRUE(handled) << handled.error().to_string();
  const std::vector<json> answers = all_of("Page.handleJavaScriptDialog");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0]["sessionId"], "S1");
  EXPECT_EQ(answers[0]["params"]["accept"], true);
  EXPECT_FALSE(connection->tab(1)->modal.has_value());
  Result<json> after = run(evaluate(connection, "S1"));
  EXPECT_TRUE(after) << after.error().to_string();
}

TEST_F(BrowserConnectionTest, HandleDialogAndSetChooserFilesSayNoModalWhenNoneIsOpen) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  Result<void> dialog = run(connection->handle_dialog(1, true, "", std::chrono::seconds(5)));
  ASSERT_FALSE(dialog);
  EXPECT_EQ(dialog.error().code(), codes::kBrowserNoModal);
  std::vector<std::string> one_file = {"/tmp/a.txt"};
  Result<void> chooser = run(connection->set_chooser_files(1, one_file, std::chrono::seconds(5)));
  ASSERT_FALSE(chooser);
  EXPECT_EQ(chooser.error().code(), codes::kBrowserNoModal);
  // A chooser is not a dialog, and a dialog is not a chooser.
  deliver_event("Page.fileChooserOpened",
                json{{"frameId", "T1"}, {"mode", "selectSingle"}, {"backendNodeId", 9}}, "S1");
  Result<void> wrong = run(connection->handle_dialog(1, false, "", std::chrono::seconds(5)));
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), codes::kBrowserNoModal);
  Result<json> page_call = run(evaluate(connection, "S1"));
  EXPECT_TRUE(page_call) << "a file chooser does not block the renderer";
}

TEST_F(BrowserConnectionTest, APromptIsAnsweredWithItsText) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  json prompt = alert_event("Your name?");
  prompt["type"] = "prompt";
  prompt["defaultPrompt"] = "Ada";
  deliver_event("Page.javascriptDialogOpening", prompt, "S1");
  ASSERT_TRUE(connection->tab(1)->modal.has_value());
  Result<void> handled = run(connection->handle_dialog(1, true, "Grace", std::chrono::seconds(5)));
  ASSERT_TRUE(handled) << handled.error().to_string();
  const std::vector<json> answers = all_of("Page.handleJavaScriptDialog");
  ASSERT_EQ(answers.size(), 1u);
  const json& params = answers[0]["params"];
  EXPECT_EQ(params["promptText"], "Grace");
  EXPECT_FALSE(connection->tab(1)->modal.has_value());
}

TEST_F(BrowserConnectionTest, TheNextDialogThatOpensBeforeTheAnswerToThisOneStaysOpen) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  deliver_event("Page.javascriptDialogOpening", alert_event("one"), "S1");
  held_.insert("Page.handleJavaScriptDialog");
  auto handled = spawn(connection->handle_dialog(1, true, "", std::chrono::seconds(5)));
  // Chromium may report the next dialog before the close of the one answered (seen with alert-loop.html).
  deliver_event("Page.javascriptDialogOpening", alert_event("two"), "S1");
  deliver_event("Page.javascriptDialogClosed", json{{"result", true}}, "S1");
  wire_->deliver(json{
      {"id", all_of("Page.handleJavaScriptDialog").at(0)["id"]},
      {"result", json::object()},
      {"sessionId",
       "S1"}}.dump());
  pump();
  ASSERT_TRUE(handled->has_value());
  EXPECT_TRUE(**handled);
  ASSERT_TRUE(connection->tab(1)->modal.has_value());
  EXPECT_EQ(connection->tab(1)->modal->message, "two");
}

TEST_F(BrowserConnectionTest, TheFourthDialogOfADocumentWithinOneSecondIsDismissedByKeel) {
  auto now = std::make_shared<std::chrono::steady_clock::time_point>();
  ConnectionOptions options;
  options.clock = [now] { return *now; };
  auto connection = start_connection(options);
  attach("S1", "T1", "page");
  for (int i = 1; i <= 3; ++i) {
    deliver_event("Page.javascriptDialogOpening", alert_event("n" + std::to_string(i)), "S1");
    ASSERT_TRUE(connection->tab(1)->modal.has_value()) << i;
    Result<void> handled = run(connection->handle_dialog(1, true, "", std::chrono::seconds(5)));
    ASSERT_TRUE(handled) << handled.error().to_string();
    *now += std::chrono::milliseconds(300);
  }
  EXPECT_EQ(connection->tab(1)->auto_dismissed_dialogs, 0);
  deliver_event("Page.javascriptDialogOpening", alert_event("n4"), "S1");
  EXPECT_FALSE(connection->tab(1)->modal.has_value());
  EXPECT_EQ(connection->tab(1)->auto_dismissed_dialogs, 1);
  std::vector<json> answers = all_of("Page.handleJavaScriptDialog");
  ASSERT_EQ(answers.size(), 4u);
  EXPECT_EQ(answers[3]["params"]["accept"], false);
  EXPECT_EQ(answers[3]["sessionId"], "S1");
  // While they keep coming that fast, each is dismissed; calls on the tab are not blocked by them.
  *now += std::chrono::milliseconds(10);
  deliver_event("Page.javascriptDialogOpening", alert_event("n5"), "S1");
  EXPECT_EQ(connection->tab(1)->auto_dismissed_dialogs, 2);
  Result<json> page_call = run(evaluate(connection, "S1"));
  EXPECT_TRUE(page_call) << page_call.error().to_string();
  // Another document's dialog is not part of the loop.
  deliver_event("Page.frameNavigated",
                json{{"frame", {{"id", "T1"}, {"loaderId", "L2"}, {"url", "http://b/"}}}}, "S1");
  deliver_event("Page.javascriptDialogOpening", alert_event("new page"), "S1");
  ASSERT_TRUE(connection->tab(1)->modal.has_value());
  EXPECT_EQ(connection->tab(1)->modal->message, "new page");
  // A dialog well after the loop stopped is the model's to answer again.
  deliver_event("Page.frameNavigated",
                json{{"frame", {{"id", "T1"}, {"loaderId", "L-S1"}, {"url", "about:blank"}}}}, "S1");
  *now += std::chrono::seconds(2);
  deliver_event("Page.javascriptDialogOpening", alert_event("later"), "S1");
  ASSERT_TRUE(connection->tab(1)->modal.has_value());
  EXPECT_EQ(connection->tab(1)->auto_dismissed_dialogs, 2);
}

TEST_F(BrowserConnectionTest, TheFileChooserGetsItsFilesOnItsSessionAndIsCleared) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  attach("S2", "F1", "iframe", "S1");
  deliver_event("Page.fileChooserOpened",
                json{{"frameId", "F1"}, {"mode", "selectMultiple"}, {"backendNodeId", 31}}, "S2");
  ASSERT_TRUE(connection->tab(1)->modal.has_value());
  EXPECT_TRUE(connection->tab(1)->modal->multiple);
  std::vector<std::string> files = {"/w/a.txt", "/w/b.txt"};
  Result<void> set = run(connection->set_chooser_files(1, files, std::chrono::seconds(5)));
  ASSERT_TRUE(set) << set.error().to_string();
  const int at = index_of("DOM.setFileInputFiles", "S2");
  ASSERT_GE(at, 0);
  EXPECT_EQ(commands_[at]["params"]["backendNodeId"], 31);
  EXPECT_EQ(commands_[at]["params"]["files"], (json::array({"/w/a.txt", "/w/b.txt"})));
  EXPECT_FALSE(connection->tab(1)->modal.has_value());
}

TEST_F(BrowserConnectionTest, APopupKnowsItsOpenerAndTitleAndUrlFollowTargetInfo) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  targets_["S2"] = "T2";
  json popup = {
      {"sessionId", "S2"},
      {"targetInfo", {{"targetId", "T2"}, {"type", "page"}, {"url", "about:blank"}, {"openerId", "T1"}}},
      {"waitingForDebugger", true}};
  deliver_event("Target.attachedToTarget", std::move(popup));
  ASSERT_NE(connection->tab(2), nullptr);
  EXPECT_EQ(connection->tab(2)->opener_tab, 1);
  EXPECT_EQ(connection->tab(1)->opener_tab, 0);
  const int64_t before = connection->tab(2)->change_seq;
  deliver_event("Target.targetInfoChanged",
                json{{"targetInfo",
                      {{"targetId", "T2"}, {"type", "page"}, {"title", "Receipt"}, {"url", "http://a/r"}}}});
  EXPECT_EQ(connection->tab(2)->title, "Receipt");
  EXPECT_EQ(connection->tab(2)->url, "http://a/r");
  EXPECT_GT(connection->tab(2)->change_seq, before);
  EXPECT_EQ(connection->tab(1)->title, "");
}

TEST_F(BrowserConnectionTest, TheTitleIsAskedForOnceTheMainDocumentLoaded) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  deliver_event("Page.lifecycleEvent", json{{"frameId", "C1"}, {"loaderId", "L"}, {"name", "load"}}, "S1");
  EXPECT_EQ(index_of("Target.getTargetInfo"), -1) << "a subframe's load is not the tab's";
  deliver_event("Page.lifecycleEvent",
                json{{"frameId", "T1"}, {"loaderId", "L"}, {"name", "DOMContentLoaded"}}, "S1");
  const int asked = index_of("Target.getTargetInfo");
  ASSERT_GE(asked, 0);
  EXPECT_EQ(commands_[asked]["params"]["targetId"], "T1");
  EXPECT_EQ(connection->tab(1)->title, "Titled");
}

TEST_F(BrowserConnectionTest, ADownloadIsRecordedInTheTabOfItsFrame) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  attach("S2", "T2", "page");
  deliver_event(
      "Browser.downloadWillBegin",
      json{{"frameId", "T2"}, {"guid", "G"}, {"url", "http://a/r.csv"}, {"suggestedFilename", "r.csv"}});
  deliver_event("Browser.downloadProgress",
                json{{"guid", "G"}, {"state", "completed"}, {"receivedBytes", 5}, {"totalBytes", 5}});
  EXPECT_TRUE(connection->tab(1)->downloads.empty());
  ASSERT_EQ(connection->tab(2)->downloads.size(), 1u);
  EXPECT_EQ(connection->tab(2)->downloads[0].state, "completed");
}

struct GuardCall {
  int64_t tab_id;
  PausedDocumentRequest request;
};

TEST_F(BrowserConnectionTest, TheGuardAnswersEveryPausedRequestAndRecordsRefusals) {
  auto asked = std::make_shared<std::vector<GuardCall>>();
  ConnectionOptions options;
  options.navigation_guard = [asked](int64_t tab_id, const PausedDocumentRequest& request) {
    asked->push_back({tab_id, request});
    GuardDecision decision;
    decision.allowed = request.url.starts_with("http://ok/");
    decision.reason = "no host permission";
    decision.url = request.url;
    return decision;
  };
  auto connection = start_connection(options);
  attach("S1", "T1", "page");
  deliver_event("Page.frameAttached", json{{"frameId", "C1"}, {"parentFrameId", "T1"}}, "S1");
  auto paused = [&](std::string id, std::string frame, std::string url, bool redirect = false) {
    json params = {{"requestId", id},
                   {"request", {{"url", url}, {"method", "GET"}}},
                   {"frameId", frame},
                   {"resourceType", "Document"},
                   {"networkId", "N" + id}};
    if (redirect) params["redirectedRequestId"] = "R0";
    deliver_event("Fetch.requestPaused", std::move(params));
  };
  paused("1", "T1", "http://ok/a");
  paused("2", "C1", "http://evil/frame");
  paused("3", "T1", "http://evil/hop", true);
  // A page target keel has not attached yet: its opener's tab decides; with no opener known, tab 0.
  deliver_event("Target.targetCreated",
                json{{"targetInfo", {{"targetId", "P1"}, {"type", "page"}, {"openerId", "T1"}}}});
  paused("4", "P1", "http://evil/popup");
  paused("5", "UNKNOWN", "http://evil/x");
  deliver_event("Fetch.requestPaused", json{{"requestId", "6"}});  // malformed: still answered
  ASSERT_EQ(asked->size(), 6u);
  EXPECT_EQ((*asked)[0].tab_id, 1);
  EXPECT_EQ((*asked)[0].request.frame, FrameKind::kMainFrame);
  EXPECT_EQ((*asked)[1].request.frame, FrameKind::kSubframe);
  EXPECT_TRUE((*asked)[2].request.redirect);
  EXPECT_EQ((*asked)[3].tab_id, 1);
  EXPECT_EQ((*asked)[4].tab_id, 0);
  EXPECT_EQ((*asked)[5].tab_id, 0);
  std::map<std::string, json> answers;
  for (const char* method : {"Fetch.continueRequest", "Fetch.failRequest"}) {
    for (const json& command : all_of(method)) {
      EXPECT_FALSE(answers.contains(command["params"]["requestId"])) << "answered twice";
      answers[command["params"]["requestId"]] = command;
    }
  }
  ASSERT_EQ(answers.size(), 6u) << "every paused request is answered";
  EXPECT_EQ(answers["1"]["method"], "Fetch.continueRequest");
  for (const char* refused : {"2", "3", "4", "5", "6"}) {
    EXPECT_EQ(answers[refused]["method"], "Fetch.failRequest") << refused;
    EXPECT_EQ(answers[refused]["params"]["errorReason"], "BlockedByClient") << refused;
  }
  const TabState* tab = connection->tab(1);
  ASSERT_EQ(tab->blocked.size(), 3u);
  EXPECT_EQ(tab->blocked[0].url, "http://evil/frame");
  EXPECT_EQ(tab->blocked[0].frame_id, "C1");
  EXPECT_EQ(tab->blocked[1].reason, "no host permission (a redirect hop)");
  EXPECT_EQ(tab->blocked[2].url, "http://evil/popup");
  ASSERT_EQ(tab->network.size(), 3u);
  EXPECT_EQ(tab->network[0].failure, "blocked by keel: no host permission");
}

TEST_F(BrowserConnectionTest, ACommittedUrlTheCheckRefusesIsReplacedByAboutBlankAndRecorded) {
  ConnectionOptions options;
  options.commit_check = [](int64_t, std::string_view url, FrameKind) {
    GuardDecision decision;
    decision.allowed = !url.starts_with("data:");
    decision.reason = "scheme";
    return decision;
  };
  auto connection = start_connection(options);
  attach("S1", "T1", "page");
  deliver_event("Page.frameNavigated",
                json{{"frame", {{"id", "T1"}, {"loaderId", "L2"}, {"url", "http://ok/"}}}}, "S1");
  EXPECT_EQ(index_of("Page.navigate"), -1);
  deliver_event(
      "Page.frameNavigated",
      json{{"frame", {{"id", "C1"}, {"parentId", "T1"}, {"loaderId", "L3"}, {"url", "data:text/html,hi"}}}},
      "S1");
  const int blank = index_of("Page.navigate", "S1");
  ASSERT_GE(blank, 0);
  EXPECT_EQ(commands_[blank]["params"], (json{{"url", "about:blank"}, {"frameId", "C1"}}));
  ASSERT_EQ(connection->tab(1)->blocked.size(), 1u);
  EXPECT_EQ(connection->tab(1)->blocked[0].url, "data:text/html,hi");
  EXPECT_EQ(connection->tab(1)->blocked[0].frame_id, "C1");
}

TEST_F(BrowserConnectionTest, ACrashClearsTheModalState) {
  auto connection = start_connection();
  attach("S1", "T1", "page");
  deliver_event("Page.javascriptDialogOpening", alert_event("x"), "S1");
  ASSERT_TRUE(connection->tab(1)->modal.has_value());
  deliver_event("Target.targetCrashed", json{{"targetId", "T1"}, {"status", "crashed"}});
  EXPECT_FALSE(connection->tab(1)->modal.has_value());
}

// --- Attached to a person's browser (docs/browser.md "Attach to a running browser") ------------------------

ConnectionOptions attached_options(BrowserOwnership ownership) {
  ConnectionOptions options;
  options.ownership = ownership;
  options.navigation_guard = [](int64_t, const PausedDocumentRequest& request) {
    GuardDecision decision;
    decision.allowed = request.url.starts_with("http://ok/");
    decision.url = request.url;
    return decision;
  };
  options.commit_check = [](int64_t, std::string_view url, FrameKind) {
    GuardDecision decision;
    decision.allowed = url == "about:blank" || url.starts_with("http://ok/");
    decision.reason = "not ok";
    decision.url = std::string(url);
    return decision;
  };
  options.download_dir = "/tmp/keel-downloads";
  return options;
}

TEST_F(BrowserConnectionTest,
       AttachedStartMakesKeelsContextAndNothingBrowserWideThatWouldHoldThePersonsTabs) {
  auto connection = start_connection(attached_options(BrowserOwnership::kAttachedOwnContext));
  ASSERT_NE(connection, nullptr);
  const int context = index_of("Target.createBrowserContext");
  ASSERT_GE(context, 0);
  EXPECT_EQ(commands_[context]["params"]["disposeOnDetach"], true);
  EXPECT_EQ(connection->browser_context_id(), "CTX");
  EXPECT_EQ(index_of("Target.setAutoAttach"), -1) << "no browser-wide auto-attach";
  EXPECT_EQ(index_of("Fetch.enable"), -1) << "no browser-wide Fetch";
  EXPECT_GE(index_of("Target.setDiscoverTargets"), 0);
  const int downloads = index_of("Browser.setDownloadBehavior");
  ASSERT_GE(downloads, 0);
  EXPECT_EQ(commands_[downloads]["params"]["browserContextId"], "CTX");
  EXPECT_EQ(commands_[downloads]["params"]["behavior"], "allowAndName");
}

TEST_F(BrowserConnectionTest, AttachedInTheDefaultContextKeelLeavesTheDownloadBehaviourAsThePersonSetIt) {
  auto connection = start_connection(attached_options(BrowserOwnership::kAttachedDefaultContext));
  ASSERT_NE(connection, nullptr);
  EXPECT_EQ(index_of("Target.createBrowserContext"), -1);
  EXPECT_EQ(index_of("Browser.setDownloadBehavior"), -1);
  EXPECT_EQ(index_of("Target.setAutoAttach"), -1);
  EXPECT_EQ(connection->browser_context_id(), "");
}

TEST_F(BrowserConnectionTest, AttachedANewTabOpensInKeelsContextAndIsAttachedAndGuardedPerSession) {
  auto connection = start_connection(attached_options(BrowserOwnership::kAttachedOwnContext));
  auto created = spawn(connection->create_tab(std::chrono::seconds(5)));
  const int create = index_of("Target.createTarget");
  ASSERT_GE(create, 0);
  EXPECT_EQ(commands_[create]["params"]["browserContextId"], "CTX");
  const int attach_to = index_of("Target.attachToTarget");
  ASSERT_GE(attach_to, 0);
  EXPECT_EQ(commands_[attach_to]["params"], (json{{"targetId", "T-created"}, {"flatten", true}}));
  attach("S1", "T-created", "page");
  pump_until([&] { return created->has_value(); });
  ASSERT_TRUE(created->has_value());
  ASSERT_TRUE(**created) << (*created)->error().to_string();
  const int fetch = index_of("Fetch.enable", "S1");
  ASSERT_GE(fetch, 0) << "the guard is enabled on keel's session";
  EXPECT_LT(fetch, index_of("Runtime.runIfWaitingForDebugger", "S1"));
  // A request paused by that session is answered on it.
  deliver_event("Fetch.requestPaused",
                json{{"requestId", "R1"}, {"request", {{"url", "http://evil/"}}}, {"frameId", "T-created"}},
                "S1");
  std::vector<json> failed = all_of("Fetch.failRequest");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]["sessionId"], "S1");
}

TEST_F(BrowserConnectionTest, AttachedOnlyPopupsOfKeelsTabsAreAttachedNeverThePersonsPages) {
  auto connection = start_connection(attached_options(BrowserOwnership::kAttachedOwnContext));
  attach("S1", "T1", "page");
  deliver_event("Target.targetCreated", json{{"targetInfo", {{"targetId", "PERSON"}, {"type", "page"}}}});
  deliver_event("Target.targetCreated",
                json{{"targetInfo", {{"targetId", "PERSON2"}, {"type", "page"}, {"openerId", "PERSON"}}}});
  EXPECT_EQ(index_of("Target.attachToTarget"), -1);
  json popup = {{"targetInfo", {{"targetId", "P1"}, {"type", "page"}, {"openerId", "T1"}}}};
  deliver_event("Target.targetCreated", popup);
  deliver_event("Target.targetInfoChanged", popup);
  std::vector<json> attaches = all_of("Target.attachToTarget");
  ASSERT_EQ(attaches.size(), 1u);
  EXPECT_EQ(attaches[0]["params"], (json{{"targetId", "P1"}, {"flatten", true}}));
  targets_["S2"] = "P1";
  json attached = {{"sessionId", "S2"},
                   {"targetInfo", {{"targetId", "P1"}, {"type", "page"}, {"openerId", "T1"}}},
                   {"waitingForDebugger", false}};
  deliver_event("Target.attachedToTarget", std::move(attached));
  ASSERT_NE(connection->tab(2), nullptr);
  EXPECT_EQ(connection->tab(2)->opener_tab, 1);
  deliver_event("Target.targetInfoChanged", popup);
  EXPECT_EQ(all_of("Target.attachToTarget").size(), 1u) << "a popup already keel's is not attached again";
}

TEST_F(BrowserConnectionTest, AttachedAPopupThatLoadedARefusedPageBeforeKeelAttachedIsBlanked) {
  auto connection = start_connection(attached_options(BrowserOwnership::kAttachedOwnContext));
  attach("S1", "T1", "page");
  frame_urls_["S2"] = "http://evil/landing";
  targets_["S2"] = "P1";
  json attached = {{"sessionId", "S2"},
                   {"targetInfo", {{"targetId", "P1"}, {"type", "page"}, {"openerId", "T1"}}},
                   {"waitingForDebugger", false}};
  deliver_event("Target.attachedToTarget", std::move(attached));
  const int blank = index_of("Page.navigate", "S2");
  ASSERT_GE(blank, 0);
  EXPECT_EQ(commands_[blank]["params"], (json{{"url", "about:blank"}, {"frameId", "P1"}}));
  ASSERT_NE(connection->tab(2), nullptr);
  ASSERT_EQ(connection->tab(2)->blocked.size(), 1u);
  EXPECT_EQ(connection->tab(2)->blocked[0].url, "http://evil/landing");
}

TEST_F(BrowserConnectionTest, AttachedReleaseDisposesKeelsContextOrClosesOnlyKeelsTabs) {
  auto own = start_connection(attached_options(BrowserOwnership::kAttachedOwnContext));
  Result<void> released = run(own->release(std::chrono::seconds(5)));
  ASSERT_TRUE(released) << released.error().to_string();
  const int dispose = index_of("Target.disposeBrowserContext");
  ASSERT_GE(dispose, 0);
  EXPECT_EQ(commands_[dispose]["params"]["browserContextId"], "CTX");

  auto in_default = start_connection(attached_options(BrowserOwnership::kAttachedDefaultContext));
  attach("S9", "T9", "page");
  auto releasing = spawn(in_default->release(std::chrono::seconds(5)));
  std::vector<json> closed = all_of("Target.closeTarget");
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0]["params"]["targetId"], "T9");
  EXPECT_FALSE(releasing->has_value()) << "release waits until keel's tabs are gone";
  deliver_event("Target.detachedFromTarget", json{{"sessionId", "S9"}, {"targetId", "T9"}});
  pump_until([&] { return releasing->has_value(); });
  ASSERT_TRUE(releasing->has_value());
  EXPECT_TRUE(**releasing) << (*releasing)->error().to_string();
}

TEST_F(BrowserConnectionTest, ALaunchedBrowserIsNotReleased) {
  auto connection = start_connection();
  Result<void> released = run(connection->release(std::chrono::seconds(5)));
  EXPECT_TRUE(released);
  EXPECT_EQ(index_of("Target.disposeBrowserContext"), -1);
  EXPECT_EQ(index_of("Target.closeTarget"), -1);
}

}  // namespace
}  // namespace keel::browser
