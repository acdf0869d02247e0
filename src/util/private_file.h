// util/private_file.h — files and folders that only this process's user can reach: the master key, the
// serve token, the store and the data directory hold secrets or what the model read.
//
// Guarantees, whatever the umask:
//   - create_private_directories() makes each missing folder mode 0700 (set explicitly after mkdir);
//   - create_unique_temporary() makes a new file beside its target, mode 0600, with O_EXCL | O_NOFOLLOW and a
//     random name: a file or symlink someone prepared at a guessable name is never opened, written or
//     followed;
//   - write_private_file() writes through such a temporary, syncs it and renames it over the target, so the
//     target is either the old file or the whole new one, and a symlink at the target is replaced, not
//     followed;
//   - open_private_file() opens for reading without following a symlink (and without blocking on a FIFO) and
//     refuses, with the caller's codes, a file that is not regular, belongs to another user, or that group
//     or others may access (anything wider than 0600).
// Errors carry the codes the caller passes (each surface keeps its own stable codes); messages name the
// path and the OS error. Functions only; any thread.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel {

// A file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// The codes a surface reports its file's problems under.
struct PrivateFileCodes {
  const char* io;           // cannot be opened, read, written, created or renamed
  const char* unsafe;       // a symlink, not a regular file, or owned by another user
  const char* permissions;  // group or others have any access
};

// "0644".
std::string octal_mode(mode_t mode);

// Creates `dir` and its missing parents, each mode 0700; folders that exist are left as they are. `code` is
// the error's code.
Result<void> create_private_directories(const std::filesystem::path& dir, const char* code);

struct UniqueTemporary {
  UniqueFd fd;                 // open for writing
  std::filesystem::path path;  // "<target>.tmp-<16 hex digits>"
};
Result<UniqueTemporary> create_unique_temporary(const std::filesystem::path& target, const char* code);

// Writes `bytes` as described above. `what` names the file in messages ("the token file").
Result<void> write_private_file(const std::filesystem::path& path, std::string_view bytes,
                                std::string_view what, const PrivateFileCodes& codes);

// Opens `path` read-only after the checks above; `missing` is set when it does not exist (the error is then
// codes.io). `what` names the file in messages ("the master key file").
Result<UniqueFd> open_private_file(const std::filesystem::path& path, std::string_view what,
                                   const PrivateFileCodes& codes, bool& missing);

// Syncs the directory `dir` ("" = the working directory), so a rename or link in it is durable.
Result<void> sync_directory(const std::filesystem::path& dir, const char* code);

}  // namespace keel
