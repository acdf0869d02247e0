// browser/cdp/pipe_transport.cc — see pipe_transport.h.
#include "browser/cdp/pipe_transport.h"

#include <boost/asio/buffer.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "browser/browser_errors.h"
#include "browser/cdp/nul_framer.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;

constexpr size_t kReadChunk = 1 << 20;

// The state the pending reads and writes share; they hold it alive, so the transport object may be destroyed
// with I/O in flight (its handlers then see `closed` and return).
struct PipeState : std::enable_shared_from_this<PipeState> {
  PipeState(asio::any_io_executor ex, int to_fd, int from_fd, size_t max_message_bytes)
      : writer(ex, to_fd), reader(ex, from_fd), framer(max_message_bytes), chunk(kReadChunk) {}

  void read_next() {
    reader.async_read_some(
        asio::buffer(chunk), [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
          if (self->closed) return;
          if (ec) {
            self->fail(ec == asio::error::eof ? "the browser closed its end of the CDP pipe"
                                              : "reading the CDP pipe failed: " + ec.message());
            return;
          }
          self->framer.feed(std::string_view(self->chunk.data(), n), [&self](std::string message) {
            if (!self->closed) self->on_message(std::move(message));
          });
          if (!self->closed) self->read_next();
        });
  }

  void write_next() {
    if (writing || queue.empty() || closed) return;
    writing = true;
    asio::async_write(writer, asio::buffer(queue.front()),
                      [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                        self->writing = false;
                        if (self->closed) return;
                        if (ec) {
                          self->fail("writing the CDP pipe failed: " + ec.message());
                          return;
                        }
                        self->queue.pop_front();
                        self->write_next();
                      });
  }

  void fail(std::string why) {
    if (closed) return;
    close();
    if (on_closed) {
      auto callback = std::move(on_closed);
      callback(Error(codes::kBrowserDisconnected, std::move(why)));
    }
  }

  void close() {
    if (closed) return;
    closed = true;
    boost::system::error_code ignored;
    writer.close(ignored);
    reader.close(ignored);
    // The queue and the callbacks stay until the state dies: a write in flight still points into the queue,
    // and close() may be called from inside on_message.
  }

  asio::posix::stream_descriptor writer;
  asio::posix::stream_descriptor reader;
  NulFramer framer;
  std::vector<char> chunk;
  std::deque<std::string> queue;  // front() is being written while `writing`
  bool writing = false;
  bool closed = false;
  std::function<void(std::string)> on_message;
  std::function<void(Error)> on_closed;
};

class PipeTransport final : public CdpTransport {
 public:
  PipeTransport(asio::any_io_executor ex, int to_fd, int from_fd, size_t max_message_bytes)
      : state_(std::make_shared<PipeState>(std::move(ex), to_fd, from_fd, max_message_bytes)) {}
  ~PipeTransport() override { state_->close(); }
  PipeTransport(const PipeTransport&) = delete;
  PipeTransport& operator=(const PipeTransport&) = delete;

  void start(std::function<void(std::string)> on_message, std::function<void(Error)> on_closed) override {
    state_->on_message = std::move(on_message);
    state_->on_closed = std::move(on_closed);
    state_->read_next();
  }

  void send(std::string message) override {
    if (state_->closed) return;
    message.push_back('\0');
    state_->queue.push_back(std::move(message));
    state_->write_next();
  }

  void close() override { state_->close(); }

  size_t oversized_messages() const override { return state_->framer.oversized_messages(); }

 private:
  std::shared_ptr<PipeState> state_;
};

}  // namespace

std::unique_ptr<CdpTransport> make_pipe_transport(asio::any_io_executor ex, int to_browser_fd,
                                                  int from_browser_fd, size_t max_message_bytes) {
  return std::make_unique<PipeTransport>(std::move(ex), to_browser_fd, from_browser_fd, max_message_bytes);
}

}  // namespace keel::browser
