// SqlValue conversions and Transaction helpers shared by every backend.
#include <charconv>
#include <cstdlib>
#include <string>
#include <variant>

#include "keel/store.h"
#include "util/overloaded.h"

namespace keel {
namespace {

int64_t text_to_int(const std::string& text) {
  int64_t value = 0;
  const char* begin = text.data();
  while (begin != text.data() + text.size() && (*begin == ' ' || *begin == '\t')) ++begin;
  std::from_chars(begin, text.data() + text.size(), value);
  return value;
}

}  // namespace

int64_t SqlValue::as_int() const {
  return std::visit(Overloaded{[](std::monostate) -> int64_t { return 0; }, [](int64_t v) { return v; },
                               [](double v) { return static_cast<int64_t>(v); },
                               [](const std::string& v) { return text_to_int(v); },
                               [](const Blob& v) { return text_to_int(v.bytes); }},
                    v_);
}

double SqlValue::as_double() const {
  return std::visit(Overloaded{[](std::monostate) { return 0.0; },
                               [](int64_t v) { return static_cast<double>(v); }, [](double v) { return v; },
                               [](const std::string& v) { return std::strtod(v.c_str(), nullptr); },
                               [](const Blob& v) { return std::strtod(v.bytes.c_str(), nullptr); }},
                    v_);
}

std::string SqlValue::as_text() const {
  return std::visit(
      Overloaded{[](std::monostate) { return std::string(); }, [](int64_t v) { return std::to_string(v); },
                 [](double v) { return std::to_string(v); }, [](const std::string& v) { return v; },
                 [](const Blob& v) { return v.bytes; }},
      v_);
}

std::optional<std::string> SqlValue::as_optional_text() const {
  if (is_null()) return std::nullopt;
  return as_text();
}

std::optional<int64_t> SqlValue::as_optional_int() const {
  if (is_null()) return std::nullopt;
  return as_int();
}

Result<std::optional<SqlRow>> Transaction::query_one(std::string_view sql,
                                                     std::initializer_list<SqlValue> params) {
  auto rows = KEEL_TRY(query(sql, std::span<const SqlValue>(params.begin(), params.size())));
  if (rows.empty()) return std::optional<SqlRow>();
  return std::optional<SqlRow>(std::move(rows.front()));
}

}  // namespace keel
