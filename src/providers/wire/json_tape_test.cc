// Tests for providers/wire/json_tape.h: lookups, unescaping, the RFC 8259 grammar and UTF-8 rules, and a
// seeded differential test that accepts and reads exactly what nlohmann::json does.
#include "providers/wire/json_tape.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "providers/provider_errors.h"

namespace keel::providers {
namespace {

using nlohmann::json;

TEST(JsonTapeTest, ReadsMembersElementsAndScalars) {
  JsonTape tape;
  const std::string text =
      R"( {"a": {"b": [1, -2, "x", true, false, null, 2.5e3]}, "s": "plain", "empty": {}, "none": []} )";
  auto root = tape.parse(text);
  ASSERT_TRUE(root) << root.error().to_string();
  EXPECT_TRUE(root->is_object());
  EXPECT_EQ(root->size(), 4u);
  const JsonValue b = (*root)["a"]["b"];
  ASSERT_TRUE(b.is_array());
  EXPECT_EQ(b.size(), 7u);
  EXPECT_EQ(b.at(0).int64(), 1);
  EXPECT_EQ(b.at(1).int64(), -2);
  EXPECT_EQ(b.at(2).string(), "x");
  EXPECT_EQ(b.at(3).type(), JsonValue::Type::kTrue);
  EXPECT_EQ(b.at(4).type(), JsonValue::Type::kFalse);
  EXPECT_TRUE(b.at(5).is_null());
  EXPECT_EQ(b.at(6).int64(), std::nullopt);
  EXPECT_EQ(b.at(6).raw(), "2.5e3");
  EXPECT_FALSE(b.at(7).present());
  EXPECT_EQ((*root)["s"].string(), "plain");
  EXPECT_EQ((*root)["empty"].size(), 0u);
  EXPECT_TRUE((*root)["none"].is_array());
  EXPECT_EQ((*root)["a"].raw(), R"({"b": [1, -2, "x", true, false, null, 2.5e3]})");
}

TEST(JsonTapeTest, MissingValuesChainToAbsent) {
  JsonTape tape;
  auto root = tape.parse(R"({"a": 1})");
  ASSERT_TRUE(root);
  const JsonValue missing = (*root)["b"]["c"].at(3)["d"];
  EXPECT_FALSE(missing.present());
  EXPECT_EQ(missing.string(), "");
  EXPECT_EQ(missing.int64(), std::nullopt);
  EXPECT_EQ(missing.size(), 0u);
  EXPECT_EQ((*root)["a"]["x"].type(), JsonValue::Type::kAbsent);
  EXPECT_EQ((*root)["a"].string(), "");  // a number read as a string
}

TEST(JsonTapeTest, IteratesMembersAndElementsInOrder) {
  JsonTape tape;
  auto root = tape.parse(R"({"x": [10, [20, 21], {"k": 30}], "y": "z"})");
  ASSERT_TRUE(root);
  std::vector<std::string> keys;
  root->for_each_member([&](std::string_view key, JsonValue) { keys.emplace_back(key); });
  EXPECT_EQ(keys, (std::vector<std::string>{"x", "y"}));
  std::vector<std::string> raws;
  (*root)["x"].for_each_element([&](JsonValue v) { raws.emplace_back(v.raw()); });
  EXPECT_EQ(raws, (std::vector<std::string>{"10", "[20, 21]", R"({"k": 30})"}));
}

TEST(JsonTapeTest, UnescapesEveryEscapeAndSurrogatePairs) {
  JsonTape tape;
  auto root = tape.parse(R"(["a\"b\\c\/d\be\ff\ng\rh\ti", "\u00e9\u20AC\ud83d\ude00", "x\u0000y"])");
  ASSERT_TRUE(root) << root.error().to_string();
  EXPECT_EQ(root->at(0).string(), "a\"b\\c/d\be\ff\ng\rh\ti");
  EXPECT_EQ(root->at(1).string(), "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  EXPECT_EQ(root->at(2).string(), std::string_view("x\0y", 3));
}

TEST(JsonTapeTest, StringsWithoutEscapesViewTheSource) {
  JsonTape tape;
  const std::string text = R"({"k": "value"})";
  auto root = tape.parse(text);
  ASSERT_TRUE(root);
  const std::string_view value = (*root)["k"].string();
  EXPECT_GE(value.data(), text.data());
  EXPECT_LT(value.data(), text.data() + text.size());
}

TEST(JsonTapeTest, ReadsIntegersOnlyWhenIntegralAndInRange) {
  JsonTape tape;
  auto root = tape.parse("[0, -0, 9223372036854775807, 9223372036854775808, 1.0, 1e2, -9223372036854775808]");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->at(0).int64(), 0);
  EXPECT_EQ(root->at(1).int64(), 0);
  EXPECT_EQ(root->at(2).int64(), INT64_MAX);
  EXPECT_EQ(root->at(3).int64(), std::nullopt);
  EXPECT_EQ(root->at(4).int64(), std::nullopt);
  EXPECT_EQ(root->at(5).int64(), std::nullopt);
  EXPECT_EQ(root->at(6).int64(), INT64_MIN);
}

TEST(JsonTapeTest, RejectsWhatRfc8259Rejects) {
  const std::vector<std::string> bad = {"",
                                        " ",
                                        "{",
                                        "[1,]",
                                        "{\"a\":1,}",
                                        "{\"a\" 1}",
                                        "{a:1}",
                                        "[01]",
                                        "[-]",
                                        "[1.]",
                                        "[1e]",
                                        "[.5]",
                                        "[+1]",
                                        "'x'",
                                        "[NaN]",
                                        "[tru]",
                                        "nul",
                                        "[1] x",
                                        "[1][2]",
                                        "\"abc",
                                        "\"\\x\"",
                                        "\"\\u12\"",
                                        "\"\\ud800\"",
                                        "\"\\udc00\"",
                                        "\"\\ud800\\u0041\"",
                                        "\"a\tb\"",
                                        "\"a\nb\"",
                                        "{\"a\":}",
                                        "\"\xC0\x80\"",
                                        "\"\xED\xA0\x80\"",
                                        "\"\xF5\x80\x80\x80\"",
                                        "\"\xE2\x82\"",
                                        "\"\x80\"",
                                        "\"\xF0\x8F\xBF\xBF\"",
                                        "[1,,2]",
                                        "{,}",
                                        "[\"a\" \"b\"]",
                                        "{\"a\":1 \"b\":2}"};
  JsonTape tape;
  for (const std::string& text : bad) {
    auto r = tape.parse(text);
    ASSERT_FALSE(r.has_value()) << "accepted: " << text;
    EXPECT_EQ(r.error().code(), codes::kProviderBadEventJson);
    EXPECT_FALSE(json::accept(text)) << "nlohmann accepts: " << text;
  }
}

// Found by AgreesWithNlohmannOnMutatedEvents (seed 3078369394: "output_tokens":-3e552).
TEST(JsonTapeTest, RefusesANumberThatOverflowsADoubleAndTakesOneThatUnderflows) {
  JsonTape tape;
  const std::string too_many_digits(400, '9');
  for (const char* text : {"-3e552", "1e309", "[1.5e400]", "{\"n\":-3.5e722}", too_many_digits.c_str()}) {
    EXPECT_FALSE(nlohmann::json::accept(text)) << text;
    EXPECT_FALSE(tape.parse(text)) << text;
  }
  for (const char* text :
       {"1e-400", "-2.5e-330", "0.0000001e-320", "1e308", "123456789012345678901234567890"}) {
    EXPECT_TRUE(nlohmann::json::accept(text)) << text;
    auto parsed = tape.parse(text);
    ASSERT_TRUE(parsed) << text;
    EXPECT_EQ(parsed->to_json(), nlohmann::json::parse(text)) << text;
  }
}

TEST(JsonTapeTest, BoundsNesting) {
  JsonTape tape;
  const std::string ok = std::string(JsonTape::kMaxDepth, '[') + std::string(JsonTape::kMaxDepth, ']');
  EXPECT_TRUE(tape.parse(ok).has_value());
  const std::string deep =
      std::string(JsonTape::kMaxDepth + 1, '[') + std::string(JsonTape::kMaxDepth + 1, ']');
  auto r = tape.parse(deep);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), codes::kProviderBadEventJson);
}

TEST(JsonTapeTest, TapeIsReusedAcrossParses) {
  JsonTape tape;
  std::string first = R"({"a": "with \"escape\"", "b": [1, 2, 3]})";
  ASSERT_TRUE(tape.parse(first));
  const std::string second = R"({"c": "new \u00e9"})";
  auto root = tape.parse(second);
  ASSERT_TRUE(root);
  EXPECT_EQ((*root)["c"].string(), "new \xC3\xA9");
  EXPECT_FALSE((*root)["a"].present());
  EXPECT_EQ(root->to_json(), json::parse(second));
}

// Random mutations of realistic event texts: the tape must accept exactly what nlohmann accepts, and read
// the same value. Replay a failure with the printed seed.
TEST(JsonTapeTest, AgreesWithNlohmannOnMutatedEvents) {
  const std::vector<std::string> seeds = {
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"H\u00e9llo \"w\""},"finish_reason":null}]})",
      R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a\\b\"}"}})",
      R"({"type":"response.completed","response":{"usage":{"input_tokens":12,"output_tokens":-3.5e2,"x":[true,false,null]}}})",
      "[\"\xE2\x82\xAC\xF0\x9F\x98\x80\", 0.25, {\"\": {}}, []]",
  };
  uint32_t seed = std::random_device{}();
  if (const char* fixed = std::getenv("KEEL_JSON_TAPE_SEED")) {
    seed = static_cast<uint32_t>(std::strtoul(fixed, nullptr, 10));
  }
  std::cout << "json tape differential seed: " << seed << " (KEEL_JSON_TAPE_SEED=" << seed
            << " replays it)\n";
  std::mt19937 rng(seed);
  int accepted = 0;
  const std::string alphabet =
      "{}[]\":,\\u0123456789abcdefnrtlsEe.-+ \t\n\x01\x7f\x80\xbf\xc3\xe2\xed\xf0\xf4\xff";
  JsonTape tape;
  for (int i = 0; i < 20000; ++i) {
    std::string text = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          text.erase(at, 1);
          break;
        default:
          text.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
      }
    }
    auto ours = tape.parse(text);
    const bool theirs = json::accept(text);
    ASSERT_EQ(ours.has_value(), theirs) << "seed " << seed << ", text: " << text;
    if (theirs) {
      ++accepted;
      ASSERT_EQ(ours->to_json(), json::parse(text)) << "seed " << seed << ", text: " << text;
    }
  }
  // Both sides of the grammar were exercised.
  EXPECT_GT(accepted, 1000);
  EXPECT_LT(accepted, 19000);
}

}  // namespace
}  // namespace keel::providers
