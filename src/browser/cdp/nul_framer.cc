// browser/cdp/nul_framer.cc — see nul_framer.h.
#include "browser/cdp/nul_framer.h"

#include <algorithm>

namespace keel::browser {

void NulFramer::feed(std::string_view chunk, const std::function<void(std::string)>& on_message) {
  while (!chunk.empty()) {
    const size_t nul = chunk.find('\0');
    if (discarding_) {
      if (nul == std::string_view::npos) return;
      discarding_ = false;
      chunk.remove_prefix(nul + 1);
      continue;
    }
    if (nul == std::string_view::npos) {
      // Only the new bytes are searched, so a message arriving in many chunks is scanned once overall.
      if (buffer_.size() + chunk.size() > max_message_bytes_) {
        buffer_.clear();
        buffer_.shrink_to_fit();
        discarding_ = true;
        ++oversized_;
        return;
      }
      buffer_.append(chunk);
      return;
    }
    if (buffer_.size() + nul > max_message_bytes_) {
      buffer_.clear();
      buffer_.shrink_to_fit();
      ++oversized_;
    } else {
      std::string message;
      if (buffer_.empty()) {
        message.assign(chunk.substr(0, nul));
      } else {
        buffer_.append(chunk.substr(0, nul));
        message.swap(buffer_);
      }
      largest_ = std::max(largest_, message.size());
      on_message(std::move(message));
    }
    chunk.remove_prefix(nul + 1);
  }
}

}  // namespace keel::browser
