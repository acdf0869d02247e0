#include "util/terminal_text.h"

#include <gtest/gtest.h>

#include <ostream>
#include <sstream>
#include <string>
#include <thread>

namespace keel {
namespace {

using nlohmann::json;

bool has_control_bytes(const std::string& text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7F) return true;
  }
  return false;
}

TEST(TerminalTextTest, PlainTextNewlinesTabsAndOtherScriptsAreUnchanged) {
  const std::string text = "line one\n\tindented — ünïcödé, 漢字, emoji 🙂\n";
  EXPECT_EQ(terminal_safe(text), text);
}

TEST(TerminalTextTest, EscapeSequencesAreShownInCaretNotation) {
  // An OSC that sets the window title, a clear-screen and a cursor movement to the top-left corner.
  EXPECT_EQ(terminal_safe("\x1b]0;pwned\x07"), "^[]0;pwned^G");
  EXPECT_EQ(terminal_safe("\x1b[2J\x1b[H"), "^[[2J^[[H");
  EXPECT_EQ(terminal_safe("\x1b"
                          "P+q\x1b\\"),
            "^[P+q^[\\");  // DCS ... ST
  EXPECT_EQ(terminal_safe(std::string("a\0b", 3)), "a^@b");
}

TEST(TerminalTextTest, BackspaceDeleteAndALoneCarriageReturnCannotHideText) {
  EXPECT_EQ(terminal_safe("rm -rf ~\b\b\b\b\b\b\b\blist"), "rm -rf ~^H^H^H^H^H^H^H^Hlist");
  EXPECT_EQ(terminal_safe("evil\rgood"), "evil^Mgood");
  EXPECT_EQ(terminal_safe("x\x7fy"), "x^?y");
}

TEST(TerminalTextTest, TheCarriageReturnOfACrlfIsDroppedAndTheLineBreakKept) {
  EXPECT_EQ(terminal_safe("one\r\ntwo\r\n"), "one\ntwo\n");
  EXPECT_EQ(terminal_safe("one\r\ntwo", LineBreaks::kShow), "one^M^Jtwo");
}

TEST(TerminalTextTest, OneLineContextsShowTheNewline) {
  EXPECT_EQ(terminal_safe("msg\n2026-01-01 info approval: accepted", LineBreaks::kShow),
            "msg^J2026-01-01 info approval: accepted");
  EXPECT_EQ(terminal_safe("a\tb", LineBreaks::kShow), "a\tb");
}

TEST(TerminalTextTest, C1ControlsAndBidiOverridesAreShownAsCodePoints) {
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "2J"),
            "<U+009B>2J");  // CSI as a character
  EXPECT_EQ(terminal_safe("\xc2\x9d"
                          "0;t\xc2\x9c"),
            "<U+009D>0;t<U+009C>");                  // OSC ... ST
  EXPECT_EQ(terminal_safe("\xc2\x85"), "<U+0085>");  // NEL
  EXPECT_EQ(terminal_safe("access \xe2\x80\xae"
                          "resu\xe2\x80\xac"),
            "access <U+202E>resu<U+202C>");
  EXPECT_EQ(terminal_safe("\xe2\x81\xa6"
                          "x\xe2\x81\xa9"),
            "<U+2066>x<U+2069>");
  EXPECT_EQ(terminal_safe("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xad"), "<U+202A><U+202B><U+202D>");
  // Neighbours of the ranges are ordinary characters.
  EXPECT_EQ(terminal_safe("\xc2\xa0\xe2\x80\xa9\xe2\x81\xa5"), "\xc2\xa0\xe2\x80\xa9\xe2\x81\xa5");
}

TEST(TerminalTextTest, BytesThatAreNotUtf8BecomeTheReplacementCharacter) {
  // A raw 0x9B is an 8-bit CSI to a terminal that reads Latin-1.
  EXPECT_EQ(terminal_safe("\x9b"
                          "2J"),
            "\xEF\xBF\xBD"
            "2J");
  EXPECT_EQ(terminal_safe("\xc2"), "\xEF\xBF\xBD");                  // cut short
  EXPECT_EQ(terminal_safe("\xc0\x9b"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
}

TEST(TerminalTextTest, EveryByteValueLeavesNoControlAndTheResultIsStable) {
  for (int byte = 0; byte < 256; ++byte) {
    const std::string text = "<" + std::string(1, static_cast<char>(byte)) + ">";
    const std::string safe = terminal_safe(text);
    EXPECT_FALSE(has_control_bytes(safe) && byte != '\n' && byte != '\t') << "byte " << byte;
    EXPECT_EQ(terminal_safe(safe), safe) << "byte " << byte;
  }
  for (char32_t cp = 0x80; cp <= 0x9F; ++cp) {
    const std::string encoded = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    EXPECT_EQ(terminal_safe(encoded).front(), '<') << static_cast<unsigned>(cp);
  }
}

TEST(TerminalTextTest, StreamedPiecesMapLikeTheWhole) {
  const std::string whole = "a\x1b]0;t\x07 b \xe2\x80\xae c \xc2\x9b d";
  // Cut at every character boundary (not inside a multi-byte character).
  for (size_t cut = 0; cut <= whole.size(); ++cut) {
    if (cut < whole.size() && (static_cast<unsigned char>(whole[cut]) & 0xC0) == 0x80) continue;
    EXPECT_EQ(terminal_safe(whole.substr(0, cut)) + terminal_safe(whole.substr(cut)), terminal_safe(whole))
        << "cut at " << cut;
  }
}

TEST(TerminalTextTest, JsonValuesAndKeysAreMadeSafeAndOtherValuesKept) {
  const json value = {{"text", "\x1b[2Jhi"},
                      {"list", {"\x07", 1, true, nullptr}},
                      {"nested", {{"\x1b]0;k\x07", "\xe2\x80\xae"}}},
                      {"n", 2.5}};
  const json safe = terminal_safe_json(value);
  EXPECT_EQ(safe["text"], "^[[2Jhi");
  EXPECT_EQ(safe["list"], json({"^G", 1, true, nullptr}));
  EXPECT_EQ(safe["nested"], json({{"^[]0;k^G", "<U+202E>"}}));
  EXPECT_EQ(safe["n"], 2.5);
}

TEST(TerminalTextTest, TheStreambufWritesSafeTextAndJoinsACharacterCutBetweenWrites) {
  std::ostringstream target;
  {
    TerminalSafeStreambuf filter(target.rdbuf());
    std::ostream out(&filter);
    out << "keel: error: "
        << "\x1b]0;pwned\x07" << std::flush;
    EXPECT_EQ(target.str(), "keel: error: ^[]0;pwned^G");
    // U+202E written in two pieces, with a flush in between: held until whole, then shown.
    out << "\xe2\x80" << std::flush;
    EXPECT_EQ(target.str(), "keel: error: ^[]0;pwned^G");
    out << "\xae ok\n";
    EXPECT_EQ(target.str(), "keel: error: ^[]0;pwned^G<U+202E> ok\n");
    out << "cut \xc2";  // a character never finished: written as U+FFFD when the buffer goes
  }
  EXPECT_EQ(target.str(), "keel: error: ^[]0;pwned^G<U+202E> ok\ncut \xEF\xBF\xBD");
}

// std::cerr is written by a signal watcher thread and the main thread at once (cli/signals.h).
TEST(TerminalTextTest, TheStreambufTakesWritesFromSeveralThreads) {
  std::ostringstream target;
  {
    TerminalSafeStreambuf filter(target.rdbuf());
    const auto writer = [&filter](char letter) {
      std::ostream out(&filter);
      for (int i = 0; i < 200; ++i) out << std::string(8, letter) << "\x1b\n" << std::flush;
    };
    std::thread a(writer, 'a');
    std::thread b(writer, 'b');
    a.join();
    b.join();
  }
  const std::string text = target.str();
  EXPECT_EQ(text.size(), 2u * 200u * 11u);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace keel
