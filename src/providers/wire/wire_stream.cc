#include "providers/wire/wire_stream.h"

#include <utility>

namespace keel::providers {

WireStream::WireStream(std::unique_ptr<StreamDecoder> decoder, SseParserOptions options)
    : parser_(options), decoder_(std::move(decoder)) {}

Result<void> WireStream::decode_pending(std::vector<ProviderEvent>& out) {
  for (const SseEvent& event : events_) {
    auto r = decoder_->decode(event, out);
    if (!r) {
      events_.clear();
      return r;
    }
  }
  events_.clear();
  return {};
}

Result<void> WireStream::feed(std::string_view bytes, std::vector<ProviderEvent>& out) {
  auto parsed = parser_.feed(bytes, events_);
  // Events completed before a parser error still precede it.
  KEEL_TRY(decode_pending(out));
  return parsed;
}

Result<void> WireStream::finish(std::vector<ProviderEvent>& out) {
  KEEL_TRY(parser_.finish());
  return decoder_->finish(out);
}

}  // namespace keel::providers
