// The pipe transport over real pipes: NUL framing both ways, a big message written in pieces by another
// thread, end of stream reported once as browser.disconnected, nothing after close().
#include "browser/cdp/pipe_transport.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "browser/browser_errors.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;

// Two pipes: the transport writes into `to_browser` and reads from `from_browser`; the test plays the
// browser.
class PipeTransportTest : public ::testing::Test {
 protected:
  PipeTransportTest() {
    int to[2];
    int from[2];
    EXPECT_EQ(::pipe2(to, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(from, O_CLOEXEC), 0);
    browser_reads_ = to[0];
    browser_writes_ = from[1];
    transport_ = make_pipe_transport(io_.get_executor(), to[1], from[0], size_t{64} << 20);
    transport_->start([this](std::string message) { messages_.push_back(std::move(message)); },
                      [this](Error why) { closed_.push_back(why); });
  }
  ~PipeTransportTest() override {
    transport_.reset();
    if (browser_reads_ >= 0) ::close(browser_reads_);
    if (browser_writes_ >= 0) ::close(browser_writes_);
  }

  void browser_write(std::string_view bytes) const {
    while (!bytes.empty()) {
      const ssize_t n = ::write(browser_writes_, bytes.data(), bytes.size());
      ASSERT_GT(n, 0);
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }

  asio::io_context io_;
  std::unique_ptr<CdpTransport> transport_;
  int browser_reads_ = -1;
  int browser_writes_ = -1;
  std::vector<std::string> messages_;
  std::vector<Error> closed_;
};

TEST_F(PipeTransportTest, SentMessagesAreNulTerminatedInOrder) {
  transport_->send(R"({"id":1})");
  transport_->send(R"({"id":2})");
  io_.poll();
  std::string got(32, '\0');
  const ssize_t n = ::read(browser_reads_, got.data(), got.size());
  ASSERT_GT(n, 0);
  got.resize(static_cast<size_t>(n));
  EXPECT_EQ(got, std::string("{\"id\":1}\0{\"id\":2}\0", 18));
}

TEST_F(PipeTransportTest, ABigMessageWrittenInPiecesArrivesWholeThenEndOfStreamClosesOnce) {
  std::string big = "{\"v\":\"";
  big.append(size_t{8} << 20, 'y');
  big.append("\"}");
  std::thread browser([&] {
    const std::string_view all(big);
    for (size_t at = 0; at < all.size(); at += 100'000) browser_write(all.substr(at, 100'000));
    browser_write(std::string_view("\0{}\0", 4));
    ::close(std::exchange(browser_writes_, -1));
  });
  io_.run();  // ends when the read side has seen the end of the stream
  browser.join();
  ASSERT_EQ(messages_.size(), 2u);
  EXPECT_TRUE(messages_[0] == big);
  EXPECT_EQ(messages_[1], "{}");
  ASSERT_EQ(closed_.size(), 1u);
  EXPECT_EQ(closed_[0].code(), codes::kBrowserDisconnected);
}

TEST_F(PipeTransportTest, NothingIsDeliveredAfterClose) {
  browser_write(std::string_view("{}\0", 3));
  transport_->close();
  io_.run();
  EXPECT_TRUE(messages_.empty());
  EXPECT_TRUE(closed_.empty());
  transport_->send("{}");  // dropped, no crash
  transport_->close();     // idempotent
}

TEST_F(PipeTransportTest, ABrokenWritePipeClosesTheTransport) {
  ::signal(SIGPIPE, SIG_IGN);  // as keel's CLI does (cli/signals.h); EPIPE is then an error value
  ::close(std::exchange(browser_reads_, -1));
  transport_->send(R"({"id":1})");
  io_.run_one();
  ASSERT_EQ(closed_.size(), 1u);
  EXPECT_EQ(closed_[0].code(), codes::kBrowserDisconnected);
}

}  // namespace
}  // namespace keel::browser
