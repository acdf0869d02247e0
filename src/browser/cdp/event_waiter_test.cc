// EventWaiter: an event before wait() is not missed, others are ignored, and timeout, cancellation and the
// connection's end each end the wait with their own code.
#include "browser/cdp/event_waiter.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>

#include "browser/browser_errors.h"
#include "browser/cdp/fake_cdp_transport.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using testing::FakeCdpTransport;
using testing::FakeWire;

using Outcome = std::shared_ptr<std::optional<Result<CdpEvent>>>;

class EventWaiterTest : public ::testing::Test {
 protected:
  EventWaiterTest() {
    client_ = CdpClient::create(io_.get_executor(), std::make_unique<FakeCdpTransport>(wire_));
    client_->start();
  }

  Outcome start_wait(EventWaiter& waiter, std::chrono::milliseconds timeout, CancellationToken cancel = {}) {
    auto outcome = std::make_shared<std::optional<Result<CdpEvent>>>();
    asio::co_spawn(io_, waiter.wait(timeout, std::move(cancel)),
                   [outcome](const std::exception_ptr& error, Result<CdpEvent> result) {
                     if (error) std::rethrow_exception(error);
                     *outcome = std::move(result);
                   });
    poll();
    return outcome;
  }

  static bool is_load(const CdpEvent& event) { return event.method == "Page.loadEventFired"; }

  // Runs what is ready. restart(): an io_context that ran out of work stays stopped until restarted.
  void poll() {
    io_.restart();
    io_.poll();
  }

  asio::io_context io_;
  std::shared_ptr<FakeWire> wire_ = std::make_shared<FakeWire>();
  std::shared_ptr<CdpClient> client_;
};

constexpr std::chrono::milliseconds kLong{60'000};

TEST_F(EventWaiterTest, AnEventBeforeWaitIsReturnedAtOnce) {
  EventWaiter waiter(*client_, is_load);
  wire_->deliver(R"({"method":"Page.loadEventFired","params":{"timestamp":1},"sessionId":"S1"})");
  Outcome outcome = start_wait(waiter, kLong);
  ASSERT_TRUE(outcome->has_value() && **outcome);
  EXPECT_EQ((*outcome)->value().session_id, "S1");
  EXPECT_EQ((*outcome)->value().params["timestamp"], 1);
}

TEST_F(EventWaiterTest, OnlyAnAcceptedEventEndsTheWaitAndTheNextWaitGetsTheNextOne) {
  EventWaiter waiter(*client_, is_load);
  Outcome outcome = start_wait(waiter, kLong);
  wire_->deliver(R"({"method":"Page.frameNavigated","params":{}})");
  poll();
  EXPECT_FALSE(outcome->has_value());
  wire_->deliver(R"({"method":"Page.loadEventFired","params":{"timestamp":2}})");
  poll();
  ASSERT_TRUE(outcome->has_value() && **outcome);
  EXPECT_EQ((*outcome)->value().params["timestamp"], 2);

  Outcome next = start_wait(waiter, kLong);
  EXPECT_FALSE(next->has_value());
  wire_->deliver(R"({"method":"Page.loadEventFired","params":{"timestamp":3}})");
  poll();
  ASSERT_TRUE(next->has_value() && **next);
  EXPECT_EQ((*next)->value().params["timestamp"], 3);
}

TEST_F(EventWaiterTest, NoEventBeforeTheDeadlineIsCdpTimeout) {
  EventWaiter waiter(*client_, is_load);
  Outcome outcome = start_wait(waiter, std::chrono::milliseconds(1));
  io_.run();
  ASSERT_TRUE(outcome->has_value());
  ASSERT_FALSE(**outcome);
  EXPECT_EQ((*outcome)->error().code(), codes::kBrowserCdpTimeout);
}

TEST_F(EventWaiterTest, CancellationEndsTheWait) {
  EventWaiter waiter(*client_, is_load);
  CancellationSource source;
  Outcome outcome = start_wait(waiter, kLong, source.token());
  source.cancel();
  poll();
  ASSERT_TRUE(outcome->has_value());
  ASSERT_FALSE(**outcome);
  EXPECT_EQ((*outcome)->error().code(), codes::kCancelled);
}

TEST_F(EventWaiterTest, TheConnectionEndingEndsTheWaitWithItsError) {
  EventWaiter waiter(*client_, is_load);
  Outcome outcome = start_wait(waiter, kLong);
  wire_->end(Error(codes::kBrowserDisconnected, "gone"));
  poll();
  ASSERT_TRUE(outcome->has_value());
  ASSERT_FALSE(**outcome);
  EXPECT_EQ((*outcome)->error().code(), codes::kBrowserDisconnected);
  EventWaiter late(*client_, is_load);  // made after the end: fails at once
  Outcome late_outcome = start_wait(late, kLong);
  ASSERT_TRUE(late_outcome->has_value());
  EXPECT_EQ((*late_outcome)->error().code(), codes::kBrowserDisconnected);
}

}  // namespace
}  // namespace keel::browser
