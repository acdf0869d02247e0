#include "config/credential_resolver.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "config/config_errors.h"
#include "testing/store_test.h"

namespace keel::config {
namespace {

using keel::testing::code_of;
using keel::testing::must;
using Source = CredentialRef::Source;

class CredentialResolverTest : public keel::testing::StoreTest {
 protected:
  void SetUp() override {
    reopen();
    resolver_.emplace(*store_, &vault_, fixed_environment({{"ANTHROPIC_API_KEY", "sk-from-env"}}));
    auto tx = begin();
    must(vault_.put(
        *tx, "anthropic-main", ProviderKind::kAnthropic,
        {{"kind", "api_key"}, {"provider", "anthropic"}, {"header", "x-api-key"}, {"team", "core"}},
        Secret::copy_of("sk-stored-value")));
    must(tx->commit());
  }

  std::string resolved(const CredentialRef& ref) {
    auto secret = resolver_->resolve(ref);
    if (!secret) return secret.error().to_string();
    return *secret ? std::string((*secret)->reveal()) : "<none>";
  }

  CredentialVault vault_{must(MasterKey::generate()), clock_};
  std::optional<CredentialResolver> resolver_;  // needs the store SetUp opens
};

TEST_F(CredentialResolverTest, EnvironmentReferenceResolvesToTheVariable) {
  EXPECT_EQ(resolved({Source::kEnvironment, "ANTHROPIC_API_KEY"}), "sk-from-env");
}

TEST_F(CredentialResolverTest, StoredReferenceIsDecrypted) {
  EXPECT_EQ(resolved({Source::kStored, "anthropic-main"}), "sk-stored-value");
}

TEST_F(CredentialResolverTest, NoReferenceResolvesToNoSecret) { EXPECT_EQ(resolved({}), "<none>"); }

TEST_F(CredentialResolverTest, MissingVariableIsACodedErrorNamingTheVariable) {
  auto secret = resolver_->resolve({Source::kEnvironment, "OPENAI_API_KEY"});
  ASSERT_FALSE(secret);
  EXPECT_EQ(secret.error().code(), codes::kCredentialEnvMissing);
  EXPECT_EQ(secret.error().message(), "environment variable OPENAI_API_KEY is not set");
}

TEST_F(CredentialResolverTest, MissingStoredCredentialIsACodedErrorNamingTheId) {
  auto secret = resolver_->resolve({Source::kStored, "openai-main"});
  ASSERT_FALSE(secret);
  EXPECT_EQ(secret.error().code(), codes::kCredentialNotFound);
  EXPECT_NE(secret.error().message().find("openai-main"), std::string::npos);
}

TEST_F(CredentialResolverTest, WithoutAVaultStoredReferencesFailAndVariablesStillWork) {
  CredentialResolver bare(*store_, nullptr, fixed_environment({{"K", "v"}}));
  EXPECT_EQ(code_of(bare.resolve({Source::kStored, "anthropic-main"})), codes::kCredentialNotFound);
  auto from_env = bare.resolve({Source::kEnvironment, "K"});
  ASSERT_TRUE(from_env && *from_env);
  EXPECT_EQ((*from_env)->reveal(), "v");
}

TEST_F(CredentialResolverTest, RotationChangesTheSecretButNotTheShape) {
  ProviderConfig provider;
  provider.kind = ProviderKind::kAnthropic;
  provider.credential = {Source::kStored, "anthropic-main"};
  const nlohmann::json before = must(resolver_->shape_of(provider));
  {
    auto tx = begin();
    must(vault_.rotate(*tx, "anthropic-main", Secret::copy_of("sk-rotated-value")));
    must(tx->commit());
  }
  EXPECT_EQ(resolved(provider.credential), "sk-rotated-value");
  EXPECT_EQ(must(resolver_->shape_of(provider)), before);
  EXPECT_EQ(before["team"], "core") << "the stored shape, as put";
}

TEST_F(CredentialResolverTest, ShapeOfAVariableIsTheKindsApiKeyShapeAndOfNothingNull) {
  ProviderConfig provider;
  provider.kind = ProviderKind::kOpenAiChat;
  provider.credential = {Source::kEnvironment, "OPENAI_API_KEY"};
  EXPECT_EQ(must(resolver_->shape_of(provider)), api_key_shape(ProviderKind::kOpenAiChat));
  provider.credential = {};
  EXPECT_TRUE(must(resolver_->shape_of(provider)).is_null());
}

}  // namespace
}  // namespace keel::config
