// mcp/client/jsonrpc_client_test.cc — the JSON-RPC client core against a recording send function and a
// manual clock.
#include "mcp/client/jsonrpc_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <vector>

#include "keel/cancellation.h"
#include "keel/error_codes.h"
#include "mcp/mcp_errors.h"
#include "testing/manual_clock.h"

namespace keel::mcp {
namespace {

using nlohmann::json;

struct Recorder {
  std::mutex mu;
  std::vector<json> sent;
  std::vector<Error> problems;
  std::vector<std::pair<std::string, json>> notifications;
};

class JsonRpcClientTest : public ::testing::Test {
 protected:
  JsonRpcClientTest() {
    JsonRpcClient::Handlers handlers;
    handlers.send = [rec = rec_](const json& message) -> Result<void> {
      std::lock_guard lock(rec->mu);
      rec->sent.push_back(message);
      return {};
    };
    handlers.on_problem = [rec = rec_](const Error& problem) {
      std::lock_guard lock(rec->mu);
      rec->problems.push_back(problem);
    };
    handlers.on_notification = [rec = rec_](const std::string& method, const json& params) {
      std::lock_guard lock(rec->mu);
      rec->notifications.emplace_back(method, params);
    };
    client_ = JsonRpcClient::create(std::move(handlers), clock_);
  }
  ~JsonRpcClientTest() override { client_->close(Error(codes::kMcpTransportClosed, "test over")); }

  json last_sent() {
    std::lock_guard lock(rec_->mu);
    return rec_->sent.empty() ? json() : rec_->sent.back();
  }
  std::vector<Error> problems() {
    std::lock_guard lock(rec_->mu);
    return rec_->problems;
  }

  std::shared_ptr<testing::ManualClock> clock_ = std::make_shared<testing::ManualClock>();
  std::shared_ptr<Recorder> rec_ = std::make_shared<Recorder>();
  std::shared_ptr<JsonRpcClient> client_;
};

// Records the one completion of a request (and how many there were).
// A request's completions. The client may complete a request on the timer thread (a deadline the manual
// clock passed) as well as on the test's, so the count is read under the lock and `result` only after it.
struct Outcome {
  std::mutex mu;
  std::condition_variable completed;
  int count = 0;
  std::optional<Result<json>> result;
  JsonRpcClient::Done done() {
    return [this](Result<json> r) {
      std::lock_guard lock(mu);
      ++count;
      result = std::move(r);
      completed.notify_all();
    };
  }
  int calls() {
    std::lock_guard lock(mu);
    return count;
  }
  // Whether `n` completions came within a bound that only a broken client reaches.
  bool wait_calls(int n) {
    std::unique_lock lock(mu);
    return completed.wait_for(lock, std::chrono::seconds(30), [&] { return count >= n; });
  }
};

json response(int64_t id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

TEST_F(JsonRpcClientTest, RequestsGetDistinctIdsAndTheirOwnResponses) {
  Outcome a;
  Outcome b;
  const int64_t id_a = client_->request("x", json::object(), {}, a.done());
  const int64_t id_b = client_->request("y", json::object(), {}, b.done());
  EXPECT_NE(id_a, id_b);
  client_->handle_message(response(id_b, {{"v", 2}}));
  client_->handle_message(response(id_a, {{"v", 1}}));
  ASSERT_TRUE(a.result && a.result->has_value());
  EXPECT_EQ((**a.result)["v"], 1);
  ASSERT_TRUE(b.result && b.result->has_value());
  EXPECT_EQ((**b.result)["v"], 2);
  EXPECT_TRUE(problems().empty());
}

TEST_F(JsonRpcClientTest, AnUnknownIdIsReportedAndIgnored) {
  Outcome a;
  const int64_t id = client_->request("x", json::object(), {}, a.done());
  client_->handle_message(response(id + 1000, json::object()));
  client_->handle_message({{"jsonrpc", "2.0"}, {"id", "str"}, {"result", 1}});
  EXPECT_EQ(a.calls(), 0);
  ASSERT_EQ(problems().size(), 2u);
  EXPECT_EQ(problems()[0].code(), codes::kMcpUnexpectedResponse);
  client_->handle_message(response(id, json::object()));
  EXPECT_EQ(a.calls(), 1);
}

TEST_F(JsonRpcClientTest, ASecondResponseToOneRequestIsReportedAndTheFirstWins) {
  Outcome a;
  const int64_t id = client_->request("x", json::object(), {}, a.done());
  client_->handle_message(response(id, {{"n", 1}}));
  client_->handle_message(response(id, {{"n", 2}}));
  EXPECT_EQ(a.calls(), 1);
  EXPECT_EQ((**a.result)["n"], 1);
  ASSERT_EQ(problems().size(), 1u);
  EXPECT_EQ(problems()[0].code(), codes::kMcpUnexpectedResponse);
}

TEST_F(JsonRpcClientTest, AnErrorResponseIsAnRpcError) {
  Outcome a;
  const int64_t id = client_->request("tools/call", json::object(), {}, a.done());
  client_->handle_message(
      {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", -32602}, {"message", "bad args"}}}});
  ASSERT_TRUE(a.result && !a.result->has_value());
  EXPECT_EQ(a.result->error().code(), codes::kMcpRpcError);
  EXPECT_NE(a.result->error().message().find("-32602"), std::string::npos);
}

TEST_F(JsonRpcClientTest, PingIsAnsweredAndOtherServerRequestsGetMethodNotFound) {
  client_->handle_message({{"jsonrpc", "2.0"}, {"id", "p1"}, {"method", "ping"}});
  EXPECT_EQ(last_sent(), (json{{"jsonrpc", "2.0"}, {"id", "p1"}, {"result", json::object()}}));
  client_->handle_message(
      {{"jsonrpc", "2.0"}, {"id", 7}, {"method", "sampling/createMessage"}, {"params", {}}});
  EXPECT_EQ(last_sent()["id"], 7);
  EXPECT_EQ(last_sent()["error"]["code"], -32601);
}

TEST_F(JsonRpcClientTest, NotificationsReachTheHandler) {
  client_->handle_message({{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}});
  std::lock_guard lock(rec_->mu);
  ASSERT_EQ(rec_->notifications.size(), 1u);
  EXPECT_EQ(rec_->notifications[0].first, "notifications/tools/list_changed");
}

TEST_F(JsonRpcClientTest, MessagesThatAreNotJsonRpcAreReported) {
  client_->handle_message(json::array({1, 2}));
  client_->handle_message({{"jsonrpc", "2.0"}, {"method", 5}});
  client_->handle_message({{"hello", "world"}});
  ASSERT_EQ(problems().size(), 3u);
  for (const Error& problem : problems()) EXPECT_EQ(problem.code(), codes::kMcpBadResponse);
}

TEST_F(JsonRpcClientTest, AnIdleRequestTimesOutAndIsCancelledAtTheServer) {
  Outcome a;
  RpcRequestOptions options;
  options.idle_timeout = std::chrono::seconds(5);
  const int64_t id = client_->request("tools/call", json::object(), options, a.done());
  clock_->advance(std::chrono::seconds(4));
  client_->check_deadlines();
  EXPECT_EQ(a.calls(), 0);
  clock_->advance(std::chrono::seconds(2));
  client_->check_deadlines();
  ASSERT_EQ(a.calls(), 1);
  EXPECT_EQ(a.result->error().code(), codes::kMcpCallTimedOut);
  EXPECT_EQ(last_sent()["method"], "notifications/cancelled");
  EXPECT_EQ(last_sent()["params"]["requestId"], id);
  // The late answer is expected once, and ignored without a report.
  client_->handle_message(response(id, json::object()));
  EXPECT_TRUE(problems().empty());
  EXPECT_EQ(a.calls(), 1);
}

TEST_F(JsonRpcClientTest, ProgressRestartsTheIdleTimeoutButNotTheTotalOne) {
  Outcome a;
  std::vector<McpProgress> progress;
  RpcRequestOptions options;
  options.idle_timeout = std::chrono::seconds(5);
  options.max_total = std::chrono::seconds(12);
  options.with_progress = true;
  options.on_progress = [&](McpProgress p) { progress.push_back(std::move(p)); };
  const int64_t id = client_->request("tools/call", json::object(), options, a.done());
  EXPECT_EQ(last_sent()["params"]["_meta"]["progressToken"], id);
  // Progress every 3.5 s keeps a 5 s idle timeout from firing: 10.5 s pass without a completion.
  for (int step = 1; step <= 3; ++step) {
    clock_->advance(std::chrono::milliseconds(3500));
    client_->handle_message(
        {{"jsonrpc", "2.0"},
         {"method", "notifications/progress"},
         {"params", {{"progressToken", id}, {"progress", step}, {"total", 3}, {"message", "m"}}}});
    client_->check_deadlines();
    EXPECT_EQ(a.calls(), 0) << step;
  }
  ASSERT_EQ(progress.size(), 3u);
  EXPECT_EQ(progress[2].progress, 3);
  EXPECT_EQ(progress[2].total, 3);
  EXPECT_EQ(progress[2].message, "m");
  // At 12 s the total bound ends the call although the last progress came 1.5 s ago (on this thread or the
  // timer's, whichever sees the clock first).
  clock_->advance(std::chrono::milliseconds(1500));
  client_->check_deadlines();
  ASSERT_TRUE(a.wait_calls(1));
  EXPECT_EQ(a.calls(), 1);
  EXPECT_EQ(a.result->error().code(), codes::kMcpCallTimedOut);
}

TEST_F(JsonRpcClientTest, CancelSendsNotificationsCancelledAndCompletesOnce) {
  Outcome a;
  const int64_t id = client_->request("tools/call", json::object(), {}, a.done());
  client_->cancel(id, "interrupted");
  client_->cancel(id, "again");
  ASSERT_EQ(a.calls(), 1);
  EXPECT_EQ(a.result->error().code(), codes::kCancelled);
  EXPECT_EQ(last_sent(), (json{{"jsonrpc", "2.0"},
                               {"method", "notifications/cancelled"},
                               {"params", {{"requestId", id}, {"reason", "interrupted"}}}}));
}

TEST_F(JsonRpcClientTest, CloseFailsPendingAndLaterRequests) {
  Outcome a;
  Outcome b;
  (void)client_->request("x", json::object(), {}, a.done());
  client_->close(Error(codes::kMcpServerExited, "gone"));
  (void)client_->request("y", json::object(), {}, b.done());
  ASSERT_EQ(a.calls(), 1);
  EXPECT_EQ(a.result->error().code(), codes::kMcpServerExited);
  ASSERT_EQ(b.calls(), 1);
  EXPECT_EQ(b.result->error().code(), codes::kMcpServerExited);
  EXPECT_EQ(client_->pending_count(), 0u);
}

TEST_F(JsonRpcClientTest, AFailedSendCompletesTheRequestWithItsError) {
  JsonRpcClient::Handlers handlers;
  handlers.send = [](const json&) -> Result<void> { return fail(codes::kMcpTransportClosed, "closed"); };
  auto client = JsonRpcClient::create(std::move(handlers), clock_);
  Outcome a;
  (void)client->request("x", json::object(), {}, a.done());
  ASSERT_EQ(a.calls(), 1);
  EXPECT_EQ(a.result->error().code(), codes::kMcpTransportClosed);
  EXPECT_EQ(client->pending_count(), 0u);
}

TEST_F(JsonRpcClientTest, TheTimerThreadFiresDeadlinesOnTheSystemClock) {
  JsonRpcClient::Handlers handlers;
  handlers.send = [](const json&) -> Result<void> { return {}; };
  auto client = JsonRpcClient::create(std::move(handlers), nullptr);
  std::promise<Result<json>> promise;
  RpcRequestOptions options;
  options.idle_timeout = std::chrono::milliseconds(20);
  (void)client->request("x", json::object(), options,
                        [&](Result<json> r) { promise.set_value(std::move(r)); });
  auto future = promise.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(future.get().error().code(), codes::kMcpCallTimedOut);
}

TEST_F(JsonRpcClientTest, AFloodOfNotificationsKeepsNothingPending) {
  for (int i = 0; i < 10000; ++i)
    client_->handle_message({{"jsonrpc", "2.0"},
                             {"method", "notifications/progress"},
                             {"params", {{"progressToken", 424242}, {"progress", i}}}});
  EXPECT_EQ(client_->pending_count(), 0u);
  EXPECT_TRUE(problems().empty());
}

}  // namespace
}  // namespace keel::mcp
