// AsyncInbox: values pushed from other threads reach the consuming coroutine in order, and a push after
// the consumer or the io_context is gone is dropped (a model transfer or a tool that reports after the
// turn or the engine ended).
#include "engine/async_inbox.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <memory>
#include <thread>
#include <vector>

namespace keel {
namespace {

namespace asio = boost::asio;

TEST(AsyncInboxTest, ValuesPushedFromAnotherThreadArriveInPushOrder) {
  asio::io_context io;
  auto lifetime = std::make_shared<IoLifetime>();
  Strand strand = asio::make_strand(io);
  auto inbox = std::make_shared<AsyncInbox<int>>(strand, lifetime);
  std::vector<int> received;
  asio::co_spawn(
      strand,
      [](std::shared_ptr<AsyncInbox<int>> from, std::vector<int>* into) -> asio::awaitable<void> {
        for (int i = 0; i < 100; ++i) into->push_back(co_await from->next());
      }(inbox, &received),
      asio::detached);
  std::thread pusher([sender = inbox->sender()] {
    for (int i = 0; i < 100; ++i) EXPECT_TRUE(sender.push(i));
  });
  pusher.join();
  io.run();
  ASSERT_EQ(received.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(received[i], i);
}

TEST(AsyncInboxTest, ASenderWhoseInboxIsGoneDropsTheValue) {
  asio::io_context io;
  auto inbox = std::make_shared<AsyncInbox<int>>(asio::make_strand(io), std::make_shared<IoLifetime>());
  AsyncInbox<int>::Sender sender = inbox->sender();
  EXPECT_TRUE(sender.push(1));
  io.run();  // the value reaches the inbox, whose consumer then stops listening
  inbox.reset();
  EXPECT_FALSE(sender.push(2));
}

// A model transfer that ends after the engine did: its sender outlives the inbox, its strand and the
// io_context. Holding the inbox from the producer's thread would destroy the strand after its io_context.
TEST(AsyncInboxTest, ASenderAfterTheIoContextIsGoneDropsTheValue) {
  auto io = std::make_unique<asio::io_context>();
  auto lifetime = std::make_shared<IoLifetime>();
  auto inbox = std::make_shared<AsyncInbox<int>>(asio::make_strand(*io), lifetime);
  AsyncInbox<int>::Sender sender = inbox->sender();
  EXPECT_TRUE(sender.push(1));  // on its way: the queued handler shares the inbox
  inbox.reset();
  lifetime->end();  // what the engine does just before its io_context goes
  io.reset();       // destroys the queued handler, and with it the inbox
  std::thread late([sender] { EXPECT_FALSE(sender.push(2)); });
  late.join();
}

}  // namespace
}  // namespace keel
