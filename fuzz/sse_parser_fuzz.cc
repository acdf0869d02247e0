// fuzz_sse_parser — the SSE parser on arbitrary bytes: no crash, no event over the size bound, and the same
// events and end result whether the bytes arrive whole or cut into chunks of any size.
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "providers/sse/sse_parser.h"

namespace {

using keel::providers::SseEvent;
using keel::providers::SseParser;

constexpr size_t kMaxEvent = 4096;

struct Parsed {
  std::vector<SseEvent> events;
  bool ok = true;
};

Parsed parse(std::string_view body, size_t chunk) {
  SseParser parser({.max_event_bytes = kMaxEvent});
  Parsed parsed;
  for (size_t at = 0; parsed.ok && at < body.size(); at += chunk)
    parsed.ok = parser.feed(body.substr(at, chunk), parsed.events).has_value();
  if (parsed.ok) parsed.ok = parser.finish().has_value();
  return parsed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const keel::fuzz::ChunkedInput input = keel::fuzz::chunked_input(data, size);
  const Parsed whole = parse(input.body, std::max<size_t>(input.body.size(), 1));
  const Parsed cut = parse(input.body, input.chunk);
  for (const SseEvent& event : whole.events)
    keel::fuzz::require(event.data.size() <= kMaxEvent, "event over the bound");
  keel::fuzz::require(whole.ok == cut.ok, "chunking changed the outcome");
  // After an error the two runs may have stopped at different events; before it they agree.
  if (whole.ok) keel::fuzz::require(whole.events == cut.events, "chunking changed the events");
  return 0;
}
