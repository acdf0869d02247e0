// Secrets never appear in messages or JSON: a recognizable key is put everywhere a person might put it by
// mistake, every error path of configuration and credentials is triggered, and no message may contain it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/config_errors.h"
#include "config/config_loader.h"
#include "config/credential_resolver.h"
#include "config/credential_vault.h"
#include "config/master_key.h"
#include "config/toml_layer.h"
#include "testing/store_test.h"

namespace keel::config {
namespace {

namespace fs = std::filesystem;
using keel::testing::must;

// Looks like a real key (the resolver and the config redact such names).
constexpr char kKey[] = "sk-leak-CHECK-7f3a9b2c4d5e6f708192a3b4c5d6";
// Reads like words, so nothing but the rule "values are never repeated" keeps it out of messages.
constexpr char kPlainSecret[] = "correct-horse-battery-staple";

class SecretLeakTest : public keel::testing::StoreTest {
 protected:
  void SetUp() override { reopen(); }

  void collect(const ConfigProblems& problems) {
    if (!problems.empty()) messages_.push_back(problems.to_error().to_string());
    for (const ConfigProblem& p : problems.list()) messages_.push_back(p.to_string());
  }
  template <typename T>
  void collect(const Result<T>& result, const char* expected_code) {
    ASSERT_FALSE(result) << "expected " << expected_code;
    EXPECT_EQ(result.error().code(), expected_code);
    messages_.push_back(result.error().to_string());
  }
  void expect_no_secret_in_messages(size_t at_least) {
    EXPECT_GE(messages_.size(), at_least);
    for (const std::string& message : messages_) {
      EXPECT_EQ(message.find(kKey), std::string::npos) << message;
      EXPECT_EQ(message.find("7f3a9b2c4d5e6f70"), std::string::npos) << message;
      EXPECT_EQ(message.find(kPlainSecret), std::string::npos) << message;
    }
  }

  std::vector<std::string> messages_;
};

TEST_F(SecretLeakTest, ConfigurationProblemsNeverRepeatAKey) {
  const std::string k = kKey;
  const std::string p = kPlainSecret;
  const std::string document = "api_key = \"" + k +
                               "\"\n"  // unknown key with a key as its value
                               "token = " +
                               k + "\n"  // not TOML: a bare key
      ;
  const LayerSource file{ValueOrigin::Layer::kUserFile, "/u/config.toml", "/u", "/home/u"};
  {
    ConfigProblems problems;
    Config config;
    apply_toml_document(document, file, config, problems);  // syntax error: stops at line 2
    apply_toml_document("api_key = \"" + k + "\"\nsecret = \"" + p + "\"\n", file, config, problems);
    apply_toml_document(
        "default_model = \"" + k +
            "\"\n"
            "task_model = \"" +
            k +
            "\"\n"
            "token_budget = \"" +
            k +
            "\"\n"
            "data_dir = \"~/" +
            k +
            "\"\n"
            "[store]\ndurability = \"" +
            k +
            "\"\n"
            "[policy]\nmode = \"" +
            p +
            "\"\n"
            "[log]\nlevel = \"" +
            k +
            "\"\n"
            "[providers.a]\nkind = \"" +
            k + "\"\nbase_url = \"" + k + "\"\napi_key_env = \"" + k +
            "\"\n"
            "headers = { Authorization = \"Bearer " +
            k + "\", \"x-api-key\" = \"" + p + "\", \"X-Bad\" = \"" + p +
            "\\n\" }\n"
            "[providers.b]\ncredential = \"" +
            k +
            "\"\n"
            "[providers.c]\ncredential = \"" +
            p + "\"\napi_key_env = \"" + p +
            "\"\n"
            "[providers.d]\napi_key_env = \"" +
            p +
            "\"\n"
            "[providers." +
            k +
            "]\nkind = 3\n"
            "[models.m]\nprovider = \"" +
            k + "\"\nid = 5\nprice = { input = \"" + k +
            "\" }\n"
            "[mcp.servers.s]\nurl = \"" +
            k +
            "\"\n"
            "[mcp.servers.t]\ncommand = \"" +
            p + "\"\nurl = \"http://" + p + "\"\n",
        LayerSource{ValueOrigin::Layer::kProjectFile, "/p/.keel/config.toml", "/p/.keel", std::nullopt},
        config, problems);
    const LayerSource cli{ValueOrigin::Layer::kCommandLine, "--set #1", "/w", std::nullopt};
    apply_override("providers.x.api_key=" + k, cli, config, problems);
    apply_override(k + "=1", cli, config, problems);
    apply_override("token_budget=" + k, cli, config, problems);
    apply_override("log.level=" + p, cli, config, problems);
    finalize_config(config, problems);
    collect(problems);
    EXPECT_GT(problems.suppressed(), 0u) << "the bound was reached too";
  }
  {
    // The whole loader, with variables; a second load to see what the bound hid above.
    ConfigSources sources;
    sources.env = fixed_environment({{"KEEL_MODEL", k},
                                     {"KEEL_TOKEN_BUDGET", k},
                                     {"KEEL_POLICY_MODE", p},
                                     {"KEEL_DURABILITY", k},
                                     {"KEEL_LOG_FORMAT", p}});
    // Names (models, providers) are repeated in messages unless they look like keys; values never are.
    sources.overrides = {"default_model=" + k, "providers.z.base_url=" + p};
    const ConfigLoad load = load_config_with_problems(sources);
    collect(load.problems);
  }
  expect_no_secret_in_messages(30);
}

TEST_F(SecretLeakTest, CredentialErrorsNeverRepeatTheSecret) {
  CredentialVault vault(must(MasterKey::generate()), clock_);
  const Secret secret = Secret::copy_of(kKey);
  const nlohmann::json shape = api_key_shape(ProviderKind::kAnthropic);
  {
    auto tx = begin();
    must(vault.put(*tx, "main", ProviderKind::kAnthropic, shape, secret));
    collect(vault.put(*tx, "main", ProviderKind::kAnthropic, shape, secret), codes::kCredentialExists);
    collect(vault.put(*tx, kKey, ProviderKind::kAnthropic, shape, secret), codes::kCredentialBadId);
    collect(vault.put(*tx, "x", ProviderKind::kAnthropic, nlohmann::json{{"kind", "api_key"}, {"note", kKey}},
                      secret),
            codes::kCredentialBadShape);
    collect(vault.put(*tx, "x", ProviderKind::kAnthropic, nlohmann::json{{"note", kKey}}, secret),
            codes::kCredentialBadShape);
    collect(vault.rotate(*tx, "missing", secret), codes::kCredentialNotFound);
    collect(vault.rotate(*tx, kKey, secret), codes::kCredentialBadId);
    collect(vault.get(*tx, kKey), codes::kCredentialBadId);
    collect(vault.describe(*tx, "missing"), codes::kCredentialNotFound);
    must(tx->commit());
  }
  {
    auto tx = begin();
    must(
        tx->execute("UPDATE credentials SET ciphertext = ? WHERE id = 'main'", {Blob{std::string(40, 'x')}}));
    collect(vault.get(*tx, "main"), codes::kCredentialTampered);
    tx->rollback();
  }
  {
    auto tx = begin(TxMode::kRead);
    CredentialVault other(must(MasterKey::generate()), clock_);
    collect(other.get(*tx, "main"), codes::kCredentialWrongMasterKey);
    // JSON that describes credentials carries shapes only.
    for (const CredentialInfo& info : must(vault.list(*tx))) messages_.push_back(info.shape.dump());
    messages_.push_back(must(vault.describe(*tx, "main")).shape.dump());
  }
  CredentialResolver resolver(*store_, &vault, fixed_environment({{"EMPTY", ""}}));
  collect(resolver.resolve({CredentialRef::Source::kEnvironment, kKey}), codes::kCredentialEnvMissing);
  collect(resolver.resolve({CredentialRef::Source::kEnvironment, "EMPTY"}), codes::kCredentialEnvMissing);
  collect(resolver.resolve({CredentialRef::Source::kStored, kKey}), codes::kCredentialBadId);
  CredentialResolver no_vault(*store_, nullptr, fixed_environment({}));
  collect(no_vault.resolve({CredentialRef::Source::kStored, kKey}), codes::kCredentialNotFound);
  ProviderConfig provider;
  provider.credential = {CredentialRef::Source::kStored, kKey};
  collect(no_vault.shape_of(provider), codes::kCredentialNotFound);
  expect_no_secret_in_messages(15);
}

TEST_F(SecretLeakTest, MasterKeyErrorsNeverRepeatTheKey) {
  const fs::path path = dir_.path() / "master.key";
  {
    auto created = MasterKey::load_or_create(path);
    ASSERT_TRUE(created) << created.error().to_string();
  }
  std::string key_bytes;
  {
    std::ifstream in(path, std::ios::binary);
    key_bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read,
                  fs::perm_options::replace);
  auto wide = MasterKey::load(path);
  ASSERT_FALSE(wide);
  EXPECT_EQ(wide.error().code(), codes::kKeyFilePermissions);
  EXPECT_EQ(wide.error().message().find(key_bytes), std::string::npos);
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out << "x";
  }
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  auto sized = MasterKey::load(path);
  ASSERT_FALSE(sized);
  EXPECT_EQ(sized.error().code(), codes::kKeyFileSize);
  EXPECT_EQ(sized.error().message().find(key_bytes), std::string::npos);
}

}  // namespace
}  // namespace keel::config
