#include "browser/input.h"

#include <gtest/gtest.h>

#include "browser/browser_errors.h"

namespace keel::browser {
namespace {

using nlohmann::json;

KeyChord chord(std::string_view text) {
  Result<KeyChord> parsed = parse_key_chord(text);
  EXPECT_TRUE(parsed) << text << ": " << (parsed ? "" : parsed.error().to_string());
  return parsed ? *parsed : KeyChord{};
}

TEST(KeyDefinitionTest, NamedKeysCarryTheirCodeAndVirtualKeyCode) {
  struct Expected {
    const char* name;
    const char* code;
    int vk;
    const char* text;
  };
  for (const Expected& e :
       {Expected{"Enter", "Enter", 13, "\r"}, Expected{"Tab", "Tab", 9, ""},
        Expected{"Escape", "Escape", 27, ""}, Expected{"Backspace", "Backspace", 8, ""},
        Expected{"Delete", "Delete", 46, ""}, Expected{"Home", "Home", 36, ""},
        Expected{"End", "End", 35, ""}, Expected{"PageUp", "PageUp", 33, ""},
        Expected{"PageDown", "PageDown", 34, ""}, Expected{"ArrowUp", "ArrowUp", 38, ""},
        Expected{"ArrowDown", "ArrowDown", 40, ""}, Expected{"ArrowLeft", "ArrowLeft", 37, ""},
        Expected{"ArrowRight", "ArrowRight", 39, ""}, Expected{"F1", "F1", 112, ""},
        Expected{"F12", "F12", 123, ""}, Expected{"Insert", "Insert", 45, ""}}) {
    const auto key = key_definition(e.name);
    ASSERT_TRUE(key) << e.name;
    EXPECT_EQ(key->key, e.name);
    EXPECT_EQ(key->code, e.code);
    EXPECT_EQ(key->windows_virtual_key_code, e.vk) << e.name;
    EXPECT_EQ(key->text, e.text) << e.name;
    EXPECT_EQ(key->modifier, 0) << e.name;
  }
}

TEST(KeyDefinitionTest, ModifiersAreLeftKeysWithTheirBits) {
  const auto shift = key_definition("Shift");
  ASSERT_TRUE(shift);
  EXPECT_EQ(shift->code, "ShiftLeft");
  EXPECT_EQ(shift->windows_virtual_key_code, 16);
  EXPECT_EQ(shift->modifier, kModifierShift);
  EXPECT_EQ(shift->location, 1);
  EXPECT_EQ(key_definition("Control")->modifier, kModifierControl);
  EXPECT_EQ(key_definition("Alt")->modifier, kModifierAlt);
  EXPECT_EQ(key_definition("Meta")->modifier, kModifierMeta);
  EXPECT_EQ(key_definition("Meta")->code, "MetaLeft");
}

TEST(KeyDefinitionTest, PrintableCharactersMapToTheirPhysicalKey) {
  const auto a = key_definition("a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->key, "a");
  EXPECT_EQ(a->code, "KeyA");
  EXPECT_EQ(a->windows_virtual_key_code, 65);
  EXPECT_EQ(a->text, "a");
  const auto upper = key_definition("A");
  EXPECT_EQ(upper->key, "A");
  EXPECT_EQ(upper->code, "KeyA");
  const auto bang = key_definition("!");
  EXPECT_EQ(bang->code, "Digit1");
  EXPECT_EQ(bang->windows_virtual_key_code, 49);
  const auto question = key_definition("?");
  EXPECT_EQ(question->code, "Slash");
  EXPECT_EQ(question->windows_virtual_key_code, 191);
  const auto space = key_definition(" ");
  EXPECT_EQ(space->code, "Space");
  EXPECT_EQ(space->text, " ");
  EXPECT_EQ(key_definition("7")->code, "Digit7");
  EXPECT_EQ(key_definition("\"")->code, "Quote");
  EXPECT_EQ(key_definition("\\")->code, "Backslash");
}

TEST(KeyDefinitionTest, EveryPrintableAsciiCharacterIsAKey) {
  for (char c = 0x20; c < 0x7f; ++c) {
    const auto key = key_definition(std::string(1, c));
    ASSERT_TRUE(key) << "'" << c << "'";
    EXPECT_EQ(key->text, std::string(1, c));
    EXPECT_GT(key->windows_virtual_key_code, 0);
  }
}

TEST(KeyDefinitionTest, AliasesAndCaseOfNamedKeys) {
  EXPECT_EQ(key_definition("esc")->key, "Escape");
  EXPECT_EQ(key_definition("ENTER")->key, "Enter");
  EXPECT_EQ(key_definition("Return")->key, "Enter");
  EXPECT_EQ(key_definition("Space")->key, " ");
  EXPECT_EQ(key_definition("up")->key, "ArrowUp");
  EXPECT_EQ(key_definition("Ctrl")->key, "Control");
  EXPECT_EQ(key_definition("Cmd")->key, "Meta");
  EXPECT_EQ(key_definition("f5")->key, "F5");
}

TEST(KeyDefinitionTest, UnknownKeysAreCodedErrorsThatSayWhatIsAccepted) {
  for (const char* name : {"Enterr", "F13", "", "é", "😀", "Hyper", "ab", "\x01"}) {
    const auto key = key_definition(name);
    ASSERT_FALSE(key) << name;
    EXPECT_EQ(key.error().code(), codes::kBrowserUnknownKey);
    EXPECT_NE(key.error().message().find("Control+A"), std::string::npos);
  }
}

TEST(KeyChordTest, ParsesModifiersAndTheKey) {
  const KeyChord select_all = chord("Control+A");
  ASSERT_EQ(select_all.modifiers.size(), 1u);
  EXPECT_EQ(select_all.modifiers[0].key, "Control");
  EXPECT_EQ(select_all.key.key, "a") << "Control+A is the A key without Shift";
  EXPECT_EQ(select_all.key.code, "KeyA");
  EXPECT_EQ(select_all.modifier_mask, kModifierControl);

  const KeyChord back_tab = chord("Shift+Tab");
  EXPECT_EQ(back_tab.key.key, "Tab");
  EXPECT_EQ(back_tab.modifier_mask, kModifierShift);

  const KeyChord word_left = chord("Control+Shift+ArrowLeft");
  ASSERT_EQ(word_left.modifiers.size(), 2u);
  EXPECT_EQ(word_left.modifier_mask, kModifierControl | kModifierShift);
  EXPECT_EQ(word_left.key.key, "ArrowLeft");

  const KeyChord plus = chord("Control++");
  EXPECT_EQ(plus.key.key, "+");
  EXPECT_EQ(plus.key.code, "Equal");
  EXPECT_EQ(plus.modifier_mask, kModifierControl | kModifierShift) << "'+' is Shift+= on a US keyboard";
  EXPECT_EQ(chord("+").key.key, "+");
}

TEST(KeyChordTest, ShiftGivesTheShiftedCharacterAndShiftedCharactersImplyShift) {
  EXPECT_EQ(chord("Shift+a").key.key, "A");
  EXPECT_EQ(chord("Shift+1").key.key, "!");
  EXPECT_EQ(chord("Shift+A").key.key, "A");
  const KeyChord upper = chord("A");
  EXPECT_EQ(upper.key.key, "A");
  EXPECT_EQ(upper.modifier_mask, kModifierShift);
  EXPECT_TRUE(upper.modifiers.empty()) << "no Shift key event, only the flag";
  EXPECT_EQ(chord("a").modifier_mask, 0);
  EXPECT_EQ(chord("?").modifier_mask, kModifierShift);
}

TEST(KeyChordTest, RefusesBrokenChords) {
  for (const char* text : {"", "Control+", "+A", "Control++A", "A+Control", "Enter+A", "Control+Control+A",
                           "Shift+Shift", "Hyper+A", "Control+Enterr", "Control+é"}) {
    const Result<KeyChord> parsed = parse_key_chord(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_EQ(parsed.error().code(), codes::kBrowserUnknownKey) << text;
  }
}

TEST(KeyEventsTest, EnterPressTypesACarriageReturn) {
  const std::vector<json> events = key_press_events(chord("Enter"));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], json({{"type", "keyDown"},
                             {"modifiers", 0},
                             {"key", "Enter"},
                             {"code", "Enter"},
                             {"windowsVirtualKeyCode", 13},
                             {"nativeVirtualKeyCode", 13},
                             {"location", 0},
                             {"text", "\r"},
                             {"unmodifiedText", "\r"}}));
  EXPECT_EQ(events[1], json({{"type", "keyUp"},
                             {"modifiers", 0},
                             {"key", "Enter"},
                             {"code", "Enter"},
                             {"windowsVirtualKeyCode", 13},
                             {"nativeVirtualKeyCode", 13},
                             {"location", 0}}));
}

TEST(KeyEventsTest, KeysWithoutTextAreRawKeyDowns) {
  const std::vector<json> events = key_press_events(chord("Tab"));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["type"], "rawKeyDown");
  EXPECT_FALSE(events[0].contains("text"));
}

TEST(KeyEventsTest, AChordPressesModifiersInOrderAndReleasesThemInReverse) {
  const std::vector<json> events = key_press_events(chord("Control+Shift+Z"));
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0]["key"], "Control");
  EXPECT_EQ(events[0]["type"], "rawKeyDown");
  EXPECT_EQ(events[0]["modifiers"], kModifierControl);
  EXPECT_EQ(events[1]["key"], "Shift");
  EXPECT_EQ(events[1]["modifiers"], kModifierControl | kModifierShift);
  EXPECT_EQ(events[2]["key"], "Z");
  EXPECT_EQ(events[2]["type"], "rawKeyDown") << "no text with Control held";
  EXPECT_FALSE(events[2].contains("text"));
  EXPECT_EQ(events[2]["modifiers"], kModifierControl | kModifierShift);
  EXPECT_EQ(events[3]["type"], "keyUp");
  EXPECT_EQ(events[3]["key"], "Z");
  EXPECT_EQ(events[4]["key"], "Shift");
  EXPECT_EQ(events[4]["modifiers"], kModifierControl);
  EXPECT_EQ(events[5]["key"], "Control");
  EXPECT_EQ(events[5]["modifiers"], 0);
}

TEST(KeyEventsTest, ShiftedCharactersStillTypeText) {
  const std::vector<json> events = key_press_events(chord("Shift+a"));
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[1]["type"], "keyDown");
  EXPECT_EQ(events[1]["text"], "A");
  EXPECT_EQ(events[1]["modifiers"], kModifierShift);
}

TEST(KeyEventsTest, DownAndUpEventsTogetherAreThePress) {
  const KeyChord c = chord("Alt+F4");
  std::vector<json> joined = key_down_events(c);
  for (json& e : key_up_events(c)) joined.push_back(std::move(e));
  EXPECT_EQ(joined, key_press_events(c));
}

TEST(HeldInputTest, NothingIsHeldAfterACompletePress) {
  HeldInput held;
  for (const json& e : key_press_events(chord("Control+Shift+ArrowLeft")))
    held.note("Input.dispatchKeyEvent", e);
  EXPECT_TRUE(held.empty());
  EXPECT_TRUE(held.release_events().empty());
}

TEST(HeldInputTest, ReleasesHeldKeysInReverseOrderWithTheRemainingModifiers) {
  HeldInput held;
  for (const json& e : key_down_events(chord("Control+Shift+a"))) held.note("Input.dispatchKeyEvent", e);
  EXPECT_FALSE(held.empty());
  EXPECT_EQ(held.modifiers(), kModifierControl | kModifierShift);
  const std::vector<json> release = held.release_events();
  ASSERT_EQ(release.size(), 3u);
  for (const json& e : release) {
    EXPECT_EQ(e["method"], "Input.dispatchKeyEvent");
    EXPECT_EQ(e["params"]["type"], "keyUp");
  }
  EXPECT_EQ(release[0]["params"]["code"], "KeyA");
  EXPECT_EQ(release[0]["params"]["key"], "A");
  EXPECT_EQ(release[0]["params"]["windowsVirtualKeyCode"], 65);
  EXPECT_EQ(release[0]["params"]["modifiers"], kModifierControl | kModifierShift);
  EXPECT_EQ(release[1]["params"]["code"], "ShiftLeft");
  EXPECT_EQ(release[1]["params"]["modifiers"], kModifierControl);
  EXPECT_EQ(release[2]["params"]["code"], "ControlLeft");
  EXPECT_EQ(release[2]["params"]["modifiers"], 0);
  held.clear();
  EXPECT_TRUE(held.empty());
}

TEST(HeldInputTest, AKeyReleasedUnderAnotherShiftStateIsReleased) {
  HeldInput held;
  held.note("Input.dispatchKeyEvent", key_down_events(chord("a"))[0]);
  for (const json& e : key_down_events(chord("Shift"))) held.note("Input.dispatchKeyEvent", e);
  // The 'a' key goes up while Shift is held: its key is "A" now, its code is still KeyA.
  held.note("Input.dispatchKeyEvent", key_up_events(chord("Shift+a"))[0]);
  const std::vector<json> release = held.release_events();
  ASSERT_EQ(release.size(), 1u);
  EXPECT_EQ(release[0]["params"]["code"], "ShiftLeft");
}

TEST(HeldInputTest, AutoRepeatDoesNotHoldAKeyTwice) {
  HeldInput held;
  const json down = key_down_events(chord("ArrowDown"))[0];
  held.note("Input.dispatchKeyEvent", down);
  held.note("Input.dispatchKeyEvent", down);
  EXPECT_EQ(held.release_events().size(), 1u);
}

TEST(HeldInputTest, ReleasesPressedMouseButtonsAtTheLastPositionBeforeKeys) {
  HeldInput held;
  for (const json& e : key_down_events(chord("Shift"))) held.note("Input.dispatchKeyEvent", e);
  held.note("Input.dispatchMouseEvent", {{"type", "mouseMoved"}, {"x", 10}, {"y", 20}, {"button", "none"}});
  held.note("Input.dispatchMouseEvent", {{"type", "mousePressed"}, {"x", 10}, {"y", 20}, {"button", "left"}});
  held.note("Input.dispatchMouseEvent",
            {{"type", "mousePressed"}, {"x", 10}, {"y", 20}, {"button", "right"}});
  held.note("Input.dispatchMouseEvent",
            {{"type", "mouseMoved"}, {"x", 250.5}, {"y", 99}, {"button", "left"}});
  const std::vector<json> release = held.release_events();
  ASSERT_EQ(release.size(), 3u);
  EXPECT_EQ(release[0]["method"], "Input.dispatchMouseEvent");
  EXPECT_EQ(release[0]["params"]["type"], "mouseReleased");
  EXPECT_EQ(release[0]["params"]["button"], "right");
  EXPECT_EQ(release[0]["params"]["buttons"], 1) << "the left button is still down";
  EXPECT_EQ(release[0]["params"]["x"], 250.5);
  EXPECT_EQ(release[0]["params"]["y"], 99);
  EXPECT_EQ(release[0]["params"]["modifiers"], kModifierShift);
  EXPECT_EQ(release[1]["params"]["button"], "left");
  EXPECT_EQ(release[1]["params"]["buttons"], 0);
  EXPECT_EQ(release[2]["method"], "Input.dispatchKeyEvent");
  EXPECT_EQ(release[2]["params"]["key"], "Shift");
}

TEST(HeldInputTest, AReleasedButtonIsNotReleasedAgain) {
  HeldInput held;
  held.note("Input.dispatchMouseEvent", {{"type", "mousePressed"}, {"x", 1}, {"y", 2}, {"button", "left"}});
  held.note("Input.dispatchMouseEvent", {{"type", "mouseReleased"}, {"x", 1}, {"y", 2}, {"button", "left"}});
  EXPECT_TRUE(held.empty());
}

TEST(HeldInputTest, IgnoresOtherMethodsAndMalformedParams) {
  HeldInput held;
  held.note("Input.insertText", {{"text", "hello"}});
  held.note("Input.dispatchKeyEvent", json::array({1, 2}));
  held.note("Input.dispatchKeyEvent", {{"type", "keyDown"}});
  held.note("Input.dispatchKeyEvent", {{"type", 5}, {"code", 7}});
  held.note("Input.dispatchMouseEvent", {{"type", "mousePressed"}, {"button", "sideways"}});
  held.note("Input.dispatchMouseEvent", {{"type", "mousePressed"}, {"x", "1"}, {"button", "none"}});
  held.note("Input.dispatchMouseEvent", "not an object");
  EXPECT_TRUE(held.empty());
  EXPECT_TRUE(held.release_events().empty());
}

}  // namespace
}  // namespace keel::browser
