// Tests for providers/wire/wire_stream.h: the SSE parser's errors and the decoder's reach the caller in
// order, after the events that preceded them, and stay.
#include "providers/wire/wire_stream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "providers/provider_errors.h"
#include "providers/wire/wire_test_support.h"

namespace keel::providers {
namespace {

using namespace keel::providers::testing;

const std::string kTextChunk =
    R"(data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]})"
    "\n\n";

TEST(WireStreamTest, EventsBeforeAParserErrorAreDecodedFirst) {
  WireStream stream(make_wire_codec(WireFormat::kOpenAiChat)->new_decoder(), {.max_event_bytes = 100});
  std::vector<ProviderEvent> out;
  auto r = stream.feed(kTextChunk + "data: " + std::string(200, 'x') + "\n\n", out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), codes::kProviderEventTooLarge);
  EXPECT_EQ(describe(out), "text \"hi\"\n");
}

TEST(WireStreamTest, AStreamCutInsideAnEventIsTruncated) {
  WireStream stream(make_wire_codec(WireFormat::kOpenAiChat)->new_decoder());
  std::vector<ProviderEvent> out;
  ASSERT_TRUE(stream.feed(kTextChunk + "data: {\"choi", out));
  auto r = stream.finish(out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), codes::kProviderStreamTruncated);
  EXPECT_EQ(describe(out), "text \"hi\"\n");
}

TEST(WireStreamTest, DecoderErrorsAreSticky) {
  WireStream stream(make_wire_codec(WireFormat::kAnthropicMessages)->new_decoder());
  std::vector<ProviderEvent> out;
  auto first = stream.feed("event: message_start\ndata: not json\n\n", out);
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code(), codes::kProviderBadEventJson);
  auto again = stream.feed("event: ping\ndata: {\"type\": \"ping\"}\n\n", out);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error(), first.error());
  auto finished = stream.finish(out);
  ASSERT_FALSE(finished);
  EXPECT_EQ(finished.error(), first.error());
  EXPECT_TRUE(out.empty());
}

TEST(WireFormatTest, NamesRoundTrip) {
  for (WireFormat format :
       {WireFormat::kOpenAiChat, WireFormat::kOpenAiResponses, WireFormat::kAnthropicMessages}) {
    EXPECT_EQ(parse_wire_format(to_string(format)), format);
    EXPECT_EQ(make_wire_codec(format)->format(), format);
  }
  EXPECT_EQ(parse_wire_format("openai"), std::nullopt);
}

}  // namespace
}  // namespace keel::providers
