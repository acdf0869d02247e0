// Reading UTF-8 one character at a time: code points and lengths, and U+FFFD of length 1 for every kind of
// broken input, so that a reader always advances; cutting without splitting a character.
#include "util/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace keel {
namespace {

TEST(Utf8, SequenceLengthFollowsTheLeadByte) {
  EXPECT_EQ(utf8_sequence_length('a'), 1u);
  EXPECT_EQ(utf8_sequence_length(0xC3), 2u);
  EXPECT_EQ(utf8_sequence_length(0xE2), 3u);
  EXPECT_EQ(utf8_sequence_length(0xF0), 4u);
  EXPECT_EQ(utf8_sequence_length(0x80), 0u) << "a continuation byte begins nothing";
  EXPECT_EQ(utf8_sequence_length(0xC0), 0u) << "overlong lead";
  EXPECT_EQ(utf8_sequence_length(0xF5), 0u) << "beyond U+10FFFF";
}

TEST(Utf8, DecodesEachLength) {
  EXPECT_EQ(decode_utf8("a").code_point, U'a');
  EXPECT_EQ(decode_utf8("é!").code_point, U'é');
  EXPECT_EQ(decode_utf8("é!").length, 2u);
  EXPECT_EQ(decode_utf8("…").code_point, U'…');
  EXPECT_EQ(decode_utf8("…").length, 3u);
  EXPECT_EQ(decode_utf8("😀").code_point, U'😀');
  EXPECT_EQ(decode_utf8("😀").length, 4u);
}

TEST(Utf8, BrokenInputDecodesAsReplacementOfOneByte) {
  for (std::string_view broken :
       {std::string_view("\x80"), std::string_view("\xC3"),       // cut short
        std::string_view("\xE2\x80"), std::string_view("\xC3("),  // bad continuation
        std::string_view("\xFF")}) {
    const Utf8Char c = decode_utf8(broken);
    EXPECT_EQ(c.code_point, 0xFFFDu);
    EXPECT_EQ(c.length, 1u);
  }
}

TEST(Utf8, PrefixNeverEndsInsideACharacter) {
  EXPECT_EQ(utf8_prefix_length("héllo", 2), 1u);
  EXPECT_EQ(utf8_prefix_length("héllo", 3), 3u);
  EXPECT_EQ(utf8_prefix_length("abc", 10), 3u);
}

TEST(Utf8, ValidTextIsKeptAndBrokenBytesAreReplaced) {
  EXPECT_TRUE(utf8_valid("plain, é, …, 😀"));
  EXPECT_EQ(utf8_sanitized("plain, é, …, 😀"), "plain, é, …, 😀");
  const std::string broken = std::string("a\xFF") + "b";
  EXPECT_FALSE(utf8_valid(broken));
  EXPECT_EQ(utf8_sanitized(broken), "a\uFFFDb");
  EXPECT_EQ(utf8_sanitized("cut \xE2\x80"), "cut \uFFFD\uFFFD");
  EXPECT_FALSE(utf8_valid("\xED\xA0\x80")) << "a UTF-16 surrogate";
  EXPECT_EQ(utf8_sanitized("\xED\xA0\x80!"), "\uFFFD!");
  EXPECT_FALSE(utf8_valid("\xE0\x80\x80")) << "an overlong form";
  EXPECT_TRUE(utf8_valid(utf8_sanitized("x\xC3(\xF5\x80")));
}

}  // namespace
}  // namespace keel
