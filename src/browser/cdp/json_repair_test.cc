// Lone UTF-16 surrogate escapes become U+FFFD; everything else stays byte for byte.
#include "browser/cdp/json_repair.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace keel::browser {
namespace {

TEST(JsonRepairTest, ALoneHighSurrogateBecomesTheReplacementCharacter) {
  const SurrogateRepair repaired = repair_lone_surrogates(R"({"v":"a\ud800b"})");
  EXPECT_EQ(repaired.text, R"({"v":"a\uFFFDb"})");
  EXPECT_EQ(repaired.replaced, 1u);
  EXPECT_EQ(nlohmann::json::parse(repaired.text)["v"],
            "a\xEF\xBF\xBD"
            "b");
}

TEST(JsonRepairTest, ALoneLowSurrogateBecomesTheReplacementCharacter) {
  const SurrogateRepair repaired = repair_lone_surrogates(R"(["\uDC00","x\uDFFF"])");
  EXPECT_EQ(repaired.text, R"(["\uFFFD","x\uFFFD"])");
  EXPECT_EQ(repaired.replaced, 2u);
}

TEST(JsonRepairTest, AHighSurrogateAtTheEndOfAStringOrBeforeANonSurrogateIsRepaired) {
  EXPECT_EQ(repair_lone_surrogates(R"(["\uD83D"])").text, R"(["\uFFFD"])");
  EXPECT_EQ(repair_lone_surrogates(R"(["\uD83D\u0041"])").text, R"(["\uFFFD\u0041"])");
  EXPECT_EQ(repair_lone_surrogates(R"(["\uD83D\uD83D\uDE00"])").text, R"(["\uFFFD\uD83D\uDE00"])");
}

TEST(JsonRepairTest, ProperPairsAndOtherEscapesAreLeftAlone) {
  const std::string text = R"({"emoji":"\uD83D\uDE00","quote":"\"","slash":"\\","n":"\n","e":"\u00e9"})";
  const SurrogateRepair repaired = repair_lone_surrogates(text);
  EXPECT_EQ(repaired.text, text);
  EXPECT_EQ(repaired.replaced, 0u);
}

TEST(JsonRepairTest, AnEscapedBackslashBeforeUIsNotReadAsAnEscape) {
  // `\\ud800` is a backslash followed by the letters "ud800", not a surrogate.
  const std::string text = R"(["\\ud800"])";
  EXPECT_EQ(repair_lone_surrogates(text).text, text);
}

TEST(JsonRepairTest, TruncatedEscapesDoNotReadPastTheEnd) {
  EXPECT_EQ(repair_lone_surrogates(R"("\ud8)").text, R"("\ud8)");
  EXPECT_EQ(repair_lone_surrogates("\\").text, "\\");
  EXPECT_EQ(repair_lone_surrogates(R"("\ud800\u)").text, R"("\uFFFD\u)");
}

}  // namespace
}  // namespace keel::browser
