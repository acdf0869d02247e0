// browser/cdp/nul_framer.h — splits a byte stream into NUL-terminated messages (Chromium's
// --remote-debugging-pipe framing: each message is one JSON text followed by '\0').
//
// Guarantees: messages come out whole and in order however the stream is cut into chunks; the work is linear
// in the bytes fed (a tens-of-MB message is scanned once, not once per chunk); a message longer than
// max_message_bytes is dropped whole (the bytes up to its NUL are discarded and counted), never delivered cut
// and never re-synchronised by guessing. Not thread-safe; one stream per framer.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace keel::browser {

class NulFramer {
 public:
  explicit NulFramer(size_t max_message_bytes) : max_message_bytes_(max_message_bytes) {}

  // Appends `chunk` and calls `on_message` for every message it completes, in order.
  void feed(std::string_view chunk, const std::function<void(std::string)>& on_message);

  size_t oversized_messages() const { return oversized_; }
  size_t largest_message() const { return largest_; }
  // Bytes of the message not yet complete (for tests and stats).
  size_t buffered_bytes() const { return buffer_.size(); }

 private:
  size_t max_message_bytes_;
  std::string buffer_;       // the start of the message not yet complete
  bool discarding_ = false;  // inside an oversized message: drop bytes up to its NUL
  size_t oversized_ = 0;
  size_t largest_ = 0;
};

}  // namespace keel::browser
