// Tests for providers/sse/sse_parser.h: the WHATWG event-stream rules, chunks split at every position,
// streams that end mid-event, and the per-event size bound.
#include "providers/sse/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "providers/provider_errors.h"

namespace keel::providers {
namespace {

SseEvent ev(std::string data, std::string event = "message", std::string id = "") {
  return SseEvent{.event = std::move(event), .data = std::move(data), .id = std::move(id), .retry_ms = {}};
}

// Feeds `chunks` in order, then finishes; fails the test on any error.
std::vector<SseEvent> parse_chunks(const std::vector<std::string_view>& chunks,
                                   SseParserOptions options = {}) {
  SseParser parser(options);
  std::vector<SseEvent> out;
  for (std::string_view chunk : chunks) {
    auto fed = parser.feed(chunk, out);
    EXPECT_TRUE(fed.has_value()) << fed.error().to_string();
  }
  auto finished = parser.finish();
  EXPECT_TRUE(finished.has_value()) << finished.error().to_string();
  return out;
}

std::vector<SseEvent> parse(std::string_view text) { return parse_chunks({text}); }

// A stream that uses every rule at once: BOM, comments, each line ending, multi-line data, a field without
// a colon, ids, retry, a named event, an event without data, unknown fields and non-ASCII text.
constexpr std::string_view kSample =
    "\xEF\xBB\xBF: keep-alive\r\n"
    "event: message_start\r\n"
    "data: {\"a\":1}\r\n"
    "\r\n"
    "data:first\n"
    "data: second\n"
    "data\n"
    "id: 7\n"
    "\n"
    "retry: 2500\r"
    "event: ignored-no-data\r"
    "\r"
    "foo: bar\n"
    "data:  two spaces \xC3\xA9\xE2\x82\xAC\n"
    "\n"
    ":\n"
    "data: {\"last\":true}\r\n"
    "\r\n";

std::vector<SseEvent> sample_events() {
  return {ev("{\"a\":1}", "message_start"), ev("first\nsecond\n", "message", "7"),
          ev(" two spaces \xC3\xA9\xE2\x82\xAC", "message", "7"), ev("{\"last\":true}", "message", "7")};
}

TEST(SseParserTest, ParsesEveryRuleOfTheSampleStream) { EXPECT_EQ(parse(kSample), sample_events()); }

TEST(SseParserTest, EverySplitIntoTwoChunksGivesTheSameEvents) {
  for (size_t cut = 0; cut <= kSample.size(); ++cut) {
    EXPECT_EQ(parse_chunks({kSample.substr(0, cut), kSample.substr(cut)}), sample_events())
        << "cut at " << cut;
  }
}

TEST(SseParserTest, EverySplitIntoThreeChunksGivesTheSameEvents) {
  for (size_t a = 0; a <= kSample.size(); ++a) {
    for (size_t b = a; b <= kSample.size(); ++b) {
      ASSERT_EQ(parse_chunks({kSample.substr(0, a), kSample.substr(a, b - a), kSample.substr(b)}),
                sample_events())
          << "cuts at " << a << " and " << b;
    }
  }
}

TEST(SseParserTest, ByteByByteGivesTheSameEvents) {
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < kSample.size(); ++i) bytes.push_back(kSample.substr(i, 1));
  EXPECT_EQ(parse_chunks(bytes), sample_events());
}

TEST(SseParserTest, EachLineEndingEndsALine) {
  const std::vector<SseEvent> expected = {ev("a\nb"), ev("c")};
  EXPECT_EQ(parse("data: a\ndata: b\n\ndata: c\n\n"), expected);
  EXPECT_EQ(parse("data: a\rdata: b\r\rdata: c\r\r"), expected);
  EXPECT_EQ(parse("data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n"), expected);
  EXPECT_EQ(parse("data: a\r\ndata: b\n\rdata: c\r\n\n"), expected);
}

TEST(SseParserTest, CrLfSplitAcrossChunksIsOneLineEnd) {
  // Were the LF taken as a second line end, the blank line would dispatch "a" alone.
  EXPECT_EQ(parse_chunks({"data: a\r", "\ndata: b\r", "\n\r", "\n"}), std::vector<SseEvent>{ev("a\nb")});
}

TEST(SseParserTest, OnlyOneSpaceAfterTheColonIsDropped) {
  EXPECT_EQ(parse("data:x\n\ndata: x\n\ndata:  x\n\n"), (std::vector<SseEvent>{ev("x"), ev("x"), ev(" x")}));
}

TEST(SseParserTest, FieldWithoutColonHasAnEmptyValue) {
  EXPECT_EQ(parse("data\n\n"), std::vector<SseEvent>{ev("")});
  EXPECT_EQ(parse("data\ndata\n\n"), std::vector<SseEvent>{ev("\n")});
  EXPECT_EQ(parse("event\ndata: x\n\n"), std::vector<SseEvent>{ev("x")});
}

TEST(SseParserTest, CommentsAndKeepAlivesProduceNothing) {
  EXPECT_TRUE(parse(": ping\n\n:\n: another\r\n\r\n").empty());
  EXPECT_EQ(parse("data: a\n: comment inside an event\ndata: b\n\n"), std::vector<SseEvent>{ev("a\nb")});
}

TEST(SseParserTest, EventWithoutDataIsNotDispatchedAndResetsTheType) {
  EXPECT_EQ(parse("event: x\n\ndata: y\n\n"), std::vector<SseEvent>{ev("y")});
  EXPECT_TRUE(parse("event: x\nid: 3\n\n").empty());
}

TEST(SseParserTest, LastEventIdPersistsAndIgnoresNul) {
  using namespace std::string_literals;
  const std::string text = "id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: 9\0x\ndata: d\n\n"s;
  EXPECT_EQ(parse(text), (std::vector<SseEvent>{ev("a", "message", "1"), ev("b", "message", "1"),
                                                ev("c", "message", ""), ev("d", "message", "")}));
}

TEST(SseParserTest, RetryTakesOnlyAsciiDigits) {
  SseParser parser;
  std::vector<SseEvent> out;
  ASSERT_TRUE(
      parser.feed("retry: 1500\ndata: a\n\nretry: 15x\ndata: b\n\nretry: 99999999999999999999\n\n", out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].retry_ms, 1500);
  EXPECT_EQ(out[1].retry_ms, std::nullopt);
  EXPECT_EQ(parser.retry_ms(), 1500);
  ASSERT_TRUE(parser.feed("retry: 20\n\n", out));
  EXPECT_EQ(parser.retry_ms(), 20);
  EXPECT_TRUE(parser.finish());
}

TEST(SseParserTest, OnlyALeadingBomIsDropped) {
  EXPECT_EQ(parse("\xEF\xBB\xBF"
                  "data: a\n\n"),
            std::vector<SseEvent>{ev("a")});
  EXPECT_EQ(parse_chunks({"\xEF", "\xBB",
                          "\xBF"
                          "data: a\n\n"}),
            std::vector<SseEvent>{ev("a")});
  EXPECT_EQ(parse("data: \xEF\xBB\xBF"
                  "a\n\n"),
            std::vector<SseEvent>{ev("\xEF\xBB\xBF"
                                     "a")});
  // A first byte that only looks like the BOM's start is kept.
  EXPECT_EQ(parse_chunks({"\xEF", "x: y\ndata: a\n\n"}), std::vector<SseEvent>{ev("a")});
  EXPECT_EQ(parse_chunks({"da", "ta: a\n\n"}), std::vector<SseEvent>{ev("a")});
}

TEST(SseParserTest, UnknownFieldsAreIgnored) {
  EXPECT_EQ(parse("foo: 1\ndata: a\nbar\n\n"), std::vector<SseEvent>{ev("a")});
}

TEST(SseParserTest, StreamEndingMidEventIsTruncated) {
  for (std::string_view text :
       {"data: a", "data: a\n", "data: a\r\n", "event: x\n", "data: a\n\ndata: b\n", "\xEF\xBB", "id: 3\n"}) {
    SseParser parser;
    std::vector<SseEvent> out;
    ASSERT_TRUE(parser.feed(text, out));
    auto finished = parser.finish();
    ASSERT_FALSE(finished.has_value()) << text;
    EXPECT_EQ(finished.error().code(), codes::kProviderStreamTruncated) << text;
    EXPECT_TRUE(finished.error().retryable());
  }
}

TEST(SseParserTest, StreamEndingBetweenEventsOrInACommentIsComplete) {
  for (std::string_view text : {"", "data: a\n\n", "data: a\r\r", ": ping", ": ping\n", "\n\n"}) {
    SseParser parser;
    std::vector<SseEvent> out;
    ASSERT_TRUE(parser.feed(text, out));
    EXPECT_TRUE(parser.finish().has_value()) << text;
  }
}

TEST(SseParserTest, FinishResetsForANewStreamButKeepsTheLastId) {
  SseParser parser;
  std::vector<SseEvent> out;
  ASSERT_TRUE(parser.feed("id: 4\ndata: a\n\ndata: cut", out));
  EXPECT_FALSE(parser.finish().has_value());
  out.clear();
  ASSERT_TRUE(
      parser.feed("\xEF\xBB\xBF"
                  "data: b\n\n",
                  out));
  EXPECT_TRUE(parser.finish().has_value());
  EXPECT_EQ(out, std::vector<SseEvent>{ev("b", "message", "4")});
}

TEST(SseParserTest, EventLargerThanTheBoundFailsAndStaysFailed) {
  SseParser parser({.max_event_bytes = 16});
  std::vector<SseEvent> out;
  ASSERT_TRUE(parser.feed("data: 0123456789\n\n", out));  // 10 bytes: within the bound
  auto r = parser.feed("data: 0123456789\ndata: 0123456789\n\n", out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), codes::kProviderEventTooLarge);
  EXPECT_EQ(out.size(), 1u);
  auto again = parser.feed("data: x\n\n", out);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), codes::kProviderEventTooLarge);
  EXPECT_FALSE(parser.finish().has_value());
}

TEST(SseParserTest, LineThatNeverEndsIsBoundedAcrossChunks) {
  SseParser parser({.max_event_bytes = 64});
  std::vector<SseEvent> out;
  Result<void> r;
  int chunks = 0;
  while (r && chunks < 100) {
    r = parser.feed("xxxxxxxxxx", out);
    ++chunks;
  }
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), codes::kProviderEventTooLarge);
  EXPECT_EQ(chunks, 7);  // 70 bytes > 64
}

TEST(SseParserTest, LargeEventWithinTheBoundIsWhole) {
  const std::string big(1 << 20, 'z');
  const std::string text = "data: " + big + "\n\n";
  std::vector<std::string_view> chunks;
  for (size_t i = 0; i < text.size(); i += 1000) chunks.push_back(std::string_view(text).substr(i, 1000));
  EXPECT_EQ(parse_chunks(chunks), std::vector<SseEvent>{ev(big)});
}

}  // namespace
}  // namespace keel::providers
