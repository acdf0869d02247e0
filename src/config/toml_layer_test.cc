#include "config/toml_layer.h"

#include <gtest/gtest.h>

#include <string>

#include "config/config_errors.h"
#include "keel/sqlite_store.h"

namespace keel::config {
namespace {

using Layer = ValueOrigin::Layer;

class TomlLayerTest : public ::testing::Test {
 protected:
  // Applies `text` as the user file /home/u/.config/keel/config.toml.
  void apply(std::string_view text) { apply_toml_document(text, file_, config_, problems_); }

  const ConfigProblem& only_problem() {
    EXPECT_EQ(problems_.list().size(), 1u) << all_problems();
    if (problems_.empty()) throw std::runtime_error("no problem reported");
    return problems_.list().front();
  }
  std::string all_problems() const {
    std::string out;
    for (const ConfigProblem& p : problems_.list()) out += p.to_string() + "\n";
    return out;
  }

  LayerSource file_{Layer::kUserFile, "/home/u/.config/keel/config.toml", "/home/u/.config/keel", "/home/u"};
  Config config_;
  ConfigProblems problems_;
};

TEST_F(TomlLayerTest, FullDocumentSetsEveryValueWithItsLineAndColumn) {
  apply(R"(data_dir = "/var/keel"
default_model = "sonnet"
task_model = "haiku"
token_budget = 200000

[compaction]
enabled = false
threshold = 0.75

[store]
path = "/var/keel/db.sqlite"
durability = "normal"

[policy]
mode = "read_only"

[log]
level = "debug"
format = "json"

[credentials]
master_key_file = "/secure/master.key"

[providers.local]
kind = "openai-chat"
base_url = "http://127.0.0.1:8080/v1"
connect_timeout_ms = 500
idle_timeout_ms = 9000
max_retries = 0
headers = { "X-Team" = "agents" }

[providers.claude]
kind = "anthropic"
credential = "anthropic-main"

[models.sonnet]
provider = "claude"
id = "claude-sonnet-4-5"
tool_use = true
vision = true
reasoning = true
context_window = 200000
max_output = 64000
price = { input = 3, output = 15.0, cached_input = 0.3, reasoning = 15 }

[mcp.servers.files]
command = "mcp-files"
args = ["--root", "."]
env = { LOG = "1" }
cwd = "work"
trusted = true
start = "lazy"
connect_timeout_ms = 5000
call_idle_timeout_ms = 20000
call_max_ms = 90000

[mcp.servers.remote]
url = "https://mcp.example.com/mcp"
credential = "remote-token"
enabled = false

[mcp.servers.signed]
url = "https://mcp.example.com/signed"
oauth = true
oauth_client_id = "keel-client"
)");
  ASSERT_TRUE(problems_.empty()) << all_problems();
  EXPECT_EQ(config_.data_dir, "/var/keel");
  EXPECT_EQ(config_.default_model, "sonnet");
  EXPECT_EQ(config_.task_model, "haiku");
  EXPECT_EQ(config_.token_budget, 200000);
  EXPECT_FALSE(config_.compaction.enabled);
  EXPECT_DOUBLE_EQ(config_.compaction.threshold, 0.75);
  EXPECT_EQ(config_.store_path, "/var/keel/db.sqlite");
  EXPECT_EQ(config_.durability, Synchronous::kNormal);
  EXPECT_EQ(config_.policy_mode, PolicyMode::kReadOnly);
  EXPECT_EQ(config_.log_level, LogLevel::kDebug);
  EXPECT_EQ(config_.log_format, LogFormat::kJson);
  EXPECT_EQ(config_.master_key_file, "/secure/master.key");

  const ProviderConfig& local = config_.providers.at("local");
  EXPECT_EQ(local.kind, ProviderKind::kOpenAiChat);
  EXPECT_EQ(local.base_url, "http://127.0.0.1:8080/v1");
  EXPECT_EQ(local.connect_timeout_ms, 500);
  EXPECT_EQ(local.idle_timeout_ms, 9000);
  EXPECT_EQ(local.max_retries, 0);
  EXPECT_EQ(local.headers.at("X-Team"), "agents");
  EXPECT_EQ(local.credential.source, CredentialRef::Source::kNone);
  const ProviderConfig& claude = config_.providers.at("claude");
  EXPECT_EQ(claude.kind, ProviderKind::kAnthropic);
  EXPECT_EQ(claude.credential, (CredentialRef{CredentialRef::Source::kStored, "anthropic-main"}));

  const ModelConfig& sonnet = config_.models.at("sonnet");
  EXPECT_EQ(sonnet.provider, "claude");
  EXPECT_EQ(sonnet.model_id, "claude-sonnet-4-5");
  EXPECT_TRUE(sonnet.capabilities.tool_use);
  EXPECT_TRUE(sonnet.capabilities.vision);
  EXPECT_TRUE(sonnet.capabilities.reasoning);
  EXPECT_EQ(sonnet.capabilities.context_window_tokens, 200000);
  EXPECT_EQ(sonnet.capabilities.max_output_tokens, 64000);
  EXPECT_DOUBLE_EQ(sonnet.price.input_per_million, 3.0);
  EXPECT_DOUBLE_EQ(sonnet.price.output_per_million, 15.0);
  EXPECT_EQ(sonnet.price.cached_input_per_million, 0.3);
  EXPECT_EQ(sonnet.price.reasoning_output_per_million, 15.0);

  const McpServerConfig& files = config_.mcp_servers.at("files");
  EXPECT_EQ(files.command, "mcp-files");
  EXPECT_EQ(files.args, (std::vector<std::string>{"--root", "."}));
  EXPECT_EQ(files.env.at("LOG"), "1");
  EXPECT_EQ(files.cwd, "/home/u/.config/keel/work");
  EXPECT_TRUE(files.trusted);
  EXPECT_TRUE(files.enabled);
  EXPECT_TRUE(files.lazy);
  EXPECT_EQ(files.connect_timeout_ms, 5000);
  EXPECT_EQ(files.call_idle_timeout_ms, 20000);
  EXPECT_EQ(files.call_max_ms, 90000);
  const McpServerConfig& remote = config_.mcp_servers.at("remote");
  EXPECT_EQ(remote.url, "https://mcp.example.com/mcp");
  EXPECT_EQ(remote.credential, (CredentialRef{CredentialRef::Source::kStored, "remote-token"}));
  EXPECT_FALSE(remote.enabled);
  EXPECT_FALSE(remote.trusted);
  EXPECT_FALSE(remote.lazy);
  EXPECT_FALSE(remote.oauth);
  EXPECT_TRUE(config_.mcp_servers.at("signed").oauth);
  EXPECT_EQ(config_.mcp_servers.at("signed").oauth_client_id, "keel-client");
  EXPECT_EQ(remote.oauth_client_id, "");
  EXPECT_EQ(config_.origin_of("mcp.servers.files.trusted").line, 51u);

  EXPECT_EQ(config_.origin_of("default_model"),
            (ValueOrigin{Layer::kUserFile, "/home/u/.config/keel/config.toml", 2, 17}));
  EXPECT_EQ(config_.origin_of("models.sonnet.max_output").line, 43u);
  EXPECT_EQ(config_.origin_of("providers.local.headers.X-Team").line, 30u);
  EXPECT_EQ(config_.origin_of("log.format").to_string(), "/home/u/.config/keel/config.toml:19:10");
}

TEST_F(TomlLayerTest, StoreQuickCheckBudgetIsAnIntegerOfMilliseconds) {
  apply("[store]\nquick_check_ms = 15000\n");
  EXPECT_TRUE(problems_.list().empty());
  EXPECT_EQ(config_.quick_check_ms, 15000);
  apply("[store]\nquick_check_ms = -1\n");
  ASSERT_EQ(problems_.list().size(), 1u);
  EXPECT_EQ(problems_.list()[0].key_path, "store.quick_check_ms");
  EXPECT_EQ(config_.quick_check_ms, 15000);
}

TEST_F(TomlLayerTest, UnknownKeyNamesFileLineColumnAndKeyPath) {
  apply("default_model = \"m\"\n\n  modle = \"x\"\n");
  const ConfigProblem& p = only_problem();
  EXPECT_EQ(p.code, codes::kConfigUnknownKey);
  EXPECT_EQ(p.key_path, "modle");
  EXPECT_EQ(p.origin.line, 3u);
  EXPECT_EQ(p.origin.column, 3u);
  EXPECT_EQ(p.to_string().rfind("/home/u/.config/keel/config.toml:3:3: modle: unknown key", 0), 0u)
      << p.to_string();
}

TEST_F(TomlLayerTest, UnknownKeyInsideANamedTableHasTheFullPath) {
  apply("[providers.\"my.local\"]\nkind = \"openai-chat\"\nbase_uri = \"http://x\"\n");
  const ConfigProblem& p = only_problem();
  EXPECT_EQ(p.code, codes::kConfigUnknownKey);
  EXPECT_EQ(p.key_path, "providers.\"my.local\".base_uri");
  EXPECT_EQ(p.origin.line, 3u);
  EXPECT_NE(p.message.find("base_url"), std::string::npos) << "lists the known keys: " << p.message;
}

TEST_F(TomlLayerTest, WrongTypeIsABadValueAtTheValue) {
  apply("token_budget = \"lots\"\n");
  const ConfigProblem& p = only_problem();
  EXPECT_EQ(p.code, codes::kConfigBadValue);
  EXPECT_EQ(p.key_path, "token_budget");
  EXPECT_EQ(p.origin.line, 1u);
  EXPECT_EQ(p.origin.column, 16u);
  EXPECT_EQ(p.message, "expected an integer, not a string");
  EXPECT_EQ(config_.token_budget, std::nullopt);
  EXPECT_FALSE(config_.origins.contains("token_budget")) << "a refused value records no origin";
}

TEST_F(TomlLayerTest, BadEnumValueListsTheChoicesWithoutRepeatingTheValue) {
  apply("[store]\ndurability = \"sometimes\"\n[policy]\nmode = \"yolo\"\n[providers.x]\nkind = \"gemini\"\n");
  ASSERT_EQ(problems_.list().size(), 3u) << all_problems();
  EXPECT_EQ(problems_.list()[0].key_path, "store.durability");
  EXPECT_EQ(problems_.list()[0].message, "expected one of \"full\", \"normal\"");
  EXPECT_EQ(problems_.list()[1].key_path, "policy.mode");
  EXPECT_NE(problems_.list()[1].message.find("ask_every_write"), std::string::npos);
  EXPECT_EQ(problems_.list()[2].key_path, "providers.x.kind");
  EXPECT_NE(problems_.list()[2].message.find("openai-responses"), std::string::npos);
  for (const ConfigProblem& p : problems_.list()) {
    EXPECT_EQ(p.code, codes::kConfigBadValue);
    EXPECT_EQ(p.to_string().find("sometimes"), std::string::npos);
    EXPECT_EQ(p.to_string().find("gemini"), std::string::npos);
  }
}

TEST_F(TomlLayerTest, NegativeAndZeroLimitsAreBadValues) {
  apply(R"(token_budget = -1
[providers.p]
connect_timeout_ms = -5
idle_timeout_ms = 0
max_retries = -1
[models.m]
context_window = 0
max_output = -10
price = { input = -0.5 }
[compaction]
threshold = 0
)");
  ASSERT_EQ(problems_.list().size(), 8u) << all_problems();
  const std::vector<std::pair<std::string, uint32_t>> want = {{"token_budget", 1},
                                                              {"providers.p.connect_timeout_ms", 3},
                                                              {"providers.p.idle_timeout_ms", 4},
                                                              {"providers.p.max_retries", 5},
                                                              {"models.m.context_window", 7},
                                                              {"models.m.max_output", 8},
                                                              {"models.m.price.input", 9},
                                                              {"compaction.threshold", 11}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(problems_.list()[i].code, codes::kConfigBadValue) << i;
    EXPECT_EQ(problems_.list()[i].key_path, want[i].first);
    EXPECT_EQ(problems_.list()[i].origin.line, want[i].second) << want[i].first;
  }
  EXPECT_EQ(problems_.list()[1].message, "must be between 1 and 600000");
  EXPECT_EQ(problems_.list()[7].message, "must be above 0 and at most 1");
}

// Spec §2: tool calls with a stop reason other than tool use fail closed unless a provider says otherwise.
TEST_F(TomlLayerTest, StopWithToolCallsIsErrorUnlessSetToToolUse) {
  apply(
      "[providers.lenient]\nstop_with_tool_calls = \"tool_use\"\n[providers.strict]\nkind = \"openai-chat\"\n"
      "[providers.typo]\nstop_with_tool_calls = \"stop\"\n");
  ASSERT_EQ(problems_.list().size(), 1u) << all_problems();
  EXPECT_EQ(problems_.list()[0].key_path, "providers.typo.stop_with_tool_calls");
  EXPECT_EQ(problems_.list()[0].code, codes::kConfigBadValue);
  EXPECT_TRUE(config_.providers.at("lenient").stop_with_tool_calls_is_tool_use);
  EXPECT_FALSE(config_.providers.at("strict").stop_with_tool_calls_is_tool_use);
}

TEST_F(TomlLayerTest, ZeroTokenBudgetMeansNoBudget) {
  apply("token_budget = 0\n");
  ASSERT_TRUE(problems_.empty()) << all_problems();
  EXPECT_EQ(config_.token_budget, std::nullopt);
}

TEST_F(TomlLayerTest, SeveralProblemsInOneFileAreAllReportedInOrder) {
  apply("colour = 1\n[log]\nlevel = 3\n[models.m]\nvision = \"yes\"\n");
  ASSERT_EQ(problems_.list().size(), 3u) << all_problems();
  EXPECT_EQ(problems_.list()[0].origin.line, 1u);
  EXPECT_EQ(problems_.list()[1].origin.line, 3u);
  EXPECT_EQ(problems_.list()[2].origin.line, 5u);
  EXPECT_EQ(problems_.list()[2].key_path, "models.m.vision");
}

TEST_F(TomlLayerTest, ProblemsAreBoundedAndTheRestCounted) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "unknown_" + std::to_string(i) + " = 1\n";
  apply(text);
  EXPECT_EQ(problems_.list().size(), ConfigProblems::kMaxProblems);
  EXPECT_EQ(problems_.suppressed(), 40 - ConfigProblems::kMaxProblems);
  const Error error = problems_.to_error();
  EXPECT_EQ(error.code(), codes::kConfigUnknownKey);
  EXPECT_NE(error.message().find("40 problems"), std::string::npos) << error.message();
  EXPECT_NE(error.message().find("and 15 more"), std::string::npos) << error.message();
}

TEST_F(TomlLayerTest, SyntaxErrorIsConfigParseAtItsLineAndColumn) {
  apply("default_model = \"m\"\n[log\nlevel = \"info\"\n");
  const ConfigProblem& p = only_problem();
  EXPECT_EQ(p.code, codes::kConfigParse);
  EXPECT_EQ(p.origin.source, "/home/u/.config/keel/config.toml");
  EXPECT_EQ(p.origin.line, 2u);
  EXPECT_GT(p.origin.column, 0u);
  EXPECT_NE(p.message.find("not valid TOML"), std::string::npos);
}

TEST_F(TomlLayerTest, BaseUrlMustBeHttpOrHttps) {
  apply("[providers.p]\nkind = \"anthropic\"\nbase_url = \"ftp://example.com\"\n");
  const ConfigProblem& p = only_problem();
  EXPECT_EQ(p.code, codes::kConfigBadValue);
  EXPECT_EQ(p.key_path, "providers.p.base_url");
  EXPECT_EQ(p.message, "must be an http:// or https:// URL");
}

TEST_F(TomlLayerTest, CredentialAndApiKeyEnvInOneTableAreRefused) {
  apply("[providers.p]\nkind = \"anthropic\"\ncredential = \"main\"\napi_key_env = \"KEY\"\n");
  ASSERT_EQ(problems_.list().size(), 2u) << all_problems();
  EXPECT_EQ(problems_.list()[0].key_path, "providers.p.credential");
  EXPECT_EQ(problems_.list()[0].message, "set either credential or api_key_env, not both");
  EXPECT_EQ(config_.providers.at("p").credential.source, CredentialRef::Source::kNone);
}

TEST_F(TomlLayerTest, ApiKeyEnvMustNameAVariableAndCredentialAnId) {
  apply("[providers.a]\napi_key_env = \"MY-KEY\"\n[providers.b]\ncredential = \"has space\"\n");
  ASSERT_EQ(problems_.list().size(), 2u) << all_problems();
  EXPECT_EQ(problems_.list()[0].key_path, "providers.a.api_key_env");
  EXPECT_EQ(problems_.list()[0].message, "is not an environment variable name");
  EXPECT_EQ(problems_.list()[1].key_path, "providers.b.credential");
}

TEST_F(TomlLayerTest, HeadersThatCarryCredentialsAreRefused) {
  apply(
      "[providers.p]\nheaders = { Authorization = \"Bearer x\", \"X-API-Key\" = \"y\", \"X-Ok\" = \"fine\" "
      "}\n");
  ASSERT_EQ(problems_.list().size(), 2u) << all_problems();
  for (const ConfigProblem& p : problems_.list()) {
    EXPECT_EQ(p.code, codes::kConfigBadValue);
    EXPECT_NE(p.message.find("credential"), std::string::npos) << p.message;
  }
  const ProviderConfig& provider = config_.providers.at("p");
  EXPECT_EQ(provider.headers.size(), 1u);
  EXPECT_EQ(provider.headers.at("X-Ok"), "fine");
  EXPECT_FALSE(config_.origins.contains("providers.p.headers.Authorization"));
}

TEST_F(TomlLayerTest, McpServerTakesACommandOrAUrlNotBoth) {
  apply("[mcp.servers.s]\ncommand = \"srv\"\nurl = \"http://127.0.0.1:1\"\n[mcp.servers.t]\nargs = [1]\n");
  ASSERT_EQ(problems_.list().size(), 3u) << all_problems();
  EXPECT_EQ(problems_.list()[0].message, "set either command or url, not both");
  EXPECT_EQ(problems_.list()[2].key_path, "mcp.servers.t.args");
  EXPECT_EQ(problems_.list()[2].message, "expected an array of strings, not an integer");
}

TEST_F(TomlLayerTest, McpServerProblemsNameTheirKey) {
  apply(
      "[mcp.servers.s]\ncommand = \"srv\"\nstart = \"later\"\nconnect_timeout_ms = 0\ntrust = \"trusted\"\n"
      "env = { TOKEN = \"sk-live-4f9a8b7c6d5e4f3a2b1c0d9e\", OK = \"1\" }\n"
      "[mcp.servers.u]\nurl = \"http://127.0.0.1:1\"\ncredential = \"id\"\ncredential_env = \"VAR\"\n"
      "[mcp.other]\n");
  std::map<std::string, std::string> by_key;
  for (const ConfigProblem& p : problems_.list()) by_key[p.key_path] = p.message;
  EXPECT_TRUE(by_key.contains("mcp.servers.s.start")) << all_problems();
  EXPECT_TRUE(by_key.contains("mcp.servers.s.connect_timeout_ms")) << all_problems();
  EXPECT_TRUE(by_key.contains("mcp.servers.s.trust")) << all_problems();
  EXPECT_TRUE(by_key.contains("mcp.servers.s.env.TOKEN")) << all_problems();
  EXPECT_EQ(by_key["mcp.servers.u.credential"], "set either credential or credential_env, not both");
  EXPECT_TRUE(by_key.contains("mcp.other")) << all_problems();
  EXPECT_EQ(problems_.list().size(), 7u) << all_problems();
  EXPECT_EQ(all_problems().find("sk-live"), std::string::npos) << "a secret is never repeated";
  EXPECT_EQ(config_.mcp_servers.at("s").env.size(), 1u);
  EXPECT_EQ(config_.mcp_servers.at("s").env.at("OK"), "1");
  EXPECT_EQ(config_.origin_of("mcp.servers.s.start").line, 0u) << "a refused value keeps no origin";
}

TEST_F(TomlLayerTest, NamedEntriesMustBeTables) {
  apply("providers = { p = 3 }\nmodels = \"m\"\n");
  ASSERT_EQ(problems_.list().size(), 2u) << all_problems();
  EXPECT_EQ(problems_.list()[0].key_path, "providers.p");
  EXPECT_EQ(problems_.list()[0].message, "expected a table, not an integer");
  EXPECT_EQ(problems_.list()[1].key_path, "models");
}

TEST_F(TomlLayerTest, RelativePathsResolveAgainstTheFileAndTildeAgainstHome) {
  apply(
      "data_dir = \"data\"\n[store]\npath = \"../db/keel.db\"\n[credentials]\nmaster_key_file = "
      "\"~/keys/m.key\"\n");
  ASSERT_TRUE(problems_.empty()) << all_problems();
  EXPECT_EQ(config_.data_dir, "/home/u/.config/keel/data");
  EXPECT_EQ(config_.store_path, "/home/u/.config/db/keel.db");
  EXPECT_EQ(config_.master_key_file, "/home/u/keys/m.key");
}

TEST_F(TomlLayerTest, IntegersAreAcceptedForPricesAndThreshold) {
  apply("[compaction]\nthreshold = 1\n[models.m]\nprice.input = 2\n");
  ASSERT_TRUE(problems_.empty()) << all_problems();
  EXPECT_DOUBLE_EQ(config_.compaction.threshold, 1.0);
  EXPECT_DOUBLE_EQ(config_.models.at("m").price.input_per_million, 2.0);
}

TEST_F(TomlLayerTest, BrowserIsOffByDefaultWithTheDocumentedDefaults) {
  apply("");
  const BrowserConfig& b = config_.browser;
  EXPECT_FALSE(b.enabled);
  EXPECT_EQ(b.executable, "/usr/bin/chromium");
  EXPECT_TRUE(b.headless);
  EXPECT_EQ(b.profile, BrowserConfig::Profile::kTemporary);
  EXPECT_EQ(b.attach, "");
  EXPECT_EQ(b.attach_context, BrowserConfig::AttachContext::kOwn);
  EXPECT_EQ(b.window_width, 1280);
  EXPECT_EQ(b.window_height, 800);
  EXPECT_EQ(b.no_sandbox, BrowserConfig::NoSandbox::kAuto);
  EXPECT_TRUE(b.extra_args.empty());
  EXPECT_EQ(b.command_timeout_ms, 30000);
  EXPECT_EQ(b.navigation_timeout_ms, 15000);
  EXPECT_EQ(b.screenshot_timeout_ms, 10000);
  EXPECT_EQ(b.settle_quiet_ms, 30);
  EXPECT_EQ(b.snapshot_max_chars, 12000);
  EXPECT_EQ(b.max_message_mb, 256);
}

TEST_F(TomlLayerTest, SkillsSectionSetsEveryValueWithItsOrigin) {
  apply(R"([skills]
enabled = false
user_dir = "~/my-skills"
project_dir = "skills"
)");
  ASSERT_TRUE(problems_.empty()) << all_problems();
  EXPECT_FALSE(config_.skills.enabled);
  EXPECT_EQ(config_.skills.user_dir, "/home/u/my-skills");
  EXPECT_EQ(config_.skills.project_dir, "/home/u/.config/keel/skills");
  EXPECT_EQ(config_.origin_of("skills.user_dir").line, 3u);
  EXPECT_EQ(config_.origin_of("skills.enabled").layer, Layer::kUserFile);
}

TEST_F(TomlLayerTest, AnEmptySkillsDirectoryTurnsItOffAndBadValuesAreReported) {
  config_.skills.project_dir = "/w/.keel/skills";
  apply(R"([skills]
project_dir = ""
enabled = "yes"
colour = 1
)");
  EXPECT_EQ(config_.skills.project_dir, "");
  ASSERT_EQ(problems_.list().size(), 2u) << all_problems();
  EXPECT_EQ(problems_.list()[0].key_path, "skills.enabled");
  EXPECT_EQ(problems_.list()[1].key_path, "skills.colour");
}

TEST_F(TomlLayerTest, BrowserSectionSetsEveryValueWithItsOrigin) {
  apply(R"([browser]
enabled = true
executable = "chromium"
headless = false
profile = "~/profiles/work"
attach_context = "default"
window_size = "1024x768"
no_sandbox = false
extra_args = ["--lang=de", "--force-dark-mode"]
command_timeout_ms = 5000
navigation_timeout_ms = 20000
screenshot_timeout_ms = 3000
settle_quiet_ms = 0
snapshot_max_chars = 20000
max_message_mb = 64
downloads_dir = "dl"
)");
  ASSERT_TRUE(problems_.empty()) << all_problems();
  const BrowserConfig& b = config_.browser;
  EXPECT_TRUE(b.enabled);
  EXPECT_EQ(b.executable, "chromium") << "a bare name is looked up on PATH";
  EXPECT_FALSE(b.headless);
  EXPECT_EQ(b.profile, BrowserConfig::Profile::kPath);
  EXPECT_EQ(b.profile_dir, "/home/u/profiles/work");
  EXPECT_EQ(b.attach_context, BrowserConfig::AttachContext::kDefault);
  EXPECT_EQ(b.window_width, 1024);
  EXPECT_EQ(b.window_height, 768);
  EXPECT_EQ(b.no_sandbox, BrowserConfig::NoSandbox::kNo);
  EXPECT_EQ(b.extra_args, (std::vector<std::string>{"--lang=de", "--force-dark-mode"}));
  EXPECT_EQ(b.command_timeout_ms, 5000);
  EXPECT_EQ(b.navigation_timeout_ms, 20000);
  EXPECT_EQ(b.screenshot_timeout_ms, 3000);
  EXPECT_EQ(b.settle_quiet_ms, 0);
  EXPECT_EQ(b.snapshot_max_chars, 20000);
  EXPECT_EQ(b.max_message_mb, 64);
  EXPECT_EQ(b.downloads_dir, "/home/u/.config/keel/dl");
  EXPECT_EQ(config_.origin_of("browser.window_size").line, 7u);
  EXPECT_EQ(config_.origin_of("browser.extra_args").line, 9u);
}

TEST_F(TomlLayerTest, BrowserExecutableWithASlashIsAPathAndProfileNamesItsKind) {
  apply(R"([browser]
executable = "bin/chrome"
profile = "persistent"
attach = "ws://127.0.0.1:9222/devtools"
)");
  ASSERT_TRUE(problems_.empty()) << all_problems();
  EXPECT_EQ(config_.browser.executable, "/home/u/.config/keel/bin/chrome");
  EXPECT_EQ(config_.browser.profile, BrowserConfig::Profile::kPersistent);
  EXPECT_EQ(config_.browser.attach, "ws://127.0.0.1:9222/devtools");
}

TEST_F(TomlLayerTest, BadBrowserValuesAreReportedAtTheirKeyPaths) {
  apply(R"([browser]
enabled = "yes"
profile = "work"
attach = "127.0.0.1:9222"
attach_context = "mine"
window_size = "1280*800"
no_sandbox = "sometimes"
extra_args = ["--user-data-dir=/tmp/x"]
command_timeout_ms = 0
max_message_mb = 4096
favourite = "x"
)");
  std::vector<std::string> paths;
  for (const ConfigProblem& p : problems_.list()) paths.push_back(p.key_path);
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "browser.enabled", "browser.profile", "browser.attach", "browser.attach_context",
                       "browser.window_size", "browser.no_sandbox", "browser.extra_args",
                       "browser.command_timeout_ms", "browser.max_message_mb", "browser.favourite"}))
      << all_problems();
  EXPECT_EQ(problems_.list().back().code, codes::kConfigUnknownKey);
  EXPECT_NE(problems_.list()[6].message.find("--user-data-dir is set by keel"), std::string::npos)
      << problems_.list()[6].message;
  const BrowserConfig defaults;
  EXPECT_FALSE(config_.browser.enabled);
  EXPECT_EQ(config_.browser.profile, defaults.profile);
  EXPECT_EQ(config_.browser.window_width, defaults.window_width);
  EXPECT_TRUE(config_.browser.extra_args.empty());
  EXPECT_FALSE(config_.origins.contains("browser.window_size")) << "a refused value records no origin";
}

TEST_F(TomlLayerTest, BrowserExtraArgsMustBeSwitches) {
  apply(R"([browser]
extra_args = ["--lang=de", "about:blank"]
)");
  const ConfigProblem& p = only_problem();
  EXPECT_EQ(p.key_path, "browser.extra_args");
  EXPECT_EQ(p.message, "each argument must be a --switch");
}

// ---------------------------------------------------------------------------------------------------
// One value (KEEL_* variables) and --set overrides

class TomlOverrideTest : public TomlLayerTest {
 protected:
  void set(std::string_view argument) { apply_override(argument, cli_, config_, problems_); }
  LayerSource cli_{Layer::kCommandLine, "--set #1", "/work", "/home/u"};
};

TEST_F(TomlOverrideTest, ValueIsParsedAsTomlAndUnquotedTextIsAString) {
  set("token_budget=5000");
  set("default_model = sonnet");
  set("models.m.vision=true");
  set("providers.p.headers = { X-Trace = \"1\" }");
  set("store.path=rel/keel.db");
  ASSERT_TRUE(problems_.empty()) << all_problems();
  EXPECT_EQ(config_.token_budget, 5000);
  EXPECT_EQ(config_.default_model, "sonnet");
  EXPECT_TRUE(config_.models.at("m").capabilities.vision);
  EXPECT_EQ(config_.providers.at("p").headers.at("X-Trace"), "1");
  EXPECT_EQ(config_.store_path, "/work/rel/keel.db") << "relative to the working directory";
  EXPECT_EQ(config_.origin_of("token_budget"), (ValueOrigin{Layer::kCommandLine, "--set #1", 0, 0}));
}

TEST_F(TomlOverrideTest, UnquotedTextForANumberIsATypeError) {
  set("token_budget=12x");
  const ConfigProblem& p = only_problem();
  EXPECT_EQ(p.code, codes::kConfigBadValue);
  EXPECT_EQ(p.key_path, "token_budget");
  EXPECT_EQ(p.to_string(), "--set #1: token_budget: expected an integer, not a string");
}

TEST_F(TomlOverrideTest, MalformedArgumentsAreParseErrors) {
  set("no_equals_sign");
  set("=value");
  set("a b = 1");
  set("default_model=x\n[log]");
  ASSERT_EQ(problems_.list().size(), 4u) << all_problems();
  for (const ConfigProblem& p : problems_.list()) EXPECT_EQ(p.code, codes::kConfigParse) << p.to_string();
}

TEST_F(TomlOverrideTest, TheBrowserIsEnabledFromTheCommandLine) {
  set("browser.enabled=true");
  set("browser.no_sandbox=auto");
  ASSERT_TRUE(problems_.empty()) << all_problems();
  EXPECT_TRUE(config_.browser.enabled);
  EXPECT_EQ(config_.browser.no_sandbox, BrowserConfig::NoSandbox::kAuto);
  EXPECT_EQ(config_.origin_of("browser.enabled").layer, Layer::kCommandLine);
}

TEST_F(TomlOverrideTest, UnknownKeyFromTheCommandLineNamesTheArgument) {
  set("providers.p.api_key=abc");
  const ConfigProblem& p = only_problem();
  EXPECT_EQ(p.code, codes::kConfigUnknownKey);
  EXPECT_EQ(p.key_path, "providers.p.api_key");
  EXPECT_EQ(p.origin.source, "--set #1");
}

TEST_F(TomlOverrideTest, SingleValueFromAVariableIsTakenAsAString) {
  const LayerSource env{Layer::kEnvironment, "KEEL_STORE_PATH", "/work", "/home/u"};
  apply_toml_value("store.path", "/tmp/a \"quoted\" path.db", true, env, config_, problems_);
  ASSERT_TRUE(problems_.empty()) << all_problems();
  EXPECT_EQ(config_.store_path, "/tmp/a \"quoted\" path.db");
  EXPECT_EQ(config_.origin_of("store.path").to_string(), "environment variable KEEL_STORE_PATH");
}

}  // namespace
}  // namespace keel::config
