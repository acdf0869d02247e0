// providers/wire/json_tape.h — a fast, validating JSON reader for stream events.
//
// Why not nlohmann::json: a streamed response is thousands of small JSON events, each read for a handful of
// fields, and building a DOM of maps and strings for every one of them caps parse + decode well below the
// 200 MB/s the providers issue asks for (nlohmann parses a typical chunk at about 90 MB/s here). JsonTape
// parses into a flat array of nodes that views the source text; strings without escapes are not copied,
// and the arrays are reused from one event to the next, so a steady stream allocates nothing here.
//
// It accepts exactly RFC 8259 JSON, like nlohmann::json: strings must be valid UTF-8 (no lone surrogates in
// \u escapes, no overlong forms), no trailing commas, comments or leading zeros, nothing after the value.
// Nesting is bounded (kMaxDepth), so hostile input cannot exhaust the stack of anyone who walks the result.
// Errors: provider.bad_event_json, with the byte offset.
//
// Lifetime: the JsonValue views returned by parse() (and everything read through them) point into both
// the parsed text and the tape; they are valid until the next parse() or the tape's destruction, and only
// while the text is alive and unchanged. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"

namespace keel::providers {

class JsonTape;

// One value of a parsed text, or "absent" (a missing member, an index out of range, a default value).
// Queries on the wrong type or on an absent value answer empty, nullopt or absent, so lookups chain:
// event["delta"]["tool_calls"].at(0)["function"]["name"].string().
class JsonValue {
 public:
  enum class Type : uint8_t { kAbsent, kNull, kFalse, kTrue, kNumber, kString, kArray, kObject };

  JsonValue() = default;

  Type type() const;
  bool present() const { return type() != Type::kAbsent; }
  bool is_null() const { return type() == Type::kNull; }
  bool is_string() const { return type() == Type::kString; }
  bool is_object() const { return type() == Type::kObject; }
  bool is_array() const { return type() == Type::kArray; }

  // An object's member (the last of that name, as nlohmann::json reads it). Linear in the object's size:
  // events are small.
  JsonValue operator[](std::string_view key) const;
  // An array's element. Linear in `index`.
  JsonValue at(size_t index) const;
  // The number of an array's elements or an object's members; 0 otherwise.
  size_t size() const;

  // A string's text, unescaped; empty for anything else.
  std::string_view string() const;
  // An integral number (no fraction or exponent) that fits in int64_t.
  std::optional<int64_t> int64() const;
  // The value's JSON text as it appears in the source.
  std::string_view raw() const;
  // A copy as nlohmann::json, for the rare values kept beyond the event (provider_data, error bodies).
  nlohmann::json to_json() const;

  // Calls f(value) for each element of an array, f(key, value) for each member of an object.
  template <typename F>
  void for_each_element(F&& f) const;
  template <typename F>
  void for_each_member(F&& f) const;

 private:
  friend class JsonTape;
  JsonValue(const JsonTape* tape, uint32_t index) : tape_(tape), index_(index) {}
  uint32_t first_child() const { return index_ + 1; }
  uint32_t end() const;
  uint32_t next_sibling(uint32_t node) const;

  const JsonTape* tape_ = nullptr;
  uint32_t index_ = 0;
};

class JsonTape {
 public:
  static constexpr size_t kMaxDepth = 128;

  // Parses `text` (see the header comment for what is accepted and for how long the result is valid).
  [[nodiscard]] Result<JsonValue> parse(std::string_view text);

 private:
  friend class JsonValue;
  struct Node {
    JsonValue::Type type = JsonValue::Type::kNull;
    uint32_t end = 0;    // the index just past this value's subtree
    uint32_t count = 0;  // elements or members
    uint32_t raw_begin = 0;
    uint32_t raw_size = 0;
    const char* text = nullptr;  // strings: the unescaped text; numbers: their source text
    uint32_t text_size = 0;
  };

  Result<const char*> parse_string(const char* p, Node& node);
  Result<const char*> parse_scalar(const char* p);
  Result<const char*> parse_key(const char* p);
  uint32_t push(JsonValue::Type type, const char* raw_begin);
  Error error_at(const char* p, std::string_view what) const;

  std::string_view text_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> open_;  // the containers being parsed, innermost last
  std::string unescaped_;       // reserved to the text's size before parsing, so views into it stay valid
};

template <typename F>
void JsonValue::for_each_element(F&& f) const {
  if (!is_array()) return;
  for (uint32_t i = first_child(); i < end(); i = next_sibling(i)) f(JsonValue(tape_, i));
}

template <typename F>
void JsonValue::for_each_member(F&& f) const {
  if (!is_object()) return;
  for (uint32_t i = first_child(); i < end(); i = next_sibling(i + 1)) {
    f(JsonValue(tape_, i).string(), JsonValue(tape_, i + 1));
  }
}

}  // namespace keel::providers
