#include "cli/chat_line_editor.h"

#include <gtest/gtest.h>

namespace keel::cli {
namespace {

TEST(LineEditorTest, InsertsAtTheCursorAndMovesOverWholeCharacters) {
  LineEditor editor;
  editor.insert("a\xC3\xA9");  // "aé"
  editor.move_left();
  EXPECT_EQ(editor.cursor(), 1u);
  editor.insert("\xE6\x97\xA5");  // 日
  EXPECT_EQ(editor.text(), "a\xE6\x97\xA5\xC3\xA9");
  editor.move_right();
  EXPECT_EQ(editor.cursor(), editor.text().size());
  editor.move_right();
  EXPECT_EQ(editor.cursor(), editor.text().size());
  editor.home();
  editor.move_left();
  EXPECT_EQ(editor.cursor(), 0u);
}

TEST(LineEditorTest, BackspaceAndDeleteRemoveWholeCharacters) {
  LineEditor editor;
  editor.insert("x\xE6\x97\xA5y");
  editor.move_left();
  editor.backspace();
  EXPECT_EQ(editor.text(), "xy");
  editor.home();
  editor.erase_forward();
  EXPECT_EQ(editor.text(), "y");
  editor.end();
  editor.erase_forward();
  EXPECT_EQ(editor.text(), "y");
  editor.backspace();
  editor.backspace();
  EXPECT_TRUE(editor.empty());
}

TEST(LineEditorTest, KillKeysDeleteToStartToEndAndTheWordBefore) {
  LineEditor editor;
  editor.insert("write the  file now");
  editor.apply(Key::control('w'));
  EXPECT_EQ(editor.text(), "write the  file ");
  editor.apply(Key::control('w'));
  EXPECT_EQ(editor.text(), "write the  ");
  editor.apply(Key::control('a'));
  editor.move_right();
  editor.apply(Key::control('k'));
  EXPECT_EQ(editor.text(), "w");
  editor.insert("xyz");
  editor.move_left();
  editor.apply(Key::control('u'));
  EXPECT_EQ(editor.text(), "z");
  EXPECT_EQ(editor.cursor(), 0u);
}

TEST(LineEditorTest, TakeReturnsTheTextAndLeavesTheLineEmpty) {
  LineEditor editor;
  editor.insert("hello");
  EXPECT_EQ(editor.take(), "hello");
  EXPECT_TRUE(editor.empty());
  EXPECT_EQ(editor.cursor(), 0u);
}

TEST(LineEditorTest, KeysThatDoNotEditAreLeftToTheCaller) {
  LineEditor editor;
  editor.insert("abc");
  for (const Key& key : {Key::of(Key::Kind::kEnter), Key::of(Key::Kind::kTab), Key::of(Key::Kind::kEscape),
                         Key::of(Key::Kind::kUp), Key::control('c'), Key::control('d')}) {
    EXPECT_FALSE(editor.apply(key));
  }
  EXPECT_EQ(editor.text(), "abc");
  EXPECT_TRUE(editor.apply(Key::character("d")));
  EXPECT_TRUE(editor.apply(Key::of(Key::Kind::kLeft)));
  EXPECT_TRUE(editor.apply(Key::of(Key::Kind::kBackspace)));
  EXPECT_EQ(editor.text(), "abd");
}

}  // namespace
}  // namespace keel::cli
