#include "config/config_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "config/config_errors.h"
#include "config/environment.h"
#include "keel/sqlite_store.h"
#include "testing/temp_dir.h"

namespace keel::config {
namespace {

namespace fs = std::filesystem;
using Layer = ValueOrigin::Layer;

void write_file(const fs::path& path, std::string_view text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string all(const ConfigProblems& problems) {
  std::string out;
  for (const ConfigProblem& p : problems.list()) out += p.to_string() + "\n";
  return out;
}

class ConfigLoaderTest : public ::testing::Test {
 protected:
  fs::path user_file() const { return dir_.path() / "home/.config/keel/config.toml"; }
  fs::path project_dir() const { return dir_.path() / "project"; }
  fs::path project_file() const { return project_dir() / ".keel/config.toml"; }

  ConfigSources sources(std::map<std::string, std::string, std::less<>> env = {},
                        std::vector<std::string> overrides = {}) {
    env.emplace("HOME", (dir_.path() / "home").string());
    return discover_sources(fixed_environment(std::move(env)), project_dir() / "src" / "deep",
                            std::move(overrides));
  }

  ConfigLoad load(std::map<std::string, std::string, std::less<>> env = {},
                  std::vector<std::string> overrides = {}) {
    return load_config_with_problems(sources(std::move(env), std::move(overrides)));
  }

  keel::testing::TempDir dir_;
};

TEST_F(ConfigLoaderTest, DiscoversTheUserFileAndTheNearestProjectFileAbove) {
  write_file(user_file(), "");
  write_file(project_file(), "");
  fs::create_directories(project_dir() / "src" / "deep");
  const ConfigSources found = sources();
  EXPECT_EQ(found.user_file, user_file());
  EXPECT_EQ(found.project_file, project_file());
  EXPECT_EQ(found.working_dir, project_dir() / "src" / "deep");
}

TEST_F(ConfigLoaderTest, RelativeWorkingDirectoryIsMadeAbsoluteBeforeSearchingUpwards) {
  write_file(project_file(), "");
  fs::create_directories(project_dir() / "src");
  const fs::path relative = fs::relative(project_dir() / "src", fs::current_path());
  ASSERT_TRUE(relative.is_relative());
  const ConfigSources found = discover_sources(fixed_environment({}), relative, {});
  EXPECT_EQ(found.project_file, project_file());
  EXPECT_TRUE(found.working_dir.is_absolute());
}

TEST_F(ConfigLoaderTest, XdgConfigHomeWinsOverHome) {
  const fs::path xdg_file = dir_.path() / "xdg/keel/config.toml";
  write_file(xdg_file, "");
  write_file(user_file(), "");
  EXPECT_EQ(sources({{"XDG_CONFIG_HOME", (dir_.path() / "xdg").string()}}).user_file, xdg_file);
}

TEST_F(ConfigLoaderTest, MissingFilesAreSimplyAbsent) {
  const ConfigSources found = sources();
  EXPECT_EQ(found.user_file, std::nullopt);
  EXPECT_EQ(found.project_file, std::nullopt);
  const ConfigLoad loaded = load_config_with_problems(found);
  EXPECT_TRUE(loaded.problems.empty()) << all(loaded.problems);
  EXPECT_EQ(loaded.config.store_path, dir_.path() / "home/.local/share/keel/keel.db");
}

// One key set by every layer: each later layer wins, and the origin says which one did.
TEST_F(ConfigLoaderTest, EachLayerOverridesTheOneBeforeAndRecordsItsOrigin) {
  write_file(user_file(),
             "[log]\nlevel = \"warn\"\nformat = \"json\"\n[policy]\nmode = \"read_only\"\n"
             "[store]\ndurability = \"normal\"\n");
  write_file(project_file(), "[log]\nlevel = \"error\"\n[policy]\nmode = \"allow_all\"\n");

  // Defaults only (no files, no variables, no overrides).
  {
    keel::testing::TempDir empty;
    const ConfigLoad defaults = load_config_with_problems(
        discover_sources(fixed_environment({{"HOME", empty.path().string()}}), empty.path(), {}));
    ASSERT_TRUE(defaults.problems.empty()) << all(defaults.problems);
    EXPECT_EQ(defaults.config.log_level, LogLevel::kInfo);
    EXPECT_EQ(defaults.config.origin_of("log.level").layer, Layer::kDefault);
  }
  // User file over defaults.
  const ConfigLoad files = load();
  ASSERT_TRUE(files.problems.empty()) << all(files.problems);
  EXPECT_EQ(files.config.log_format, LogFormat::kJson);
  EXPECT_EQ(files.config.origin_of("log.format"),
            (ValueOrigin{Layer::kUserFile, user_file().string(), 3, 10}));
  EXPECT_EQ(files.config.durability, Synchronous::kNormal);
  // Project file over the user file.
  EXPECT_EQ(files.config.log_level, LogLevel::kError);
  EXPECT_EQ(files.config.origin_of("log.level"),
            (ValueOrigin{Layer::kProjectFile, project_file().string(), 2, 9}));
  EXPECT_EQ(files.config.policy_mode, PolicyMode::kAllowAll);
  // Variables over the project file.
  const ConfigLoad env = load({{"KEEL_LOG_LEVEL", "debug"}, {"KEEL_POLICY_MODE", "ask_every_write"}});
  ASSERT_TRUE(env.problems.empty()) << all(env.problems);
  EXPECT_EQ(env.config.log_level, LogLevel::kDebug);
  EXPECT_EQ(env.config.origin_of("log.level"), (ValueOrigin{Layer::kEnvironment, "KEEL_LOG_LEVEL", 0, 0}));
  EXPECT_EQ(env.config.policy_mode, PolicyMode::kAskEveryWrite);
  // --set over variables; a later --set over an earlier one.
  const ConfigLoad cli =
      load({{"KEEL_LOG_LEVEL", "debug"}}, {"log.level=trace", "policy.mode=ask_writes", "log.level=\"off\""});
  ASSERT_TRUE(cli.problems.empty()) << all(cli.problems);
  EXPECT_EQ(cli.config.log_level, LogLevel::kOff);
  EXPECT_EQ(cli.config.origin_of("log.level"), (ValueOrigin{Layer::kCommandLine, "--set #3", 0, 0}));
  EXPECT_EQ(cli.config.policy_mode, PolicyMode::kAskWrites);
  EXPECT_EQ(cli.config.origin_of("policy.mode").source, "--set #2");
  // What no layer touched keeps its origin.
  EXPECT_EQ(cli.config.origin_of("log.format").layer, Layer::kUserFile);
  EXPECT_EQ(cli.config.origin_of("compaction.enabled").layer, Layer::kDefault);
}

TEST_F(ConfigLoaderTest, LaterLayersOverrideSingleFieldsOfANamedEntry) {
  write_file(user_file(), R"([providers.claude]
kind = "anthropic"
credential = "anthropic-main"
connect_timeout_ms = 3000
headers = { "X-A" = "1" }
[models.sonnet]
provider = "claude"
context_window = 200000
)");
  write_file(project_file(), R"([providers.claude]
base_url = "http://127.0.0.1:9000"
headers = { "X-B" = "2" }
[models.sonnet]
vision = true
)");
  const ConfigLoad loaded = load({}, {"models.sonnet.max_output=8000"});
  ASSERT_TRUE(loaded.problems.empty()) << all(loaded.problems);
  const ProviderConfig& claude = loaded.config.providers.at("claude");
  EXPECT_EQ(claude.kind, ProviderKind::kAnthropic);
  EXPECT_EQ(claude.credential.reference(), "anthropic-main");
  EXPECT_EQ(claude.connect_timeout_ms, 3000);
  EXPECT_EQ(claude.base_url, "http://127.0.0.1:9000");
  EXPECT_EQ(claude.headers.size(), 2u) << "header tables merge by name";
  const ModelConfig& sonnet = loaded.config.models.at("sonnet");
  EXPECT_EQ(sonnet.capabilities.context_window_tokens, 200000);
  EXPECT_TRUE(sonnet.capabilities.vision);
  EXPECT_EQ(sonnet.capabilities.max_output_tokens, 8000);
  EXPECT_EQ(sonnet.model_id, "sonnet");
}

TEST_F(ConfigLoaderTest, ApiKeyEnvInALaterLayerReplacesAStoredCredential) {
  write_file(user_file(), "[providers.anthropic]\ncredential = \"anthropic-main\"\n");
  write_file(project_file(), "[providers.anthropic]\napi_key_env = \"PROJECT_KEY\"\n");
  const ConfigLoad loaded = load();
  ASSERT_TRUE(loaded.problems.empty()) << all(loaded.problems);
  EXPECT_EQ(loaded.config.providers.at("anthropic").credential,
            (CredentialRef{CredentialRef::Source::kEnvironment, "PROJECT_KEY"}));
  EXPECT_FALSE(loaded.config.origins.contains("providers.anthropic.credential"));
  EXPECT_EQ(loaded.config.origin_of("providers.anthropic.api_key_env").layer, Layer::kProjectFile);
}

TEST_F(ConfigLoaderTest, EveryDocumentedVariableSetsItsKey) {
  const ConfigLoad loaded = load({{"KEEL_DATA_DIR", "/d"},
                                  {"KEEL_STORE_PATH", "rel.db"},
                                  {"KEEL_DURABILITY", "normal"},
                                  {"KEEL_MODEL", ""},
                                  {"KEEL_TOKEN_BUDGET", "1234"},
                                  {"KEEL_LOG_FORMAT", "json"},
                                  {"KEEL_MASTER_KEY_FILE", "/keys/master.key"}});
  ASSERT_TRUE(loaded.problems.empty()) << all(loaded.problems);
  EXPECT_EQ(loaded.config.data_dir, "/d");
  EXPECT_EQ(loaded.config.store_path, project_dir() / "src/deep/rel.db")
      << "relative to the working directory";
  EXPECT_EQ(loaded.config.durability, Synchronous::kNormal);
  EXPECT_EQ(loaded.config.token_budget, 1234);
  EXPECT_EQ(loaded.config.log_format, LogFormat::kJson);
  EXPECT_EQ(loaded.config.master_key_file, "/keys/master.key");
  EXPECT_EQ(loaded.config.origin_of("credentials.master_key_file").source, "KEEL_MASTER_KEY_FILE");
  EXPECT_EQ(environment_keys().size(), 10u) << "docs/configuration.md lists each variable; keep it in step";
}

TEST_F(ConfigLoaderTest, BadVariableNamesTheVariable) {
  const ConfigLoad loaded = load({{"KEEL_TOKEN_BUDGET", "many"}, {"KEEL_DURABILITY", "eventually"}});
  ASSERT_EQ(loaded.problems.list().size(), 2u) << all(loaded.problems);
  EXPECT_EQ(loaded.problems.list()[0].to_string(),
            "environment variable KEEL_DURABILITY: store.durability: expected one of \"full\", \"normal\"");
  EXPECT_EQ(loaded.problems.list()[1].to_string(),
            "environment variable KEEL_TOKEN_BUDGET: token_budget: expected an integer, not a string");
}

TEST_F(ConfigLoaderTest, ProblemsOfBothFilesAndTheCommandLineAreReportedTogether) {
  write_file(user_file(), "colour = \"blue\"\n");
  write_file(project_file(), "\n\n[models.m]\nprovider = \"ghost\"\n");
  const Result<Config> loaded = load_config(sources({}, {"log.level=loud"}));
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code(), codes::kConfigUnknownKey) << "the first problem's code";
  const std::string& message = loaded.error().message();
  EXPECT_NE(message.find(user_file().string() + ":1:1: colour: unknown key"), std::string::npos) << message;
  EXPECT_NE(message.find("--set #1: log.level: expected one of"), std::string::npos) << message;
  EXPECT_NE(message.find(project_file().string() + ":4:12: models.m.provider: names provider ghost"),
            std::string::npos)
      << message;
}

TEST_F(ConfigLoaderTest, FileThatIsNotUtf8IsRefusedAtTheFirstBadByte) {
  write_file(project_file(), "default_model = \"ok\"\ntitle = \"caf\xC3\xA9 \xFF\"\n");
  const ConfigLoad loaded = load();
  ASSERT_EQ(loaded.problems.list().size(), 1u) << all(loaded.problems);
  const ConfigProblem& p = loaded.problems.list()[0];
  EXPECT_EQ(p.code, codes::kConfigNotUtf8);
  EXPECT_EQ(p.origin.line, 2u);
  EXPECT_EQ(p.origin.column, 15u) << "columns count characters";
  EXPECT_EQ(loaded.config.default_model, "") << "nothing of a refused file is applied";
}

TEST_F(ConfigLoaderTest, OverlongAndSurrogateEncodingsAreNotUtf8) {
  for (const char* bad :
       {"a = \"\xC0\xAF\"\n", "a = \"\xED\xA0\x80\"\n", "a = \"\xF4\x90\x80\x80\"\n", "\xE2\x82"}) {
    write_file(project_file(), bad);
    EXPECT_EQ(load().problems.list().at(0).code, codes::kConfigNotUtf8) << bad;
  }
}

TEST_F(ConfigLoaderTest, FileLargerThanTheLimitIsRefused) {
  write_file(project_file(), std::string(kMaxConfigFileBytes + 1, '#'));
  const ConfigLoad loaded = load();
  ASSERT_EQ(loaded.problems.list().size(), 1u) << all(loaded.problems);
  EXPECT_EQ(loaded.problems.list()[0].code, codes::kConfigTooLarge);
  EXPECT_EQ(loaded.problems.list()[0].origin.source, project_file().string());
}

TEST_F(ConfigLoaderTest, NamedFileThatCannotBeReadIsAReadError) {
  ConfigSources named;
  named.user_file = dir_.path() / "missing.toml";
  named.project_file = dir_.path();  // a directory
  const ConfigLoad loaded = load_config_with_problems(named);
  ASSERT_EQ(loaded.problems.list().size(), 2u) << all(loaded.problems);
  EXPECT_EQ(loaded.problems.list()[0].code, codes::kConfigReadFailed);
  EXPECT_EQ(loaded.problems.list()[1].code, codes::kConfigReadFailed);
}

TEST_F(ConfigLoaderTest, RelativePathsInAFileAreRelativeToThatFile) {
  write_file(project_file(), "data_dir = \"state\"\n");
  const ConfigLoad loaded = load();
  ASSERT_TRUE(loaded.problems.empty()) << all(loaded.problems);
  EXPECT_EQ(loaded.config.data_dir, project_dir() / ".keel/state");
  EXPECT_EQ(loaded.config.store_path, project_dir() / ".keel/state/keel.db") << "derived after every layer";
  EXPECT_EQ(loaded.config.master_key_file, project_dir() / ".keel/state/master.key");
}

}  // namespace
}  // namespace keel::config
