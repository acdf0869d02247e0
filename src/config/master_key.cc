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

namespace keel::config {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kKeyIdLabel = "keel master key id v1";

// Closes the descriptor it owns.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_;
};

std::string os_error(int error) { return std::error_code(error, std::generic_category()).message(); }

std::string octal_mode(mode_t mode) {
  std::array<char, 8> text{};
  std::snprintf(text.data(), text.size(), "%04o", static_cast<unsigned>(mode & 07777));
  return text.data();
}

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
  missing = false;
  // O_NOFOLLOW: a symlink could point the key at a file someone else controls. O_NONBLOCK: a FIFO must not
  // hang the open; fstat refuses it below.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    const int error = errno;
    missing = error == ENOENT;
    if (error == ELOOP) {
      return fail(codes::kKeyFileUnsafe, "the master key file " + path.string() + " is a symbolic link");
    }
    return fail(codes::kKeyFileIo,
                "cannot open the master key file " + path.string() + ": " + os_error(error));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return fail(codes::kKeyFileIo,
                "cannot stat the master key file " + path.string() + ": " + os_error(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(codes::kKeyFileUnsafe, "the master key file " + path.string() + " is not a regular file");
  }
  if (st.st_uid != ::geteuid()) {
    return fail(codes::kKeyFileUnsafe, "the master key file " + path.string() + " belongs to user " +
                                           std::to_string(st.st_uid) + ", not to this process's user");
  }
  if ((st.st_mode & 077) != 0) {
    return fail(codes::kKeyFilePermissions, "the master key file " + path.string() + " has mode " +
                                                octal_mode(st.st_mode) +
                                                "; group and others must have no access (chmod 600 it)");
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

Result<void> sync_directory(const fs::path& dir) {
  Fd fd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || ::fsync(fd.get()) != 0) {
    return fail(codes::kKeyFileIo, "cannot sync directory " + dir.string() + ": " + os_error(errno));
  }
  return {};
}

// Writes a new random key to `path` unless one appears there first; returns the key now at `path`.
Result<Secret> create_key_file(const fs::path& path) {
  const fs::path dir = path.parent_path();
  std::error_code ec;
  if (!dir.empty() && !fs::exists(dir, ec)) {
    if (fs::create_directories(dir, ec))
      fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec) return fail(codes::kKeyFileIo, "cannot create directory " + dir.string() + ": " + ec.message());
  }
  Secret key = Secret::zeroed(MasterKey::kBytes);
  randombytes_buf(key.writable_bytes().data(), key.size());

  std::array<unsigned char, 8> tag{};
  randombytes_buf(tag.data(), tag.size());
  std::array<char, 2 * tag.size() + 1> hex{};
  sodium_bin2hex(hex.data(), hex.size(), tag.data(), tag.size());
  const fs::path temporary = path.string() + ".tmp-" + hex.data();
  {
    Fd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) {
      return fail(codes::kKeyFileIo,
                  "cannot create the master key file " + temporary.string() + ": " + os_error(errno));
    }
    Result<void> written = write_all(fd.get(), key.reveal_bytes(), temporary);
    if (written && ::fsync(fd.get()) != 0) {
      written = fail(codes::kKeyFileIo, "cannot sync " + temporary.string() + ": " + os_error(errno));
    }
    if (!written) {
      ::unlink(temporary.c_str());
      return std::unexpected(written.error());
    }
  }
  // link() fails if `path` exists: of two processes creating the key at once, exactly one wins and the
  // other reads the winner's key.
  const int linked = ::link(temporary.c_str(), path.c_str());
  const int link_error = errno;
  ::unlink(temporary.c_str());
  if (linked != 0 && link_error == EEXIST) {
    bool missing = false;
    return read_key_file(path, missing);
  }
  if (linked != 0) {
    return fail(codes::kKeyFileIo,
                "cannot create the master key file " + path.string() + ": " + os_error(link_error));
  }
  KEEL_TRY(sync_directory(dir));
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
