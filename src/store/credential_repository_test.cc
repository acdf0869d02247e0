#include "store/credential_repository.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "keel/error_codes.h"
#include "keel/store.h"
#include "store/schema.h"
#include "testing/store_test.h"

namespace keel {
namespace {

using testing::code_of;
using testing::must;

CredentialRow sealed(std::string id) {
  CredentialRow row;
  row.id = std::move(id);
  row.provider_kind = "anthropic";
  row.shape = R"({"header":"x-api-key","kind":"api_key","provider":"anthropic"})";
  row.key_id = "k1";
  row.nonce = std::string("\x00\x01\x02nonce", 8);
  row.ciphertext = std::string("\xff\x00sealed", 8);
  row.created_at = 100;
  row.rotated_at = 100;
  return row;
}

class CredentialRepositoryTest : public testing::StoreTest {
 protected:
  void SetUp() override { reopen(); }
  CredentialRepository repo_;
};

TEST_F(CredentialRepositoryTest, InsertedRowReadsBackByteForByteAfterReopen) {
  {
    auto tx = begin();
    must(repo_.insert(*tx, sealed("anthropic-main")));
    must(tx->commit());
  }
  reopen();
  auto tx = begin(TxMode::kRead);
  CredentialRow got = must(repo_.get(*tx, "anthropic-main"));
  const CredentialRow want = sealed("anthropic-main");
  EXPECT_EQ(got.provider_kind, want.provider_kind);
  EXPECT_EQ(got.shape, want.shape);
  EXPECT_EQ(got.key_id, want.key_id);
  EXPECT_EQ(got.nonce, want.nonce) << "binary nonce with a NUL byte survives";
  EXPECT_EQ(got.ciphertext, want.ciphertext);
  EXPECT_EQ(got.version, 1);
  EXPECT_EQ(got.created_at, 100);
  EXPECT_EQ(got.rotated_at, 100);
}

TEST_F(CredentialRepositoryTest, DuplicateIdIsRefusedAndTheTransactionStaysUsable) {
  auto tx = begin();
  must(repo_.insert(*tx, sealed("a")));
  CredentialRow other = sealed("a");
  other.ciphertext = "different";
  EXPECT_EQ(code_of(repo_.insert(*tx, other)), codes::kCredentialExists);
  must(repo_.insert(*tx, sealed("b")));
  must(tx->commit());
  auto read = begin(TxMode::kRead);
  EXPECT_EQ(must(repo_.get(*read, "a")).ciphertext, sealed("a").ciphertext);
}

TEST_F(CredentialRepositoryTest, InsertNeedsIdNonceAndCiphertext) {
  auto tx = begin();
  EXPECT_EQ(code_of(repo_.insert(*tx, sealed(""))), codes::kInvalidArgument);
  CredentialRow no_nonce = sealed("x");
  no_nonce.nonce.clear();
  EXPECT_EQ(code_of(repo_.insert(*tx, no_nonce)), codes::kInvalidArgument);
  CredentialRow no_ciphertext = sealed("y");
  no_ciphertext.ciphertext.clear();
  EXPECT_EQ(code_of(repo_.insert(*tx, no_ciphertext)), codes::kInvalidArgument);
}

TEST_F(CredentialRepositoryTest, ReplaceSecretBumpsTheVersionAndKeepsIdAndCreation) {
  auto tx = begin();
  must(repo_.insert(*tx, sealed("a")));
  CredentialRow next = sealed("a");
  next.key_id = "k2";
  next.nonce = "nonce-2";
  next.ciphertext = "sealed-2";
  next.rotated_at = 200;
  must(repo_.replace_secret(*tx, next, 1));
  CredentialRow got = must(repo_.get(*tx, "a"));
  EXPECT_EQ(got.version, 2);
  EXPECT_EQ(got.key_id, "k2");
  EXPECT_EQ(got.nonce, "nonce-2");
  EXPECT_EQ(got.ciphertext, "sealed-2");
  EXPECT_EQ(got.created_at, 100);
  EXPECT_EQ(got.rotated_at, 200);
}

TEST_F(CredentialRepositoryTest, ReplaceSecretWithAStaleVersionConflicts) {
  auto tx = begin();
  must(repo_.insert(*tx, sealed("a")));
  must(repo_.replace_secret(*tx, sealed("a"), 1));
  EXPECT_EQ(code_of(repo_.replace_secret(*tx, sealed("a"), 1)), codes::kRevisionConflict);
  EXPECT_EQ(must(repo_.get(*tx, "a")).version, 2);
  EXPECT_EQ(code_of(repo_.replace_secret(*tx, sealed("missing"), 1)), codes::kCredentialNotFound);
}

TEST_F(CredentialRepositoryTest, RemoveDeletesOnceThenNotFound) {
  auto tx = begin();
  must(repo_.insert(*tx, sealed("a")));
  must(repo_.remove(*tx, "a"));
  EXPECT_EQ(code_of(repo_.get(*tx, "a")), codes::kCredentialNotFound);
  EXPECT_EQ(code_of(repo_.remove(*tx, "a")), codes::kCredentialNotFound);
}

TEST_F(CredentialRepositoryTest, ListIsOrderedByIdAndCarriesNoSealedBytes) {
  auto tx = begin();
  must(repo_.insert(*tx, sealed("b")));
  must(repo_.insert(*tx, sealed("a")));
  std::vector<CredentialSummary> all = must(repo_.list(*tx));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, "a");
  EXPECT_EQ(all[1].id, "b");
  EXPECT_EQ(all[0].shape, sealed("a").shape);
  EXPECT_EQ(all[0].provider_kind, "anthropic");
  EXPECT_EQ(all[0].version, 1);
}

// A database written by schema 1 (where the table had no provider kind, key id or version) migrates to the
// current schema with its rows intact and version 1.
TEST_F(CredentialRepositoryTest, SchemaOneDatabaseMigratesWithItsCredentialRows) {
  store_.reset();
  const std::string path = dir_.file("v1.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto exec = [&](std::string_view sql) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db, std::string(sql).c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "") << " in " << sql;
    sqlite3_free(error);
  };
  exec("BEGIN");
  for (std::string_view statement : schema_migrations()[0].statements) exec(statement);
  exec("INSERT INTO credentials VALUES ('old', '{}', x'01', x'02', 5, 6)");
  exec("PRAGMA application_id = 1801807212");  // 0x6B65656C, "keel"
  exec("PRAGMA user_version = 1");
  exec("COMMIT");
  sqlite3_close(db);

  options_.path = path;
  reopen();
  EXPECT_EQ(store_->schema_version(), current_schema_version());
  auto tx = begin();
  CredentialRow old = must(repo_.get(*tx, "old"));
  EXPECT_EQ(old.version, 1);
  EXPECT_EQ(old.provider_kind, "");
  EXPECT_EQ(old.nonce, "\x01");
  EXPECT_EQ(old.created_at, 5);
  must(repo_.insert(*tx, sealed("new")));
  EXPECT_EQ(must(repo_.list(*tx)).size(), 2u);
}

}  // namespace
}  // namespace keel
