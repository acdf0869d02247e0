#include "config/config.h"

#include <gtest/gtest.h>

#include <string>

#include "config/config_errors.h"
#include "config/environment.h"
#include "keel/sqlite_store.h"

namespace keel::config {
namespace {

using Layer = ValueOrigin::Layer;

const ValueOrigin kUserLine7{Layer::kUserFile, "/u/config.toml", 7, 12};

std::string all(const ConfigProblems& problems) {
  std::string out;
  for (const ConfigProblem& p : problems.list()) out += p.to_string() + "\n";
  return out;
}

TEST(ConfigDefaultsTest, BuiltInProvidersReadTheirKeysFromTheUsualVariables) {
  const Config config = default_config(fixed_environment({{"HOME", "/home/u"}}), "/work");
  ASSERT_NE(config.provider("openai"), nullptr);
  ASSERT_NE(config.provider("anthropic"), nullptr);
  EXPECT_EQ(config.provider("openai")->kind, ProviderKind::kOpenAiResponses);
  EXPECT_EQ(config.provider("openai")->credential,
            (CredentialRef{CredentialRef::Source::kEnvironment, "OPENAI_API_KEY"}));
  EXPECT_EQ(config.provider("anthropic")->base_url, "https://api.anthropic.com");
  EXPECT_EQ(config.provider("anthropic")->credential.reference(), "env:ANTHROPIC_API_KEY");
  EXPECT_EQ(config.origin_of("providers.anthropic.kind").layer, Layer::kDefault);
  EXPECT_EQ(config.durability, Synchronous::kFull);
  EXPECT_EQ(config.quick_check_ms, 2000);
  EXPECT_EQ(config.policy_mode, PolicyMode::kAskWrites);
  EXPECT_TRUE(config.compaction.enabled);
  EXPECT_EQ(config.token_budget, std::nullopt);
}

TEST(ConfigDefaultsTest, DataDirectoryFollowsXdgThenHomeThenTheWorkingDirectory) {
  EXPECT_EQ(
      default_config(fixed_environment({{"XDG_DATA_HOME", "/xdg"}, {"HOME", "/home/u"}}), "/w").data_dir,
      "/xdg/keel");
  EXPECT_EQ(
      default_config(fixed_environment({{"XDG_DATA_HOME", "relative"}, {"HOME", "/home/u"}}), "/w").data_dir,
      "/home/u/.local/share/keel")
      << "a relative XDG_DATA_HOME is ignored, as the XDG spec says";
  EXPECT_EQ(default_config(fixed_environment({}), "/w").data_dir, "/w/.keel/data");
}

TEST(ConfigDefaultsTest, SkillsAreOnFromTheUsersConfigDirectoryAndTheProjects) {
  const Config xdg =
      default_config(fixed_environment({{"XDG_CONFIG_HOME", "/xdg"}, {"HOME", "/home/u"}}), "/w");
  EXPECT_TRUE(xdg.skills.enabled);
  EXPECT_EQ(xdg.skills.user_dir, "/xdg/keel/skills");
  EXPECT_EQ(xdg.skills.project_dir, "/w/.keel/skills");
  EXPECT_EQ(default_config(fixed_environment({{"HOME", "/home/u"}}), "/w").skills.user_dir,
            "/home/u/.config/keel/skills");
  EXPECT_EQ(default_config(fixed_environment({}), "/w").skills.user_dir, "")
      << "without a home there is no user directory";
}

TEST(ConfigFinalizeTest, FillsDerivedPathsModelIdsAndBaseUrls) {
  Config config = default_config(fixed_environment({}), "/w");
  config.data_dir = "/data";
  config.providers["local"].kind = ProviderKind::kOpenAiChat;
  config.origins["providers.local.kind"] = kUserLine7;
  config.models["gpt-x"].provider = "local";
  ConfigProblems problems;
  finalize_config(config, problems);
  ASSERT_TRUE(problems.empty()) << all(problems);
  EXPECT_EQ(config.store_path, "/data/keel.db");
  EXPECT_EQ(config.master_key_file, "/data/master.key");
  EXPECT_EQ(config.models.at("gpt-x").model_id, "gpt-x");
  EXPECT_EQ(config.providers.at("local").base_url, "https://api.openai.com/v1");
}

TEST(ConfigFinalizeTest, BrowserDirectoriesDefaultUnderTheDataDirectory) {
  Config config;
  config.data_dir = "/data/keel";
  config.browser.profile = BrowserConfig::Profile::kPersistent;
  ConfigProblems problems;
  finalize_config(config, problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(config.browser.profile_dir, "/data/keel/browser/profile");
  EXPECT_EQ(config.browser.downloads_dir, "/data/keel/browser/downloads");
}

TEST(ConfigFinalizeTest, AProfileForABrowserKeelAttachesToIsABadValue) {
  Config config;
  config.data_dir = "/data/keel";
  config.browser.attach = "http://127.0.0.1:9222";
  config.browser.profile = BrowserConfig::Profile::kPersistent;
  config.origins["browser.profile"] = ValueOrigin{ValueOrigin::Layer::kUserFile, "/u/config.toml", 4, 11};
  ConfigProblems problems;
  finalize_config(config, problems);
  ASSERT_EQ(problems.list().size(), 1u);
  EXPECT_EQ(problems.list()[0].code, codes::kConfigBadValue);
  EXPECT_EQ(problems.list()[0].key_path, "browser.profile");
  EXPECT_EQ(problems.list()[0].origin.line, 4u);
}

TEST(ConfigFinalizeTest, ProviderWithoutKindIsAMissingValueAtTheProviderTable) {
  Config config;
  config.providers["p"].base_url = "http://127.0.0.1:1";
  config.origins["providers.p"] = kUserLine7;
  ConfigProblems problems;
  finalize_config(config, problems);
  ASSERT_EQ(problems.list().size(), 1u) << all(problems);
  EXPECT_EQ(problems.list()[0].code, codes::kConfigMissingValue);
  EXPECT_EQ(problems.list()[0].key_path, "providers.p.kind");
  EXPECT_EQ(problems.list()[0].origin, kUserLine7);
}

TEST(ConfigFinalizeTest, ModelNamingAMissingProviderIsAMissingReferenceAtItsProviderKey) {
  Config config;
  config.models["m"].provider = "nowhere";
  config.origins["models.m.provider"] = kUserLine7;
  ConfigProblems problems;
  finalize_config(config, problems);
  ASSERT_EQ(problems.list().size(), 1u) << all(problems);
  const ConfigProblem& p = problems.list()[0];
  EXPECT_EQ(p.code, codes::kConfigMissingReference);
  EXPECT_EQ(p.key_path, "models.m.provider");
  EXPECT_EQ(p.to_string(),
            "/u/config.toml:7:12: models.m.provider: names provider nowhere, which is not configured");
}

TEST(ConfigFinalizeTest, ModelWithoutProviderIsAMissingValue) {
  Config config;
  config.models["m"];
  ConfigProblems problems;
  finalize_config(config, problems);
  ASSERT_EQ(problems.list().size(), 1u) << all(problems);
  EXPECT_EQ(problems.list()[0].code, codes::kConfigMissingValue);
  EXPECT_EQ(problems.list()[0].key_path, "models.m.provider");
}

TEST(ConfigFinalizeTest, DefaultAndTaskModelsMustBeConfigured) {
  Config config;
  config.default_model = "big";
  config.task_model = "small";
  config.origins["task_model"] = kUserLine7;
  ConfigProblems problems;
  finalize_config(config, problems);
  ASSERT_EQ(problems.list().size(), 2u) << all(problems);
  EXPECT_EQ(problems.list()[0].key_path, "default_model");
  EXPECT_EQ(problems.list()[0].code, codes::kConfigMissingReference);
  EXPECT_EQ(problems.list()[0].origin.layer, Layer::kDefault);
  EXPECT_EQ(problems.list()[1].key_path, "task_model");
  EXPECT_EQ(problems.list()[1].origin, kUserLine7);
}

TEST(ConfigFinalizeTest, MaxOutputLargerThanTheWindowIsABadValue) {
  Config config;
  config.providers["p"];
  config.origins["providers.p.kind"] = kUserLine7;
  ModelConfig& m = config.models["m"];
  m.provider = "p";
  m.capabilities.context_window_tokens = 1000;
  m.capabilities.max_output_tokens = 1001;
  ConfigProblems problems;
  finalize_config(config, problems);
  ASSERT_EQ(problems.list().size(), 1u) << all(problems);
  EXPECT_EQ(problems.list()[0].code, codes::kConfigBadValue);
  EXPECT_EQ(problems.list()[0].key_path, "models.m.max_output");
}

TEST(ConfigFinalizeTest, McpServerNeedsACommandOrAUrl) {
  Config config;
  config.mcp_servers["s"].trusted = true;
  ConfigProblems problems;
  finalize_config(config, problems);
  ASSERT_EQ(problems.list().size(), 1u) << all(problems);
  EXPECT_EQ(problems.list()[0].code, codes::kConfigMissingValue);
}

TEST(ConfigFinalizeTest, AnMcpCredentialIsForUrlServersOnly) {
  Config config;
  config.mcp_servers["cmd"].command = "srv";
  config.mcp_servers["cmd"].credential = CredentialRef{CredentialRef::Source::kEnvironment, "TOKEN"};
  config.mcp_servers["web"].url = "https://mcp.example.com/";
  config.mcp_servers["web"].credential = CredentialRef{CredentialRef::Source::kStored, "web-token"};
  ConfigProblems problems;
  finalize_config(config, problems);
  ASSERT_EQ(problems.list().size(), 1u) << all(problems);
  EXPECT_EQ(problems.list()[0].key_path, "mcp.servers.cmd.credential_env");
}

TEST(ConfigFinalizeTest, McpOAuthIsForUrlServersWithoutACredential) {
  Config config;
  config.mcp_servers["cmd"].command = "srv";
  config.mcp_servers["cmd"].oauth = true;
  config.mcp_servers["both"].url = "https://mcp.example.com/both";
  config.mcp_servers["both"].oauth = true;
  config.mcp_servers["both"].credential = CredentialRef{CredentialRef::Source::kEnvironment, "TOKEN"};
  config.mcp_servers["web"].url = "https://mcp.example.com/";
  config.mcp_servers["web"].oauth = true;
  config.mcp_servers["web"].oauth_client_id = "keel-client";
  ConfigProblems problems;
  finalize_config(config, problems);
  ASSERT_EQ(problems.list().size(), 2u) << all(problems);
  EXPECT_EQ(problems.list()[0].code, codes::kConfigBadValue);
  EXPECT_EQ(problems.list()[0].key_path, "mcp.servers.both.oauth");
  EXPECT_EQ(problems.list()[1].code, codes::kConfigBadValue);
  EXPECT_EQ(problems.list()[1].key_path, "mcp.servers.cmd.oauth");
}

TEST(ConfigFinalizeTest, AnMcpOAuthClientIdNeedsOAuth) {
  Config config;
  config.mcp_servers["web"].url = "https://mcp.example.com/";
  config.mcp_servers["web"].oauth_client_id = "keel-client";
  ConfigProblems problems;
  finalize_config(config, problems);
  ASSERT_EQ(problems.list().size(), 1u) << all(problems);
  EXPECT_EQ(problems.list()[0].code, codes::kConfigBadValue);
  EXPECT_EQ(problems.list()[0].key_path, "mcp.servers.web.oauth_client_id");
}

TEST(ConfigFinalizeTest, AnMcpCallsIdleTimeoutFitsItsMaximum) {
  Config config;
  config.mcp_servers["s"].command = "srv";
  config.mcp_servers["s"].call_idle_timeout_ms = 10'000;
  config.mcp_servers["s"].call_max_ms = 5'000;
  ConfigProblems problems;
  finalize_config(config, problems);
  ASSERT_EQ(problems.list().size(), 1u) << all(problems);
  EXPECT_EQ(problems.list()[0].key_path, "mcp.servers.s.call_idle_timeout_ms");
}

TEST(ConfigFinalizeTest, AKeyPathAlreadyReportedIsNotReportedTwice) {
  Config config;
  config.providers["p"];
  ConfigProblems problems;
  problems.add(ConfigProblem{codes::kConfigBadValue, kUserLine7, "providers.p.kind", "expected one of ..."});
  finalize_config(config, problems);
  EXPECT_EQ(problems.list().size(), 1u) << all(problems);
}

TEST(ConfigProblemsTest, OneProblemBecomesOneErrorWithItsCode) {
  ConfigProblems problems;
  problems.add(ConfigProblem{codes::kConfigUnknownKey, kUserLine7, "log.colour", "unknown key"});
  const Error error = problems.to_error();
  EXPECT_EQ(error.code(), codes::kConfigUnknownKey);
  EXPECT_EQ(error.message(), "/u/config.toml:7:12: log.colour: unknown key");
}

TEST(ConfigProblemsTest, SeveralProblemsAreListedOnePerLineUnderTheFirstCode) {
  ConfigProblems problems;
  problems.add(ConfigProblem{codes::kConfigBadValue, kUserLine7, "a", "one"});
  problems.add(
      ConfigProblem{codes::kConfigUnknownKey, ValueOrigin{Layer::kEnvironment, "KEEL_X", 0, 0}, "b", "two"});
  const Error error = problems.to_error();
  EXPECT_EQ(error.code(), codes::kConfigBadValue);
  EXPECT_EQ(error.message(),
            "2 problems in the configuration:\n  /u/config.toml:7:12: a: one\n  environment variable KEEL_X: "
            "b: two");
}

TEST(ConfigKeyPathTest, SegmentsThatAreNotBareKeysAreQuoted) {
  EXPECT_EQ(key_path({"models", "gpt-4o_mini"}), "models.gpt-4o_mini");
  EXPECT_EQ(key_path({"models", "gpt-4.1"}), "models.\"gpt-4.1\"");
  EXPECT_EQ(key_path({"providers", "a \"b\""}), "providers.\"a \\\"b\\\"\"");
  EXPECT_EQ(key_path_append("providers.x", "kind"), "providers.x.kind");
}

TEST(ConfigKeyPathTest, SegmentsThatLookLikeKeysAreRedacted) {
  const std::string path = key_path({"providers", "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12"});
  EXPECT_EQ(path.find("Ab12Cd34"), std::string::npos) << path;
}

TEST(ConfigLooksLikeSecretTest, TellsKeysFromNames) {
  EXPECT_TRUE(looks_like_secret("sk-ant-api03-Xy7pQ2rT9vW4zL1mN8bC6dF3gH5jK0aS"));
  EXPECT_TRUE(looks_like_secret("0123456789abcdef0123456789abcdef"));
  EXPECT_TRUE(looks_like_secret("sk-Ab-Cd-Ef-12-Gh-34-Ij-56-Kl-78-Mn-90-Op-Qr"));
  EXPECT_FALSE(looks_like_secret("ANTHROPIC_API_KEY"));
  EXPECT_FALSE(looks_like_secret("openai-production-account-2024-eu-west"));
  EXPECT_FALSE(looks_like_secret("claude-sonnet-4-5-20250929"));
  EXPECT_FALSE(looks_like_secret("anthropic-main"));
}

TEST(ConfigCredentialRefTest, ReferenceNamesTheIdOrTheVariable) {
  EXPECT_EQ((CredentialRef{CredentialRef::Source::kStored, "main"}).reference(), "main");
  EXPECT_EQ((CredentialRef{CredentialRef::Source::kEnvironment, "KEY"}).reference(), "env:KEY");
  EXPECT_EQ(CredentialRef{}.reference(), "");
}

TEST(ConfigEnumTest, ProviderKindsRoundTripThroughTheirNames) {
  for (ProviderKind kind :
       {ProviderKind::kOpenAiChat, ProviderKind::kOpenAiResponses, ProviderKind::kAnthropic}) {
    EXPECT_EQ(parse_provider_kind(to_string(kind)), kind);
  }
  EXPECT_EQ(parse_provider_kind("gemini"), std::nullopt);
}

}  // namespace
}  // namespace keel::config
