#include "cli/chat_screen.h"

#include <gtest/gtest.h>

#include "cli/chat_virtual_terminal.h"

namespace keel::cli {
namespace {

// A screen drawn on an emulated terminal of the same width.
struct Drawn {
  explicit Drawn(int columns, int rows = 12, bool color = false)
      : screen(color, columns), terminal(columns, rows) {}
  void frame() { terminal.feed(screen.frame()); }
  void print(std::string_view text) {
    screen.print(text);
    frame();
  }
  ChatScreen screen;
  VirtualTerminal terminal;
};

TEST(DisplayWidthTest, CountsCellsNotBytesAndSkipsEscapeSequences) {
  EXPECT_EQ(display_width("abc"), 3u);
  EXPECT_EQ(display_width("\xE6\x97\xA5\xE6\x9C\xAC"), 4u);  // 日本: two wide characters
  EXPECT_EQ(display_width("e\xCC\x81"), 1u);                 // e + combining acute
  EXPECT_EQ(display_width("\x1b[2mdim\x1b[0m"), 3u);
  EXPECT_EQ(display_width("\xE2\x80\x94"), 1u);  // an em dash
}

TEST(ChatScreenTest, CompletedOutputScrollsAboveTheStatusAndInputLines) {
  Drawn d(40);
  d.screen.set_status("idle");
  d.screen.set_input("> ", "ab", 2);
  d.print("hello\nworld\n");
  EXPECT_EQ(d.terminal.text(), "hello\nworld\nidle\n> ab\n");
  EXPECT_EQ(d.terminal.cursor_row(), 3);
  EXPECT_EQ(d.terminal.cursor_column(), 4);
}

TEST(ChatScreenTest, AStreamedLineGrowsInPlaceAboveTheInputLine) {
  Drawn d(40);
  d.screen.set_input("> ", "", 0);
  d.print("Hel");
  EXPECT_EQ(d.terminal.text(), "Hel\n>\n");
  d.print("lo wor");
  d.screen.set_input("> ", "ty", 2);  // typing while the reply streams
  d.frame();
  d.print("ld\nnext");
  EXPECT_EQ(d.terminal.text(), "Hello world\nnext\n> ty\n");
}

TEST(ChatScreenTest, NothingIsWrittenWhenNothingChanged) {
  Drawn d(40);
  d.screen.set_input("> ", "x", 1);
  d.frame();
  EXPECT_EQ(d.screen.frame(), "");
  d.screen.set_input("> ", "x", 1);
  EXPECT_EQ(d.screen.frame(), "");
  d.screen.print("");
  EXPECT_EQ(d.screen.frame(), "");
}

TEST(ChatScreenTest, ALongStreamedLineBreaksBeforeTheLastColumnSoNoRowWraps) {
  Drawn d(20);
  d.screen.set_input("> ", "", 0);
  for (int i = 0; i < 5; ++i) d.print(std::string(10, static_cast<char>('a' + i)));
  d.print("\n");
  const std::string text = d.terminal.text();
  EXPECT_EQ(text, "aaaaaaaaaabbbbbbbbb\nbccccccccccdddddddd\nddeeeeeeeeee\n>\n")
      << "a row holds at most 19 cells";
}

TEST(ChatScreenTest, OutputStaysInOrderAndWholeWhileTheTerminalScrolls) {
  Drawn d(30, 6);
  d.screen.set_status("turn running");
  std::string expected;
  for (int i = 0; i < 40; ++i) {
    const std::string line = "line " + std::to_string(i);
    d.print(line.substr(0, 3));
    d.screen.set_input("> ", std::string(static_cast<size_t>(i % 7), 'k'), static_cast<size_t>(i % 7));
    d.frame();
    d.print(line.substr(3) + "\n");
    expected += line + "\n";
  }
  EXPECT_EQ(d.terminal.text(), expected + "turn running\n> kkkk\n");
}

TEST(ChatScreenTest, TheInputLineScrollsSidewaysToKeepTheCursorOnTheRow) {
  Drawn d(20);
  std::string typed;
  for (char c = 'a'; c <= 'z'; ++c) typed += c;
  d.screen.set_input("> ", typed, typed.size());
  d.frame();
  const std::string row = d.terminal.row(d.terminal.cursor_row());
  EXPECT_LT(row.size(), 20u);
  EXPECT_EQ(row.substr(0, 2), "> ");
  EXPECT_EQ(row.back(), 'z');
  EXPECT_EQ(d.terminal.cursor_column(), static_cast<int>(row.size()));
  d.screen.set_input("> ", typed, 0);
  d.frame();
  EXPECT_EQ(d.terminal.row(d.terminal.cursor_row()), "> abcdefghijklmnopq");
  EXPECT_EQ(d.terminal.cursor_column(), 2);
}

TEST(ChatScreenTest, WideCharactersAreCountedAsTwoCells) {
  Drawn d(20);
  d.screen.set_input("> ", "", 0);
  for (int i = 0; i < 12; ++i) d.print("\xE6\x97\xA5");
  d.print("\n");
  // 9 wide characters (18 cells) fit before the last column; the tenth starts the next row.
  std::string nine;
  for (int i = 0; i < 9; ++i) nine += "\xE6\x97\xA5";
  EXPECT_EQ(d.terminal.text(), nine + "\n\xE6\x97\xA5\xE6\x97\xA5\xE6\x97\xA5\n>\n");
}

TEST(ChatScreenTest, ColoursOfAStreamedLineAreResetBeforeTheInputLine) {
  ChatScreen screen(true, 40);
  screen.set_input("> ", "", 0);
  screen.print("\x1b[2mthinking");
  const std::string bytes = screen.frame();
  const size_t prompt = bytes.rfind("> ");
  ASSERT_NE(prompt, std::string::npos);
  EXPECT_NE(bytes.rfind("\x1b[0m", prompt), std::string::npos);
  // Redrawn, the streamed line starts with its colour again.
  screen.set_input("> ", "x", 1);
  EXPECT_NE(screen.frame().find("\x1b[2mthinking"), std::string::npos);
  // A colour that spans lines is taken up again by the next streamed line.
  screen.print(" hard\nstill dim");
  EXPECT_NE(screen.frame().find("\x1b[2mstill dim\x1b[0m"), std::string::npos);
}

TEST(ChatScreenTest, CloseEndsTheStreamedLineAndErasesTheBottomArea) {
  Drawn d(40);
  d.screen.set_status("status");
  d.screen.set_input("> ", "draft", 5);
  d.print("partial");
  d.terminal.feed(d.screen.close());
  EXPECT_EQ(d.terminal.text(), "partial\n");
  EXPECT_EQ(d.terminal.cursor_row(), 1);
  EXPECT_EQ(d.terminal.cursor_column(), 0);
}

TEST(ChatScreenTest, TabsExpandAndOtherControlCharactersAreDropped) {
  Drawn d(40);
  d.screen.set_input("> ", "", 0);
  d.print("a\tb\x07\x1b[2Jc\n");
  EXPECT_EQ(d.terminal.text(), "a       bc\n>\n");
}

}  // namespace
}  // namespace keel::cli
