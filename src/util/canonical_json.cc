// util/canonical_json.cc — the canonical JSON writer and the coded-error parser (see canonical_json.h).
//
// The writer is our own rather than nlohmann's dump(), because dump() silently writes NaN as null,
// cannot reject deep values, and formats integral doubles as "1.0" while integers print as "1". It still
// reuses nlohmann for the one hard part, shortest round-trip formatting of non-integral doubles.
//
// Depth counts containers: a scalar has depth 0, `[]` depth 1, `[[]]` depth 2. Both directions reject
// depth > kMaxJsonDepth, so everything the parser accepts the writer can encode and vice versa.
#include "util/canonical_json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "keel/error_codes.h"

namespace keel {
namespace {

using nlohmann::json;

constexpr size_t kValidUtf8 = std::string_view::npos;

// Returns the offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF), or kValidUtf8.
size_t find_invalid_utf8(std::string_view s) {
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80;  // allowed range of the second byte; narrower for a few lead bytes
    unsigned char hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
    } else if (c == 0xe0) {
      len = 3;
      lo = 0xa0;  // no overlong 3-byte forms
    } else if (c == 0xed) {
      len = 3;
      hi = 0x9f;  // no UTF-16 surrogates U+D800..U+DFFF
    } else if (c >= 0xe1 && c <= 0xef) {
      len = 3;
    } else if (c == 0xf0) {
      len = 4;
      lo = 0x90;  // no overlong 4-byte forms
    } else if (c == 0xf4) {
      len = 4;
      hi = 0x8f;  // nothing above U+10FFFF
    } else if (c >= 0xf1 && c <= 0xf3) {
      len = 4;
    } else {
      return i;  // continuation byte, C0/C1 (overlong 2-byte), or F5..FF
    }
    if (n - i < len) return i;
    const auto c1 = static_cast<unsigned char>(s[i + 1]);
    if (c1 < lo || c1 > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return i;
    }
    i += len;
  }
  return kValidUtf8;
}

template <typename Int>
void append_integer(std::string& out, Int value) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  (void)ec;  // 24 bytes hold any 64-bit integer
  out.append(buf, end);
}

// RFC 8259 minimal escaping: only '"', '\' and U+0000..U+001F. The five control characters with a short
// form use it; the others are \u00xx with lowercase hex (the same choice as nlohmann's dump()).
void append_escaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t run_start = 0;  // copy unescaped runs in one go
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.substr(run_start, i - run_start));
    run_start = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0x0f]);
    }
  }
  out.append(s.substr(run_start));
  out.push_back('"');
}

// Writes one value. Returns false with error_ set on the first failure; the path to the offending value
// is built while unwinding, so the success path pays nothing for it.
class CanonicalWriter {
 public:
  bool write(const json& value, int depth) {
    switch (value.type()) {
      case json::value_t::null:
        out_ += "null";
        return true;
      case json::value_t::boolean:
        out_ += value.get<bool>() ? "true" : "false";
        return true;
      case json::value_t::number_integer:
        append_integer(out_, value.get<int64_t>());
        return true;
      case json::value_t::number_unsigned:
        append_integer(out_, value.get<uint64_t>());
        return true;
      case json::value_t::number_float:
        return write_double(value.get<double>());
      case json::value_t::string:
        return write_string(value.get_ref<const std::string&>());
      case json::value_t::array:
        return write_array(value, depth + 1);
      case json::value_t::object:
        return write_object(value, depth + 1);
      case json::value_t::binary:
        return set_error(codes::kInvalidArgument, "binary values have no JSON text form");
      case json::value_t::discarded:
        return set_error(codes::kInvalidArgument, "discarded value (a filtered-out parse result)");
    }
    return set_error(codes::kInternal, "unknown nlohmann::json value type");
  }

  Result<std::string> finish(bool ok) && {
    if (ok) return std::move(out_);
    std::string where = reversed_path_.empty() ? "at the root" : "at ";
    for (auto segment = reversed_path_.rbegin(); segment != reversed_path_.rend(); ++segment) {
      where += "/";
      where += *segment;
    }
    return fail(error_->code(), error_->message() + " " + where);
  }

 private:
  bool set_error(const char* code, std::string message) {
    error_.emplace(code, std::move(message));
    return false;
  }

  bool write_double(double x) {
    if (!std::isfinite(x)) return set_error(codes::kJsonNonFinite, "NaN or infinity cannot be encoded");
    // Integral and exactly representable as an integer: one spelling for 1, 1.0 and 1e0 (and -0.0 -> 0).
    if (std::fabs(x) < 9007199254740992.0 /* 2^53 */ && std::trunc(x) == x) {
      append_integer(out_, static_cast<int64_t>(x));
    } else {
      out_ += json(x).dump();  // nlohmann's Grisu2: shortest text that round-trips
    }
    return true;
  }

  bool write_string(const std::string& s) {
    if (const size_t bad = find_invalid_utf8(s); bad != kValidUtf8) {
      return set_error(codes::kJsonInvalidUtf8,
                       "invalid UTF-8 at byte " + std::to_string(bad) + " of a string");
    }
    append_escaped(out_, s);
    return true;
  }

  bool write_array(const json& array, int depth) {
    if (depth > kMaxJsonDepth) return too_deep();
    out_.push_back('[');
    size_t index = 0;
    for (const json& element : array.get_ref<const json::array_t&>()) {
      if (index != 0) out_.push_back(',');
      if (!write(element, depth)) {
        reversed_path_.push_back(std::to_string(index));
        return false;
      }
      ++index;
    }
    out_.push_back(']');
    return true;
  }

  bool write_object(const json& object, int depth) {
    if (depth > kMaxJsonDepth) return too_deep();
    out_.push_back('{');
    bool first = true;
    // json::object_t is a std::map<std::string, ...> ordered by std::string's operator<, which compares
    // bytes as unsigned char: exactly UTF-8 byte order, i.e. code point order. No sort needed.
    for (const auto& [key, member] : object.get_ref<const json::object_t&>()) {
      if (!first) out_.push_back(',');
      first = false;
      if (const size_t bad = find_invalid_utf8(key); bad != kValidUtf8) {
        return set_error(codes::kJsonInvalidUtf8,
                         "invalid UTF-8 at byte " + std::to_string(bad) + " of an object key");
      }
      append_escaped(out_, key);
      out_.push_back(':');
      if (!write(member, depth)) {
        reversed_path_.push_back(pointer_escape(key));
        return false;
      }
    }
    out_.push_back('}');
    return true;
  }

  bool too_deep() {
    return set_error(codes::kJsonTooDeep, "nesting deeper than " + std::to_string(kMaxJsonDepth));
  }

  // RFC 6901 escaping for the error path ("~" -> "~0", "/" -> "~1").
  static std::string pointer_escape(const std::string& key) {
    std::string escaped;
    for (const char c : key) {
      if (c == '~') {
        escaped += "~0";
      } else if (c == '/') {
        escaped += "~1";
      } else {
        escaped.push_back(c);
      }
    }
    return escaped;
  }

  std::string out_;
  std::optional<Error> error_;
  // JSON pointer segments of the failing value, innermost first: appended while unwinding.
  std::vector<std::string> reversed_path_;
};

// Rejects nesting deeper than kMaxJsonDepth by counting brackets outside strings, before nlohmann builds
// anything: a hostile "[[[[..." of a million brackets must cost a linear scan, not a million-level value.
// For valid JSON this count is the exact depth; for invalid JSON it may report json.too_deep where
// nlohmann would have reported a syntax error, which is still a rejection.
Result<void> check_depth(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > kMaxJsonDepth) {
          return fail(codes::kJsonTooDeep, "nesting deeper than " + std::to_string(kMaxJsonDepth) +
                                               " at byte offset " + std::to_string(i));
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return {};
}

}  // namespace

Result<std::string> canonical_json(const nlohmann::json& value) {
  CanonicalWriter writer;
  const bool ok = writer.write(value, 0);
  return std::move(writer).finish(ok);
}

Result<nlohmann::json> parse_json(std::string_view text) {
  // UTF-8 first: nlohmann only checks inside strings, and reports it as a generic syntax error.
  if (const size_t bad = find_invalid_utf8(text); bad != kValidUtf8) {
    return fail(codes::kJsonInvalidUtf8, "invalid UTF-8 at byte offset " + std::to_string(bad));
  }
  KEEL_TRY(check_depth(text));
  // Duplicate keys are refused: two texts that differ only in a repeated key would otherwise get the same
  // fingerprint, and which value wins would be up to the parser.
  std::vector<std::set<std::string>> open_objects;
  std::optional<std::string> duplicate;
  auto on_event = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && !open_objects.back().insert(parsed.get<std::string>()).second &&
            !duplicate) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  try {
    json value = json::parse(text.begin(), text.end(), on_event);
    if (duplicate) return fail(codes::kJsonParse, "duplicate object key \"" + *duplicate + "\"");
    return value;
  } catch (const json::parse_error& e) {
    // e.byte counts the bytes read including the offending one; report the offending byte's 0-based offset.
    const size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    return fail(codes::kJsonParse, "syntax error at byte offset " + std::to_string(offset) + ": " + e.what());
  } catch (const json::exception& e) {
    // For example out_of_range 406, a number too large for a double ("1e400").
    return fail(codes::kJsonParse, e.what());
  }
}

}  // namespace keel
