#include "store/credential_repository.h"

#include "keel/error_codes.h"

namespace keel {
namespace {

constexpr char kColumns[] =
    "id, provider_kind, shape, key_id, nonce, ciphertext, version, created_at, rotated_at";

CredentialRow row_of(const SqlRow& r) {
  CredentialRow row;
  row.id = r.text(0);
  row.provider_kind = r.text(1);
  row.shape = r.text(2);
  row.key_id = r.text(3);
  row.nonce = r.text(4);
  row.ciphertext = r.text(5);
  row.version = r.integer(6);
  row.created_at = r.integer(7);
  row.rotated_at = r.integer(8);
  return row;
}

Result<void> check_sealed(const CredentialRow& row) {
  if (row.id.empty() || row.nonce.empty() || row.ciphertext.empty()) {
    return fail(codes::kInvalidArgument, "a credential row needs an id, a nonce and a ciphertext");
  }
  return {};
}

}  // namespace

Result<void> CredentialRepository::insert(Transaction& tx, const CredentialRow& row) {
  KEEL_TRY(check_sealed(row));
  // ON CONFLICT DO NOTHING keeps a duplicate id from failing the caller's whole transaction.
  const int64_t inserted = KEEL_TRY(tx.execute(
      "INSERT INTO credentials (id, provider_kind, shape, key_id, nonce, ciphertext, version, created_at, "
      "rotated_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT (id) DO NOTHING",
      {row.id, row.provider_kind, row.shape, row.key_id, Blob{row.nonce}, Blob{row.ciphertext},
       row.created_at, row.rotated_at}));
  if (inserted == 0) return fail(codes::kCredentialExists, "credential " + row.id + " already exists");
  return {};
}

Result<void> CredentialRepository::replace_secret(Transaction& tx, const CredentialRow& row,
                                                  int64_t read_version) {
  KEEL_TRY(check_sealed(row));
  const int64_t updated = KEEL_TRY(
      tx.execute("UPDATE credentials SET key_id = ?, nonce = ?, ciphertext = ?, rotated_at = ?, version = ? "
                 "WHERE id = ? AND version = ?",
                 {row.key_id, Blob{row.nonce}, Blob{row.ciphertext}, row.rotated_at, read_version + 1, row.id,
                  read_version}));
  if (updated == 1) return {};
  auto exists = KEEL_TRY(tx.query_one("SELECT version FROM credentials WHERE id = ?", {row.id}));
  if (!exists) return fail(codes::kCredentialNotFound, "no credential " + row.id);
  return fail(codes::kRevisionConflict, "credential " + row.id + " is at version " +
                                            std::to_string(exists->integer(0)) + ", not " +
                                            std::to_string(read_version));
}

Result<CredentialRow> CredentialRepository::get(Transaction& tx, const std::string& id) {
  auto row =
      KEEL_TRY(tx.query_one(std::string("SELECT ") + kColumns + " FROM credentials WHERE id = ?", {id}));
  if (!row) return fail(codes::kCredentialNotFound, "no credential " + id);
  return row_of(*row);
}

Result<void> CredentialRepository::remove(Transaction& tx, const std::string& id) {
  const int64_t removed = KEEL_TRY(tx.execute("DELETE FROM credentials WHERE id = ?", {id}));
  if (removed == 0) return fail(codes::kCredentialNotFound, "no credential " + id);
  return {};
}

Result<std::vector<CredentialSummary>> CredentialRepository::list(Transaction& tx) {
  auto rows =
      KEEL_TRY(tx.query("SELECT id, provider_kind, shape, key_id, version, created_at, rotated_at FROM "
                        "credentials ORDER BY id"));
  std::vector<CredentialSummary> out;
  out.reserve(rows.size());
  for (const SqlRow& r : rows) {
    out.push_back(CredentialSummary{.id = r.text(0),
                                    .provider_kind = r.text(1),
                                    .shape = r.text(2),
                                    .key_id = r.text(3),
                                    .version = r.integer(4),
                                    .created_at = r.integer(5),
                                    .rotated_at = r.integer(6)});
  }
  return out;
}

}  // namespace keel
