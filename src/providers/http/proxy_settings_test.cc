#include "providers/http/proxy_settings.h"

#include <gtest/gtest.h>

#include <map>

namespace keel::providers {
namespace {

ProxySettings from(std::map<std::string, std::string> env) {
  return ProxySettings::from_environment([env](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

TEST(ProxySettingsTest, PicksTheProxyVariableForTheScheme) {
  const ProxySettings settings =
      from({{"https_proxy", "http://secure:3128"}, {"http_proxy", "http://plain:3128"}});
  EXPECT_EQ(settings.proxy_for("https", "api.example.com"), "http://secure:3128");
  EXPECT_EQ(settings.proxy_for("http", "api.example.com"), "http://plain:3128");
}

TEST(ProxySettingsTest, PrefersLowerCaseAndFallsBackToUpperCaseAndAllProxy) {
  EXPECT_EQ(from({{"https_proxy", "http://lower:1"}, {"HTTPS_PROXY", "http://upper:1"}}).https_proxy,
            "http://lower:1");
  EXPECT_EQ(from({{"HTTPS_PROXY", "http://upper:1"}}).https_proxy, "http://upper:1");
  EXPECT_EQ(from({{"ALL_PROXY", "http://all:1"}}).https_proxy, "http://all:1");
  EXPECT_EQ(from({{"ALL_PROXY", "http://all:1"}}).http_proxy, "http://all:1");
}

TEST(ProxySettingsTest, IgnoresUpperCaseHttpProxy) {
  EXPECT_EQ(from({{"HTTP_PROXY", "http://cgi-injected:1"}}).proxy_for("http", "example.com"), "");
}

TEST(ProxySettingsTest, TreatsEmptyVariablesAsUnset) {
  EXPECT_EQ(from({{"https_proxy", ""}, {"HTTPS_PROXY", "http://upper:1"}}).https_proxy, "http://upper:1");
  EXPECT_EQ(from({{"no_proxy", ""}, {"NO_PROXY", "localhost"}}).no_proxy, "localhost");
}

TEST(ProxySettingsTest, NoProxyBypassesTheProxy) {
  const ProxySettings settings =
      from({{"HTTPS_PROXY", "http://bogus:1"}, {"NO_PROXY", "127.0.0.1,localhost"}});
  EXPECT_EQ(settings.proxy_for("https", "127.0.0.1"), "");
  EXPECT_EQ(settings.proxy_for("https", "localhost"), "");
  EXPECT_EQ(settings.proxy_for("https", "api.example.com"), "http://bogus:1");
}

TEST(ProxySettingsTest, NoProxyMatchesDomainsAndTheirSubdomainsOnly) {
  EXPECT_TRUE(no_proxy_matches("example.com", "example.com"));
  EXPECT_TRUE(no_proxy_matches("example.com", "API.Example.com"));
  EXPECT_TRUE(no_proxy_matches(".example.com", "api.example.com"));
  EXPECT_FALSE(no_proxy_matches("example.com", "badexample.com"));
  EXPECT_FALSE(no_proxy_matches("api.example.com", "example.com"));
}

TEST(ProxySettingsTest, NoProxyAcceptsWildcardSpacesAndEmptyEntries) {
  EXPECT_TRUE(no_proxy_matches("*", "anything.example"));
  EXPECT_TRUE(no_proxy_matches(" foo , ,  bar.org ", "x.bar.org"));
  EXPECT_FALSE(no_proxy_matches("", "example.com"));
  EXPECT_FALSE(no_proxy_matches(",,", "example.com"));
}

TEST(ProxySettingsTest, NoProxyMatchesIpv4CidrBlocksAndIpv6Literals) {
  EXPECT_TRUE(no_proxy_matches("10.0.0.0/8", "10.1.2.3"));
  EXPECT_FALSE(no_proxy_matches("10.0.0.0/8", "11.1.2.3"));
  EXPECT_TRUE(no_proxy_matches("192.168.1.7/32", "192.168.1.7"));
  EXPECT_FALSE(no_proxy_matches("10.0.0.0/99", "10.1.2.3"));
  EXPECT_TRUE(no_proxy_matches("::1", "[::1]"));
  EXPECT_TRUE(no_proxy_matches("[::1]", "::1"));
}

}  // namespace
}  // namespace keel::providers
