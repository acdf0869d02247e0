#include "util/private_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <system_error>
#include <utility>
#include <vector>

#include "util/random_hex.h"

namespace keel {

namespace fs = std::filesystem;

namespace {

std::string os_error(int error) { return std::error_code(error, std::generic_category()).message(); }

Result<void> write_all(int fd, std::string_view bytes, const fs::path& path, const char* code) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(code, "cannot write " + path.string() + ": " + os_error(errno));
    done += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

std::string octal_mode(mode_t mode) {
  std::array<char, 8> text{};
  std::snprintf(text.data(), text.size(), "%04o", static_cast<unsigned>(mode & 07777));
  return text.data();
}

Result<void> create_private_directories(const fs::path& dir, const char* code) {
  if (dir.empty()) return {};
  // The missing folders, outermost first.
  std::vector<fs::path> missing;
  for (fs::path at = dir; !at.empty(); at = at.parent_path()) {
    struct stat st {};
    if (::lstat(at.c_str(), &st) == 0) break;
    if (errno != ENOENT) return fail(code, "cannot look at " + at.string() + ": " + os_error(errno));
    missing.push_back(at);
    if (at == at.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0) {
      if (errno == EEXIST) continue;  // made by another process meanwhile: left as it is
      return fail(code, "cannot create directory " + it->string() + ": " + os_error(errno));
    }
    // mkdir's mode is narrowed by the umask, never widened; chmod makes it exactly 0700.
    if (::chmod(it->c_str(), 0700) != 0) {
      return fail(code, "cannot set the mode of " + it->string() + ": " + os_error(errno));
    }
  }
  return {};
}

Result<UniqueTemporary> create_unique_temporary(const fs::path& target, const char* code) {
  UniqueTemporary temporary;
  temporary.path = target.string() + ".tmp-" + random_hex(8);
  temporary.fd =
      UniqueFd(::open(temporary.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!temporary.fd.valid()) {
    return fail(code, "cannot create " + temporary.path.string() + ": " + os_error(errno));
  }
  if (::fchmod(temporary.fd.get(), 0600) != 0) {
    const int error = errno;
    ::unlink(temporary.path.c_str());
    return fail(code, "cannot set the mode of " + temporary.path.string() + ": " + os_error(error));
  }
  return temporary;
}

Result<void> sync_directory(const fs::path& dir, const char* code) {
  UniqueFd fd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || ::fsync(fd.get()) != 0) {
    return fail(code, "cannot sync directory " + dir.string() + ": " + os_error(errno));
  }
  return {};
}

Result<void> write_private_file(const fs::path& path, std::string_view bytes, std::string_view what,
                                const PrivateFileCodes& codes) {
  UniqueTemporary temporary = KEEL_TRY(create_unique_temporary(path, codes.io));
  Result<void> written = write_all(temporary.fd.get(), bytes, temporary.path, codes.io);
  if (written && ::fsync(temporary.fd.get()) != 0) {
    written = fail(codes.io, "cannot sync " + temporary.path.string() + ": " + os_error(errno));
  }
  temporary.fd = UniqueFd();
  // rename() replaces a symlink at `path` rather than writing where it points.
  if (written && ::rename(temporary.path.c_str(), path.c_str()) != 0) {
    written =
        fail(codes.io, "cannot write " + std::string(what) + " " + path.string() + ": " + os_error(errno));
  }
  if (!written) {
    ::unlink(temporary.path.c_str());
    return written;
  }
  return sync_directory(path.parent_path(), codes.io);
}

Result<UniqueFd> open_private_file(const fs::path& path, std::string_view what, const PrivateFileCodes& codes,
                                   bool& missing) {
  missing = false;
  const std::string name = std::string(what) + " " + path.string();
  // O_NOFOLLOW: a symlink could point at a file someone else controls. O_NONBLOCK: a FIFO must not hang the
  // open; fstat refuses it below.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    const int error = errno;
    missing = error == ENOENT;
    if (error == ELOOP) return fail(codes.unsafe, name + " is a symbolic link");
    return fail(codes.io, "cannot open " + name + ": " + os_error(error));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(codes.io, "cannot stat " + name + ": " + os_error(errno));
  if (!S_ISREG(st.st_mode)) return fail(codes.unsafe, name + " is not a regular file");
  if (st.st_uid != ::geteuid()) {
    return fail(codes.unsafe,
                name + " belongs to user " + std::to_string(st.st_uid) + ", not to this process's user");
  }
  if ((st.st_mode & 077) != 0) {
    return fail(codes.permissions, name + " has mode " + octal_mode(st.st_mode) +
                                       "; group and others must have no access (chmod 600 it)");
  }
  return fd;
}

}  // namespace keel
