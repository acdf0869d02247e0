// Tests for util/canonical_json.h: every encoding rule in the header comment, and parse_json's coded
// errors (syntax with byte offset, invalid UTF-8, nesting depth).
#include "util/canonical_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "keel/error_codes.h"

namespace keel {
namespace {

using nlohmann::json;

std::string encode(const json& value) {
  const Result<std::string> text = canonical_json(value);
  EXPECT_TRUE(text.has_value()) << text.error().to_string();
  return text.value_or("<error>");
}

std::string encode_error_code(const json& value) {
  const Result<std::string> text = canonical_json(value);
  EXPECT_FALSE(text.has_value()) << "unexpectedly encoded as " << *text;
  return text.has_value() ? "<no error>" : text.error().code();
}

std::string parse_error_code(std::string_view text) {
  const Result<json> value = parse_json(text);
  EXPECT_FALSE(value.has_value()) << "unexpectedly parsed: " << value->dump();
  return value.has_value() ? "<no error>" : value.error().code();
}

json nested_arrays(int depth) {
  json value = json::array();
  for (int i = 1; i < depth; ++i) value = json::array({std::move(value)});
  return value;
}

json nested_objects(int depth) {
  json value = json::object();
  for (int i = 1; i < depth; ++i) value = json{{"k", std::move(value)}};
  return value;
}

// --- canonical_json: structure ---

TEST(CanonicalJsonTest, SortsObjectKeysByCodePoint) {
  json value = json::object();
  for (const char* key : {"b", "a", "B", "\xc3\xa9" /* é */, "z", "\x7f", "aa", "A", "1"}) value[key] = 0;
  EXPECT_EQ(encode(value),
            "{\"1\":0,\"A\":0,\"B\":0,\"a\":0,\"aa\":0,\"b\":0,\"z\":0,\"\x7f\":0,\"\xc3\xa9\":0}");
}

TEST(CanonicalJsonTest, SortsKeysByCodePointNotByUtf16Units) {
  // U+FF61 < U+1F600 by code point, but UTF-16 (surrogate D83D) would put the emoji first.
  json value = json::object();
  value["\xf0\x9f\x98\x80"] = 1;  // U+1F600
  value["\xef\xbd\xa1"] = 2;      // U+FF61
  EXPECT_EQ(encode(value), "{\"\xef\xbd\xa1\":2,\"\xf0\x9f\x98\x80\":1}");
}

TEST(CanonicalJsonTest, SortsKeysOfNestedObjects) {
  const json value = json::parse(R"({"z":{"y":1,"x":[{"d":1,"c":2}]},"a":null})");
  EXPECT_EQ(encode(value), R"({"a":null,"z":{"x":[{"c":2,"d":1}],"y":1}})");
}

TEST(CanonicalJsonTest, KeepsArrayOrder) { EXPECT_EQ(encode(json::parse("[3, 1, 2]")), "[3,1,2]"); }

TEST(CanonicalJsonTest, WritesNoInsignificantWhitespace) {
  const json value = json::parse(" { \"a\" : [ 1 , 2 , { \"b\" : null } ] , \"c\" : \"x y\" } ");
  EXPECT_EQ(encode(value), R"({"a":[1,2,{"b":null}],"c":"x y"})");
}

TEST(CanonicalJsonTest, WritesScalarsAndEmptyContainers) {
  EXPECT_EQ(encode(json(nullptr)), "null");
  EXPECT_EQ(encode(json(true)), "true");
  EXPECT_EQ(encode(json(false)), "false");
  EXPECT_EQ(encode(json("")), "\"\"");
  EXPECT_EQ(encode(json::array()), "[]");
  EXPECT_EQ(encode(json::object()), "{}");
}

TEST(CanonicalJsonTest, MatchesNlohmannDumpForValuesWithoutFloatingNumbers) {
  // An independent reference for escaping and layout: nlohmann's compact dump of a sorted object.
  const json value = json::parse(
      R"({"k\n":"v\u0001\u001f\"\\/","arr":[null,true,-5,18446744073709551615,"\u00e9\ud83d\ude00"],)"
      R"("o":{}})");
  EXPECT_EQ(encode(value), value.dump());
}

// --- canonical_json: numbers ---

TEST(CanonicalJsonTest, WritesIntegersAsPlainDecimal) {
  EXPECT_EQ(encode(json(0)), "0");
  EXPECT_EQ(encode(json(-1)), "-1");
  EXPECT_EQ(encode(json(std::numeric_limits<int64_t>::min())), "-9223372036854775808");
  EXPECT_EQ(encode(json(std::numeric_limits<int64_t>::max())), "9223372036854775807");
  EXPECT_EQ(encode(json(std::numeric_limits<uint64_t>::max())), "18446744073709551615");
}

TEST(CanonicalJsonTest, WritesIntegralDoublesAsIntegers) {
  EXPECT_EQ(encode(json(1.0)), "1");
  EXPECT_EQ(encode(json(-3.0)), "-3");
  EXPECT_EQ(encode(json(1e15)), "1000000000000000");
  EXPECT_EQ(encode(json(9007199254740991.0)), "9007199254740991");    // 2^53 - 1
  EXPECT_EQ(encode(json(-9007199254740991.0)), "-9007199254740991");  // -(2^53 - 1)
}

TEST(CanonicalJsonTest, IntegralDoubleAndIntegerHaveTheSameEncoding) {
  EXPECT_EQ(encode(json::parse(R"({"n":1.0,"m":[2e0,300.00]})")),
            encode(json::parse(R"({"n":1,"m":[2,300]})")));
}

TEST(CanonicalJsonTest, WritesNegativeZeroAsZero) {
  EXPECT_EQ(encode(json(-0.0)), "0");
  EXPECT_EQ(encode(json::parse("-0.0")), "0");
}

TEST(CanonicalJsonTest, IntegralDoublesFromTwoToThe53UseTheFloatingForm) {
  // Not every integer at or above 2^53 is representable, so the floating form is kept.
  const double two_53 = 9007199254740992.0;
  EXPECT_EQ(encode(json(two_53)), json(two_53).dump());
  EXPECT_NE(encode(json(two_53)), "9007199254740992");
  EXPECT_EQ(encode(json(1e20)), json(1e20).dump());
  EXPECT_EQ(encode(json(-1e300)), json(-1e300).dump());
}

TEST(CanonicalJsonTest, WritesNonIntegralDoublesInShortestRoundTripForm) {
  EXPECT_EQ(encode(json(0.1)), "0.1");
  EXPECT_EQ(encode(json(1.5)), "1.5");
  EXPECT_EQ(encode(json(-2.25)), "-2.25");
  EXPECT_EQ(encode(json(1e-7)), json(1e-7).dump());
  EXPECT_EQ(encode(json(0.1 + 0.2)), "0.30000000000000004");
}

TEST(CanonicalJsonTest, RandomDoublesRoundTripExactly) {
  const uint64_t seed = std::random_device{}();
  std::cout << "[ seed     ] RandomDoublesRoundTripExactly seed=" << seed << "\n";
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 10'000; ++i) {
    double x = 0;
    do {
      const uint64_t bits = rng();
      std::memcpy(&x, &bits, sizeof x);
    } while (!std::isfinite(x));
    const std::string text = encode(json(x));
    const Result<json> back = parse_json(text);
    ASSERT_TRUE(back.has_value()) << text;
    ASSERT_EQ(back->get<double>(), x == 0 ? 0.0 : x) << text;
    ASSERT_EQ(encode(*back), text) << "canonical form is not a fixed point";
  }
}

TEST(CanonicalJsonTest, RejectsNaNAndInfinities) {
  EXPECT_EQ(encode_error_code(json(std::numeric_limits<double>::quiet_NaN())), codes::kJsonNonFinite);
  EXPECT_EQ(encode_error_code(json(std::numeric_limits<double>::infinity())), codes::kJsonNonFinite);
  EXPECT_EQ(encode_error_code(json(-std::numeric_limits<double>::infinity())), codes::kJsonNonFinite);
  EXPECT_EQ(encode_error_code(json::array({1, std::numeric_limits<double>::quiet_NaN()})),
            codes::kJsonNonFinite);
}

TEST(CanonicalJsonTest, ErrorMessageNamesThePathOfTheOffendingValue) {
  json value = json::parse(R"({"a":[1,{"b/c~":0}]})");
  value["a"][1]["b/c~"] = std::numeric_limits<double>::infinity();
  const Result<std::string> text = canonical_json(value);
  ASSERT_FALSE(text.has_value());
  EXPECT_NE(text.error().message().find("/a/1/b~1c~0"), std::string::npos) << text.error().message();
}

// --- canonical_json: strings ---

TEST(CanonicalJsonTest, EscapesOnlyQuoteBackslashAndControlCharacters) {
  const std::string s = "q\" b\\ s/ \b\f\n\r\t \x01\x1f \x7f \xc3\xa9 \xf0\x9f\x98\x80 <>&'";
  EXPECT_EQ(encode(json(s)),
            "\"q\\\" b\\\\ s/ \\b\\f\\n\\r\\t \\u0001\\u001f \x7f \xc3\xa9 \xf0\x9f\x98\x80 <>&'\"");
}

TEST(CanonicalJsonTest, EscapesNulAndOtherControlsAsLowercaseUnicodeEscapes) {
  EXPECT_EQ(encode(json(std::string("a\0b", 3))), "\"a\\u0000b\"");
  EXPECT_EQ(encode(json("\x1b")), "\"\\u001b\"");
  EXPECT_EQ(encode(json("\x0b")), "\"\\u000b\"");
}

TEST(CanonicalJsonTest, EscapesObjectKeysLikeStrings) {
  json value = json::object();
  value["a\"\n\x01"] = 1;
  EXPECT_EQ(encode(value), "{\"a\\\"\\n\\u0001\":1}");
}

TEST(CanonicalJsonTest, AcceptsUtf8AtEveryLengthBoundary) {
  for (const char* s : {"\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xee\x80\x80",
                        "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf"}) {
    std::string quoted = "\"";  // built with += : GCC 12's -Wrestrict misfires on "\"" + std::string
    quoted += s;
    quoted += '"';
    EXPECT_EQ(encode(json(s)), quoted);
  }
}

const std::vector<std::string>& invalid_utf8_samples() {
  static const std::vector<std::string> samples = {
      "\x80",              // lone continuation byte
      "\xbf",              // lone continuation byte
      "\xc0\x80",          // overlong NUL
      "\xc1\xbf",          // overlong 2-byte
      "\xe0\x80\x80",      // overlong 3-byte
      "\xe0\x9f\xbf",      // overlong 3-byte
      "\xed\xa0\x80",      // surrogate U+D800
      "\xed\xbf\xbf",      // surrogate U+DFFF
      "\xf0\x80\x80\x80",  // overlong 4-byte
      "\xf0\x8f\xbf\xbf",  // overlong 4-byte
      "\xf4\x90\x80\x80",  // above U+10FFFF
      "\xf5\x80\x80\x80",  // lead byte F5
      "\xff",              // never valid
      "\xe2\x82",          // truncated 3-byte
      "\xf0\x9f\x98",      // truncated 4-byte
      "\xc3",              // truncated 2-byte at the end
      "\xc3(",             // bad continuation
      "\xe2\x28\xa1",      // bad second byte
      "\xe2\x82\x28",      // bad third byte
  };
  return samples;
}

TEST(CanonicalJsonTest, RejectsInvalidUtf8InStrings) {
  for (const std::string& bad : invalid_utf8_samples()) {
    SCOPED_TRACE(json(bad).dump(-1, ' ', true, json::error_handler_t::replace));
    EXPECT_EQ(encode_error_code(json("ok" + bad + "ok")), codes::kJsonInvalidUtf8);
  }
}

TEST(CanonicalJsonTest, RejectsInvalidUtf8InObjectKeys) {
  json value = json::object();
  value["ok"] = 1;
  value["bad\xff"] = 2;
  EXPECT_EQ(encode_error_code(value), codes::kJsonInvalidUtf8);
}

TEST(CanonicalJsonTest, RejectsBinaryValues) {
  EXPECT_EQ(encode_error_code(json::binary({1, 2, 3})), codes::kInvalidArgument);
}

// --- canonical_json: depth ---

TEST(CanonicalJsonTest, AcceptsNestingUpToMaxDepth) {
  EXPECT_EQ(encode(nested_arrays(kMaxJsonDepth)),
            std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'));
  EXPECT_TRUE(canonical_json(nested_objects(kMaxJsonDepth)).has_value());
}

TEST(CanonicalJsonTest, RejectsNestingBeyondMaxDepth) {
  EXPECT_EQ(encode_error_code(nested_arrays(kMaxJsonDepth + 1)), codes::kJsonTooDeep);
  EXPECT_EQ(encode_error_code(nested_objects(kMaxJsonDepth + 1)), codes::kJsonTooDeep);
  json mixed = json::array({nested_objects(kMaxJsonDepth)});
  EXPECT_EQ(encode_error_code(mixed), codes::kJsonTooDeep);
}

TEST(CanonicalJsonTest, ScalarsInsideTheDeepestAllowedContainerAreFine) {
  json value = json::array({1, "s", nullptr});
  for (int i = 1; i < kMaxJsonDepth; ++i) value = json::array({std::move(value)});
  EXPECT_TRUE(canonical_json(value).has_value());
}

// --- parse_json ---

TEST(ParseJsonTest, ParsesValidDocuments) {
  const Result<json> value = parse_json(R"( {"a": [1, 2.5, "x", true, null], "b": {}} )");
  ASSERT_TRUE(value.has_value()) << value.error().to_string();
  EXPECT_EQ((*value)["a"][1].get<double>(), 2.5);
  EXPECT_EQ((*value)["a"][2].get<std::string>(), "x");
  EXPECT_TRUE((*value)["b"].is_object());
}

TEST(ParseJsonTest, CanonicalTextRoundTripsToTheSameText) {
  const std::string text = R"({"a":[1,0.5,-7,"\u0001\"\\"],"b":{"c":null,"d":false},"é":"😀"})";
  const Result<json> value = parse_json(text);
  ASSERT_TRUE(value.has_value()) << value.error().to_string();
  EXPECT_EQ(encode(*value), text);
}

TEST(ParseJsonTest, KeepsLargeIntegersExact) {
  for (const char* text : {"18446744073709551615", "-9223372036854775808", "9007199254740993"}) {
    const Result<json> value = parse_json(text);
    ASSERT_TRUE(value.has_value()) << text;
    EXPECT_EQ(encode(*value), text);
  }
}

TEST(ParseJsonTest, ReportsSyntaxErrorsWithTheByteOffset) {
  const Result<json> value = parse_json("[1,]");
  ASSERT_FALSE(value.has_value());
  EXPECT_EQ(value.error().code(), codes::kJsonParse);
  EXPECT_NE(value.error().message().find("byte offset 3"), std::string::npos) << value.error().message();

  const Result<json> other = parse_json(R"({"a" 1})");
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.error().message().find("byte offset 5"), std::string::npos) << other.error().message();
}

TEST(ParseJsonTest, RejectsMalformedText) {
  for (const char* text : {"", "   ", "{", "[1 2]", "{\"a\":}", "tru", "01", "1.", "'a'", "{a:1}", "\"abc",
                           "[1]]", "{} x", "/* c */ 1", "NaN", "Infinity", "\"tab\there\""}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_error_code(text), codes::kJsonParse);
  }
}

TEST(ParseJsonTest, RejectsNumbersOutsideTheDoubleRange) {
  EXPECT_EQ(parse_error_code("1e400"), codes::kJsonParse);
  EXPECT_EQ(parse_error_code("[-1e400]"), codes::kJsonParse);
}

TEST(ParseJsonTest, RejectsInvalidUtf8InsideStrings) {
  for (const std::string& bad : invalid_utf8_samples()) {
    SCOPED_TRACE(json(bad).dump(-1, ' ', true, json::error_handler_t::replace));
    EXPECT_EQ(parse_error_code("[\"ok" + bad + "\"]"), codes::kJsonInvalidUtf8);
  }
}

TEST(ParseJsonTest, ReportsTheOffsetOfInvalidUtf8) {
  const Result<json> value = parse_json("{\"k\":\"ab\xff\"}");
  ASSERT_FALSE(value.has_value());
  EXPECT_EQ(value.error().code(), codes::kJsonInvalidUtf8);
  EXPECT_NE(value.error().message().find("byte offset 8"), std::string::npos) << value.error().message();
}

TEST(ParseJsonTest, RejectsInvalidUtf8OutsideStrings) {
  EXPECT_EQ(parse_error_code("[1]\xff"), codes::kJsonInvalidUtf8);
  EXPECT_EQ(parse_error_code("{\"a\"\xc3\xa9:1}"), codes::kJsonParse);  // valid UTF-8, bad syntax
}

TEST(ParseJsonTest, RejectsEscapedLoneSurrogates) {
  // \u escapes could smuggle in text that is not valid UTF-8 once decoded.
  EXPECT_EQ(parse_error_code(R"("\ud800")"), codes::kJsonParse);
  EXPECT_EQ(parse_error_code(R"("\udc00")"), codes::kJsonParse);
  EXPECT_EQ(parse_error_code(R"("\ud83dx")"), codes::kJsonParse);
}

TEST(ParseJsonTest, DecodesEscapedSurrogatePairs) {
  const Result<json> value = parse_json(R"("\ud83d\ude00")");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(value->get<std::string>(), "\xf0\x9f\x98\x80");
}

TEST(ParseJsonTest, AcceptsNestingUpToMaxDepth) {
  const std::string arrays = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  ASSERT_TRUE(parse_json(arrays).has_value());
  std::string objects;
  for (int i = 0; i < kMaxJsonDepth; ++i) objects += "{\"k\":";
  objects += "1" + std::string(kMaxJsonDepth, '}');
  const Result<json> value = parse_json(objects);
  ASSERT_TRUE(value.has_value()) << value.error().to_string();
  EXPECT_TRUE(canonical_json(*value).has_value()) << "everything parse_json accepts must encode";
}

TEST(ParseJsonTest, RejectsNestingBeyondMaxDepth) {
  const int depth = kMaxJsonDepth + 1;
  EXPECT_EQ(parse_error_code(std::string(depth, '[') + std::string(depth, ']')), codes::kJsonTooDeep);
  std::string objects;
  for (int i = 0; i < depth; ++i) objects += "{\"k\":";
  objects += "1" + std::string(depth, '}');
  EXPECT_EQ(parse_error_code(objects), codes::kJsonTooDeep);
}

TEST(ParseJsonTest, RejectsHostileDeepNestingWithoutOverflowingTheStack) {
  EXPECT_EQ(parse_error_code(std::string(1'000'000, '[')), codes::kJsonTooDeep);
  EXPECT_EQ(parse_error_code(std::string(1'000'000, '[') + std::string(1'000'000, ']')), codes::kJsonTooDeep);
}

TEST(ParseJsonTest, SiblingContainersDoNotAddToTheDepth) {
  std::string wide = "[";
  for (int i = 0; i < 1000; ++i) wide += std::string(i == 0 ? "" : ",") + "[[{}]]";
  wide += "]";
  EXPECT_TRUE(parse_json(wide).has_value());
}

TEST(ParseJsonTest, BracketsInsideStringsDoNotCountTowardsDepth) {
  const std::string brackets(1000, '[');
  EXPECT_TRUE(parse_json("[\"" + brackets + "\"]").has_value());
  EXPECT_TRUE(parse_json("{\"" + brackets + "\":\"" + std::string(1000, '{') + "\"}").has_value());
  // An escaped quote does not end the string; an escaped backslash before the quote does.
  EXPECT_TRUE(parse_json("[\"\\\"" + brackets + "\"]").has_value());
  const std::string after_escaped_backslash =
      "[\"\\\\\"," + std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']') + "]";
  EXPECT_EQ(parse_error_code(after_escaped_backslash), codes::kJsonTooDeep);
}

}  // namespace
}  // namespace keel

namespace keel {
namespace {

TEST(ParseJsonTest, DuplicateObjectKeysAreRejected) {
  auto parsed = parse_json(R"({"a":1,"a":2})");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code(), codes::kJsonParse);
  EXPECT_NE(parsed.error().message().find("\"a\""), std::string::npos);
  auto nested = parse_json(R"({"x":{"b":1,"b":1}})");
  ASSERT_FALSE(nested);
  EXPECT_EQ(nested.error().code(), codes::kJsonParse);
}

TEST(ParseJsonTest, EqualKeysInDifferentObjectsAreFine) {
  auto parsed = parse_json(R"({"a":{"a":1},"b":[{"a":1},{"a":2}]})");
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  EXPECT_EQ((*parsed)["b"][1]["a"], 2);
}

}  // namespace
}  // namespace keel
