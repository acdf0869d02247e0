// Tests for util/sha256.h: FIPS 180-2 vectors, binary-safe input, and fingerprints over canonical JSON.
#include "util/sha256.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "keel/error_codes.h"
#include "util/canonical_json.h"

namespace keel {
namespace {

using nlohmann::json;

TEST(Sha256Test, HashesEmptyInputToKnownVector) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256Test, HashesAbcToKnownVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Test, HashesMultiBlockInputToKnownVector) {
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256Test, HashesOneMillionAsToKnownVector) {
  EXPECT_EQ(sha256_hex(std::string(1'000'000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, HashesEmbeddedNulBytesInsteadOfStoppingAtThem) {
  const std::string bytes("a\0b", 3);
  EXPECT_EQ(sha256_hex(bytes), "59b271ae1bbcb1d31d41929817f4b16fb439eb4f31520b5ad1d5ce98920a7138");
}

TEST(Sha256Test, OutputIsSixtyFourLowercaseHexCharacters) {
  const std::string hex = sha256_hex("keel");
  ASSERT_EQ(hex.size(), 64u);
  for (const char c : hex) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << hex;
}

TEST(JsonFingerprintTest, IsSha256OfTheCanonicalEncoding) {
  const json value = json::parse(R"({"b":[true,null],"a":1})");
  const auto fingerprint = json_fingerprint(value);
  ASSERT_TRUE(fingerprint.has_value()) << fingerprint.error().to_string();
  // sha256('{"a":1,"b":[true,null]}'), computed independently.
  EXPECT_EQ(*fingerprint, "1cc69c7fa23616ca2ec3ee70d24390a6225c8832db8a4c814c7e0e7f942f8668");
  EXPECT_EQ(*fingerprint, sha256_hex(*canonical_json(value)));
}

TEST(JsonFingerprintTest, EqualValuesWithDifferentSpellingsHaveTheSameFingerprint) {
  const auto a = json_fingerprint(json::parse(R"({"x": 1.0, "y": "\u00e9"})"));
  const auto b = json_fingerprint(json::parse("{\"y\":\"\xc3\xa9\",\"x\":1}"));
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(*a, *b);
}

TEST(JsonFingerprintTest, DifferentValuesHaveDifferentFingerprints) {
  const auto a = json_fingerprint(json{{"x", 1}});
  const auto b = json_fingerprint(json{{"x", 2}});
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_NE(*a, *b);
}

TEST(JsonFingerprintTest, FailsExactlyWhenCanonicalJsonFails) {
  const json bad = json{{"x", std::numeric_limits<double>::quiet_NaN()}};
  const auto fingerprint = json_fingerprint(bad);
  ASSERT_FALSE(fingerprint.has_value());
  EXPECT_EQ(fingerprint.error(), canonical_json(bad).error());
  EXPECT_EQ(fingerprint.error().code(), codes::kJsonNonFinite);

  const json invalid_utf8 = std::string("\xff");
  ASSERT_FALSE(json_fingerprint(invalid_utf8).has_value());
  EXPECT_EQ(json_fingerprint(invalid_utf8).error().code(), codes::kJsonInvalidUtf8);
}

}  // namespace
}  // namespace keel
