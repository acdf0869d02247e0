// Tests for policy/host_pattern.h: each pattern form matches typed origins exactly as documented, ports
// included, and malformed patterns are refused with policy.bad_origin.
#include "policy/host_pattern.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "keel/error_codes.h"

namespace keel {
namespace {

HostPattern pattern(std::string_view text) {
  Result<HostPattern> parsed = HostPattern::parse(text);
  EXPECT_TRUE(parsed.has_value()) << text << ": " << parsed.error().to_string();
  return parsed.value_or(HostPattern{});
}

bool matches(std::string_view pattern_text, std::string_view origin_text) {
  Result<Origin> origin = parse_origin(origin_text);
  EXPECT_TRUE(origin.has_value()) << origin.error().to_string();
  return origin && pattern(pattern_text).matches(*origin);
}

TEST(HostPatternTest, ExactOriginMatchesOnlyThatOrigin) {
  EXPECT_TRUE(matches("https://a.example", "https://a.example/page"));
  EXPECT_TRUE(matches("https://a.example", "https://A.EXAMPLE:443"));
  EXPECT_FALSE(matches("https://a.example", "http://a.example"));
  EXPECT_FALSE(matches("https://a.example", "https://a.example:8443"));
  EXPECT_FALSE(matches("https://a.example", "https://b.a.example"));
  EXPECT_FALSE(matches("https://a.example", "https://a.example.evil.com"));
  EXPECT_TRUE(matches("https://a.example:8443", "https://a.example:8443"));
  EXPECT_FALSE(matches("https://a.example:8443", "https://a.example"));
}

TEST(HostPatternTest, SubdomainWildcardCoversTheDomainAndItsSubdomainsOnLabelBoundaries) {
  EXPECT_TRUE(matches("https://*.example.com", "https://example.com"));
  EXPECT_TRUE(matches("https://*.example.com", "https://a.example.com"));
  EXPECT_TRUE(matches("https://*.example.com", "https://a.b.example.com"));
  EXPECT_FALSE(matches("https://*.example.com", "https://badexample.com"));
  EXPECT_FALSE(matches("https://*.example.com", "https://example.com.evil.net"));
  EXPECT_FALSE(matches("https://*.example.com", "http://a.example.com"));
  EXPECT_FALSE(matches("https://*.example.com", "https://a.example.com:8443"));
}

TEST(HostPatternTest, AnySchemeMeansHttpAndHttpsOnTheirDefaultPorts) {
  EXPECT_TRUE(matches("*://a.example", "http://a.example"));
  EXPECT_TRUE(matches("*://a.example", "https://a.example"));
  EXPECT_FALSE(matches("*://a.example", "wss://a.example"));
  EXPECT_FALSE(matches("*://a.example", "http://a.example:8080"));
  EXPECT_FALSE(matches("*://a.example", "https://a.example:80"));
  EXPECT_TRUE(matches("*://a.example:8080", "http://a.example:8080"));
  EXPECT_TRUE(matches("*://a.example:8080", "https://a.example:8080"));
  EXPECT_TRUE(matches("*://a.example:80", "https://a.example:80"));
  EXPECT_TRUE(matches("*://*.example.com", "http://x.example.com"));
}

TEST(HostPatternTest, AllUrlsMatchesEveryOrigin) {
  EXPECT_TRUE(matches("<all_urls>", "https://a.example"));
  EXPECT_TRUE(matches("<all_urls>", "ws://[::1]:9000"));
  EXPECT_TRUE(matches("<all_urls>", "http://10.0.0.1:8080"));
}

TEST(HostPatternTest, SerializesCanonically) {
  EXPECT_EQ(pattern("HTTPS://*.Example.COM/*").to_string(), "https://*.example.com");
  EXPECT_EQ(pattern("https://a.example:443/").to_string(), "https://a.example");
  EXPECT_EQ(pattern("*://a.example:8080").to_string(), "*://a.example:8080");
  EXPECT_EQ(pattern("*://a.example").to_string(), "*://a.example");
  EXPECT_EQ(pattern("<all_urls>").to_string(), "<all_urls>");
  EXPECT_EQ(pattern("http://[0::1]:3000").to_string(), "http://[::1]:3000");
  EXPECT_EQ(pattern(pattern("*://*.a.example:81").to_string()), pattern("*://*.a.example:81"));
}

TEST(HostPatternTest, RefusesMalformedPatterns) {
  for (const char* text :
       {"", "a.example", "*", "*://*", "*://*/*", "https://*", "https://*:443", "https://a.example/path",
        "https://a.example/*/x", "https://*.*.example", "https://a.*.example", "https://*.10.0.0.1",
        "https://*.[::1]", "file:///x", "ftp://a.example", "https://user@a.example", "<all_urls> ",
        "blob:https://a.example", "*://a.example:99999"}) {
    Result<HostPattern> parsed = HostPattern::parse(text);
    ASSERT_FALSE(parsed.has_value()) << text << " parsed as " << parsed->to_string();
    EXPECT_EQ(parsed.error().code(), codes::kPolicyBadOrigin) << text;
  }
}

TEST(HostPatternTest, RefusalNamesThePattern) {
  Result<HostPattern> parsed = HostPattern::parse("*://*/*");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_NE(parsed.error().message().find("'*://*/*'"), std::string::npos) << parsed.error().message();
  EXPECT_NE(parsed.error().message().find("<all_urls>"), std::string::npos) << parsed.error().message();
}

}  // namespace
}  // namespace keel
