#include "config/master_key.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>
#include <system_error>
#include <utility>

#include "config/config_errors.h"
#include "util/private_file.h"

namespace keel::config {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kKeyIdLabel = "keel master key id v1";

constexpr PrivateFileCodes kKeyFileCodes{
    .io = codes::kKeyFileIo, .unsafe = codes::kKeyFileUnsafe, .permissions = codes::kKeyFilePermissions};

std::string os_error(int error) { return std::error_code(error, std::generic_category()).message(); }

Result<void> write_all(int fd, std::span<const unsigned char> bytes, const fs::path& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(codes::kKeyFileIo, "cannot write " + path.string() + ": " + os_error(errno));
    done += static_cast<size_t>(n);
  }
  return {};
}

// Reads the key file at `path`. `missing` is set when it does not exist (and the error is key_file_io).
Result<Secret> read_key_file(const fs::path& path, bool& missing) {
  // Not a symlink, a regular file of ours, mode 0600 or narrower (util/private_file.h).
  UniqueFd fd = KEEL_TRY(open_private_file(path, "the master key file", kKeyFileCodes, missing));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return fail(codes::kKeyFileIo,
                "cannot stat the master key file " + path.string() + ": " + os_error(errno));
  }
  if (st.st_size != static_cast<off_t>(MasterKey::kBytes)) {
    return fail(codes::kKeyFileSize, "the master key file " + path.string() + " has " +
                                         std::to_string(st.st_size) + " bytes; a master key has exactly " +
                                         std::to_string(MasterKey::kBytes));
  }
  Secret key = Secret::zeroed(MasterKey::kBytes);
  size_t done = 0;
  while (done < key.size()) {
    const ssize_t n = ::read(fd.get(), key.writable_bytes().data() + done, key.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(codes::kKeyFileIo, "cannot read " + path.string() + ": " + os_error(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  if (done != key.size()) {
    return fail(codes::kKeyFileSize, "the master key file " + path.string() + " shrank while it was read");
  }
  return key;
}

// Writes a new random key to `path` unless one appears there first; returns the key now at `path`.
Result<Secret> create_key_file(const fs::path& path) {
  const fs::path dir = path.parent_path();
  KEEL_TRY(create_private_directories(dir, codes::kKeyFileIo));
  Secret key = Secret::zeroed(MasterKey::kBytes);
  randombytes_buf(key.writable_bytes().data(), key.size());

  // A fresh name (O_EXCL, O_NOFOLLOW, 0600): nothing prepared beside the key file is followed or reused.
  UniqueTemporary temporary = KEEL_TRY(create_unique_temporary(path, codes::kKeyFileIo));
  Result<void> written = write_all(temporary.fd.get(), key.reveal_bytes(), temporary.path);
  if (written && ::fsync(temporary.fd.get()) != 0) {
    written = fail(codes::kKeyFileIo, "cannot sync " + temporary.path.string() + ": " + os_error(errno));
  }
  temporary.fd = UniqueFd();
  if (!written) {
    ::unlink(temporary.path.c_str());
    return std::unexpected(written.error());
  }
  // link() fails if `path` exists: of two processes creating the key at once, exactly one wins and the
  // other reads the winner's key.
  const int linked = ::link(temporary.path.c_str(), path.c_str());
  const int link_error = errno;
  ::unlink(temporary.path.c_str());
  if (linked != 0 && link_error == EEXIST) {
    bool missing = false;
    return read_key_file(path, missing);
  }
  if (linked != 0) {
    return fail(codes::kKeyFileIo,
                "cannot create the master key file " + path.string() + ": " + os_error(link_error));
  }
  KEEL_TRY(sync_directory(dir, codes::kKeyFileIo));
  return key;
}

}  // namespace

Result<void> ensure_sodium() {
  if (sodium_init() < 0) return fail(codes::kCredentialCrypto, "libsodium could not be initialized");
  return {};
}

MasterKey::MasterKey(Secret key) : key_(std::move(key)) {
  std::array<unsigned char, 16> id{};
  crypto_generichash(id.data(), id.size(), reinterpret_cast<const unsigned char*>(kKeyIdLabel.data()),
                     kKeyIdLabel.size(), key_.reveal_bytes().data(), key_.size());
  std::array<char, 2 * id.size() + 1> hex{};
  sodium_bin2hex(hex.data(), hex.size(), id.data(), id.size());
  key_id_ = hex.data();
}

Result<MasterKey> MasterKey::load(const fs::path& path) {
  KEEL_TRY(ensure_sodium());
  bool missing = false;
  return MasterKey(KEEL_TRY(read_key_file(path, missing)));
}

Result<MasterKey> MasterKey::load_or_create(const fs::path& path) {
  KEEL_TRY(ensure_sodium());
  bool missing = false;
  Result<Secret> existing = read_key_file(path, missing);
  if (existing) return MasterKey(std::move(*existing));
  if (!missing) return std::unexpected(existing.error());
  return MasterKey(KEEL_TRY(create_key_file(path)));
}

Result<MasterKey> MasterKey::generate() {
  KEEL_TRY(ensure_sodium());
  Secret key = Secret::zeroed(kBytes);
  randombytes_buf(key.writable_bytes().data(), key.size());
  return MasterKey(std::move(key));
}

}  // namespace keel::config
