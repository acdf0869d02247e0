// Tests for util/origin.h: one canonical value per origin, whatever its spelling, and a coded refusal of
// everything that is not a tuple origin of http, https, ws or wss.
#include "util/origin.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "keel/error_codes.h"

namespace keel {
namespace {

constexpr char kNonAsciiHostUrl[] = "https://b\u00fccher.example";  // ü is two bytes of UTF-8

Origin parsed(std::string_view text, OriginSyntax syntax = OriginSyntax::kOriginOrUrl) {
  Result<Origin> origin = parse_origin(text, syntax);
  EXPECT_TRUE(origin.has_value()) << text << ": " << origin.error().to_string();
  return origin.value_or(Origin{});
}

// The canonical serialization of `text`'s origin.
std::string canonical(std::string_view text) { return parsed(text).to_string(); }

// The error code of a refused `text` ("ok" when it parsed).
std::string refusal(std::string_view text, OriginSyntax syntax = OriginSyntax::kOriginOrUrl) {
  Result<Origin> origin = parse_origin(text, syntax);
  EXPECT_FALSE(origin.has_value()) << text << " unexpectedly parsed as " << origin->to_string();
  return origin ? "ok" : origin.error().code();
}

TEST(OriginTest, ParsesAFullUrlIntoTypedFields) {
  const Origin origin = parsed("https://Example.COM:443/a?b#c");
  EXPECT_EQ(origin.scheme, "https");
  EXPECT_EQ(origin.host, "example.com");
  EXPECT_EQ(origin.port, 443);
  EXPECT_EQ(origin.to_string(), "https://example.com");
}

TEST(OriginTest, FillsInTheDefaultPortOfEachScheme) {
  EXPECT_EQ(parsed("http://a.example").port, 80);
  EXPECT_EQ(parsed("https://a.example").port, 443);
  EXPECT_EQ(parsed("ws://a.example").port, 80);
  EXPECT_EQ(parsed("wss://a.example").port, 443);
}

TEST(OriginTest, SerializationOmitsOnlyTheDefaultPort) {
  EXPECT_EQ(canonical("http://a.example:80/"), "http://a.example");
  EXPECT_EQ(canonical("http://a.example:443"), "http://a.example:443");
  EXPECT_EQ(canonical("https://a.example:8443"), "https://a.example:8443");
  EXPECT_EQ(canonical("wss://a.example:0443"), "wss://a.example");
}

TEST(OriginTest, LowercasesSchemeAndHost) {
  EXPECT_EQ(canonical("HTTPS://WWW.Example.Com"), "https://www.example.com");
}

TEST(OriginTest, DropsOneTrailingDotOfADomain) {
  EXPECT_EQ(parsed("https://example.com./x"), parsed("https://example.com"));
}

TEST(OriginTest, EqualityComparesEveryTypedField) {
  EXPECT_EQ(parsed("https://a.example"), parsed("https://A.example:443/page"));
  EXPECT_NE(parsed("https://a.example"), parsed("http://a.example"));
  EXPECT_NE(parsed("https://a.example"), parsed("https://a.example:8443"));
  EXPECT_NE(parsed("https://a.example"), parsed("https://a.example.evil.com"));
  EXPECT_NE(parsed("https://a.example"), parsed("https://b.a.example"));
}

TEST(OriginTest, KeepsIpv6HostsInBracketsInTheirShortestForm) {
  EXPECT_EQ(canonical("http://[::1]:8080/x"), "http://[::1]:8080");
  EXPECT_EQ(canonical("http://[0:0:0:0:0:0:0:1]"), "http://[::1]");
  EXPECT_EQ(canonical("https://[2001:DB8:0:0:1:0:0:1]"), "https://[2001:db8::1:0:0:1]");
  EXPECT_EQ(canonical("https://[2001:db8::]"), "https://[2001:db8::]");
  EXPECT_EQ(canonical("https://[::ffff:192.0.2.1]"), "https://[::ffff:c000:201]");
  EXPECT_EQ(canonical("https://[1:2:3:4:5:6:7:8]"), "https://[1:2:3:4:5:6:7:8]");
  EXPECT_TRUE(parsed("http://[::1]").host_is_ip_address());
}

TEST(OriginTest, AcceptsDottedDecimalIpv4Hosts) {
  EXPECT_EQ(canonical("http://127.0.0.1:3000"), "http://127.0.0.1:3000");
  EXPECT_TRUE(parsed("http://10.0.0.255").host_is_ip_address());
  EXPECT_FALSE(parsed("http://a10.example").host_is_ip_address());
}

TEST(OriginTest, RefusesEverySecondSpellingOfAnIpv4Address) {
  for (const char* text : {"http://127.1", "http://0x7f.0.0.1", "http://2130706433", "http://010.0.0.1",
                           "http://256.0.0.1", "http://1.2.3.4.5", "http://a.0x10"}) {
    EXPECT_EQ(refusal(text), codes::kPolicyBadOrigin) << text;
  }
}

TEST(OriginTest, RefusesMalformedIpv6Hosts) {
  for (const char* text : {"http://[::1", "http://[1::2::3]", "http://[12345::]", "http://[::1%eth0]",
                           "http://[1:2:3:4:5:6:7:8:9]", "http://[1:2:3]", "http://[::1]x", "http://[]"}) {
    EXPECT_EQ(refusal(text), codes::kPolicyBadOrigin) << text;
  }
}

TEST(OriginTest, TakesTheOriginOfTheUrlInsideABlobUrl) {
  EXPECT_EQ(canonical("blob:https://a.example/0b7d-11"), "https://a.example");
  EXPECT_EQ(refusal("blob:null/0b7d-11"), codes::kPolicyBadOrigin);
  EXPECT_EQ(refusal("blob:blob:https://a.example/x"), codes::kPolicyBadOrigin);
}

TEST(OriginTest, RefusesEmptyInput) { EXPECT_EQ(refusal(""), codes::kPolicyBadOrigin); }

TEST(OriginTest, RefusesInputWithoutAScheme) {
  for (const char* text : {"example.com", "example.com:8080", "localhost:3000", "//example.com", ":443"}) {
    EXPECT_EQ(refusal(text), codes::kPolicyBadOrigin) << text;
  }
  EXPECT_NE(parse_origin("example.com:8080").error().message().find("no scheme"), std::string::npos);
}

TEST(OriginTest, RefusesInputWithoutAHost) {
  for (const char* text : {"https://", "https:///path", "https://:443", "https://?q"}) {
    EXPECT_EQ(refusal(text), codes::kPolicyBadOrigin) << text;
  }
}

TEST(OriginTest, RefusesBadPorts) {
  for (const char* text :
       {"https://a.example:", "https://a.example:65536", "https://a.example:-1", "https://a.example:8o",
        "https://a.example:1:2", "https://a.example:99999999999"}) {
    EXPECT_EQ(refusal(text), codes::kPolicyBadOrigin) << text;
  }
  EXPECT_EQ(parsed("https://a.example:65535").port, 65535);
}

TEST(OriginTest, RefusesUserinfo) {
  EXPECT_EQ(refusal("https://user:pw@a.example"), codes::kPolicyBadOrigin);
  EXPECT_EQ(refusal("https://good.example@evil.example"), codes::kPolicyBadOrigin);
}

TEST(OriginTest, RefusesWhitespaceControlCharactersAndBackslashes) {
  for (const std::string& text :
       {std::string(" https://a.example"), std::string("https://a.example "),
        std::string("https://a .example"), std::string("https://a.example\t"),
        std::string("https://a.exa\nmple"), std::string("https://a.example\x7f"),
        std::string("https://a\0b.example", 19), std::string("https://evil\\@a.example")}) {
    EXPECT_EQ(refusal(text), codes::kPolicyBadOrigin) << text;
  }
}

TEST(OriginTest, RefusesNonAsciiHostsButAcceptsPunycode) {
  EXPECT_EQ(refusal(kNonAsciiHostUrl), codes::kPolicyBadOrigin);
  EXPECT_EQ(canonical("https://XN--bcher-kva.example"), "https://xn--bcher-kva.example");
}

TEST(OriginTest, RefusesForbiddenHostCharacters) {
  for (const char* text : {"https://a%2e.example", "https://*.example", "https://a..example",
                           "https://.a.example", "https://a<b.example", "https://a|b"}) {
    EXPECT_EQ(refusal(text), codes::kPolicyBadOrigin) << text;
  }
}

TEST(OriginTest, RefusesOverlongHostsAndLabels) {
  EXPECT_EQ(refusal("https://" + std::string(64, 'a') + ".example"), codes::kPolicyBadOrigin);
  std::string long_host;
  for (int i = 0; i < 50; ++i) long_host += "abcd.";
  EXPECT_EQ(refusal("https://" + long_host + "example"), codes::kPolicyBadOrigin);
  EXPECT_EQ(parsed("https://" + std::string(63, 'a') + ".example").host.size(), 63u + 8u);
}

TEST(OriginTest, RefusesOpaqueOrigins) {
  for (const char* text :
       {"file:///etc/passwd", "data:text/html,hi", "about:blank", "javascript:alert(1)", "null",
        "mailto:a@b.example", "chrome-extension://abcdef", "ftp://a.example", "https:a.example"}) {
    EXPECT_EQ(refusal(text), codes::kPolicyBadOrigin) << text;
  }
}

TEST(OriginTest, OriginOnlySyntaxRefusesAPathButAcceptsATrailingSlash) {
  EXPECT_EQ(refusal("https://a.example/admin", OriginSyntax::kOriginOnly), codes::kPolicyBadOrigin);
  EXPECT_EQ(refusal("https://a.example?x", OriginSyntax::kOriginOnly), codes::kPolicyBadOrigin);
  EXPECT_EQ(parsed("https://a.example/", OriginSyntax::kOriginOnly).to_string(), "https://a.example");
}

TEST(OriginTest, MessagesNameTheInputWithoutItsNonAsciiBytes) {
  const Result<Origin> origin = parse_origin(kNonAsciiHostUrl);
  ASSERT_FALSE(origin.has_value());
  EXPECT_NE(origin.error().message().find("'https://b??cher.example'"), std::string::npos)
      << origin.error().message();
  EXPECT_NE(origin.error().message().find("punycode"), std::string::npos);
}

TEST(OriginTest, DefaultPortIsKnownOnlyForTupleOriginSchemes) {
  EXPECT_EQ(default_port("https"), 443);
  EXPECT_EQ(default_port("ws"), 80);
  EXPECT_EQ(default_port("file"), std::nullopt);
  EXPECT_EQ(default_port("HTTPS"), std::nullopt);  // callers pass the canonical, lower-case scheme
}

}  // namespace
}  // namespace keel
