#include "browser/input.h"

#include <algorithm>
#include <array>
#include <optional>

#include "browser/browser_errors.h"
#include "util/utf8.h"

namespace keel::browser {
namespace {

using nlohmann::json;

struct NamedKey {
  std::string_view name;
  std::string_view code;
  int windows_virtual_key_code;
  std::string_view text;
  int modifier;
};

// The keys with names (KeyboardEvent.key values of a US keyboard; virtual key codes as Windows numbers them,
// which is what Chromium expects in windowsVirtualKeyCode on every platform).
constexpr std::array<NamedKey, 30> kNamedKeys{{
    {"Enter", "Enter", 13, "\r", 0},
    {"Tab", "Tab", 9, "", 0},
    {"Escape", "Escape", 27, "", 0},
    {"Backspace", "Backspace", 8, "", 0},
    {"Delete", "Delete", 46, "", 0},
    {"Insert", "Insert", 45, "", 0},
    {"Home", "Home", 36, "", 0},
    {"End", "End", 35, "", 0},
    {"PageUp", "PageUp", 33, "", 0},
    {"PageDown", "PageDown", 34, "", 0},
    {"ArrowUp", "ArrowUp", 38, "", 0},
    {"ArrowDown", "ArrowDown", 40, "", 0},
    {"ArrowLeft", "ArrowLeft", 37, "", 0},
    {"ArrowRight", "ArrowRight", 39, "", 0},
    {"F1", "F1", 112, "", 0},
    {"F2", "F2", 113, "", 0},
    {"F3", "F3", 114, "", 0},
    {"F4", "F4", 115, "", 0},
    {"F5", "F5", 116, "", 0},
    {"F6", "F6", 117, "", 0},
    {"F7", "F7", 118, "", 0},
    {"F8", "F8", 119, "", 0},
    {"F9", "F9", 120, "", 0},
    {"F10", "F10", 121, "", 0},
    {"F11", "F11", 122, "", 0},
    {"F12", "F12", 123, "", 0},
    {"Shift", "ShiftLeft", 16, "", kModifierShift},
    {"Control", "ControlLeft", 17, "", kModifierControl},
    {"Alt", "AltLeft", 18, "", kModifierAlt},
    {"Meta", "MetaLeft", 91, "", kModifierMeta},
}};

struct Alias {
  std::string_view alias;
  std::string_view name;
};
constexpr std::array<Alias, 13> kAliases{{
    {"Esc", "Escape"},
    {"Return", "Enter"},
    {"Space", " "},
    {"Del", "Delete"},
    {"Up", "ArrowUp"},
    {"Down", "ArrowDown"},
    {"Left", "ArrowLeft"},
    {"Right", "ArrowRight"},
    {"Ctrl", "Control"},
    {"Cmd", "Meta"},
    {"Command", "Meta"},
    {"Option", "Alt"},
    {"Spacebar", " "},
}};

// A key that types a character: what it gives without and with Shift.
struct PrintableKey {
  std::string_view code;
  int windows_virtual_key_code;
  char plain;
  char shifted;
};
constexpr std::array<PrintableKey, 12> kPunctuation{{
    {"Space", 32, ' ', ' '},
    {"Minus", 189, '-', '_'},
    {"Equal", 187, '=', '+'},
    {"BracketLeft", 219, '[', '{'},
    {"BracketRight", 221, ']', '}'},
    {"Backslash", 220, '\\', '|'},
    {"Semicolon", 186, ';', ':'},
    {"Quote", 222, '\'', '"'},
    {"Backquote", 192, '`', '~'},
    {"Comma", 188, ',', '<'},
    {"Period", 190, '.', '>'},
    {"Slash", 191, '/', '?'},
}};
constexpr std::string_view kShiftedDigits = ")!@#$%^&*(";

struct Printable {
  KeyDefinition plain;
  KeyDefinition shifted;
  bool is_shifted = false;  // the character asked for is the shifted one
};

KeyDefinition printable_definition(std::string code, int virtual_key_code, char c) {
  KeyDefinition definition;
  definition.key = std::string(1, c);
  definition.code = std::move(code);
  definition.windows_virtual_key_code = virtual_key_code;
  definition.text = definition.key;
  return definition;
}

std::optional<Printable> printable(char c) {
  const auto both = [&](std::string code, int vk, char plain, char shifted) {
    return Printable{printable_definition(code, vk, plain),
                     printable_definition(std::move(code), vk, shifted), c == shifted && c != plain};
  };
  if (c >= 'a' && c <= 'z') {
    const char upper = static_cast<char>(c - 'a' + 'A');
    return both(std::string("Key") + upper, upper, c, upper);
  }
  if (c >= 'A' && c <= 'Z') return both(std::string("Key") + c, c, static_cast<char>(c - 'A' + 'a'), c);
  if (c >= '0' && c <= '9') return both(std::string("Digit") + c, c, c, kShiftedDigits[c - '0']);
  for (size_t d = 0; d < kShiftedDigits.size(); ++d) {
    if (kShiftedDigits[d] == c) {
      const char digit = static_cast<char>('0' + d);
      return both(std::string("Digit") + digit, digit, digit, c);
    }
  }
  for (const PrintableKey& key : kPunctuation) {
    if (key.plain == c || key.shifted == c) {
      return both(std::string(key.code), key.windows_virtual_key_code, key.plain, key.shifted);
    }
  }
  return std::nullopt;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string quoted_name(std::string_view name) {
  const std::string text = utf8_sanitized(std::string(name.substr(0, utf8_prefix_length(name, 40))));
  return "\"" + text + (name.size() > 40 ? "...\"" : "\"");
}

std::unexpected<Error> unknown_key(std::string_view chord, std::string_view problem) {
  return fail(
      codes::kBrowserUnknownKey,
      "the key " + quoted_name(chord) + " is not one keel can press: " + std::string(problem) +
          ". Use a key name (Enter, Tab, Escape, Backspace, Delete, ArrowUp/ArrowDown/ArrowLeft/"
          "ArrowRight, Home, End, PageUp, PageDown, Insert, F1-F12), a modifier (Shift, Control, Alt, "
          "Meta) or one printable ASCII character, joined with '+' as in \"Control+A\"; type other "
          "text as text, not as keys");
}

KeyDefinition named_definition(const NamedKey& named) {
  KeyDefinition definition;
  definition.key = std::string(named.name);
  definition.code = std::string(named.code);
  definition.windows_virtual_key_code = named.windows_virtual_key_code;
  definition.text = std::string(named.text);
  definition.modifier = named.modifier;
  definition.location = named.modifier != 0 ? 1 : 0;
  return definition;
}

// The key `name` names and whether its character is a shifted one; nullopt when it names none.
std::optional<std::pair<KeyDefinition, bool>> lookup(std::string_view name) {
  for (const Alias& alias : kAliases) {
    if (equal_ignoring_case(name, alias.alias)) {
      name = alias.name;
      break;
    }
  }
  if (name.size() == 1) {
    const auto p = printable(name[0]);
    if (!p) return std::nullopt;
    return std::pair(p->is_shifted ? p->shifted : p->plain, p->is_shifted);
  }
  for (const NamedKey& named : kNamedKeys) {
    if (equal_ignoring_case(name, named.name)) return std::pair(named_definition(named), false);
  }
  return std::nullopt;
}

json key_event(std::string_view type, const KeyDefinition& key, int modifiers, bool with_text) {
  json params = {{"type", type},
                 {"modifiers", modifiers},
                 {"key", key.key},
                 {"code", key.code},
                 {"windowsVirtualKeyCode", key.windows_virtual_key_code},
                 {"nativeVirtualKeyCode", key.windows_virtual_key_code},
                 {"location", key.location}};
  if (with_text && !key.text.empty()) {
    params["text"] = key.text;
    params["unmodifiedText"] = key.text;
  }
  return params;
}

// Text is typed only when no modifier but Shift is held (header comment).
bool types_text(const KeyChord& chord) {
  return !chord.key.text.empty() && (chord.modifier_mask & ~kModifierShift) == 0;
}

int button_bit(std::string_view button) {
  if (button == "left") return 1;
  if (button == "right") return 2;
  if (button == "middle") return 4;
  if (button == "back") return 8;
  if (button == "forward") return 16;
  return 0;
}

}  // namespace

Result<KeyDefinition> key_definition(std::string_view name) {
  const auto found = lookup(name);
  if (!found) return unknown_key(name, "no such key");
  return found->first;
}

Result<KeyChord> parse_key_chord(std::string_view chord) {
  if (chord.empty()) return unknown_key(chord, "it is empty");
  std::vector<std::string_view> parts;
  std::string_view modifiers_part = chord;
  std::optional<std::string_view> plus_key;
  if (chord == "+") {
    modifiers_part = "";
    plus_key = "+";
  } else if (chord.ends_with("++")) {
    modifiers_part = chord.substr(0, chord.size() - 2);
    plus_key = "+";
  }
  if (!modifiers_part.empty()) {
    size_t start = 0;
    while (true) {
      const size_t plus = modifiers_part.find('+', start);
      const std::string_view part =
          modifiers_part.substr(start, plus == std::string_view::npos ? plus : plus - start);
      if (part.empty()) return unknown_key(chord, "it has an empty part between '+' signs");
      parts.push_back(part);
      if (plus == std::string_view::npos) break;
      start = plus + 1;
    }
  }
  if (plus_key) parts.push_back(*plus_key);

  KeyChord result;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const auto found = lookup(parts[i]);
    if (!found) return unknown_key(chord, quoted_name(parts[i]) + " is not a key");
    if (found->first.modifier == 0) {
      return unknown_key(chord, quoted_name(parts[i]) + " is not a modifier (Shift, Control, Alt, Meta)");
    }
    if ((result.modifier_mask & found->first.modifier) != 0) {
      return unknown_key(chord, quoted_name(parts[i]) + " is named twice");
    }
    result.modifier_mask |= found->first.modifier;
    result.modifiers.push_back(found->first);
  }
  const auto found = lookup(parts.back());
  if (!found) return unknown_key(chord, quoted_name(parts.back()) + " is not a key");
  auto [key, shifted] = *found;
  if ((result.modifier_mask & key.modifier) != 0) {
    return unknown_key(chord, quoted_name(parts.back()) + " is named twice");
  }
  if (key.key.size() == 1) {
    // Only printable keys have one-character names, so printable() knows this one.
    const auto p = printable(key.key[0]);
    const bool letter = key.code.starts_with("Key");
    if ((result.modifier_mask & kModifierShift) != 0) {
      key = p->shifted;  // "Shift+a" types "A", "Shift+1" types "!"
    } else if (letter && result.modifier_mask != 0) {
      key = p->plain;  // "Control+A" is the A key with Control, as on a keyboard: key "a"
    } else if (shifted) {
      result.modifier_mask |= kModifierShift;  // "A" and "?" are typed with Shift held
    }
  }
  result.key = std::move(key);
  return result;
}

std::vector<json> key_down_events(const KeyChord& chord) {
  std::vector<json> events;
  int held = 0;
  for (const KeyDefinition& modifier : chord.modifiers) {
    held |= modifier.modifier;
    events.push_back(key_event("rawKeyDown", modifier, held, false));
  }
  const bool text = types_text(chord);
  events.push_back(
      key_event(text ? "keyDown" : "rawKeyDown", chord.key, chord.modifier_mask | chord.key.modifier, text));
  return events;
}

std::vector<json> key_up_events(const KeyChord& chord) {
  std::vector<json> events;
  events.push_back(key_event("keyUp", chord.key, chord.modifier_mask, false));
  int held = 0;
  for (const KeyDefinition& modifier : chord.modifiers) held |= modifier.modifier;
  for (auto it = chord.modifiers.rbegin(); it != chord.modifiers.rend(); ++it) {
    held &= ~it->modifier;
    events.push_back(key_event("keyUp", *it, held, false));
  }
  return events;
}

std::vector<json> key_press_events(const KeyChord& chord) {
  std::vector<json> events = key_down_events(chord);
  std::vector<json> ups = key_up_events(chord);
  events.insert(events.end(), std::make_move_iterator(ups.begin()), std::make_move_iterator(ups.end()));
  return events;
}

void HeldInput::note(std::string_view method, const json& params) {
  if (!params.is_object()) return;
  const auto text = [&](const char* field) {
    const auto it = params.find(field);
    return (it != params.end() && it->is_string()) ? it->get<std::string>() : std::string();
  };
  const auto integer = [&](const char* field) {
    const auto it = params.find(field);
    return (it != params.end() && it->is_number_integer()) ? it->get<int>() : 0;
  };
  const std::string type = text("type");
  if (method == "Input.dispatchKeyEvent") {
    HeldKey key{text("key"), text("code"), integer("windowsVirtualKeyCode"), integer("location"), 0};
    if (key.code.empty() && key.key.empty()) return;
    // A key's `key` changes with Shift ("a" down, "A" up after Shift was pressed): its code names the key.
    const auto same = [&](const HeldKey& held) {
      return key.code.empty() ? held.code.empty() && held.key == key.key : held.code == key.code;
    };
    if (type == "keyDown" || type == "rawKeyDown") {
      if (std::none_of(keys_.begin(), keys_.end(), same)) {
        const auto definition = lookup(key.key);
        if (definition) key.modifier = definition->first.modifier;
        keys_.push_back(std::move(key));
      }
    } else if (type == "keyUp") {
      std::erase_if(keys_, same);
    }
    return;
  }
  if (method == "Input.dispatchMouseEvent") {
    const auto x = params.find("x");
    const auto y = params.find("y");
    if (x != params.end() && x->is_number() && y != params.end() && y->is_number()) {
      x_ = x->get<double>();
      y_ = y->get<double>();
    }
    const std::string button = text("button");
    if (button_bit(button) == 0) return;
    if (type == "mousePressed") {
      if (std::find(buttons_.begin(), buttons_.end(), button) == buttons_.end()) buttons_.push_back(button);
    } else if (type == "mouseReleased") {
      std::erase(buttons_, button);
    }
  }
}

int HeldInput::modifiers() const {
  int mask = 0;
  for (const HeldKey& key : keys_) mask |= key.modifier;
  return mask;
}

std::vector<json> HeldInput::release_events() const {
  std::vector<json> events;
  const int held_modifiers = modifiers();
  int buttons = 0;
  for (const std::string& button : buttons_) buttons |= button_bit(button);
  for (auto it = buttons_.rbegin(); it != buttons_.rend(); ++it) {
    buttons &= ~button_bit(*it);
    json params = {{"type", "mouseReleased"},
                   {"x", x_},
                   {"y", y_},
                   {"button", *it},
                   {"buttons", buttons},
                   {"clickCount", 1},
                   {"modifiers", held_modifiers}};
    events.push_back({{"method", "Input.dispatchMouseEvent"}, {"params", std::move(params)}});
  }
  std::vector<HeldKey> remaining = keys_;
  while (!remaining.empty()) {
    const HeldKey key = remaining.back();
    remaining.pop_back();
    int mask = 0;
    for (const HeldKey& other : remaining) mask |= other.modifier;
    json params = {{"type", "keyUp"},
                   {"modifiers", mask},
                   {"key", key.key},
                   {"code", key.code},
                   {"windowsVirtualKeyCode", key.windows_virtual_key_code},
                   {"nativeVirtualKeyCode", key.windows_virtual_key_code},
                   {"location", key.location}};
    events.push_back({{"method", "Input.dispatchKeyEvent"}, {"params", std::move(params)}});
  }
  return events;
}

void HeldInput::clear() {
  keys_.clear();
  buttons_.clear();
}

}  // namespace keel::browser
