#include "store/stored_json.h"

#include <gtest/gtest.h>

#include "keel/error_codes.h"

namespace keel::stored_json {
namespace {

using nlohmann::json;

TEST(StoredJsonTest, DamageNamesWhatWasReadAndWhy) {
  const Error error = damaged("run r1's pendingTool", "not a JSON object");
  EXPECT_EQ(error.code(), codes::kStoreDecode);
  EXPECT_EQ(error.message(), "run r1's pendingTool is damaged: not a JSON object");
}

TEST(StoredJsonTest, AnObjectWithOnlyKnownKeysIsAccepted) {
  EXPECT_TRUE(expect_object_with_keys(json{{"a", 1}, {"b", "x"}}, {"a", "b", "c"}, "v").has_value());
  EXPECT_TRUE(expect_object_with_keys(json::object(), {"a"}, "v").has_value());
}

TEST(StoredJsonTest, AnUnknownKeyOrANonObjectIsDamage) {
  const auto unknown = expect_object_with_keys(json{{"a", 1}, {"z", 2}}, {"a", "b"}, "v");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code(), codes::kStoreDecode);
  EXPECT_NE(unknown.error().message().find("unknown key 'z'"), std::string::npos);

  const auto array = expect_object_with_keys(json::array({1}), {"a"}, "v");
  ASSERT_FALSE(array.has_value());
  EXPECT_NE(array.error().message().find("not a JSON object"), std::string::npos);
}

TEST(StoredJsonTest, ARequiredStringMustBePresentAndAString) {
  EXPECT_EQ(string_field(json{{"k", "text"}}, "k", "v").value(), "text");
  for (const json& value : {json::object(), json{{"k", 3}}, json{{"k", nullptr}}}) {
    const auto read = string_field(value, "k", "v");
    ASSERT_FALSE(read.has_value()) << value.dump();
    EXPECT_EQ(read.error().code(), codes::kStoreDecode);
    EXPECT_NE(read.error().message().find("'k' is not a string"), std::string::npos);
  }
}

TEST(StoredJsonTest, AnOptionalStringMayBeAbsentButNotAnotherType) {
  EXPECT_EQ(optional_string_field(json::object(), "k", "v").value(), std::nullopt);
  EXPECT_EQ(optional_string_field(json{{"k", "t"}}, "k", "v").value(), std::optional<std::string>("t"));
  const auto wrong = optional_string_field(json{{"k", false}}, "k", "v");
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code(), codes::kStoreDecode);
}

}  // namespace
}  // namespace keel::stored_json
