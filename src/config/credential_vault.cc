#include "config/credential_vault.h"

#include <sodium.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "config/config_errors.h"
#include "keel/error_codes.h"
#include "util/canonical_json.h"

namespace keel::config {
namespace {

using nlohmann::json;

constexpr std::string_view kAssociatedDataLabel = "keel credential v1";

// Length-prefixed, so that no two different rows can produce the same associated data.
void append_field(std::string& out, std::string_view field) {
  const uint64_t length = field.size();
  for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((length >> shift) & 0xff);
  out.append(field);
}

std::string associated_data(const CredentialRow& row) {
  std::string out;
  append_field(out, kAssociatedDataLabel);
  append_field(out, row.id);
  append_field(out, std::to_string(row.version));
  append_field(out, row.provider_kind);
  append_field(out, row.shape);
  append_field(out, row.key_id);
  return out;
}

Result<void> check_id(const std::string& id) {
  const bool charset = std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
  });
  if (id.empty() || id.size() > CredentialVault::kMaxIdBytes || !charset) {
    return fail(codes::kCredentialBadId, "a credential id has 1 to 128 letters, digits, '.', '_' or '-'");
  }
  // The id is repeated in messages; a key pasted as an id must not be.
  if (looks_like_secret(id)) {
    return fail(codes::kCredentialBadId, "the credential id looks like a key itself; choose a name");
  }
  return {};
}

Result<void> check_secret(const std::string& id, const Secret& secret) {
  if (secret.empty() || secret.size() > CredentialVault::kMaxSecretBytes) {
    return fail(codes::kCredentialBadSecret, "the secret of credential " + id + " must have 1 to " +
                                                 std::to_string(CredentialVault::kMaxSecretBytes) + " bytes");
  }
  return {};
}

Result<void> check_shape_holds_no_secret(const std::string& id, const std::string& shape,
                                         const Secret& secret) {
  // Short secrets would match by accident; real keys are far longer than 8 bytes.
  if (secret.size() >= 8 && shape.find(secret.reveal()) != std::string::npos) {
    return fail(codes::kCredentialBadShape, "the shape of credential " + id + " contains its secret");
  }
  return {};
}

Result<CredentialInfo> info_of(const std::string& id, const std::string& provider_kind,
                               const std::string& shape, int64_t version, int64_t created_at,
                               int64_t rotated_at) {
  // "" is a credential of no model provider (put() with none).
  const std::optional<ProviderKind> kind = parse_provider_kind(provider_kind);
  auto parsed = parse_json(shape);
  if ((!kind && !provider_kind.empty()) || !parsed || !parsed->is_object()) {
    return fail(codes::kStoreDecode, "credential " + id + " has a damaged provider kind or shape");
  }
  return CredentialInfo{id, kind, std::move(*parsed), version, created_at, rotated_at};
}

}  // namespace

json api_key_shape(ProviderKind kind) {
  json shape = {{"kind", "api_key"}, {"provider", std::string(to_string(kind))}};
  if (kind == ProviderKind::kAnthropic) {
    shape["header"] = "x-api-key";
  } else {
    shape["header"] = "authorization";
    shape["scheme"] = "bearer";
  }
  return shape;
}

CredentialVault::CredentialVault(MasterKey key, const Clock& clock) : key_(std::move(key)), clock_(clock) {}

Result<void> CredentialVault::seal(CredentialRow& row, const Secret& secret) const {
  std::string nonce(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, '\0');
  randombytes_buf(nonce.data(), nonce.size());
  std::string ciphertext(secret.size() + crypto_aead_xchacha20poly1305_ietf_ABYTES, '\0');
  const std::string ad = associated_data(row);
  unsigned long long length = 0;
  const int rc = crypto_aead_xchacha20poly1305_ietf_encrypt(
      reinterpret_cast<unsigned char*>(ciphertext.data()), &length, secret.reveal_bytes().data(),
      secret.size(), reinterpret_cast<const unsigned char*>(ad.data()), ad.size(), nullptr,
      reinterpret_cast<const unsigned char*>(nonce.data()), key_.key().reveal_bytes().data());
  if (rc != 0) return fail(codes::kCredentialCrypto, "sealing credential " + row.id + " failed");
  ciphertext.resize(static_cast<size_t>(length));
  row.nonce = std::move(nonce);
  row.ciphertext = std::move(ciphertext);
  return {};
}

Result<Secret> CredentialVault::open(const CredentialRow& row) const {
  if (row.key_id != key_.key_id()) {
    return fail(codes::kCredentialWrongMasterKey,
                "credential " + row.id + " was sealed under another master key than the one in use");
  }
  if (row.nonce.size() != crypto_aead_xchacha20poly1305_ietf_NPUBBYTES ||
      row.ciphertext.size() <= crypto_aead_xchacha20poly1305_ietf_ABYTES) {
    return fail(codes::kCredentialTampered,
                "credential " + row.id + " is damaged (nonce or ciphertext size)");
  }
  Secret plain = Secret::zeroed(row.ciphertext.size() - crypto_aead_xchacha20poly1305_ietf_ABYTES);
  const std::string ad = associated_data(row);
  unsigned long long length = 0;
  const int rc = crypto_aead_xchacha20poly1305_ietf_decrypt(
      plain.writable_bytes().data(), &length, nullptr,
      reinterpret_cast<const unsigned char*>(row.ciphertext.data()), row.ciphertext.size(),
      reinterpret_cast<const unsigned char*>(ad.data()), ad.size(),
      reinterpret_cast<const unsigned char*>(row.nonce.data()), key_.key().reveal_bytes().data());
  if (rc != 0 || length != plain.size()) {
    return fail(codes::kCredentialTampered,
                "credential " + row.id + " failed authentication: its ciphertext or metadata was altered");
  }
  return plain;
}

Result<CredentialInfo> CredentialVault::put(Transaction& tx, const std::string& id,
                                            std::optional<ProviderKind> provider, const json& shape,
                                            const Secret& secret) {
  KEEL_TRY(check_id(id));
  KEEL_TRY(check_secret(id, secret));
  if (!shape.is_object() || !shape.contains("kind") || !shape["kind"].is_string()) {
    return fail(codes::kCredentialBadShape,
                "the shape of credential " + id + " must be an object with a kind");
  }
  auto canonical = canonical_json(shape);
  if (!canonical || canonical->size() > kMaxShapeBytes) {
    return fail(codes::kCredentialBadShape, "the shape of credential " + id +
                                                " must be valid JSON of at most " +
                                                std::to_string(kMaxShapeBytes) + " bytes");
  }
  KEEL_TRY(check_shape_holds_no_secret(id, *canonical, secret));
  CredentialRow row;
  row.id = id;
  row.provider_kind = provider ? std::string(to_string(*provider)) : std::string();
  row.shape = std::move(*canonical);
  row.key_id = key_.key_id();
  row.version = 1;
  row.created_at = row.rotated_at = clock_.now_unix_ms();
  KEEL_TRY(seal(row, secret));
  KEEL_TRY(CredentialRepository{}.insert(tx, row));
  return info_of(row.id, row.provider_kind, row.shape, row.version, row.created_at, row.rotated_at);
}

Result<CredentialInfo> CredentialVault::rotate(Transaction& tx, const std::string& id, const Secret& secret) {
  KEEL_TRY(check_id(id));
  KEEL_TRY(check_secret(id, secret));
  CredentialRepository repository;
  CredentialRow row = KEEL_TRY(repository.get(tx, id));
  KEEL_TRY(check_shape_holds_no_secret(id, row.shape, secret));
  const int64_t read_version = row.version;
  row.version = read_version + 1;
  row.key_id = key_.key_id();  // a rotation also moves a credential onto the current master key
  row.rotated_at = clock_.now_unix_ms();
  KEEL_TRY(seal(row, secret));
  KEEL_TRY(repository.replace_secret(tx, row, read_version));
  return info_of(row.id, row.provider_kind, row.shape, row.version, row.created_at, row.rotated_at);
}

Result<Secret> CredentialVault::get(Transaction& tx, const std::string& id) const {
  KEEL_TRY(check_id(id));
  const CredentialRow row = KEEL_TRY(CredentialRepository{}.get(tx, id));
  return open(row);
}

Result<CredentialInfo> CredentialVault::describe(Transaction& tx, const std::string& id) const {
  KEEL_TRY(check_id(id));
  const CredentialRow row = KEEL_TRY(CredentialRepository{}.get(tx, id));
  return info_of(row.id, row.provider_kind, row.shape, row.version, row.created_at, row.rotated_at);
}

Result<void> CredentialVault::remove(Transaction& tx, const std::string& id) {
  KEEL_TRY(check_id(id));
  return CredentialRepository{}.remove(tx, id);
}

Result<std::vector<CredentialInfo>> CredentialVault::list(Transaction& tx) const {
  const std::vector<CredentialSummary> all = KEEL_TRY(CredentialRepository{}.list(tx));
  std::vector<CredentialInfo> out;
  out.reserve(all.size());
  for (const CredentialSummary& s : all) {
    out.push_back(KEEL_TRY(info_of(s.id, s.provider_kind, s.shape, s.version, s.created_at, s.rotated_at)));
  }
  return out;
}

}  // namespace keel::config
