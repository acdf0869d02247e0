#include "config/credential_vault.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "config/config_errors.h"
#include "keel/error_codes.h"
#include "testing/store_test.h"

namespace keel::config {
namespace {

using keel::testing::code_of;
using keel::testing::must;
using nlohmann::json;

constexpr char kKey[] = "sk-ant-api03-vault-test-key-0000";
constexpr char kRotated[] = "sk-ant-api03-vault-test-key-1111";

class CredentialVaultTest : public keel::testing::StoreTest {
 protected:
  void SetUp() override { reopen(); }

  CredentialInfo put(const std::string& id, std::string_view secret = kKey) {
    auto tx = begin();
    CredentialInfo info = must(vault_.put(*tx, id, ProviderKind::kAnthropic,
                                          api_key_shape(ProviderKind::kAnthropic), Secret::copy_of(secret)));
    must(tx->commit());
    return info;
  }
  std::string get(const std::string& id) {
    auto tx = begin(TxMode::kRead);
    return std::string(must(vault_.get(*tx, id)).reveal());
  }
  std::string get_code(const std::string& id) {
    auto tx = begin(TxMode::kRead);
    return code_of(vault_.get(*tx, id));
  }
  // Runs raw SQL against the credentials table, as someone with access to the database file could.
  void tamper(std::string_view sql, std::initializer_list<SqlValue> params) {
    auto tx = begin();
    must(tx->execute(sql, params));
    must(tx->commit());
  }

  MasterKey master_ = must(MasterKey::generate());
  CredentialVault vault_{must(MasterKey::generate()), clock_};
};

TEST_F(CredentialVaultTest, PutThenGetRoundTripsAcrossAReopen) {
  const CredentialInfo info = put("anthropic-main");
  EXPECT_EQ(info.id, "anthropic-main");
  EXPECT_EQ(info.provider, ProviderKind::kAnthropic);
  EXPECT_EQ(info.shape, api_key_shape(ProviderKind::kAnthropic));
  EXPECT_EQ(info.version, 1);
  EXPECT_EQ(info.created_at, clock_.now_unix_ms());
  reopen();
  EXPECT_EQ(get("anthropic-main"), kKey);
}

TEST_F(CredentialVaultTest, TheTableHoldsNoPlaintextAndEachSealUsesAFreshNonce) {
  put("a");
  put("b");
  auto tx = begin(TxMode::kRead);
  auto rows = must(tx->query("SELECT id, nonce, ciphertext, shape, key_id FROM credentials ORDER BY id"));
  ASSERT_EQ(rows.size(), 2u);
  for (const SqlRow& row : rows) {
    for (size_t column = 0; column < row.size(); ++column) {
      EXPECT_EQ(row.text(column).find("vault-test-key"), std::string::npos) << "column " << column;
    }
    EXPECT_EQ(row.text(1).size(), 24u) << "XChaCha20 nonce";
  }
  EXPECT_NE(rows[0].text(1), rows[1].text(1));
  EXPECT_NE(rows[0].text(2), rows[1].text(2)) << "same secret, different ciphertexts";
}

TEST_F(CredentialVaultTest, RotationKeepsTheIdAndShapeAndChangesTheValue) {
  const CredentialInfo before = put("anthropic-main");
  clock_.advance(std::chrono::minutes(5));
  CredentialInfo after;
  {
    auto tx = begin();
    after = must(vault_.rotate(*tx, "anthropic-main", Secret::copy_of(kRotated)));
    must(tx->commit());
  }
  EXPECT_EQ(after.id, before.id);
  EXPECT_EQ(after.shape, before.shape);
  EXPECT_EQ(after.provider, before.provider);
  EXPECT_EQ(after.version, 2);
  EXPECT_EQ(after.created_at, before.created_at);
  EXPECT_EQ(after.rotated_at, before.rotated_at + 5 * 60 * 1000);
  EXPECT_EQ(get("anthropic-main"), kRotated);
  auto tx = begin(TxMode::kRead);
  EXPECT_EQ(must(vault_.describe(*tx, "anthropic-main")).version, 2);
}

TEST_F(CredentialVaultTest, RotatingAMissingCredentialIsNotFound) {
  auto tx = begin();
  EXPECT_EQ(code_of(vault_.rotate(*tx, "nope", Secret::copy_of(kRotated))), codes::kCredentialNotFound);
}

TEST_F(CredentialVaultTest, ListShowsIdsAndShapesOnly) {
  put("b");
  put("a");
  auto tx = begin(TxMode::kRead);
  const std::vector<CredentialInfo> all = must(vault_.list(*tx));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, "a");
  EXPECT_EQ(all[1].id, "b");
  EXPECT_EQ(all[0].shape, (json{{"kind", "api_key"}, {"provider", "anthropic"}, {"header", "x-api-key"}}));
}

TEST_F(CredentialVaultTest, RemoveDeletesTheCredential) {
  put("a");
  {
    auto tx = begin();
    must(vault_.remove(*tx, "a"));
    EXPECT_EQ(code_of(vault_.remove(*tx, "a")), codes::kCredentialNotFound);
    must(tx->commit());
  }
  EXPECT_EQ(get_code("a"), codes::kCredentialNotFound);
}

TEST_F(CredentialVaultTest, DuplicatePutIsRefused) {
  put("a");
  auto tx = begin();
  EXPECT_EQ(code_of(vault_.put(*tx, "a", ProviderKind::kAnthropic, api_key_shape(ProviderKind::kAnthropic),
                               Secret::copy_of(kRotated))),
            codes::kCredentialExists);
}

TEST_F(CredentialVaultTest, TamperedCiphertextFailsAuthentication) {
  put("a");
  auto tx0 = begin(TxMode::kRead);
  std::string ciphertext = must(tx0->query_one("SELECT ciphertext FROM credentials WHERE id = 'a'"))->text(0);
  tx0.reset();
  ciphertext[3] = static_cast<char>(ciphertext[3] ^ 0x01);
  tamper("UPDATE credentials SET ciphertext = ? WHERE id = 'a'", {Blob{ciphertext}});
  EXPECT_EQ(get_code("a"), codes::kCredentialTampered);
  tamper("UPDATE credentials SET ciphertext = ? WHERE id = 'a'", {Blob{"short"}});
  EXPECT_EQ(get_code("a"), codes::kCredentialTampered);
}

TEST_F(CredentialVaultTest, EditedMetadataFailsAuthentication) {
  put("a");
  tamper("UPDATE credentials SET shape = ? WHERE id = 'a'", {R"({"header":"x-evil","kind":"api_key"})"});
  EXPECT_EQ(get_code("a"), codes::kCredentialTampered) << "the shape is bound to the ciphertext";
  put("b");
  tamper("UPDATE credentials SET provider_kind = 'openai-chat' WHERE id = 'b'", {});
  EXPECT_EQ(get_code("b"), codes::kCredentialTampered) << "so is the provider kind";
  put("c");
  tamper("UPDATE credentials SET version = 7 WHERE id = 'c'", {});
  EXPECT_EQ(get_code("c"), codes::kCredentialTampered) << "and the version";
}

TEST_F(CredentialVaultTest, CiphertextMovedToAnotherIdFailsAuthentication) {
  put("a", kKey);
  put("b", kRotated);
  tamper(
      "UPDATE credentials SET (nonce, ciphertext) = (SELECT nonce, ciphertext FROM credentials WHERE id = "
      "'a') "
      "WHERE id = 'b'",
      {});
  EXPECT_EQ(get_code("b"), codes::kCredentialTampered);
  EXPECT_EQ(get("a"), kKey);
}

TEST_F(CredentialVaultTest, OlderSecretRestoredUnderANewerVersionFailsAuthentication) {
  put("a");
  auto tx0 = begin(TxMode::kRead);
  auto old = must(tx0->query_one("SELECT nonce, ciphertext FROM credentials WHERE id = 'a'"));
  tx0.reset();
  {
    auto tx = begin();
    must(vault_.rotate(*tx, "a", Secret::copy_of(kRotated)));
    must(tx->commit());
  }
  tamper("UPDATE credentials SET nonce = ?, ciphertext = ? WHERE id = 'a'",
         {Blob{old->text(0)}, Blob{old->text(1)}});
  EXPECT_EQ(get_code("a"), codes::kCredentialTampered);
}

TEST_F(CredentialVaultTest, CredentialSealedUnderAnotherMasterKeyIsReportedAsSuch) {
  put("a");
  CredentialVault other(must(MasterKey::generate()), clock_);
  auto tx = begin(TxMode::kRead);
  EXPECT_EQ(code_of(other.get(*tx, "a")), codes::kCredentialWrongMasterKey);
  tx.reset();
  // A forged key id only gets as far as authentication.
  tamper("UPDATE credentials SET key_id = ? WHERE id = 'a'", {master_.key_id()});
  CredentialVault forged(std::move(master_), clock_);
  auto read = begin(TxMode::kRead);
  EXPECT_EQ(code_of(forged.get(*read, "a")), codes::kCredentialTampered);
}

TEST_F(CredentialVaultTest, RotationMovesACredentialOntoTheCurrentMasterKey) {
  put("a");
  CredentialVault next(must(MasterKey::generate()), clock_);
  {
    auto tx = begin();
    must(next.rotate(*tx, "a", Secret::copy_of(kRotated)));
    must(tx->commit());
  }
  auto tx = begin(TxMode::kRead);
  EXPECT_EQ(must(next.get(*tx, "a")).reveal(), kRotated);
  EXPECT_EQ(code_of(vault_.get(*tx, "a")), codes::kCredentialWrongMasterKey);
}

TEST_F(CredentialVaultTest, BadIdsShapesAndSecretsAreRefusedBeforeAnythingIsWritten) {
  auto tx = begin();
  const json shape = api_key_shape(ProviderKind::kOpenAiChat);
  const Secret secret = Secret::copy_of(kKey);
  auto put_code = [&](const std::string& id, const json& s, const Secret& value) {
    return code_of(vault_.put(*tx, id, ProviderKind::kOpenAiChat, s, value));
  };
  EXPECT_EQ(put_code("", shape, secret), codes::kCredentialBadId);
  EXPECT_EQ(put_code("has space", shape, secret), codes::kCredentialBadId);
  EXPECT_EQ(put_code(std::string(129, 'a'), shape, secret), codes::kCredentialBadId);
  EXPECT_EQ(put_code("sk-proj-Ab12Cd34Ef56Gh78Ij90Kl", shape, secret), codes::kCredentialBadId);
  EXPECT_EQ(put_code("ok", json::array(), secret), codes::kCredentialBadShape);
  EXPECT_EQ(put_code("ok", json{{"provider", "x"}}, secret), codes::kCredentialBadShape) << "needs a kind";
  EXPECT_EQ(put_code("ok", json{{"kind", "api_key"}, {"pad", std::string(2000, 'p')}}, secret),
            codes::kCredentialBadShape);
  EXPECT_EQ(put_code("ok", json{{"kind", "api_key"}, {"oops", kKey}}, secret), codes::kCredentialBadShape)
      << "a shape holding the secret would leak it into snapshots";
  EXPECT_EQ(put_code("ok", shape, Secret()), codes::kCredentialBadSecret);
  EXPECT_EQ(put_code("ok", shape, Secret::zeroed(CredentialVault::kMaxSecretBytes + 1)),
            codes::kCredentialBadSecret);
  EXPECT_TRUE(must(vault_.list(*tx)).empty());
}

TEST_F(CredentialVaultTest, ACredentialOfNoModelProviderRoundTripsAndIsListed) {
  {
    auto tx = begin();
    const CredentialInfo info = must(vault_.put(*tx, "mcp-oauth.docs.0123456789abcdef", std::nullopt,
                                                json{{"kind", "mcp_oauth_grant"}}, Secret::copy_of(kKey)));
    EXPECT_EQ(info.provider, std::nullopt);
    must(tx->commit());
  }
  reopen();
  EXPECT_EQ(get("mcp-oauth.docs.0123456789abcdef"), kKey);
  auto tx = begin(TxMode::kRead);
  const std::vector<CredentialInfo> all = must(vault_.list(*tx));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].provider, std::nullopt);
  EXPECT_EQ(all[0].shape, json({{"kind", "mcp_oauth_grant"}}));
}

TEST_F(CredentialVaultTest, ApiKeyShapesNameTheHeaderOfEachProviderKind) {
  EXPECT_EQ(api_key_shape(ProviderKind::kOpenAiResponses), (json{{"kind", "api_key"},
                                                                 {"provider", "openai-responses"},
                                                                 {"header", "authorization"},
                                                                 {"scheme", "bearer"}}));
  EXPECT_EQ(api_key_shape(ProviderKind::kAnthropic)["header"], "x-api-key");
}

}  // namespace
}  // namespace keel::config
