#include "cli/store_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "keel/error_codes.h"
#include "util/private_file.h"

namespace keel::cli {

namespace fs = std::filesystem;

Result<std::vector<Error>> prepare_store_files(const fs::path& store_path) {
  const fs::path dir = store_path.parent_path();
  KEEL_TRY(create_private_directories(dir, codes::kStoreOpen));
  // O_EXCL: only a file made here gets its mode set; an existing one (or one another process made meanwhile)
  // is only checked below.
  const int fd = ::open(store_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    const bool set = ::fchmod(fd, 0600) == 0;
    const int error = errno;
    ::close(fd);
    if (!set)
      return fail(codes::kStoreOpen,
                  "cannot set the mode of " + store_path.string() + ": " + std::strerror(error));
  } else if (errno != EEXIST && errno != ELOOP) {
    return fail(codes::kStoreOpen, "cannot create " + store_path.string() + ": " + std::strerror(errno));
  }

  std::vector<Error> warnings;
  const auto check = [&warnings](const fs::path& path, const char* what) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || (st.st_mode & 077) == 0) return;
    warnings.emplace_back(codes::kStoreNotPrivate, std::string(what) + " " + path.string() + " has mode " +
                                                       octal_mode(st.st_mode) +
                                                       ": other users may read what keel stores (chmod " +
                                                       (S_ISDIR(st.st_mode) ? "700" : "600") + " it)");
  };
  if (!dir.empty()) check(dir, "the store's directory");
  check(store_path, "the store");
  check(store_path.string() + "-wal", "the store's write-ahead log");
  check(store_path.string() + "-shm", "the store's shared-memory index");
  return warnings;
}

}  // namespace keel::cli
