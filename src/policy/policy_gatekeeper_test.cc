// Tests for policy/policy_gatekeeper.h over a real SQLite store: the verdict of every mode for reads and
// writes, rule precedence, typed matching of scopes, host permissions, the acceptForSite rule, two-phase
// changes (persisted with their transaction, effective on install, gone with a rollback), damaged rows,
// malformed client input, and installs racing checks.
#include "policy/policy_gatekeeper.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "keel/error_codes.h"
#include "testing/sequential_ids.h"
#include "testing/settings_rows.h"
#include "testing/store_test.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::code_of;
using testing::must;
using Kind = GateVerdict::Kind;

constexpr PolicyMode kAllModes[] = {PolicyMode::kAskEveryWrite, PolicyMode::kAskWrites, PolicyMode::kReadOnly,
                                    PolicyMode::kAllowAll};

ToolDescriptor browser_tool(std::string name, ToolEffects effects) {
  ToolDescriptor tool;
  tool.name = std::move(name);
  tool.level = ToolLevel::kL1;
  tool.effects = effects;
  tool.trust = ToolTrust::kUntrusted;
  tool.provenance = ToolProvenance::kPage;
  return tool;
}

ToolDescriptor local_tool(std::string name, ToolEffects effects) {
  ToolDescriptor tool;
  tool.name = std::move(name);
  tool.effects = effects;
  return tool;
}

ToolDescriptor mcp_tool(std::string name, ToolEffects effects, std::string server) {
  ToolDescriptor tool;
  tool.name = std::move(name);
  tool.level = ToolLevel::kMcp;
  tool.effects = effects;
  tool.trust = ToolTrust::kUntrusted;
  tool.provenance = ToolProvenance::kMcp;
  tool.binding = {ToolBinding::Kind::kMcp, std::move(server), "mcp-fs --stdio", ""};
  return tool;
}

ToolTarget on(std::string origin) { return ToolTarget{.origin = std::move(origin)}; }

class PolicyGatekeeperTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    reopen();
    gate_ = open_gate();
  }

  std::unique_ptr<PolicyGatekeeper> open_gate(PolicyMode default_mode = PolicyMode::kAskWrites,
                                              PolicySession session = {}) {
    return must(PolicyGatekeeper::open(*store_, clock_, ids_, default_mode, std::move(session)));
  }

  // acceptForSite of a write_file call on `thread_id` in `turn_id`, offered as check() offered it,
  // remembered for `lifetime`; committed and installed. Returns the rule.
  json accept_for_site(PolicyGatekeeper& gate, const std::string& thread_id, const std::string& lifetime,
                       const std::string& turn_id = "turn-1") {
    GateRequest request{thread_id, "call-1", &file_write_, &arguments_, ToolTarget{.path = "a.txt"}, turn_id};
    const GateVerdict verdict = gate.check(request);
    EXPECT_TRUE(verdict.offers_accept_for_site);
    auto tx = begin();
    const json change = must(gate.write_site_rule(*tx, request, verdict.site_rule_offer, lifetime));
    must(tx->commit());
    gate.install(change);
    return change["rule"];
  }

  Kind write_verdict(PolicyGatekeeper& gate, const std::string& thread_id,
                     const std::string& turn_id = "turn-1") {
    GateRequest request{thread_id, "call-2", &file_write_, &arguments_, ToolTarget{.path = "b.txt"}, turn_id};
    return gate.check(request).kind;
  }

  // Writes `method` in its own transaction, commits it and installs the change.
  json apply(std::string_view method, const json& params) {
    auto tx = begin();
    json change = must(gate_->write_change(*tx, method, params));
    must(tx->commit());
    gate_->install(change);
    return change;
  }

  // Adds a rule and returns its id.
  std::string add_rule(const std::string& scope, const std::string& decision, json tool = nullptr,
                       json effects = nullptr) {
    const json change = apply(
        "policy.addRule", {{"scope", scope}, {"tool", tool}, {"effects", effects}, {"decision", decision}});
    return change["rule"]["id"];
  }

  void set_mode(const std::string& thread_id, PolicyMode mode) {
    apply("policy.setMode", {{"threadId", thread_id}, {"mode", to_string(mode)}});
  }

  GateVerdict check(const ToolDescriptor& tool, ToolTarget target = {}, std::string thread_id = "t1") {
    return check_with(*gate_, tool, std::move(target), std::move(thread_id));
  }

  GateVerdict check_with(PolicyGatekeeper& gate, const ToolDescriptor& tool, ToolTarget target = {},
                         std::string thread_id = "t1") {
    GateRequest request{std::move(thread_id), "call-1", &tool, &arguments_, std::move(target)};
    return gate.check(request);
  }

  // The error code of `method` with `params`, checking that it wrote nothing.
  std::string refusal(std::string_view method, const json& params) {
    const int64_t rows_before = policy_rows();
    auto tx = begin();
    Result<json> change = gate_->write_change(*tx, method, params);
    EXPECT_FALSE(change.has_value()) << method << " " << params.dump() << " was accepted";
    must(tx->commit());
    EXPECT_EQ(policy_rows(), rows_before) << method << " " << params.dump() << " wrote something";
    return code_of(change);
  }

  // How many rows the policy has in the store: site rules plus policy settings.
  int64_t policy_rows() {
    auto tx = begin(TxMode::kRead);
    const int64_t rules = must(tx->query_one("SELECT COUNT(*) FROM site_rules"))->integer(0);
    const int64_t settings =
        must(tx->query_one("SELECT COUNT(*) FROM settings WHERE key LIKE 'policy.%'"))->integer(0);
    return rules + settings;
  }

  testing::SequentialIdSource ids_{"rule"};
  json arguments_ = json::object();
  std::unique_ptr<PolicyGatekeeper> gate_;

  const ToolDescriptor page_read_ = browser_tool("browser_read", ToolEffects::kRead);
  const ToolDescriptor click_ = browser_tool("browser_click", ToolEffects::kWrite);
  const ToolDescriptor type_ = browser_tool("browser_type", ToolEffects::kWrite);
  const ToolDescriptor file_read_ = local_tool("file_read", ToolEffects::kRead);
  const ToolDescriptor file_write_ = local_tool("file_write", ToolEffects::kWrite);
  const ToolDescriptor fs_search_ = mcp_tool("fs_search", ToolEffects::kRead, "fs");
  const ToolDescriptor fs_write_ = mcp_tool("fs_write", ToolEffects::kWrite, "fs");
};

// ---- modes ----

TEST_F(PolicyGatekeeperTest, ReadsRunInEveryModeWithoutRules) {
  for (PolicyMode mode : kAllModes) {
    gate_ = open_gate(mode);
    EXPECT_EQ(check(page_read_, on("https://a.example")).kind, Kind::kAllow) << to_string(mode);
    EXPECT_EQ(check(file_read_).kind, Kind::kAllow) << to_string(mode);
    EXPECT_EQ(check(fs_search_).kind, Kind::kAllow) << to_string(mode);
  }
}

TEST_F(PolicyGatekeeperTest, WritesFollowTheDefaultModeWithoutRules) {
  gate_ = open_gate(PolicyMode::kAskWrites);
  GateVerdict verdict = check(click_, on("https://a.example"));
  EXPECT_EQ(verdict.kind, Kind::kAsk);
  EXPECT_TRUE(verdict.offers_accept_for_site);
  EXPECT_NE(verdict.reason.find("writes on https://a.example need approval in mode ask_writes"),
            std::string::npos)
      << verdict.reason;

  gate_ = open_gate(PolicyMode::kAskEveryWrite);
  verdict = check(click_, on("https://a.example"));
  EXPECT_EQ(verdict.kind, Kind::kAsk);
  EXPECT_FALSE(verdict.offers_accept_for_site);
  EXPECT_NE(verdict.reason.find("mode ask_every_write"), std::string::npos) << verdict.reason;

  gate_ = open_gate(PolicyMode::kReadOnly);
  verdict = check(file_write_);
  EXPECT_EQ(verdict.kind, Kind::kDeny);
  EXPECT_NE(verdict.reason.find("read_only"), std::string::npos) << verdict.reason;
  EXPECT_NE(verdict.reason.find("file_write"), std::string::npos) << verdict.reason;

  gate_ = open_gate(PolicyMode::kAllowAll);
  EXPECT_EQ(check(click_, on("https://a.example")).kind, Kind::kAllow);
  EXPECT_EQ(check(fs_write_).kind, Kind::kAllow);
}

TEST_F(PolicyGatekeeperTest, ThreadModeOverridesTheDefaultForThatThreadOnly) {
  set_mode("t1", PolicyMode::kReadOnly);
  set_mode("t2", PolicyMode::kAllowAll);
  EXPECT_EQ(check(file_write_, {}, "t1").kind, Kind::kDeny);
  EXPECT_EQ(check(file_write_, {}, "t2").kind, Kind::kAllow);
  EXPECT_EQ(check(file_write_, {}, "t3").kind, Kind::kAsk);
  set_mode("t1", PolicyMode::kAskEveryWrite);
  EXPECT_EQ(check(file_write_, {}, "t1").kind, Kind::kAsk);
}

// ---- rules ----

TEST_F(PolicyGatekeeperTest, AllowRuleLetsWritesRunInAskWrites) {
  const std::string id = add_rule("https://a.example", "allow", "browser_click", "write");
  const GateVerdict verdict = check(click_, on("https://a.example/form"));
  EXPECT_EQ(verdict.kind, Kind::kAllow);
  EXPECT_NE(verdict.reason.find(id), std::string::npos) << verdict.reason;
  EXPECT_EQ(check(type_, on("https://a.example")).kind, Kind::kAsk);  // the rule names browser_click only
}

TEST_F(PolicyGatekeeperTest, DenyRuleBeatsAllowRuleInEveryMode) {
  add_rule("https://a.example", "allow");
  const std::string deny = add_rule("https://a.example", "deny", "browser_click");
  for (PolicyMode mode : kAllModes) {
    set_mode("t1", mode);
    const GateVerdict verdict = check(click_, on("https://a.example"));
    EXPECT_EQ(verdict.kind, Kind::kDeny) << to_string(mode);
    EXPECT_NE(verdict.reason.find("denied by site rule " + deny + " for https://a.example"),
              std::string::npos)
        << verdict.reason;
    EXPECT_EQ(check(type_, on("https://a.example")).kind, mode == PolicyMode::kReadOnly        ? Kind::kDeny
                                                          : mode == PolicyMode::kAskEveryWrite ? Kind::kAsk
                                                                                               : Kind::kAllow)
        << to_string(mode);
  }
}

TEST_F(PolicyGatekeeperTest, AskEveryWriteIgnoresAllowRulesForWritesButNotForReads) {
  set_mode("t1", PolicyMode::kAskEveryWrite);
  add_rule("https://a.example", "allow");
  GateVerdict verdict = check(click_, on("https://a.example"));
  EXPECT_EQ(verdict.kind, Kind::kAsk);
  EXPECT_FALSE(verdict.offers_accept_for_site);
  EXPECT_EQ(check(page_read_, on("https://a.example")).kind, Kind::kAllow);
  add_rule("https://a.example", "deny", "browser_click");
  EXPECT_EQ(check(click_, on("https://a.example")).kind, Kind::kDeny);
}

TEST_F(PolicyGatekeeperTest, ReadOnlyRefusesWritesThatRulesWouldAllowOrAskFor) {
  set_mode("t1", PolicyMode::kReadOnly);
  add_rule("https://a.example", "allow", "browser_click");
  add_rule("https://a.example", "ask", "browser_type");
  EXPECT_EQ(check(click_, on("https://a.example")).kind, Kind::kDeny);
  EXPECT_EQ(check(type_, on("https://a.example")).kind, Kind::kDeny);
  EXPECT_EQ(check(page_read_, on("https://a.example")).kind, Kind::kAllow);
}

TEST_F(PolicyGatekeeperTest, AskRuleAsksForReadsAndInAllowAll) {
  set_mode("t1", PolicyMode::kAllowAll);
  const std::string id = add_rule("https://a.example", "ask", nullptr, "read");
  GateVerdict verdict = check(page_read_, on("https://a.example"));  // an untrusted read
  EXPECT_EQ(verdict.kind, Kind::kAsk);
  EXPECT_FALSE(verdict.offers_accept_for_site);  // the ask rule would outrank any allow rule
  EXPECT_NE(verdict.reason.find(id), std::string::npos) << verdict.reason;
  EXPECT_EQ(check(click_, on("https://a.example")).kind, Kind::kAllow);  // the rule covers reads only
  set_mode("t1", PolicyMode::kAskWrites);
  EXPECT_FALSE(check(page_read_, on("https://a.example")).offers_accept_for_site);
}

TEST_F(PolicyGatekeeperTest, DenyRuleAppliesToUntrustedAndTrustedReads) {
  add_rule("https://a.example", "deny", nullptr, "read");
  add_rule("local:", "deny", "file_read");
  EXPECT_EQ(check(page_read_, on("https://a.example")).kind, Kind::kDeny);
  EXPECT_EQ(check(file_read_).kind, Kind::kDeny);
  EXPECT_EQ(check(page_read_, on("https://b.example")).kind, Kind::kAllow);
}

TEST_F(PolicyGatekeeperTest, OriginRuleMatchesTheTypedOriginOnly) {
  add_rule("https://a.example", "allow");
  EXPECT_EQ(check(click_, on("https://A.EXAMPLE:443/path?q")).kind, Kind::kAllow);
  for (const char* other : {"https://a.example.evil.com", "http://a.example", "https://a.example:8443",
                            "https://b.a.example", "https://xa.example", "wss://a.example"}) {
    EXPECT_EQ(check(click_, on(other)).kind, Kind::kAsk) << other;
  }
}

TEST_F(PolicyGatekeeperTest, UnparsableTargetOriginIsDenied) {
  set_mode("t1", PolicyMode::kAllowAll);
  for (const char* bad : {"", "a.example", "https://user@a.example", "file:///etc/passwd", "javascript:x"}) {
    const GateVerdict verdict = check(page_read_, on(bad));
    EXPECT_EQ(verdict.kind, Kind::kDeny) << bad;
    EXPECT_NE(verdict.reason.find("not a usable origin"), std::string::npos) << verdict.reason;
  }
}

// ---- scopes ----

TEST_F(PolicyGatekeeperTest, McpToolsAreScopedByTheirServer) {
  add_rule("mcp:fs", "allow", nullptr, "write");
  EXPECT_EQ(check(fs_write_).kind, Kind::kAllow);
  const ToolDescriptor git_write = mcp_tool("git_commit", ToolEffects::kWrite, "git");
  EXPECT_EQ(check(git_write).kind, Kind::kAsk);
  // A target that names the server decides over the binding.
  EXPECT_EQ(check(git_write, ToolTarget{.server_id = "fs"}).kind, Kind::kAllow);
  EXPECT_EQ(check(fs_write_, ToolTarget{.server_id = "git"}).kind, Kind::kAsk);
  // A local tool is not on the server, whatever its name.
  EXPECT_EQ(check(file_write_).kind, Kind::kAsk);
}

TEST_F(PolicyGatekeeperTest, TargetOriginDecidesOverTheServer) {
  add_rule("mcp:fs", "deny");
  EXPECT_EQ(check(fs_search_).kind, Kind::kDeny);
  EXPECT_EQ(check(fs_search_, ToolTarget{.origin = "https://a.example", .server_id = "fs"}).kind,
            Kind::kAllow);
}

TEST_F(PolicyGatekeeperTest, LocalRuleCoversToolsWithoutASite) {
  add_rule("local:", "allow", "file_write");
  EXPECT_EQ(check(file_write_, ToolTarget{.path = "notes.md"}).kind, Kind::kAllow);
  const ToolDescriptor named_like_it = browser_tool("file_write", ToolEffects::kWrite);
  EXPECT_EQ(check(named_like_it, on("https://a.example")).kind, Kind::kAsk);
  EXPECT_EQ(check(fs_write_).kind, Kind::kAsk);
}

// ---- host permissions ----

TEST_F(PolicyGatekeeperTest, HostPermissionListRefusesOriginsNoPatternMatches) {
  set_mode("t1", PolicyMode::kAllowAll);
  apply("policy.setHostPermissions",
        {{"patterns", {"https://a.example", "*://*.b.example", "wss://c.example:9000"}}});
  for (const char* allowed :
       {"https://a.example", "http://b.example", "https://x.b.example", "wss://c.example:9000"}) {
    EXPECT_EQ(check(click_, on(allowed)).kind, Kind::kAllow) << allowed;
  }
  for (const char* refused : {"https://c.example", "http://a.example", "https://evilb.example",
                              "https://a.example:8443", "wss://c.example"}) {
    const GateVerdict verdict = check(page_read_, on(refused));
    EXPECT_EQ(verdict.kind, Kind::kDeny) << refused;
    EXPECT_NE(verdict.reason.find("keel has no host permission for"), std::string::npos) << verdict.reason;
  }
}

TEST_F(PolicyGatekeeperTest, HostPermissionRefusalOutranksAnAllowRule) {
  add_rule("https://c.example", "allow");
  apply("policy.setHostPermissions", {{"patterns", {"https://a.example"}}});
  const GateVerdict verdict = check(click_, on("https://c.example"));
  EXPECT_EQ(verdict.kind, Kind::kDeny);
  EXPECT_NE(verdict.reason.find("keel has no host permission for https://c.example"), std::string::npos)
      << verdict.reason;
}

TEST_F(PolicyGatekeeperTest, AllUrlsAndAnEmptyListPermitEveryOrigin) {
  set_mode("t1", PolicyMode::kAllowAll);
  apply("policy.setHostPermissions", {{"patterns", {"https://a.example"}}});
  EXPECT_EQ(check(click_, on("https://z.example")).kind, Kind::kDeny);
  apply("policy.setHostPermissions", {{"patterns", {"<all_urls>"}}});
  EXPECT_EQ(check(click_, on("https://z.example")).kind, Kind::kAllow);
  apply("policy.setHostPermissions", {{"patterns", {"https://a.example"}}});
  apply("policy.setHostPermissions", {{"patterns", json::array()}});
  EXPECT_EQ(check(click_, on("https://z.example")).kind, Kind::kAllow);
  EXPECT_EQ(gate_->describe()["hostPermissions"], json::array());
}

TEST_F(PolicyGatekeeperTest, HostPermissionsDoNotApplyToMcpOrLocalCalls) {
  set_mode("t1", PolicyMode::kAllowAll);
  apply("policy.setHostPermissions", {{"patterns", {"https://a.example"}}});
  EXPECT_EQ(check(fs_write_).kind, Kind::kAllow);
  EXPECT_EQ(check(file_write_).kind, Kind::kAllow);
}

// ---- verdict details ----

TEST_F(PolicyGatekeeperTest, RuleVersionChangesWithEveryChangeToTheScopesRules) {
  EXPECT_EQ(check(click_, on("https://a.example")).rule_version, 0);
  const std::string first = add_rule("https://a.example", "ask", "browser_type");
  const int64_t v1 = check(click_, on("https://a.example")).rule_version;
  EXPECT_GT(v1, 0);
  add_rule("https://b.example", "allow");  // another scope: a.example's version stays
  EXPECT_EQ(check(click_, on("https://a.example")).rule_version, v1);
  const std::string second = add_rule("https://a.example", "allow", "browser_click");
  const int64_t v2 = check(click_, on("https://a.example")).rule_version;
  EXPECT_EQ(v2, v1 + 2);  // one version per write: b.example's rule took v1 + 1
  apply("policy.removeRule", {{"ruleId", second}});
  const int64_t v3 = check(click_, on("https://a.example")).rule_version;
  EXPECT_GT(v3, v2);  // the highest remaining rule was raised: a removal is a change too
  EXPECT_EQ(check(click_, on("https://a.example")).kind, Kind::kAsk);
  apply("policy.removeRule", {{"ruleId", first}});
  EXPECT_EQ(check(click_, on("https://a.example")).rule_version, 0);
  // The same numbers after a restart.
  add_rule("https://a.example", "deny", "browser_read");
  const int64_t v4 = check(click_, on("https://a.example")).rule_version;
  EXPECT_GT(v4, v3);
  EXPECT_EQ(check_with(*open_gate(), click_, on("https://a.example")).rule_version, v4);
}

TEST_F(PolicyGatekeeperTest, RemovalVersionSurvivesARestart) {
  add_rule("https://a.example", "ask", "browser_type");
  const std::string second = add_rule("https://a.example", "allow", "browser_click");
  apply("policy.removeRule", {{"ruleId", second}});
  const int64_t version = check(click_, on("https://a.example")).rule_version;
  EXPECT_EQ(check_with(*open_gate(), click_, on("https://a.example")).rule_version, version);
}

TEST_F(PolicyGatekeeperTest, OffersAcceptForSiteOnlyWhereAnAllowRuleWouldChangeTheVerdict) {
  EXPECT_TRUE(check(click_, on("https://a.example")).offers_accept_for_site);
  EXPECT_TRUE(check(fs_write_).offers_accept_for_site);
  EXPECT_TRUE(check(file_write_).offers_accept_for_site);
  add_rule("https://a.example", "ask", "browser_click");
  EXPECT_FALSE(check(click_, on("https://a.example")).offers_accept_for_site);
  set_mode("t1", PolicyMode::kAskEveryWrite);
  EXPECT_FALSE(check(fs_write_).offers_accept_for_site);
}

// ---- acceptForSite ----

TEST_F(PolicyGatekeeperTest, AcceptForSiteLetsTheSameCallRunThereWithoutAsking) {
  GateRequest request{"t1", "call-1", &click_, &arguments_, on("https://a.example/form")};
  ASSERT_EQ(gate_->check(request).kind, Kind::kAsk);
  auto tx = begin();
  const json change = must(gate_->write_site_rule(*tx, request, nullptr, ""));
  must(tx->commit());
  EXPECT_EQ(change["kind"], "rule");
  EXPECT_EQ(change["rule"]["scope"], "https://a.example");
  EXPECT_EQ(change["rule"]["tool"], "browser_click");
  EXPECT_EQ(change["rule"]["effects"], "write");
  EXPECT_EQ(change["rule"]["decision"], "allow");
  EXPECT_EQ(gate_->check(request).kind, Kind::kAsk);  // not before install
  gate_->install(change);
  EXPECT_EQ(gate_->check(request).kind, Kind::kAllow);
  EXPECT_EQ(check(type_, on("https://a.example")).kind, Kind::kAsk);
  EXPECT_EQ(check(click_, on("https://b.example")).kind, Kind::kAsk);
}

TEST_F(PolicyGatekeeperTest, AcceptForSiteTwiceKeepsOneRule) {
  GateRequest request{"t1", "call-1", &fs_write_, &arguments_, {}};
  auto tx = begin();
  const json first = must(gate_->write_site_rule(*tx, request, nullptr, ""));
  const json second = must(gate_->write_site_rule(*tx, request, nullptr, ""));
  must(tx->commit());
  EXPECT_EQ(first, second);
  EXPECT_EQ(first["rule"]["scope"], "mcp:fs");
  gate_->install(first);
  gate_->install(second);
  EXPECT_EQ(gate_->describe()["rules"].size(), 1u);
  EXPECT_EQ(check(fs_write_).kind, Kind::kAllow);
}

TEST_F(PolicyGatekeeperTest, AcceptForSiteOfALocalToolNamesTheLocalScope) {
  GateRequest request{"t1", "call-1", &file_write_, &arguments_, ToolTarget{.path = "a.txt"}};
  auto tx = begin();
  const json change = must(gate_->write_site_rule(*tx, request, nullptr, ""));
  must(tx->commit());
  EXPECT_EQ(change["rule"]["scope"], "local:");
  gate_->install(change);
  EXPECT_EQ(check(file_write_).kind, Kind::kAllow);
}

TEST_F(PolicyGatekeeperTest, AcceptForSiteRefusesAnUnparsableOriginAndWritesNothing) {
  GateRequest request{"t1", "call-1", &click_, &arguments_, on("not an origin")};
  auto tx = begin();
  EXPECT_EQ(code_of(gate_->write_site_rule(*tx, request, nullptr, "")), codes::kPolicyBadOrigin);
  must(tx->commit());
  EXPECT_EQ(policy_rows(), 0);
}

// ---- remembered decisions are bounded (issue 15, point 2) ----

TEST_F(PolicyGatekeeperTest, TheOfferOfALocalWriteNamesItsThreadAndWorkspace) {
  gate_ = open_gate(PolicyMode::kAskWrites, {"session-1", "/work/a"});
  GateRequest request{"t1", "call-1", &file_write_, &arguments_, ToolTarget{.path = "a.txt"}, "turn-1"};
  const GateVerdict verdict = gate_->check(request);
  ASSERT_TRUE(verdict.offers_accept_for_site);
  const json& offer = verdict.site_rule_offer;
  EXPECT_EQ(offer["scope"], "local:");
  EXPECT_EQ(offer["threadId"], "t1");
  EXPECT_EQ(offer["workspace"], "/work/a");
  EXPECT_EQ(offer["defaultLifetime"], "session");
  EXPECT_EQ(offer["lifetimes"], json({"turn", "session", "untilRevoked"}));
  EXPECT_NE(offer["text"].get<std::string>().find("in this thread (t1), in the workspace /work/a"),
            std::string::npos)
      << offer;
  EXPECT_NE(verdict.reason.find("in the workspace /work/a"), std::string::npos) << verdict.reason;
}

TEST_F(PolicyGatekeeperTest, AnAcceptForSiteOnOneThreadStillAsksOnAnother) {
  gate_ = open_gate(PolicyMode::kAskWrites, {"session-1", "/work/a"});
  const json rule = accept_for_site(*gate_, "thread-A", "");
  EXPECT_EQ(rule["threadId"], "thread-A");
  EXPECT_EQ(rule["workspace"], "/work/a");
  EXPECT_EQ(rule["lifetime"], "session");
  EXPECT_EQ(write_verdict(*gate_, "thread-A"), Kind::kAllow);
  EXPECT_EQ(write_verdict(*gate_, "thread-B"), Kind::kAsk);
}

TEST_F(PolicyGatekeeperTest, ASessionLongAcceptEndsWithTheSessionAndIsRemovedAtTheNextStart) {
  gate_ = open_gate(PolicyMode::kAskWrites, {"session-1", "/work/a"});
  accept_for_site(*gate_, "thread-A", "session");
  auto later = open_gate(PolicyMode::kAskWrites, {"session-2", "/work/a"});
  EXPECT_EQ(write_verdict(*later, "thread-A"), Kind::kAsk);
  EXPECT_TRUE(later->describe()["rules"].empty()) << later->describe();
}

TEST_F(PolicyGatekeeperTest, AnUntilRevokedAcceptOutlivesTheSessionButNotItsWorkspaceOrThread) {
  gate_ = open_gate(PolicyMode::kAskWrites, {"session-1", "/work/a"});
  accept_for_site(*gate_, "thread-A", "untilRevoked");
  auto later = open_gate(PolicyMode::kAskWrites, {"session-2", "/work/a"});
  EXPECT_EQ(write_verdict(*later, "thread-A"), Kind::kAllow);
  EXPECT_EQ(write_verdict(*later, "thread-B"), Kind::kAsk);
  auto elsewhere = open_gate(PolicyMode::kAskWrites, {"session-3", "/work/b"});
  EXPECT_EQ(write_verdict(*elsewhere, "thread-A"), Kind::kAsk);
}

TEST_F(PolicyGatekeeperTest, ATurnLongAcceptHoldsOnlyInItsTurn) {
  gate_ = open_gate(PolicyMode::kAskWrites, {"session-1", "/work/a"});
  const json rule = accept_for_site(*gate_, "thread-A", "turn", "turn-1");
  EXPECT_EQ(rule["turnId"], "turn-1");
  EXPECT_EQ(write_verdict(*gate_, "thread-A", "turn-1"), Kind::kAllow);
  EXPECT_EQ(write_verdict(*gate_, "thread-A", "turn-2"), Kind::kAsk);
}

TEST_F(PolicyGatekeeperTest, ALifetimeNotOfferedIsRefusedAndWritesNothing) {
  GateRequest request{"t1", "call-1", &file_write_, &arguments_, ToolTarget{.path = "a.txt"}, "turn-1"};
  auto tx = begin();
  EXPECT_EQ(code_of(gate_->write_site_rule(*tx, request, nullptr, "forever")), codes::kPolicyBadRule);
  must(tx->commit());
  EXPECT_EQ(policy_rows(), 0);
}

TEST_F(PolicyGatekeeperTest, ABoundedRuleIsReadBackWithItsBounds) {
  gate_ = open_gate(PolicyMode::kAskWrites, {"session-1", "/work/a"});
  accept_for_site(*gate_, "thread-A", "turn", "turn-7");
  EXPECT_EQ(open_gate(PolicyMode::kAskWrites, {"session-1", "/work/a"})->describe(), gate_->describe());
}

// ---- persistence ----

TEST_F(PolicyGatekeeperTest, CommittedChangesAreSeenByANewGatekeeper) {
  const std::string allow = add_rule("https://a.example", "allow", "browser_click", "write");
  add_rule("mcp:fs", "deny", nullptr, "read");
  set_mode("t2", PolicyMode::kReadOnly);
  apply("policy.setHostPermissions", {{"patterns", {"https://a.example", "*://*.b.example"}}});

  std::unique_ptr<PolicyGatekeeper> reopened = open_gate();
  EXPECT_EQ(reopened->describe(), gate_->describe());
  EXPECT_EQ(check_with(*reopened, click_, on("https://a.example")).kind, Kind::kAllow);
  EXPECT_EQ(check_with(*reopened, fs_search_).kind, Kind::kDeny);
  EXPECT_EQ(check_with(*reopened, file_write_, {}, "t2").kind, Kind::kDeny);
  EXPECT_EQ(check_with(*reopened, page_read_, on("https://c.example")).kind, Kind::kDeny);

  reopen();  // and after the store itself was closed
  EXPECT_EQ(open_gate()->describe(), gate_->describe());
}

TEST_F(PolicyGatekeeperTest, RolledBackChangesLeaveNothing) {
  auto tx = begin();
  must(gate_->write_change(*tx, "policy.addRule", {{"scope", "https://a.example"}, {"decision", "allow"}}));
  must(gate_->write_change(*tx, "policy.setMode", {{"threadId", "t1"}, {"mode", "allow_all"}}));
  must(gate_->write_change(*tx, "policy.setHostPermissions", {{"patterns", {"https://a.example"}}}));
  GateRequest request{"t1", "call-1", &fs_write_, &arguments_, {}};
  must(gate_->write_site_rule(*tx, request, nullptr, ""));
  tx->rollback();
  EXPECT_EQ(policy_rows(), 0);
  const json empty = {{"defaultMode", "ask_writes"},
                      {"threadModes", json::object()},
                      {"rules", json::array()},
                      {"hostPermissions", json::array()}};
  EXPECT_EQ(open_gate()->describe(), empty);
  EXPECT_EQ(gate_->describe(), empty);
}

TEST_F(PolicyGatekeeperTest, RemovedRuleStaysRemovedAfterARestart) {
  const std::string id = add_rule("https://a.example", "deny");
  apply("policy.removeRule", {{"ruleId", id}});
  EXPECT_EQ(check(page_read_, on("https://a.example")).kind, Kind::kAllow);
  EXPECT_EQ(check_with(*open_gate(), page_read_, on("https://a.example")).kind, Kind::kAllow);
}

TEST_F(PolicyGatekeeperTest, DamagedRuleScopeFailsOpenNamingTheRow) {
  const std::string id = add_rule("https://a.example", "allow");
  {
    auto tx = begin();
    must(tx->execute("UPDATE site_rules SET origin = 'garbage' WHERE id = ?", {id}));
    must(tx->commit());
  }
  Result<std::unique_ptr<PolicyGatekeeper>> reopened =
      PolicyGatekeeper::open(*store_, clock_, ids_, PolicyMode::kAskWrites);
  ASSERT_FALSE(reopened.has_value());
  EXPECT_EQ(reopened.error().code(), codes::kStoreDecode);
  EXPECT_NE(reopened.error().message().find("site_rules row " + id), std::string::npos)
      << reopened.error().message();
}

TEST_F(PolicyGatekeeperTest, DamagedRuleFieldsFailOpen) {
  for (const char* damage :
       {"UPDATE site_rules SET decision = 'maybe'", "UPDATE site_rules SET effects = 'exec'",
        "UPDATE site_rules SET tool = 'a b'", "UPDATE site_rules SET origin = 'mcp:'"}) {
    reopen();
    {
      auto tx = begin();
      must(tx->execute("DELETE FROM site_rules"));
      must(tx->commit());
    }
    gate_ = open_gate();
    add_rule("https://a.example", "allow");
    auto tx = begin();
    must(tx->execute(damage));
    must(tx->commit());
    EXPECT_EQ(code_of(PolicyGatekeeper::open(*store_, clock_, ids_, PolicyMode::kAskWrites)),
              codes::kStoreDecode)
        << damage;
  }
}

TEST_F(PolicyGatekeeperTest, DamagedPolicySettingsFailOpenNamingTheKey) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"policy.thread_mode.t1", "sometimes"},
           {"policy.host_permissions", "[\"https://a.example\", \"nope\"]"},
           {"policy.host_permissions", "{\"a\":1}"},
           {"policy.host_permissions", "[1,"},
           {"policy.version", "seven"}}) {
    {
      auto tx = begin();
      must(tx->execute("DELETE FROM settings"));
      must(tx->execute("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, 1)", {key, value}));
      must(tx->commit());
    }
    Result<std::unique_ptr<PolicyGatekeeper>> reopened =
        PolicyGatekeeper::open(*store_, clock_, ids_, PolicyMode::kAskWrites);
    ASSERT_FALSE(reopened.has_value()) << key << " = " << value;
    EXPECT_EQ(reopened.error().code(), codes::kStoreDecode) << key << " = " << value;
    EXPECT_NE(reopened.error().message().find(key), std::string::npos) << reopened.error().message();
  }
}

TEST_F(PolicyGatekeeperTest, OtherSettingsAreNotThePolicys) {
  auto tx = begin();
  must(tx->execute("INSERT INTO settings (key, value, updated_at) VALUES ('policyx', 'x', 1)"));
  must(tx->execute("INSERT INTO settings (key, value, updated_at) VALUES ('ui.theme', 'dark', 1)"));
  must(tx->commit());
  EXPECT_EQ(open_gate()->describe()["threadModes"], json::object());
}

// ---- malformed client input ----

TEST_F(PolicyGatekeeperTest, SetModeRefusesMalformedInput) {
  EXPECT_EQ(refusal("policy.setMode", {{"mode", "read_only"}}), codes::kInvalidArgument);
  EXPECT_EQ(refusal("policy.setMode", {{"threadId", ""}, {"mode", "read_only"}}), codes::kInvalidArgument);
  EXPECT_EQ(refusal("policy.setMode", {{"threadId", 7}, {"mode", "read_only"}}), codes::kInvalidArgument);
  EXPECT_EQ(refusal("policy.setMode", {{"threadId", std::string(257, 't')}, {"mode", "read_only"}}),
            codes::kInvalidArgument);
  EXPECT_EQ(refusal("policy.setMode", {{"threadId", "t1"}, {"mode", "readonly"}}), codes::kPolicyBadMode);
  EXPECT_EQ(refusal("policy.setMode", {{"threadId", "t1"}}), codes::kPolicyBadMode);
  EXPECT_EQ(refusal("policy.setMode", {{"threadId", "t1"}, {"mode", 2}}), codes::kPolicyBadMode);
  EXPECT_EQ(refusal("policy.setMode", {{"threadId", "t1"}, {"mode", "allow_all"}, {"thread", "t2"}}),
            codes::kInvalidArgument);
  EXPECT_EQ(refusal("policy.setMode", json::array()), codes::kInvalidArgument);
  EXPECT_EQ(check(file_write_).kind, Kind::kAsk);
}

TEST_F(PolicyGatekeeperTest, AddRuleRefusesMalformedInput) {
  EXPECT_EQ(refusal("policy.addRule", {{"scope", "https://a.example:99999"}, {"decision", "allow"}}),
            codes::kPolicyBadOrigin);
  EXPECT_EQ(refusal("policy.addRule", {{"scope", "https://a.example/admin"}, {"decision", "allow"}}),
            codes::kPolicyBadOrigin);
  EXPECT_EQ(refusal("policy.addRule", {{"scope", "https://a.example"}, {"decision", "always"}}),
            codes::kPolicyBadRule);
  EXPECT_EQ(
      refusal("policy.addRule", {{"scope", "https://a.example"}, {"decision", "allow"}, {"effects", "rw"}}),
      codes::kPolicyBadRule);
  EXPECT_EQ(refusal("policy.addRule", {{"scope", "https://a.example"}, {"decision", "allow"}, {"tool", ""}}),
            codes::kPolicyBadRule);
  EXPECT_EQ(refusal("policy.addRule", {{"decision", "allow"}}), codes::kPolicyBadRule);
  EXPECT_EQ(refusal("policy.addRule", {{"scope", "mcp:"}, {"decision", "allow"}}), codes::kPolicyBadRule);
  EXPECT_EQ(refusal("policy.addRule", "https://a.example"), codes::kInvalidArgument);
  EXPECT_EQ(gate_->describe()["rules"], json::array());
}

TEST_F(PolicyGatekeeperTest, RemoveRuleRefusesMalformedInputAndUnknownRules) {
  add_rule("https://a.example", "allow");
  EXPECT_EQ(refusal("policy.removeRule", {{"ruleId", "rule-999999"}}), codes::kPolicyRuleNotFound);
  EXPECT_EQ(refusal("policy.removeRule", json::object()), codes::kInvalidArgument);
  EXPECT_EQ(refusal("policy.removeRule", {{"ruleId", 1}}), codes::kInvalidArgument);
  EXPECT_EQ(gate_->describe()["rules"].size(), 1u);
}

TEST_F(PolicyGatekeeperTest, SetHostPermissionsRefusesMalformedInput) {
  apply("policy.setHostPermissions", {{"patterns", {"https://a.example"}}});
  EXPECT_EQ(refusal("policy.setHostPermissions", {{"patterns", {"https://b.example", "*://*/*"}}}),
            codes::kPolicyBadOrigin);
  EXPECT_EQ(refusal("policy.setHostPermissions", {{"patterns", {"b.example"}}}), codes::kPolicyBadOrigin);
  EXPECT_EQ(refusal("policy.setHostPermissions", {{"patterns", "https://b.example"}}),
            codes::kInvalidArgument);
  EXPECT_EQ(refusal("policy.setHostPermissions", {{"patterns", {1}}}), codes::kInvalidArgument);
  EXPECT_EQ(refusal("policy.setHostPermissions", json::object()), codes::kInvalidArgument);
  json many = json::array();
  for (size_t i = 0; i <= PolicyGatekeeper::kMaxHostPermissions; ++i) {
    many.push_back("https://h" + std::to_string(i) + ".example");
  }
  EXPECT_EQ(refusal("policy.setHostPermissions", {{"patterns", many}}), codes::kInvalidArgument);
  EXPECT_EQ(gate_->describe()["hostPermissions"], json::array({"https://a.example"}));
}

TEST_F(PolicyGatekeeperTest, UnknownMethodIsUnsupported) {
  EXPECT_EQ(refusal("policy.read", json::object()), codes::kPolicyUnsupported);
  EXPECT_EQ(refusal("policy.setDefaultMode", {{"mode", "allow_all"}}), codes::kPolicyUnsupported);
}

TEST_F(PolicyGatekeeperTest, AddingAnEqualRuleReturnsTheStoredOne) {
  const json first = apply("policy.addRule", {{"scope", "https://a.example"}, {"decision", "deny"}});
  const json second = apply("policy.addRule", {{"scope", "https://A.example:443"}, {"decision", "deny"}});
  EXPECT_EQ(first, second);
  EXPECT_EQ(gate_->describe()["rules"].size(), 1u);
}

TEST_F(PolicyGatekeeperTest, HostPermissionsAreStoredCanonicallyWithoutDuplicates) {
  apply("policy.setHostPermissions",
        {{"patterns", {"HTTPS://A.example:443/*", "https://a.example", "<all_urls>"}}});
  EXPECT_EQ(gate_->describe()["hostPermissions"], json::array({"https://a.example", "<all_urls>"}));
  EXPECT_EQ(testing::get(*store_, "policy.host_permissions"), R"(["https://a.example","<all_urls>"])");
}

// ---- install ----

TEST_F(PolicyGatekeeperTest, InstallIsIdempotent) {
  const json rule = apply("policy.addRule", {{"scope", "https://a.example"}, {"decision", "allow"}});
  const json mode = apply("policy.setMode", {{"threadId", "t1"}, {"mode", "read_only"}});
  const json before = gate_->describe();
  gate_->install(rule);
  gate_->install(mode);
  gate_->install(rule);
  EXPECT_EQ(gate_->describe(), before);
}

TEST_F(PolicyGatekeeperTest, InstallsInAnyOrderEndInTheCommittedState) {
  auto write = [&](std::string_view method, const json& params) {
    auto tx = begin();
    json change = must(gate_->write_change(*tx, method, params));
    must(tx->commit());
    return change;
  };
  const json read_only = write("policy.setMode", {{"threadId", "t1"}, {"mode", "read_only"}});
  const json allow_all = write("policy.setMode", {{"threadId", "t1"}, {"mode", "allow_all"}});
  const json added = write("policy.addRule", {{"scope", "https://a.example"}, {"decision", "deny"}});
  const json kept = write("policy.addRule", {{"scope", "https://a.example"}, {"decision", "ask"}});
  const json removed = write("policy.removeRule", {{"ruleId", added["rule"]["id"]}});
  const json narrow = write("policy.setHostPermissions", {{"patterns", {"https://b.example"}}});
  const json wide = write("policy.setHostPermissions", {{"patterns", {"<all_urls>"}}});

  for (const json& change : {wide, narrow, removed, kept, added, allow_all, read_only})
    gate_->install(change);
  EXPECT_EQ(gate_->describe(), open_gate()->describe());
  EXPECT_EQ(check(page_read_, on("https://a.example")).kind, Kind::kAsk);
  EXPECT_EQ(check(page_read_, on("https://a.example")).rule_version,
            check_with(*open_gate(), page_read_, on("https://a.example")).rule_version);
}

TEST_F(PolicyGatekeeperTest, InstallIgnoresChangesTheStoreHeldAtOpen) {
  auto tx = begin();
  const json added =
      must(gate_->write_change(*tx, "policy.addRule", {{"scope", "local:"}, {"decision", "deny"}}));
  must(gate_->write_change(*tx, "policy.removeRule", {{"ruleId", added["rule"]["id"]}}));
  const json mode =
      must(gate_->write_change(*tx, "policy.setMode", {{"threadId", "t1"}, {"mode", "read_only"}}));
  must(gate_->write_change(*tx, "policy.setMode", {{"threadId", "t1"}, {"mode", "allow_all"}}));
  must(tx->commit());
  gate_ = open_gate();
  gate_->install(added);  // late: the store already had its removal
  gate_->install(mode);   // late: the store already had the later mode
  EXPECT_EQ(check(file_write_).kind, Kind::kAllow);
  EXPECT_EQ(gate_->describe()["rules"], json::array());
}

TEST_F(PolicyGatekeeperTest, InstallIgnoresChangesItDidNotWrite) {
  const json before = gate_->describe();
  for (const json& change : {json(nullptr), json::array(), json{{"kind", "rule"}}, json{{"kind", "nuke"}},
                             json{{"kind", "thread_mode"}, {"threadId", "t1"}, {"mode", "allow_all"}},
                             json{{"kind", "host_permissions"}, {"patterns", {"*"}}, {"version", 99}}}) {
    gate_->install(change);
    EXPECT_EQ(gate_->describe(), before) << change.dump();
  }
}

TEST_F(PolicyGatekeeperTest, ChecksRunWhileChangesInstall) {
  std::atomic<bool> stop{false};
  std::atomic<int> unexpected{0};
  std::vector<std::thread> checkers;
  for (int i = 0; i < 3; ++i) {
    checkers.emplace_back([&] {
      while (!stop.load()) {
        // Every snapshot gives one of the two verdicts the installs below alternate between.
        const GateVerdict verdict = check(click_, on("https://a.example"));
        if (verdict.kind == Kind::kDeny) unexpected.fetch_add(1);
      }
    });
  }
  std::string id;
  for (int round = 0; round < 50; ++round) {
    if (id.empty()) {
      id = add_rule("https://a.example", "allow", "browser_click");
    } else {
      apply("policy.removeRule", {{"ruleId", id}});
      id.clear();
    }
  }
  stop = true;
  for (std::thread& t : checkers) t.join();
  EXPECT_EQ(unexpected.load(), 0);
  EXPECT_EQ(check(click_, on("https://a.example")).kind, Kind::kAsk);
}

// ---- describe ----

TEST_F(PolicyGatekeeperTest, DescribeListsTheWholePolicy) {
  clock_.set_unix_ms(1'700'000'000'123);
  const std::string id = add_rule("https://a.example:8443", "ask", "browser_click", "write");
  set_mode("t9", PolicyMode::kAllowAll);
  apply("policy.setHostPermissions", {{"patterns", {"*://*.a.example"}}});
  EXPECT_EQ(gate_->describe(), (json{{"defaultMode", "ask_writes"},
                                     {"threadModes", {{"t9", "allow_all"}}},
                                     {"rules",
                                      {{{"id", id},
                                        {"scope", "https://a.example:8443"},
                                        {"tool", "browser_click"},
                                        {"effects", "write"},
                                        {"decision", "ask"},
                                        {"version", 1},
                                        {"createdAt", 1'700'000'000'123},
                                        {"threadId", nullptr},
                                        {"workspace", nullptr},
                                        {"lifetime", "untilRevoked"},
                                        {"sessionId", nullptr},
                                        {"turnId", nullptr}}}},
                                     {"hostPermissions", {"*://*.a.example"}}}));
}

}  // namespace
}  // namespace keel
