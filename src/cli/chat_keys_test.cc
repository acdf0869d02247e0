#include "cli/chat_keys.h"

#include <gtest/gtest.h>

namespace keel::cli {
namespace {

Key text(std::string s) { return Key::character(std::move(s)); }
Key kind(Key::Kind k) { return Key::of(k); }
Key ctrl(char c) { return Key::control(c); }

TEST(KeyDecoderTest, DecodesAsciiAndUtf8TextOneCharacterAtATime) {
  KeyDecoder decoder;
  EXPECT_EQ(decoder.feed("a\xC3\xA9\xE6\x97\xA5"),
            (std::vector<Key>{text("a"), text("\xC3\xA9"), text("\xE6\x97\xA5")}));
}

TEST(KeyDecoderTest, KeepsACharacterSplitAcrossReadsUntilItIsComplete) {
  KeyDecoder decoder;
  EXPECT_TRUE(decoder.feed("\xE6\x97").empty());
  EXPECT_EQ(decoder.feed("\xA5x"), (std::vector<Key>{text("\xE6\x97\xA5"), text("x")}));
}

TEST(KeyDecoderTest, EnterComesAsCarriageReturnOrLineFeed) {
  KeyDecoder decoder;
  EXPECT_EQ(decoder.feed("\r\n"), (std::vector<Key>{kind(Key::Kind::kEnter), kind(Key::Kind::kEnter)}));
}

TEST(KeyDecoderTest, ControlBytesBecomeTabBackspaceAndCtrlLetters) {
  KeyDecoder decoder;
  EXPECT_EQ(decoder.feed("\t\x7f\x08\x03\x04\x15\x17"),
            (std::vector<Key>{kind(Key::Kind::kTab), kind(Key::Kind::kBackspace), kind(Key::Kind::kBackspace),
                              ctrl('c'), ctrl('d'), ctrl('u'), ctrl('w')}));
}

TEST(KeyDecoderTest, ArrowHomeEndAndDeleteFromCsiAndSs3Sequences) {
  KeyDecoder decoder;
  EXPECT_EQ(decoder.feed("\x1b[A\x1b[B\x1b[C\x1b[D\x1bOH\x1bOF\x1b[1~\x1b[4~\x1b[3~\x1b[1;5C"),
            (std::vector<Key>{kind(Key::Kind::kUp), kind(Key::Kind::kDown), kind(Key::Kind::kRight),
                              kind(Key::Kind::kLeft), kind(Key::Kind::kHome), kind(Key::Kind::kEnd),
                              kind(Key::Kind::kHome), kind(Key::Kind::kEnd), kind(Key::Kind::kDelete),
                              kind(Key::Kind::kRight)}));
  EXPECT_FALSE(decoder.escape_pending());
}

TEST(KeyDecoderTest, ALoneEscapeWaitsAndBecomesTheEscKeyWhenFlushed) {
  KeyDecoder decoder;
  EXPECT_TRUE(decoder.feed("\x1b").empty());
  EXPECT_TRUE(decoder.escape_pending());
  EXPECT_EQ(decoder.flush(), (std::vector<Key>{kind(Key::Kind::kEscape)}));
  EXPECT_FALSE(decoder.escape_pending());
  EXPECT_TRUE(decoder.flush().empty());
}

TEST(KeyDecoderTest, AnEscapeSequenceSplitAcrossReadsIsOneKeyNotEsc) {
  KeyDecoder decoder;
  EXPECT_TRUE(decoder.feed("\x1b").empty());
  EXPECT_TRUE(decoder.feed("[").empty());
  EXPECT_EQ(decoder.feed("D"), (std::vector<Key>{kind(Key::Kind::kLeft)}));
}

TEST(KeyDecoderTest, EscapeFollowedByAnOrdinaryByteIsEscThenThatKey) {
  KeyDecoder decoder;
  EXPECT_EQ(decoder.feed("\x1by"), (std::vector<Key>{kind(Key::Kind::kEscape), text("y")}));
  EXPECT_EQ(decoder.feed("\x1b\x1b"), (std::vector<Key>{kind(Key::Kind::kEscape)}));
  EXPECT_EQ(decoder.flush(), (std::vector<Key>{kind(Key::Kind::kEscape)}));
}

TEST(KeyDecoderTest, APartialSequenceIsDroppedWhenFlushed) {
  KeyDecoder decoder;
  EXPECT_TRUE(decoder.feed("\x1b[1;").empty());
  EXPECT_TRUE(decoder.flush().empty());
  EXPECT_EQ(decoder.feed("a"), (std::vector<Key>{text("a")}));
}

TEST(KeyDecoderTest, UnknownSequencesAndInvalidBytesAreDroppedNotTyped) {
  KeyDecoder decoder;
  EXPECT_EQ(decoder.feed("\x1b[200~a\xFF\xC3(b\x1b[Z"), (std::vector<Key>{text("a"), text("("), text("b")}));
}

}  // namespace
}  // namespace keel::cli
