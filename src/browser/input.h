// browser/input.h — trusted (L2) keyboard and mouse input: the key names a model may use, the
// `Input.dispatchKeyEvent` parameters each one becomes, and what is still held down when a call is
// interrupted (issue 17 plan §1.8, §2 "L2 input").
//
// Keys. A key is named as the DOM's KeyboardEvent.key names it ("Enter", "Tab", "Escape", "ArrowUp",
// "Backspace", "Delete", "Home", "End", "PageUp", "PageDown", "Insert", "F1".."F12", "Shift", "Control",
// "Alt", "Meta", a printable ASCII character such as "a", "A", "7", "?" or " "), with a few aliases
// ("Esc", "Return", "Space", "Del", "Up", "Down", "Left", "Right", "Ctrl", "Cmd", "Command", "Option");
// named keys are matched without regard to case, single characters exactly. A chord joins modifiers and
// one key with '+': "Control+A", "Shift+Tab", "Control+Shift+ArrowLeft", "Control++" (the '+' key).
// Anything else is browser.unknown_key, with a message that says what is accepted (text that is not on a
// US keyboard is typed with Input.insertText, not as keys).
//
// Events follow a US keyboard on Linux: `code` and `windowsVirtualKeyCode` name the physical key, `key`
// the character it gives with the chord's Shift state ("Shift+a" and "A" give "A", with the Shift flag set),
// and `text` (which makes Chromium insert a character and fire keypress) is only sent when no modifier but
// Shift is held — "Control+a" selects all instead of typing "a". Enter sends "\r" as text (implicit form
// submission); Tab, Backspace, Delete, Escape and arrows send none (Chromium acts on the key itself).
//
// Held input. HeldInput watches every Input.dispatchKeyEvent / Input.dispatchMouseEvent keel sends and knows
// which keys and mouse buttons are down; release_events() gives what to send so that nothing stays pressed
// after an interrupt (mouse buttons first, at the last pointer position, then keys in the reverse order of
// their pressing). Releasing what is not pressed is harmless, so the runtime notes an event before it sends
// it.
//
// Functions are pure; HeldInput is a value owned by one tab's input session and used only on the browser's
// thread (not synchronized).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"

namespace keel::browser {

// Input.dispatchKeyEvent/dispatchMouseEvent `modifiers` bits.
inline constexpr int kModifierAlt = 1;
inline constexpr int kModifierControl = 2;
inline constexpr int kModifierMeta = 4;
inline constexpr int kModifierShift = 8;

// One key as Chromium is told about it.
struct KeyDefinition {
  std::string key;                   // KeyboardEvent.key: "Enter", "a", "A", "Shift"
  std::string code;                  // KeyboardEvent.code: "Enter", "KeyA", "ShiftLeft"
  int windows_virtual_key_code = 0;  // 13, 65, 16
  std::string text;                  // what the key types ("\r", "a", " "), "" for none
  int location = 0;                  // KeyboardEvent.location: 1 for the (left) modifier keys
  int modifier = 0;                  // the modifier bit the key sets while held (kModifier*), 0 for others

  friend bool operator==(const KeyDefinition&, const KeyDefinition&) = default;
};

// The key `name` alone (no chord): browser.unknown_key for a name the table does not know.
Result<KeyDefinition> key_definition(std::string_view name);

// A parsed chord: its modifier keys in the order written, then the key (with the chord's Shift applied).
struct KeyChord {
  std::vector<KeyDefinition> modifiers;
  KeyDefinition key;
  int modifier_mask = 0;  // the bits of `modifiers`, plus Shift for a shifted character ("A", "?")
};

// "Control+Shift+Tab" -> its keys. browser.unknown_key for an empty chord, an unknown key or modifier, a
// modifier named twice, or a non-modifier before the last '+'.
Result<KeyChord> parse_key_chord(std::string_view chord);

// The Input.dispatchKeyEvent params of pressing a chord: each modifier down (in order), the key down
// ("keyDown" with text, "rawKeyDown" without), the key up, each modifier up (in reverse order).
std::vector<nlohmann::json> key_press_events(const KeyChord& chord);
// Only the downs (to hold a chord), or only the ups (to let it go), in the same order as above.
std::vector<nlohmann::json> key_down_events(const KeyChord& chord);
std::vector<nlohmann::json> key_up_events(const KeyChord& chord);

// What is held down in one tab's input session (header comment).
class HeldInput {
 public:
  // Notes a command about to be sent. Key: "keyDown"/"rawKeyDown" holds the key named by `code` (with its
  // key, code and virtual key code, so the release names the same key), "keyUp" lets it go ("char" changes
  // nothing). Mouse: "mousePressed" holds `button`, "mouseReleased" lets it go, every event moves the
  // pointer to (x, y). Other methods, and params without the fields, change nothing.
  void note(std::string_view method, const nlohmann::json& params);

  // {method, params} pairs ({"method": "Input.dispatchMouseEvent", "params": {...}}) that release
  // everything held, in the order to send them. Empty when nothing is held.
  std::vector<nlohmann::json> release_events() const;

  // Forgets everything (after release_events() were sent, or when the session went away).
  void clear();
  bool empty() const { return keys_.empty() && buttons_.empty(); }
  int modifiers() const;  // the kModifier* bits of the held modifier keys

 private:
  struct HeldKey {
    std::string key;
    std::string code;
    int windows_virtual_key_code = 0;
    int location = 0;
    int modifier = 0;
  };
  std::vector<HeldKey> keys_;         // in the order pressed
  std::vector<std::string> buttons_;  // "left", "middle", "right", "back", "forward", in order pressed
  double x_ = 0;
  double y_ = 0;
};

}  // namespace keel::browser
