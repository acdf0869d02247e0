// Tests for policy/site_rule.h: typed scopes and their canonical keys, rule matching by typed values, the
// JSON form of a rule, and the coded refusal of a client's malformed rule.
#include "policy/site_rule.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "keel/error_codes.h"

namespace keel {
namespace {

using nlohmann::json;

RuleScope scope(std::string_view text) {
  Result<RuleScope> parsed = parse_rule_scope(text);
  EXPECT_TRUE(parsed.has_value()) << text << ": " << parsed.error().to_string();
  return parsed.value_or(RuleScope::local());
}

std::string spec_error(const json& params) {
  Result<RuleSpec> spec = parse_rule_spec(params);
  EXPECT_FALSE(spec.has_value()) << params.dump() << " unexpectedly parsed";
  return spec ? "ok" : spec.error().code();
}

TEST(RuleScopeTest, ParsesEachKindToItsCanonicalKey) {
  EXPECT_EQ(scope("HTTPS://A.example:443/").key(), "https://a.example");
  EXPECT_NE(scope("https://a.example").origin(), nullptr);
  EXPECT_EQ(scope("mcp:fs").key(), "mcp:fs");
  EXPECT_EQ(scope("mcp:fs").origin(), nullptr);
  EXPECT_EQ(scope("local:").key(), "local:");
  EXPECT_EQ(scope("local:"), RuleScope::local());
}

TEST(RuleScopeTest, EqualityIsTypedAndAgreesWithTheKey) {
  EXPECT_EQ(scope("https://a.example"), scope("https://a.example:443"));
  EXPECT_NE(scope("https://a.example"), scope("http://a.example"));
  EXPECT_NE(scope("https://a.example"), scope("https://a.example:8443"));
  EXPECT_NE(scope("https://a.example"), scope("https://a.example.evil.com"));
  EXPECT_NE(scope("mcp:fs"), scope("mcp:FS"));
  EXPECT_NE(scope("mcp:fs"), RuleScope::local());
  EXPECT_EQ(*RuleScope::for_mcp_server("fs"), scope("mcp:fs"));
}

TEST(RuleScopeTest, DescribesItselfForPeople) {
  EXPECT_EQ(scope("https://a.example").description(), "https://a.example");
  EXPECT_EQ(scope("mcp:fs").description(), "MCP server fs");
  EXPECT_EQ(RuleScope::local().description(), "this machine");
}

TEST(RuleScopeTest, RefusesMalformedScopesWithTheirCodes) {
  EXPECT_EQ(parse_rule_scope("https://a.example/admin").error().code(), codes::kPolicyBadOrigin);
  EXPECT_EQ(parse_rule_scope("a.example").error().code(), codes::kPolicyBadOrigin);
  EXPECT_EQ(parse_rule_scope("local").error().code(), codes::kPolicyBadOrigin);
  EXPECT_EQ(parse_rule_scope("mcp:").error().code(), codes::kPolicyBadRule);
  EXPECT_EQ(parse_rule_scope("mcp:a\nb").error().code(), codes::kPolicyBadRule);
  EXPECT_EQ(parse_rule_scope("mcp:" + std::string(RuleScope::kMaxServerBytes + 1, 'x')).error().code(),
            codes::kPolicyBadRule);
}

TEST(SiteRuleTest, AppliesByToolNameAndEffects) {
  SiteRule rule;
  EXPECT_TRUE(rule.applies_to("browser_click", ToolEffects::kWrite));  // any tool, any effects
  rule.tool = "browser_click";
  EXPECT_TRUE(rule.applies_to("browser_click", ToolEffects::kRead));
  EXPECT_FALSE(rule.applies_to("browser_click2", ToolEffects::kRead));
  EXPECT_FALSE(rule.applies_to("browser_clic", ToolEffects::kRead));
  rule.effects = ToolEffects::kWrite;
  EXPECT_TRUE(rule.applies_to("browser_click", ToolEffects::kWrite));
  EXPECT_FALSE(rule.applies_to("browser_click", ToolEffects::kRead));
}

TEST(SiteRuleTest, JsonRoundTripsEveryField) {
  SiteRule rule;
  rule.id = "r1";
  rule.scope = scope("https://a.example:8443");
  rule.tool = "browser_click";
  rule.effects = ToolEffects::kWrite;
  rule.decision = RuleDecision::kDeny;
  rule.version = 7;
  rule.created_at = 1'700'000'000'000;
  rule.bounds = {"t1", "/work/a", RuleLifetime::kTurn, "s1", "turn-1"};
  const json encoded = to_json(rule);
  EXPECT_EQ(encoded, (json{{"id", "r1"},
                           {"scope", "https://a.example:8443"},
                           {"tool", "browser_click"},
                           {"effects", "write"},
                           {"decision", "deny"},
                           {"version", 7},
                           {"createdAt", 1'700'000'000'000},
                           {"threadId", "t1"},
                           {"workspace", "/work/a"},
                           {"lifetime", "turn"},
                           {"sessionId", "s1"},
                           {"turnId", "turn-1"}}));
  EXPECT_EQ(site_rule_from_json(encoded).value(), rule);

  SiteRule any;
  any.id = "r2";
  any.scope = scope("mcp:fs");
  EXPECT_EQ(to_json(any)["tool"], nullptr);
  EXPECT_EQ(to_json(any)["effects"], nullptr);
  EXPECT_EQ(to_json(any)["threadId"], nullptr);
  EXPECT_EQ(to_json(any)["lifetime"], "untilRevoked");
  EXPECT_EQ(site_rule_from_json(to_json(any)).value(), any);
}

TEST(SiteRuleTest, SaysComparesTheRuleTermsButNotItsIdentity) {
  SiteRule rule;
  rule.id = "r1";
  rule.version = 3;
  rule.scope = scope("https://a.example");
  rule.tool = "t";
  RuleSpec spec{scope("https://a.example"), "t", std::nullopt, RuleDecision::kAllow};
  EXPECT_TRUE(rule.says(spec));
  spec.effects = ToolEffects::kRead;
  EXPECT_FALSE(rule.says(spec));
}

TEST(RuleSpecTest, ParsesAClientRule) {
  const RuleSpec spec = parse_rule_spec(json{{"scope", "https://a.example"},
                                             {"tool", "browser_click"},
                                             {"effects", "write"},
                                             {"decision", "allow"}})
                            .value();
  EXPECT_EQ(spec.scope, scope("https://a.example"));
  EXPECT_EQ(spec.tool, "browser_click");
  EXPECT_EQ(spec.effects, ToolEffects::kWrite);
  EXPECT_EQ(spec.decision, RuleDecision::kAllow);

  const RuleSpec any =
      parse_rule_spec(json{{"scope", "local:"}, {"tool", nullptr}, {"decision", "deny"}}).value();
  EXPECT_EQ(any.tool, std::nullopt);
  EXPECT_EQ(any.effects, std::nullopt);
}

TEST(RuleSpecTest, RefusesAMalformedOriginAsBadOrigin) {
  EXPECT_EQ(spec_error(json{{"scope", "https://a.example@evil"}, {"decision", "allow"}}),
            codes::kPolicyBadOrigin);
  EXPECT_EQ(spec_error(json{{"scope", "example.com"}, {"decision", "allow"}}), codes::kPolicyBadOrigin);
}

TEST(RuleSpecTest, RefusesEveryOtherMalformedFieldAsBadRule) {
  const json good = {{"scope", "https://a.example"}, {"decision", "allow"}};
  EXPECT_EQ(spec_error(json::array()), codes::kPolicyBadRule);
  EXPECT_EQ(spec_error(json{{"decision", "allow"}}), codes::kPolicyBadRule);
  EXPECT_EQ(spec_error(json{{"scope", 7}, {"decision", "allow"}}), codes::kPolicyBadRule);
  EXPECT_EQ(spec_error(json{{"scope", "https://a.example"}}), codes::kPolicyBadRule);
  json bad = good;
  bad["decision"] = "block";
  EXPECT_EQ(spec_error(bad), codes::kPolicyBadRule);
  bad = good;
  bad["effects"] = "execute";
  EXPECT_EQ(spec_error(bad), codes::kPolicyBadRule);
  bad = good;
  bad["tool"] = "browser click";
  EXPECT_EQ(spec_error(bad), codes::kPolicyBadRule);
  bad = good;
  bad["tool"] = 3;
  EXPECT_EQ(spec_error(bad), codes::kPolicyBadRule);
  bad = good;
  bad["effect"] = "write";  // misspelt: refused rather than silently widening the rule to both effects
  EXPECT_EQ(spec_error(bad), codes::kPolicyBadRule);
  EXPECT_EQ(spec_error(json{{"scope", "mcp:"}, {"decision", "allow"}}), codes::kPolicyBadRule);
}

TEST(SiteRuleTest, DecodingRefusesAChangeWithoutVersion) {
  EXPECT_EQ(site_rule_from_json(json{{"id", "r"}, {"scope", "local:"}, {"decision", "allow"}}).error().code(),
            codes::kPolicyBadRule);
}

}  // namespace
}  // namespace keel
