#include "providers/http/http_date.h"

#include <gtest/gtest.h>

namespace keel::providers {
namespace {

constexpr int64_t kNov6_1994_084937 = 784111777000;  // Sun, 06 Nov 1994 08:49:37 GMT

TEST(HttpDateTest, ParsesImfFixdate) {
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), kNov6_1994_084937);
}

TEST(HttpDateTest, ParsesObsoleteRfc850Form) {
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), kNov6_1994_084937);
}

TEST(HttpDateTest, TakesTwoDigitYearsBelowSeventyAsThisCentury) {
  EXPECT_EQ(parse_http_date("Thursday, 01-Jan-26 00:00:00 GMT"),
            parse_http_date("Thu, 01 Jan 2026 00:00:00 GMT"));
}

TEST(HttpDateTest, ParsesAsctimeFormWithPaddedDay) {
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994"), kNov6_1994_084937);
}

TEST(HttpDateTest, RejectsWhatIsNotAnHttpDate) {
  EXPECT_EQ(parse_http_date(""), std::nullopt);
  EXPECT_EQ(parse_http_date("120"), std::nullopt);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 UTC"), std::nullopt);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT trailing"), std::nullopt);
  EXPECT_EQ(parse_http_date("Sun, 31 Feb 1994 08:49:37 GMT"), std::nullopt);
  EXPECT_EQ(parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT"), std::nullopt);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 25:49:37 GMT"), std::nullopt);
}

}  // namespace
}  // namespace keel::providers
