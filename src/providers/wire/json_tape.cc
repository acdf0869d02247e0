#include "providers/wire/json_tape.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "providers/provider_errors.h"
#include "providers/wire/utf8_validate.h"

namespace keel::providers {
namespace {

using Type = JsonValue::Type;

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kLows = 0x7F7F7F7F7F7F7F7FULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

// The high bit of each byte of v that is zero (exactly: no borrow between bytes).
constexpr uint64_t zero_bytes(uint64_t v) { return ~(((v & kLows) + kLows) | v | kLows); }

// How many of the 8 bytes at p may be copied as they are before one that ends the fast path of a string:
// '"', '\', a control character (< 0x20) or a non-ASCII byte (which needs UTF-8 validation).
size_t plain_bytes(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  const uint64_t special = zero_bytes(w ^ (kOnes * '"')) | zero_bytes(w ^ (kOnes * '\\')) |
                           zero_bytes(w & (kOnes * 0xE0)) | (w & kHighs);
  if (special == 0) return 8;
  if constexpr (std::endian::native == std::endian::little) {
    return static_cast<size_t>(std::countr_zero(special)) / 8;
  } else {
    return static_cast<size_t>(std::countl_zero(special)) / 8;
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Four hex digits at p, or -1.
int32_t hex4(const char* p, const char* end) {
  if (end - p < 4) return -1;
  int32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    const int digit = hex_value(p[i]);
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Whether the number in [begin, end) (valid JSON number syntax) is finite as a double. nlohmann (the
// engine's other parser) refuses a number that overflows to infinity and takes one that underflows to
// zero; the tape must accept exactly what it accepts. Short integers always fit, so only those with a
// fraction, an exponent or many digits are converted.
bool fits_in_double(const char* begin, const char* end) {
  if (end - begin <= 18 && std::find_if(begin, end, [](char c) { return !is_digit(c) && c != '-'; }) == end) {
    return true;
  }
  double value = 0;
  if (std::from_chars(begin, end, value).ec != std::errc::result_out_of_range) return true;
  // Out of range: an overflow (refused) or an underflow (zero or a denormal, taken). The exponent's sign
  // alone does not tell (1e-5 vs 0.0...01e400), so ask strtod, which rounds to infinity on overflow.
  const std::string copy(begin, end);
  return std::isfinite(std::strtod(copy.c_str(), nullptr));
}

const char* skip_space(const char* p, const char* end) {
  while (p != end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
  return p;
}

}  // namespace

// --- JsonTape ---

Error JsonTape::error_at(const char* p, std::string_view what) const {
  return Error(codes::kProviderBadEventJson,
               "invalid JSON at byte " + std::to_string(p - text_.data()) + ": " + std::string(what));
}

uint32_t JsonTape::push(Type type, const char* raw_begin) {
  if (!open_.empty()) ++nodes_[open_.back()].count;
  Node& node = nodes_.emplace_back();
  node.type = type;
  node.raw_begin = static_cast<uint32_t>(raw_begin - text_.data());
  node.end = static_cast<uint32_t>(nodes_.size());
  return node.end - 1;
}

Result<JsonValue> JsonTape::parse(std::string_view text) {
  nodes_.clear();
  open_.clear();
  unescaped_.clear();
  if (text.size() >= std::numeric_limits<uint32_t>::max()) {
    return fail(codes::kProviderBadEventJson, "a JSON text of 4 GiB or more");
  }
  unescaped_.reserve(text.size());
  text_ = text;
  const char* p = text.data();
  const char* const end = p + text.size();
  bool want_value = true;
  for (;;) {
    p = skip_space(p, end);
    if (want_value) {
      if (p == end) return fail(error_at(p, "the text ended where a value was expected"));
      if (*p == '{' || *p == '[') {
        if (open_.size() >= kMaxDepth) return fail(error_at(p, "nested deeper than 128 levels"));
        const bool object = *p == '{';
        open_.push_back(push(object ? Type::kObject : Type::kArray, p));
        p = skip_space(p + 1, end);
        if (p != end && *p == (object ? '}' : ']')) {
          Node& node = nodes_[open_.back()];
          node.raw_size = static_cast<uint32_t>(p + 1 - text_.data()) - node.raw_begin;
          open_.pop_back();
          ++p;
          want_value = false;
        } else if (object) {
          p = KEEL_TRY(parse_key(p));
        }
        continue;
      }
      p = KEEL_TRY(parse_scalar(p));
      want_value = false;
      continue;
    }
    if (open_.empty()) {
      if (p != end) return fail(error_at(p, "more text after the value"));
      break;
    }
    Node& top = nodes_[open_.back()];
    const bool object = top.type == Type::kObject;
    if (p == end) return fail(error_at(p, object ? "an object was not closed" : "an array was not closed"));
    if (*p == ',') {
      p = skip_space(p + 1, end);
      if (object) p = KEEL_TRY(parse_key(p));
      want_value = true;
    } else if (*p == (object ? '}' : ']')) {
      top.end = static_cast<uint32_t>(nodes_.size());
      top.raw_size = static_cast<uint32_t>(p + 1 - text_.data()) - top.raw_begin;
      open_.pop_back();
      ++p;
    } else {
      return fail(error_at(p, object ? "expected ',' or '}'" : "expected ',' or ']'"));
    }
  }
  return JsonValue(this, 0);
}

Result<const char*> JsonTape::parse_key(const char* p) {
  const char* const end = text_.data() + text_.size();
  if (p == end || *p != '"') return fail(error_at(p, "expected a member name"));
  // A key is a node of its own (not counted as a member: push() counts values).
  Node& key = nodes_.emplace_back();
  key.type = Type::kString;
  key.raw_begin = static_cast<uint32_t>(p - text_.data());
  key.end = static_cast<uint32_t>(nodes_.size());
  p = KEEL_TRY(parse_string(p, key));
  p = skip_space(p, end);
  if (p == end || *p != ':') return fail(error_at(p, "expected ':' after a member name"));
  return p + 1;
}

Result<const char*> JsonTape::parse_scalar(const char* p) {
  const char* const end = text_.data() + text_.size();
  const char c = *p;
  if (c == '"') {
    const uint32_t index = push(Type::kString, p);
    return parse_string(p, nodes_[index]);
  }
  auto literal = [&](std::string_view word, Type type) -> Result<const char*> {
    if (static_cast<size_t>(end - p) < word.size() || std::memcmp(p, word.data(), word.size()) != 0) {
      return fail(error_at(p, "unexpected character"));
    }
    Node& node = nodes_[push(type, p)];
    node.raw_size = static_cast<uint32_t>(word.size());
    return p + word.size();
  };
  if (c == 't') return literal("true", Type::kTrue);
  if (c == 'f') return literal("false", Type::kFalse);
  if (c == 'n') return literal("null", Type::kNull);
  if (c != '-' && !is_digit(c)) return fail(error_at(p, "unexpected character"));
  const char* q = p;
  if (*q == '-') ++q;
  if (q == end || !is_digit(*q)) return fail(error_at(q, "a number needs digits"));
  if (*q == '0') {
    ++q;
  } else {
    while (q != end && is_digit(*q)) ++q;
  }
  if (q != end && *q == '.') {
    ++q;
    if (q == end || !is_digit(*q)) return fail(error_at(q, "a fraction needs digits"));
    while (q != end && is_digit(*q)) ++q;
  }
  if (q != end && (*q == 'e' || *q == 'E')) {
    ++q;
    if (q != end && (*q == '+' || *q == '-')) ++q;
    if (q == end || !is_digit(*q)) return fail(error_at(q, "an exponent needs digits"));
    while (q != end && is_digit(*q)) ++q;
  }
  if (!fits_in_double(p, q)) return fail(error_at(p, "a number too large for a double"));
  Node& node = nodes_[push(Type::kNumber, p)];
  node.text = p;
  node.text_size = static_cast<uint32_t>(q - p);
  node.raw_size = node.text_size;
  return q;
}

Result<const char*> JsonTape::parse_string(const char* p, Node& node) {
  const char* const end = text_.data() + text_.size();
  const char* const begin = p + 1;
  const char* s = begin;
  const char* run = begin;  // the start of the text not yet copied (only used once an escape was seen)
  bool escaped = false;
  size_t unescaped_begin = 0;
  for (;;) {
    while (end - s >= 8) {
      const size_t plain = plain_bytes(s);
      s += plain;
      if (plain < 8) break;
    }
    if (s == end) return fail(error_at(p, "a string was not closed"));
    const auto c = static_cast<unsigned char>(*s);
    if (c == '"') break;
    if (c == '\\') {
      if (!escaped) {
        escaped = true;
        unescaped_begin = unescaped_.size();
      }
      unescaped_.append(run, s);
      if (end - s < 2) return fail(error_at(s, "a string was not closed"));
      const char e = s[1];
      s += 2;
      switch (e) {
        case '"':
          unescaped_.push_back('"');
          break;
        case '\\':
          unescaped_.push_back('\\');
          break;
        case '/':
          unescaped_.push_back('/');
          break;
        case 'b':
          unescaped_.push_back('\b');
          break;
        case 'f':
          unescaped_.push_back('\f');
          break;
        case 'n':
          unescaped_.push_back('\n');
          break;
        case 'r':
          unescaped_.push_back('\r');
          break;
        case 't':
          unescaped_.push_back('\t');
          break;
        case 'u': {
          int32_t cp = hex4(s, end);
          if (cp < 0) return fail(error_at(s, "\\u needs four hex digits"));
          s += 4;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(error_at(s, "a lone low surrogate"));
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            const int32_t low = end - s >= 6 && s[0] == '\\' && s[1] == 'u' ? hex4(s + 2, end) : -1;
            if (low < 0xDC00 || low > 0xDFFF) {
              return fail(error_at(s, "a high surrogate without its low half"));
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            s += 6;
          }
          append_utf8(unescaped_, static_cast<uint32_t>(cp));
          break;
        }
        default:
          return fail(error_at(s - 1, "an invalid escape"));
      }
      run = s;
      continue;
    }
    if (c < 0x20) return fail(error_at(s, "a control character in a string"));
    if (c >= 0x80) {
      const size_t length = utf8_sequence_length(reinterpret_cast<const unsigned char*>(s),
                                                 reinterpret_cast<const unsigned char*>(end));
      if (length == 0) return fail(error_at(s, "invalid UTF-8 in a string"));
      s += length;
      continue;
    }
    ++s;
  }
  if (escaped) {
    unescaped_.append(run, s);
    node.text = unescaped_.data() + unescaped_begin;
    node.text_size = static_cast<uint32_t>(unescaped_.size() - unescaped_begin);
  } else {
    node.text = begin;
    node.text_size = static_cast<uint32_t>(s - begin);
  }
  node.raw_size = static_cast<uint32_t>(s + 1 - p);
  return s + 1;
}

// --- JsonValue ---

JsonValue::Type JsonValue::type() const {
  return tape_ == nullptr ? Type::kAbsent : tape_->nodes_[index_].type;
}

uint32_t JsonValue::end() const { return tape_->nodes_[index_].end; }

uint32_t JsonValue::next_sibling(uint32_t node) const { return tape_->nodes_[node].end; }

JsonValue JsonValue::operator[](std::string_view key) const {
  if (!is_object()) return {};
  // The last member of a name wins, as in nlohmann::json: whoever reads the same text later (the engine
  // stores provider_data and parses arguments with nlohmann) must see the same value.
  JsonValue found;
  for (uint32_t i = first_child(); i < end(); i = next_sibling(i + 1)) {
    const JsonTape::Node& k = tape_->nodes_[i];
    if (k.text_size == key.size() &&
        (key.empty() || (k.text[0] == key[0] && std::memcmp(k.text, key.data(), key.size()) == 0))) {
      found = JsonValue(tape_, i + 1);
    }
  }
  return found;
}

JsonValue JsonValue::at(size_t index) const {
  if (!is_array()) return {};
  for (uint32_t i = first_child(); i < end(); i = next_sibling(i)) {
    if (index-- == 0) return JsonValue(tape_, i);
  }
  return {};
}

size_t JsonValue::size() const {
  const Type t = type();
  return t == Type::kArray || t == Type::kObject ? tape_->nodes_[index_].count : 0;
}

std::string_view JsonValue::string() const {
  if (!is_string()) return {};
  const JsonTape::Node& node = tape_->nodes_[index_];
  return {node.text, node.text_size};
}

std::optional<int64_t> JsonValue::int64() const {
  if (type() != Type::kNumber) return std::nullopt;
  const JsonTape::Node& node = tape_->nodes_[index_];
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(node.text, node.text + node.text_size, value);
  if (ec != std::errc() || ptr != node.text + node.text_size) return std::nullopt;
  return value;
}

std::string_view JsonValue::raw() const {
  if (!present()) return {};
  const JsonTape::Node& node = tape_->nodes_[index_];
  return tape_->text_.substr(node.raw_begin, node.raw_size);
}

nlohmann::json JsonValue::to_json() const {
  switch (type()) {
    case Type::kAbsent:
    case Type::kNull:
      return nullptr;
    case Type::kFalse:
      return false;
    case Type::kTrue:
      return true;
    case Type::kString:
      return std::string(string());
    case Type::kNumber: {
      if (auto i = int64()) return *i;
      const JsonTape::Node& node = tape_->nodes_[index_];
      double value = 0;
      std::from_chars(node.text, node.text + node.text_size, value);
      return value;
    }
    case Type::kArray: {
      nlohmann::json array = nlohmann::json::array();
      for_each_element([&](JsonValue element) { array.push_back(element.to_json()); });
      return array;
    }
    case Type::kObject: {
      nlohmann::json object = nlohmann::json::object();
      for_each_member([&](std::string_view key, JsonValue value) {
        object[std::string(key)] = value.to_json();  // the last member of a name wins, as in operator[]
      });
      return object;
    }
  }
  return nullptr;
}

}  // namespace keel::providers
