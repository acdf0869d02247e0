// NulFramer: whole messages in order however the stream is cut; big messages; oversized ones dropped whole.
#include "browser/cdp/nul_framer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace keel::browser {
namespace {

std::vector<std::string> feed_all(NulFramer& framer, const std::vector<std::string_view>& chunks) {
  std::vector<std::string> messages;
  for (std::string_view chunk : chunks) {
    framer.feed(chunk, [&](std::string message) { messages.push_back(std::move(message)); });
  }
  return messages;
}

TEST(NulFramerTest, EveryCutOfTheStreamGivesTheSameMessages) {
  const std::string stream("{\"id\":1}\0{}\0\0{\"method\":\"x\"}\0", 28);
  const std::vector<std::string> expected = {"{\"id\":1}", "{}", "", "{\"method\":\"x\"}"};
  const std::string_view all(stream);
  for (size_t first = 0; first <= stream.size(); ++first) {
    for (size_t second = first; second <= stream.size(); ++second) {
      NulFramer framer(1 << 20);
      const auto messages =
          feed_all(framer, {all.substr(0, first), all.substr(first, second - first), all.substr(second)});
      ASSERT_EQ(messages, expected) << "cut at " << first << " and " << second;
      EXPECT_EQ(framer.buffered_bytes(), 0u);
    }
  }
}

TEST(NulFramerTest, ATensOfMegabytesMessageArrivesWholeFromOneMebibyteChunks) {
  std::string big = "{\"data\":\"";
  big.append(64u << 20, 'x');
  big.append("\"}");
  std::string stream = big + '\0' + "{}" + '\0';
  NulFramer framer(size_t{256} << 20);
  std::vector<std::string> messages;
  const std::string_view all(stream);
  // 1 MiB chunks plus an odd offset, so that the NUL lands inside a chunk, not on an edge.
  for (size_t at = 0; at < all.size();) {
    const size_t size = at == 0 ? 12345 : (size_t{1} << 20);
    framer.feed(all.substr(at, size), [&](std::string message) { messages.push_back(std::move(message)); });
    at += size;
  }
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0].size(), big.size());
  EXPECT_TRUE(messages[0] == big);
  EXPECT_EQ(messages[1], "{}");
  EXPECT_EQ(framer.largest_message(), big.size());
}

TEST(NulFramerTest, AMessageOverTheBoundIsDroppedWholeAndTheNextOneArrives) {
  NulFramer framer(10);
  // Oversized inside one chunk, then oversized across chunks, each followed by a good message.
  const auto messages = feed_all(framer, {std::string_view("0123456789AB\0ok\0", 16), "0123456", "789ABCDEF",
                                          "GHI", std::string_view("J\0fine\0", 7)});
  EXPECT_EQ(messages, (std::vector<std::string>{"ok", "fine"}));
  EXPECT_EQ(framer.oversized_messages(), 2u);
}

TEST(NulFramerTest, AMessageExactlyAtTheBoundIsKept) {
  NulFramer framer(4);
  const auto messages = feed_all(framer, {"ab", std::string_view("cd\0", 3)});
  EXPECT_EQ(messages, std::vector<std::string>{"abcd"});
  EXPECT_EQ(framer.oversized_messages(), 0u);
}

}  // namespace
}  // namespace keel::browser
