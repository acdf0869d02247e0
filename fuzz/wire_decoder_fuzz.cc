// fuzz_<format>_decoder — one wire format's StreamDecoder fed through the SSE parser (WireStream) with
// arbitrary bytes. Built once per format (KEEL_FUZZ_WIRE_FORMAT). Besides crashes and sanitizer findings it
// checks what the engine relies on: at most one Finish and nothing after it, exactly one on success; tool
// calls started once, fragments and ends only for open calls; every string writable as JSON.
#include <cstdint>
#include <map>
#include <variant>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "providers/wire/wire_codec.h"
#include "providers/wire/wire_stream.h"

namespace {

namespace pe = keel::provider_event;
using keel::fuzz::require;
using keel::fuzz::writable_as_json;

void check(const std::vector<keel::ProviderEvent>& events, bool succeeded) {
  std::map<int, bool> open;  // index -> still open
  int finishes = 0;
  for (const keel::ProviderEvent& event : events) {
    require(finishes == 0, "an event after Finish");
    // (A chain of get_if rather than keel::Overloaded: clang 16 cannot deduce an aggregate's template
    // arguments.)
    if (const auto* text = std::get_if<pe::TextDelta>(&event)) {
      require(writable_as_json(text->text), "text is not UTF-8");
    } else if (const auto* reasoning = std::get_if<pe::ReasoningDelta>(&event)) {
      require(writable_as_json(reasoning->text), "reasoning is not UTF-8");
      (void)reasoning->provider_data.dump();  // throws (a finding) on invalid UTF-8
    } else if (const auto* start = std::get_if<pe::ToolCallStart>(&event)) {
      require(!open.contains(start->index), "a call started twice");
      require(!start->name.empty(), "a call without a name");
      require(writable_as_json(start->id) && writable_as_json(start->name), "id or name is not UTF-8");
      open[start->index] = true;
    } else if (const auto* fragment = std::get_if<pe::ToolCallDelta>(&event)) {
      require(open.contains(fragment->index) && open[fragment->index],
              "a fragment for a call that is not open");
      require(writable_as_json(fragment->arguments_fragment), "arguments are not UTF-8");
    } else if (const auto* end = std::get_if<pe::ToolCallEnd>(&event)) {
      require(open.contains(end->index) && open[end->index], "the end of a call that is not open");
      open[end->index] = false;
    } else if (const auto* finish = std::get_if<pe::Finish>(&event)) {
      ++finishes;
      require(writable_as_json(finish->provider_reason), "the stop reason is not UTF-8");
    }
  }
  if (succeeded) require(finishes == 1, "a successful stream without exactly one Finish");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const keel::fuzz::ChunkedInput input = keel::fuzz::chunked_input(data, size);
  keel::providers::WireStream stream(keel::providers::make_wire_codec(KEEL_FUZZ_WIRE_FORMAT)->new_decoder(),
                                     {.max_event_bytes = 1 << 16});
  std::vector<keel::ProviderEvent> events;
  keel::Result<void> result;
  for (size_t at = 0; result && at < input.body.size(); at += input.chunk) {
    result = stream.feed(input.body.substr(at, input.chunk), events);
  }
  if (result) result = stream.finish(events);
  if (!result) require(writable_as_json(result.error().message()), "an error message is not UTF-8");
  check(events, result.has_value());
  return 0;
}
