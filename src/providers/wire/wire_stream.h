// providers/wire/wire_stream.h — one response's bytes to ProviderEvents: the SSE parser joined to a wire
// format's StreamDecoder.
//
// The HTTP provider feeds it each chunk of a 2xx response body as it arrives and finish() when the body
// ends; the benchmark and the fuzz targets drive it the same way. Errors are the parser's
// (provider.event_too_large, provider.stream_truncated) and the decoder's (wire_codec.h); the first one is
// sticky. Not thread-safe: one per response.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "keel/error.h"
#include "keel/provider.h"
#include "providers/sse/sse_parser.h"
#include "providers/wire/wire_codec.h"

namespace keel::providers {

class WireStream {
 public:
  explicit WireStream(std::unique_ptr<StreamDecoder> decoder, SseParserOptions options = {});

  // Appends the events completed by `bytes` to `out`.
  [[nodiscard]] Result<void> feed(std::string_view bytes, std::vector<ProviderEvent>& out);
  // The body ended: a cut event or a missing terminal event is provider.stream_truncated.
  [[nodiscard]] Result<void> finish(std::vector<ProviderEvent>& out);

 private:
  Result<void> decode_pending(std::vector<ProviderEvent>& out);

  SseParser parser_;
  std::unique_ptr<StreamDecoder> decoder_;
  std::vector<SseEvent> events_;  // reused: parsed but not yet decoded
};

}  // namespace keel::providers
