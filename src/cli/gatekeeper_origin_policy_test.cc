// Tests for cli/gatekeeper_origin_policy.h with a real PolicyGatekeeper over a SQLite store: the guard's
// answer follows the gatekeeper's verdict on browser_navigate, refusing only what it denies.
#include "cli/gatekeeper_origin_policy.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "policy/policy_gatekeeper.h"
#include "testing/sequential_ids.h"
#include "testing/store_test.h"

namespace keel::cli {
namespace {

using nlohmann::json;
using testing::must;

class GatekeeperOriginPolicyTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    reopen();
    gate_ = must(PolicyGatekeeper::open(*store_, clock_, ids_, PolicyMode::kAskWrites));
    policy_ = must(GatekeeperOriginPolicy::create(*gate_));
  }

  void apply(std::string_view method, const json& params) {
    auto tx = begin();
    const json change = must(gate_->write_change(*tx, method, params));
    must(tx->commit());
    gate_->install(change);
  }

  // The gatekeeper's own verdict on the model calling browser_navigate to `origin` on `thread_id`.
  GateVerdict::Kind navigate_verdict(const std::string& thread_id, const std::string& origin) {
    ToolDescriptor navigate;
    navigate.name = "browser_navigate";
    navigate.level = ToolLevel::kL1;
    navigate.effects = ToolEffects::kWrite;
    const json arguments = {{"url", origin + "/"}};
    const GateRequest request{.thread_id = thread_id,
                              .tool_call_id = "call-1",
                              .descriptor = &navigate,
                              .arguments = &arguments,
                              .target = ToolTarget{.origin = origin}};
    return gate_->check(request).kind;
  }

  testing::SequentialIdSource ids_{"rule"};
  std::unique_ptr<PolicyGatekeeper> gate_;
  std::shared_ptr<const GatekeeperOriginPolicy> policy_;
};

TEST_F(GatekeeperOriginPolicyTest, AnOriginAnAllowRuleCoversIsAllowed) {
  apply("policy.addRule", {{"scope", "https://a.example"}, {"decision", "allow"}});
  ASSERT_EQ(navigate_verdict("t1", "https://a.example"), GateVerdict::Kind::kAllow);
  EXPECT_TRUE(policy_->allows_navigation("t1", "https://a.example"));
}

TEST_F(GatekeeperOriginPolicyTest, AnAskVerdictAllowsThePagesOwnNavigation) {
  // ask_writes asks before the model navigates; a navigation the page starts was decided with its cause.
  ASSERT_EQ(navigate_verdict("t1", "http://127.0.0.1:8080"), GateVerdict::Kind::kAsk);
  EXPECT_TRUE(policy_->allows_navigation("t1", "http://127.0.0.1:8080"));
}

TEST_F(GatekeeperOriginPolicyTest, AnExplicitAskRuleStillAllows) {
  apply("policy.addRule", {{"scope", "https://a.example"}, {"decision", "ask"}});
  ASSERT_EQ(navigate_verdict("t1", "https://a.example"), GateVerdict::Kind::kAsk);
  EXPECT_TRUE(policy_->allows_navigation("t1", "https://a.example"));
}

TEST_F(GatekeeperOriginPolicyTest, AnOriginADenyRuleCoversIsRefused) {
  apply("policy.addRule", {{"scope", "https://evil.example"}, {"decision", "deny"}});
  EXPECT_FALSE(policy_->allows_navigation("t1", "https://evil.example"));
  EXPECT_TRUE(policy_->allows_navigation("t1", "https://a.example"));
}

TEST_F(GatekeeperOriginPolicyTest, ADenyRuleForBrowserNavigateAloneRefusesTheOrigin) {
  apply("policy.addRule",
        {{"scope", "https://evil.example"}, {"tool", "browser_navigate"}, {"decision", "deny"}});
  EXPECT_FALSE(policy_->allows_navigation("t1", "https://evil.example"));
}

TEST_F(GatekeeperOriginPolicyTest, AnOriginWithoutHostPermissionIsRefused) {
  apply("policy.setHostPermissions", {{"patterns", {"https://a.example", "http://127.0.0.1:4000"}}});
  EXPECT_TRUE(policy_->allows_navigation("t1", "https://a.example"));
  EXPECT_TRUE(policy_->allows_navigation("t1", "http://127.0.0.1:4000"));
  EXPECT_FALSE(policy_->allows_navigation("t1", "https://b.example"));
  EXPECT_FALSE(policy_->allows_navigation("t1", "http://127.0.0.1:4001"));
}

TEST_F(GatekeeperOriginPolicyTest, AReadOnlyThreadGoesNowhereOtherThreadsStillDo) {
  apply("policy.setMode", {{"threadId", "t1"}, {"mode", "read_only"}});
  EXPECT_FALSE(policy_->allows_navigation("t1", "https://a.example"));
  EXPECT_TRUE(policy_->allows_navigation("t2", "https://a.example"));
}

TEST_F(GatekeeperOriginPolicyTest, AChangeOfPolicyHoldsForTheNextNavigation) {
  EXPECT_TRUE(policy_->allows_navigation("t1", "https://a.example"));
  apply("policy.addRule", {{"scope", "https://a.example"}, {"decision", "deny"}});
  EXPECT_FALSE(policy_->allows_navigation("t1", "https://a.example"));
}

}  // namespace
}  // namespace keel::cli
