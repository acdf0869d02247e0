// providers/http/http_date.cc — the three HTTP-date forms, parsed by hand into a civil date.
#include "providers/http/http_date.h"

#include <array>
#include <cctype>
#include <chrono>

namespace keel::providers {

namespace {

constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// A cursor over the text; each read consumes what it matched and fails without consuming otherwise.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}
  bool done() const { return text_.empty(); }
  bool literal(std::string_view expected) {
    if (!text_.starts_with(expected)) return false;
    text_.remove_prefix(expected.size());
    return true;
  }
  void spaces() {
    while (!text_.empty() && text_.front() == ' ') text_.remove_prefix(1);
  }
  // Exactly `min_digits`..`max_digits` digits.
  std::optional<int> number(size_t min_digits, size_t max_digits) {
    size_t n = 0;
    int value = 0;
    while (n < text_.size() && n < max_digits && std::isdigit(static_cast<unsigned char>(text_[n]))) {
      value = value * 10 + (text_[n] - '0');
      ++n;
    }
    if (n < min_digits) return std::nullopt;
    text_.remove_prefix(n);
    return value;
  }
  std::optional<int> month() {
    for (size_t i = 0; i < kMonths.size(); ++i) {
      if (literal(kMonths[i])) return static_cast<int>(i) + 1;
    }
    return std::nullopt;
  }
  // A weekday name, short or long, followed by `after` (", " or " ").
  bool weekday(std::string_view after) {
    size_t n = 0;
    while (n < text_.size() && std::isalpha(static_cast<unsigned char>(text_[n]))) ++n;
    if (n < 3) return false;
    text_.remove_prefix(n);
    return literal(after);
  }

 private:
  std::string_view text_;
};

struct Civil {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
};

bool read_time(Reader& in, Civil& out) {
  auto h = in.number(2, 2);
  if (!h || !in.literal(":")) return false;
  auto m = in.number(2, 2);
  if (!m || !in.literal(":")) return false;
  auto s = in.number(2, 2);
  if (!s) return false;
  out.hour = *h;
  out.minute = *m;
  out.second = *s;
  return true;
}

std::optional<Civil> imf_fixdate(std::string_view text) {  // Sun, 06 Nov 1994 08:49:37 GMT
  Reader in(text);
  Civil c;
  if (!in.weekday(", ")) return std::nullopt;
  auto day = in.number(2, 2);
  if (!day || !in.literal(" ")) return std::nullopt;
  auto month = in.month();
  if (!month || !in.literal(" ")) return std::nullopt;
  auto year = in.number(4, 4);
  if (!year || !in.literal(" ") || !read_time(in, c) || !in.literal(" GMT") || !in.done())
    return std::nullopt;
  c.day = *day;
  c.month = *month;
  c.year = *year;
  return c;
}

std::optional<Civil> rfc850(std::string_view text) {  // Sunday, 06-Nov-94 08:49:37 GMT
  Reader in(text);
  Civil c;
  if (!in.weekday(", ")) return std::nullopt;
  auto day = in.number(2, 2);
  if (!day || !in.literal("-")) return std::nullopt;
  auto month = in.month();
  if (!month || !in.literal("-")) return std::nullopt;
  auto year = in.number(2, 2);
  if (!year || !in.literal(" ") || !read_time(in, c) || !in.literal(" GMT") || !in.done())
    return std::nullopt;
  c.day = *day;
  c.month = *month;
  c.year = *year + (*year >= 70 ? 1900 : 2000);
  return c;
}

std::optional<Civil> asctime_date(std::string_view text) {  // Sun Nov  6 08:49:37 1994
  Reader in(text);
  Civil c;
  if (!in.weekday(" ")) return std::nullopt;
  auto month = in.month();
  if (!month || !in.literal(" ")) return std::nullopt;
  in.spaces();
  auto day = in.number(1, 2);
  if (!day || !in.literal(" ") || !read_time(in, c) || !in.literal(" ")) return std::nullopt;
  auto year = in.number(4, 4);
  if (!year || !in.done()) return std::nullopt;
  c.day = *day;
  c.month = *month;
  c.year = *year;
  return c;
}

}  // namespace

std::optional<int64_t> parse_http_date(std::string_view text) {
  std::optional<Civil> civil = imf_fixdate(text);
  if (!civil) civil = rfc850(text);
  if (!civil) civil = asctime_date(text);
  if (!civil) return std::nullopt;
  using namespace std::chrono;
  const year_month_day date{year(civil->year), month(static_cast<unsigned>(civil->month)),
                            day(static_cast<unsigned>(civil->day))};
  // 60 is allowed for a leap second; it simply rolls into the next minute.
  if (!date.ok() || civil->hour > 23 || civil->minute > 59 || civil->second > 60) return std::nullopt;
  const auto at = sys_days(date) + hours(civil->hour) + minutes(civil->minute) + seconds(civil->second);
  return duration_cast<milliseconds>(at.time_since_epoch()).count();
}

}  // namespace keel::providers
